"""The warm start (solver.decompose.warm_start), HiGHS's start solution, and explain's re-solves in
worker processes with their progress."""

import math

import pytest

import solver.decompose.parallel as parallel
import solver.decompose.warm_start as warm
from solver.analysis.explain import explain
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose.by_workload import optimise
from solver.program.build import build_program, with_bounds
from solver.program.lp import LinearProgram, Sense, Termination
from solver.program.row_names import ReplicasColumn
from solver.settings import SolveSettings, machine_threads
from tests.synthetic import instance, workload

H100, H200 = "h100-sxm", "h200"
HOURS = 730
MODEL = "llama-3.3-70b"


def two_types():
    """A 70B model on two GPU types in two regions: tp1 and pp2 layouts of each type."""
    return instance(
        {"east": {H100: (64, 2.0), H200: (64, 3.5)}, "west": {H100: (64, 2.2)}},
        [workload("chat", {"east": 6.0, "west": 3.0}, model=MODEL, max_failover_rtt_ms=80)],
        links=[("east", "west", 40)],
        survive="region",
        tensor_parallel=[1, 2, 4],
        pipeline_parallel=[1, 2],
        models={MODEL: ["fp8"]},
        policy={"buy_unit": "node", "max_configs_per_pool": 1},
    )


def test_restriction_keeps_the_cheapest_pool_per_request_of_each_gpu_type_and_phase():
    inst = two_types()
    program = build_program(inst, build_candidates(inst))
    fixed = warm.restricted_bounds(program)
    price = {(r.name, g): s.price_per_gpu_hour for r in inst.regions for g, s in r.supply.items()}
    groups: dict[tuple, list] = {}
    for pool in program.sets.pools:
        c = pool.candidate
        groups.setdefault((pool.region, c.role, str(c.precision), c.gpu), []).append(pool)
    # every pool but one per (region, phase, precision, GPU type) is fixed at zero, and
    # here some group offers more than one layout (else the restriction would be empty)
    assert len(fixed) == len(program.sets.pools) - len(groups) > 0
    for pools in groups.values():
        kept = [
            p
            for p in pools
            if ReplicasColumn(p.workload, p.candidate.key, p.region).name() not in fixed
        ]
        assert len(kept) == 1
        # $/GPU-hour x GPUs per replica / requests/s per replica at the ladder's top
        cost = {
            id(p): price[(p.region, p.candidate.gpu)]
            * p.candidate.gpus
            / p.candidate.top_requests_per_s
            for p in pools
        }
        assert cost[id(kept[0])] == min(cost.values())
    assert all(bound == (0.0, 0.0) for bound in fixed.values())


def test_a_pool_fixed_at_zero_is_never_the_one_kept():
    inst = two_types()
    program = build_program(inst, build_candidates(inst))
    fixed = warm.restricted_bounds(program)
    kept = [
        n
        for n in (
            ReplicasColumn(p.workload, p.candidate.key, p.region).name() for p in program.sets.pools
        )
        if n not in fixed
    ]
    again = warm.restricted_bounds(program, {kept[0]: (0.0, 0.0)})
    assert kept[0] in again


def test_the_warm_started_solve_reaches_the_cold_optimum(monkeypatch):
    inst = two_types()
    program = build_program(inst, build_candidates(inst))
    settings = SolveSettings.of(inst, mip_gap=0.0, time_limit_s=60).started()
    backend = get_backend("highs")
    cold = backend.run(program.lp, settings)
    monkeypatch.setattr(warm, "START_MIN_INTEGERS", 0)
    start = warm.warm_start(program, backend, settings)
    assert start is not None
    # The start is a plan of the whole program, no cheaper than its optimum.
    restricted = with_bounds(program.lp, warm.restricted_bounds(program))
    assert all(r.slack(start) >= -1e-6 for r in restricted.constraints.values())
    assert program.lp.objective_value(start) >= cold.objective - 1e-6
    warmed = optimise(program, backend, settings).result
    assert warmed.termination is Termination.OPTIMAL
    assert warmed.objective == pytest.approx(cold.objective, abs=1e-6)


def test_the_restricted_solve_is_held_to_nodes_not_to_a_share_of_the_clock(monkeypatch):
    """The restricted program is solved within `START_NODES` nodes (a work limit: the
    same start on a busy machine as on an idle one) and at most `START_TIME_SHARE` of
    the time left (a guard): 0.5 x 60 s = 30 s with the whole minute left."""
    inst = two_types()
    program = build_program(inst, build_candidates(inst))
    highs, seen = get_backend("highs"), []

    class Recording:
        capabilities = highs.capabilities

        def run(self, lp, settings, start=None):
            seen.append((settings.node_limit, settings.time_limit_s, settings.mip_gap))
            return highs.run(lp, settings, start=start)

    monkeypatch.setattr(warm, "START_MIN_INTEGERS", 0)
    assert warm.warm_start(program, Recording(), SolveSettings(time_limit_s=60.0)) is not None
    assert seen == [(warm.START_NODES, pytest.approx(30.0), warm.START_GAP)]


def cover(capacity: float) -> LinearProgram:
    """min 3x + 2y, x + y >= capacity, x, y integer: y = ceil(capacity) at 2 each."""
    lp = LinearProgram("cover")
    x = lp.add_variable("x", upper=100, integer=True)
    y = lp.add_variable("y", upper=100, integer=True)
    lp.add_objective({x: 3.0, y: 2.0})
    lp.add_constraint("cover", "demand", {x: 1.0, y: 1.0}, Sense.GE, capacity)
    return lp


@pytest.mark.parametrize(
    "start", [{"x": 8.0, "y": 0.0}, {"x": 0.0, "y": 1.0}, {"x": 100.0, "y": 100.0}]
)
def test_highs_from_a_start_still_finds_the_optimum(start):
    # Feasible but poor (8 x 3 = 24), infeasible (1 < 7.5: ignored), or the worst corner.
    result = get_backend("highs").solve(cover(7.5), mip_gap=0.0, start=start)
    assert result.objective == pytest.approx(2.0 * math.ceil(7.5))
    assert result.values["y"] == 8.0


@pytest.mark.skipif(machine_threads() < 2, reason="needs two cores for two workers")
def test_explain_resolves_in_workers_as_in_one_process(monkeypatch, no_engine_effects):
    """At 30 requests/s (one pool and its alternative, 1 x h200, as at 100: an explain in
    one process 0.8 s, not 3.1), without the engine-effects replay of the plan's load
    (most of the 0.8 s; no_engine_effects): the re-solves are what is compared."""
    inst = instance(
        {"east": {H100: (64, 2.0), H200: (64, 3.5)}}, [workload("chat", {"east": 30.0})]
    )
    settings = SolveSettings.of(inst, mip_gap=0.0)
    lines: list[str] = []
    here = explain(inst, settings, progress=lines.append)
    assert lines[0] == f"explain: {len(here.alternatives) + 1} re-solves, 1 at a time"
    assert len(lines) == len(here.alternatives) + 2  # the plan, then one per re-solve
    monkeypatch.setattr(parallel, "PARALLEL_MIN_INTEGERS", 0)
    monkeypatch.setattr(parallel, "idle_cores", lambda: 2.0)
    lines.clear()
    apart = explain(inst, settings, progress=lines.append)
    assert lines[0].endswith("2 at a time")
    assert lines[-1].startswith(f"explain: {len(here.alternatives) + 1} of ")
    assert apart.alternatives == here.alternatives
    assert apart.plan.simplicity == here.plan.simplicity
