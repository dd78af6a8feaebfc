"""A speculating pool reads the same everywhere: the scenario tables list it under the
plan pool's own label, so the simulator replays it and the hour verifier finds it.

The label was spelt twice: the plan's pool as `... unified spec draft-8b` (the option's
name, `ReplicaPool.label`) and the scenario rows as `... unified spec draft-8b k3 a0.7`
(the physics' label). `simulate` matches a row's pools to the plan's by label, so it
dropped every speculating pool without a word; the hour verifier compares the two, so
every hourly plan that speculated was rejected as a solver bug (exit 70)."""

import json
import re

from models.io.loading import validate_instance
from solver.plan.schema import Plan
from solver.simulate.replay import SPECULATION_NOTE, simulate_plan
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
    inst = _chat([DRAFT_8B])
    plan = solve(inst)
    labels = {p.label for p in plan.replicas}
    assert any(p.speculative == "draft-8b" for p in plan.replicas)
    assert _listed_labels(plan) == labels
    simulated = simulate_plan(inst, plan, duration_s=5.0)
    plain = {(p.workload, p.region): p.count for p in plan.replicas if p.speculative is None}
    assert {(p.workload, p.region): p.replicas for p in simulated.pools} == plain
    # the speculating pool is named, not dropped: the engine decodes one token per step
    tight = next(p for p in plan.replicas if p.speculative is not None)
    assert simulated.not_simulated == (
        f"{tight.workload} {tight.region} unified: {tight.count} x {tight.label} "
        + SPECULATION_NOTE,
    )


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
