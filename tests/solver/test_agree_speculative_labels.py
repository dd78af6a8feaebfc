"""A speculating pool reads the same everywhere: the scenario tables list it under the
plan pool's own label, so the simulator replays it and the hour verifier finds it.

The label was spelt twice: the plan's pool as `... unified spec draft-8b` (the option's
name, `ReplicaPool.label`) and the scenario rows as `... unified spec draft-8b k3 a0.7`
(the physics' label). `simulate` matches a row's pools to the plan's by label, so it
dropped every speculating pool without a word; the hour verifier compares the two, so
every hourly plan that speculated was rejected as a solver bug (exit 70)."""

import json
import re

import numpy as np
import pytest

from models.io.loading import validate_instance
from solver.plan.schema import Plan
from solver.simulate.engine import ReplicaEngine, simulate_pool
from solver.simulate.replay import simulate_plan
from solver.simulate.traffic import speculation_cycles
from solver.solve import solve
from solver.verify.hours import verify_any
from tests.solver.test_speculative_program import DRAFT_8B, _chat


def _listed_labels(plan: Plan) -> set[str]:
    """Every `n x label` a scenario row lists, by label."""
    return {
        re.fullmatch(r"\d+ x (.+?)(?: \(started\))?", text).group(1)
        for scenario in plan.scenarios
        for row in scenario.pools
        for text in row.pools
    }


def test_scenario_rows_list_a_speculating_pool_by_its_plan_label_and_simulate_replays_it():
    """The tight pool speculates (draft 8B, k = 3, a = 0.7): simulate replays it cycle by
    cycle at its share of the load, and it meets the p99 TPOT the plan sized it for."""
    inst = _chat([DRAFT_8B])
    plan = solve(inst)
    labels = {p.label for p in plan.replicas}
    assert any(p.speculative == "draft-8b" for p in plan.replicas)
    assert _listed_labels(plan) == labels
    simulated = simulate_plan(inst, plan, duration_s=20.0)
    planned = {(p.workload, p.region): p.count for p in plan.replicas}
    assert {(p.workload, p.region): p.replicas for p in simulated.pools} == planned
    assert simulated.not_simulated == ()
    tight = next(p for p in simulated.pools if p.workload == "tight")
    assert tight.meets_slo
    assert tight.simulated.tpot_p99_ms <= tight.tpot_p99_target_ms


def test_speculation_cycles_by_hand():
    """a = 1: every cycle emits k + 1 = 4 tokens, 200 tokens after the first take
    ceil(200 / 4) = 50 cycles; a = 0: one token a cycle, 200 cycles; one token in all:
    none. a = 0.7, k = 3: E = (1 - 0.7^4) / (1 - 0.7) = 2.533 tokens a cycle, so 2,000
    requests of 201 tokens take 200 / 2.533 = 79.0 cycles each on average (plus under
    half a cycle of overshoot at the end)."""
    rng = np.random.default_rng(0)
    assert speculation_cycles(np.array([201, 1]), 3, 1.0, rng).tolist() == [50, 0]
    assert speculation_cycles(np.array([201]), 3, 0.0, rng).tolist() == [200]
    expected = (1 - 0.7**4) / (1 - 0.7)
    mean = speculation_cycles(np.full(2000, 201), 3, 0.7, rng).mean()
    assert 200 / expected <= mean <= 200 / expected + 1


def test_an_hourly_plan_that_speculates_passes_the_hour_verifier():
    """The same two workloads with a daily profile (the peak twice the trough): solve
    returns the plan (it raised PlanRejected) and the verifier accepts it."""
    flat = _chat([DRAFT_8B])
    data = json.loads(flat.model_dump_json(exclude_defaults=True, by_alias=True))
    for load in data["workloads"]:
        for level in load["demand"].values():
            level["hourly_profile"] = [1.0] * 12 + [2.0] * 12
    hourly = validate_instance(data, "hourly")
    plan = solve(hourly)
    assert plan.hours
    assert any(p.speculative == "draft-8b" for p in plan.replicas)
    assert verify_any(hourly, plan).ok


class _OneSecondSteps:
    """Every iteration takes 1 s; one stage, 100-token chunks, no overhead."""

    pp = 1
    chunk_tokens = 100
    overhead_s = 0.0

    def iteration_s(self, batch, context, prefill_tokens=0.0, prefill_context=0.0):
        return 1.0


@pytest.mark.parametrize(("positions", "ttft_s"), [(4, 3.5), (1, 2.5)])
def test_a_speculation_cycle_leaves_prompts_the_planners_lane(positions, ttft_s):
    """Ten sequences decode (their 1-token prompts prefilled in the first iteration, 0-1 s);
    a 150-token prompt arrives at 5.5 s and joins at the 6 s boundary. A cycle verifying
    k + 1 = 4 positions per sequence leaves 100 - 10 x 4 = 60 prompt tokens an iteration
    (the planner's lane, pp x chunk - B (k + 1)): ceil(150 / 60) = 3 iterations, first
    token at 9 s, TTFT 3.5 s. One position each would leave 90: 2 iterations, 2.5 s."""
    engine = ReplicaEngine(_OneSecondSteps(), 1e9, 100, positions_per_step=positions)
    arrivals = np.array([0.0] * 10 + [5.5])
    prompts = np.array([1] * 10 + [150])
    outputs = np.array([1000] * 10 + [2])
    trace = simulate_pool(engine, 1, arrivals, prompts, outputs, drain_s=5.0)
    assert trace.ttft_s[10] == pytest.approx(ttft_s)
