"""Pools of another GPU type that no optimal plan needs (solver.candidates.swap_dominance): removed
only where a cheaper replica carries more and the supply has room for the move; the
optimum of every workload program is unchanged."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.io.loading import validate_instance
from solver.backends import get_backend
from solver.candidates.replica_dominance import with_sizes
from solver.candidates.swap_dominance import optimal_reduction, swap_bounds
from solver.candidates.table import build_candidates
from solver.decompose.workload_parts import workload_program
from solver.program.build import build_program, with_bounds
from solver.settings import SolveSettings
from solver.solve import solve
from tests.synthetic import FLAT_SLO, generated_data, instance, workload

A100 = "replicas[chat,a100-80gb-sxm.bf16.tp1pp1.unified,east]"
H100 = "replicas[chat,h100-sxm.fp8.tp1pp1.unified,east]"
HOURS = 730


def one_region(demand_rps: float, h100_gpus: int, existing: dict | None = None):
    """Llama 3.1 8B on FLAT_SLO targets (KV-limited: a pool carries n q(1)) in `east`:
    H100 (fp8) at $1/GPU-hour against A100 (bf16, no fp8) at $10/GPU-hour."""
    return instance(
        {"east": {"h100-sxm": (h100_gpus, 1.0), "a100-80gb-sxm": (64, 10.0)}},
        [workload("chat", {"east": demand_rps}, **FLAT_SLO)],
        models={"llama-3.1-8b": ["fp8", "bf16"]},
        existing=existing,
    )


def capacities(inst) -> dict[str, float]:
    table = build_candidates(inst)
    return {c.gpu: c.requests_per_s for c in table.of("chat")}


def test_a_cheaper_replica_that_carries_more_removes_the_other():
    """One H100 replica costs 1 x $1 x 730 = $730/month and carries q_h100 (about 44
    req/s); one A100 replica costs 1 x $10 x 730 = $7,300 and carries q_a100 (about 10):
    the H100 dominates. The cover for 10 req/s is one H100 ($730), so the region spends
    at most $730 and the move has room: 730 / 730 = 1 GPU <= 64."""
    inst = one_region(10.0, 64)
    q = capacities(inst)
    assert q["h100-sxm"] >= q["a100-80gb-sxm"]  # lone H100 >= the A100's best (no ladder)
    program = build_program(inst, build_candidates(inst))
    assert swap_bounds(program) == {A100: (0.0, 0.0)}


def test_no_room_in_the_supply_keeps_the_other():
    """100 req/s with 2 H100 on offer: the H100s alone carry 2 q_h100 < 100, so the cover
    is A100s, ceil(100 / q_a100) of them at $7,300 each, which would buy far more than 2
    H100s: no room, no bound. The optimum takes both H100s and fills the rest with
    ceil((100 - 2 q_h100) / q_a100) A100s."""
    inst = one_region(100.0, 2)
    q = capacities(inst)
    assert 2 * q["h100-sxm"] < 100.0
    program = build_program(inst, build_candidates(inst))
    assert swap_bounds(program) == {}
    plan = solve(inst)
    a100s = -(-(100.0 - 2 * q["h100-sxm"]) // q["a100-80gb-sxm"])
    assert plan.cost_per_month == pytest.approx((2 * 1.0 + a100s * 10.0) * HOURS)


def test_an_existing_fleet_keeps_the_other():
    """Owned A100s cost nothing until used up: the swap argument does not hold there."""
    inst = one_region(10.0, 64, existing={"east": {"a100-80gb-sxm": 4}})
    program = build_program(inst, build_candidates(inst))
    assert swap_bounds(program) == {}


def test_the_callers_bounds_are_left_out():
    """A pool the caller bounds is neither moved nor moved into (explain's re-solve
    without the H100 must not count on it)."""
    inst = one_region(10.0, 64)
    program = build_program(inst, build_candidates(inst))
    assert swap_bounds(program, {H100: (0.0, 0.0)}) == {}


def test_workloads_that_share_a_region_count_their_spend_together():
    """Two workloads in `east`: 10 req/s each, one H100 cover each ($730 + $730). With 64
    H100s on offer the region spends at most $1,460, 2 H100s: both A100 pools go. With
    one H100 on offer the covers do not fit together (2 > 1) and nothing goes."""

    def two(h100_gpus: int):
        return instance(
            {"east": {"h100-sxm": (h100_gpus, 1.0), "a100-80gb-sxm": (64, 10.0)}},
            [workload(w, {"east": 10.0}, **FLAT_SLO) for w in ("chat", "docs")],
            models={"llama-3.1-8b": ["fp8", "bf16"]},
        )

    program = build_program(two(64), build_candidates(two(64)))
    docs = A100.replace("chat", "docs")
    assert swap_bounds(program) == {A100: (0.0, 0.0), docs: (0.0, 0.0)}
    program = build_program(two(1), build_candidates(two(1)))
    assert swap_bounds(program) == {}


def _optimum(lp) -> float:
    settings_ = SolveSettings("highs", time_limit_s=60, mip_gap=1e-9, threads=1)
    result = get_backend("highs").run(lp, settings_)
    assert result.termination.has_solution
    return result.objective


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    survive=st.sampled_from(["none", "region"]),
    disaggregation=st.booleans(),
)
def test_the_reduction_keeps_every_workload_programs_optimum(seed, survive, disaggregation):
    """Each workload program of a generated instance (random prices and supply per
    region; unified, or prefill and decode pools too), and the whole, solved exactly
    with and without the reduction: the same optimum. Two regions, the fewest with a
    region loss to survive: with three, the exact solves of split pools under region loss
    took four times as long; with two, the reduction still drops pools in every program
    tried (9 to 54 bounds per instance). 3 instances a run (each ~1.8 s of CPU; 6 were
    the default suite's costliest test, 11 s), new seeds every run."""
    _same_optimum(seed, survive, disaggregation, regions=2)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), survive=st.sampled_from(["zone", "replica"]))
def test_the_reduction_keeps_the_optimum_under_zone_and_replica_loss(seed, survive):
    """As above with the zone-survivor and spare-replica rows (unified pools: exact
    solves of split pools under these rows take 5-20 s each). Neither argument applies
    under these rows, so each program is compared with itself reduced and solved only
    if the reduction left something out."""
    _same_optimum(seed, survive, disaggregation=False)


def _same_optimum(seed: int, survive: str, disaggregation: bool, regions: int = 3) -> None:
    data = generated_data(regions, 2, 4, survive=survive, seed=seed)
    data["policy"]["disaggregation"] = disaggregation
    inst = validate_instance(data, data["name"])
    program = build_program(inst, build_candidates(inst, SolveSettings.of(inst)))
    for w in program.sets.workloads:
        part = workload_program(program, w)
        _assert_same_optimum(part.lp, optimal_reduction(part))
    # and the whole program, whose workloads share the regions' supply
    _assert_same_optimum(program.lp, optimal_reduction(program))


def _assert_same_optimum(lp, reduction) -> None:
    """The program reduced has the optimum of the program. A reduction that leaves
    nothing out gives the same program (equal variables, bounds, rows and objective),
    whose optimum is the same without solving it twice: so it is under zone and replica
    loss, where neither argument applies (the module texts of swap_dominance and
    replica_dominance)."""
    reduced = with_sizes(with_bounds(lp, reduction.bounds), reduction.sizes)
    if reduced == lp:
        return
    assert _optimum(reduced) == pytest.approx(_optimum(lp), rel=1e-7)
