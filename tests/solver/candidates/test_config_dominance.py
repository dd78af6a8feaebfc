"""A whole pool of B replaced by m times as many replicas of A on the same GPUs, where
a pool runs one configuration (solver.candidates.config_dominance)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.backends import get_backend
from solver.candidates.config_dominance import _check_points, config_bounds
from solver.candidates.pools import Tier
from solver.candidates.replica_dominance import pooled_credit
from solver.candidates.table import build_candidates
from solver.program.build import build_program, with_bounds
from solver.program.row_names import ReplicasColumn
from solver.settings import SolveSettings
from tests.synthetic import instance, workload

H100, H200 = "h100-sxm", "h200"
MODEL = "llama-3.3-70b"


def step(replicas: int, gain: float) -> Tier:
    return Tier(replicas=replicas, gain=gain, spare_gain=0.0, zone_gain=0.0)


def two_regions(survive: str = "region", **policy):
    """A 70B model in two regions that fail over to each other, on two GPU types with
    TP1, TP2 and TP4 layouts, whole servers and one configuration per pool (the
    policy's defaults)."""
    return instance(
        {"east": {H100: (64, 2.0), H200: (64, 3.5)}, "west": {H100: (64, 2.2)}},
        [workload("chat", {"east": 6.0, "west": 3.0}, model=MODEL, max_failover_rtt_ms=80)],
        links=[("east", "west", 40)],
        survive=survive,
        tensor_parallel=[1, 2, 4],
        models={MODEL: ["fp8"]},
        policy={"buy_unit": "node", "max_configs_per_pool": 1, **policy},
    )


def test_the_points_checked_hold_every_breakpoint():
    # A: steps at 2 and 4, credit bound 6; B: a step at 2, bound 3; m = 2, B may hold 5.
    # B's breakpoints n = 2 (its step), 3 and 4 (its bound and one above); A's at
    # m n >= 2 -> n = 1, m n >= 4 -> n = 2, m n <= 6 -> n = 3 and 4; the ends 1 and 5;
    # each with the size below: {1, 2, 3, 4, 5} (0 is no pool).
    points = _check_points((step(2, 0.1), step(4, 0.1)), 6, (step(2, 0.1),), 3, 2, 5)
    assert points == [1, 2, 3, 4, 5]


@settings(max_examples=300, deadline=None)
@given(
    q_a=st.floats(0.1, 5.0),
    gains_a=st.lists(st.floats(0.0, 1.0), max_size=3),
    q_b=st.floats(0.1, 20.0),
    gains_b=st.lists(st.floats(0.0, 2.0), max_size=3),
    m=st.integers(1, 4),
    most=st.integers(1, 30),
    bound_a=st.integers(1, 120),
    bound_b=st.integers(1, 30),
)
def test_the_checked_points_decide_as_every_size_does(
    q_a, gains_a, q_b, gains_b, m, most, bound_a, bound_b
):
    """With gains >= 0 the difference credit_A(m n) - credit_B(n) is smallest at one of
    the checked points: brute force over every n agrees."""
    tiers_a = tuple(step(2**k, g) for k, g in enumerate(gains_a, start=1))
    tiers_b = tuple(step(2**k, g) for k, g in enumerate(gains_b, start=1))

    def difference(n: int) -> float:
        ours = pooled_credit((q_a, tuple(gains_a)), tiers_a, bound_a, m * n)
        return ours - pooled_credit((q_b, tuple(gains_b)), tiers_b, bound_b, n)

    points = _check_points(tiers_a, bound_a, tiers_b, bound_b, m, most)
    assert min(difference(n) for n in points) == pytest.approx(
        min(difference(n) for n in range(1, most + 1)), abs=1e-9
    )


def test_pools_are_removed_and_the_optimum_kept():
    inst = two_regions()
    program = build_program(inst, build_candidates(inst))
    bounds = config_bounds(program)
    assert bounds  # some layout has another on its GPU type that carries more per GPU
    backend = get_backend("highs")
    settings = SolveSettings.of(inst, mip_gap=0.0, time_limit_s=60).started().with_duals(False)
    free = backend.run(program.lp, settings)
    bounded = backend.run(with_bounds(program.lp, bounds), settings)
    assert bounded.objective == pytest.approx(free.objective, rel=1e-9)
    # every pool removed has a stand-in of the same GPU type, phase and precision left
    kept = {ReplicasColumn.parse(n) for n in program.lp.variables if n.startswith("replicas[")}
    left = {(c.workload, c.region, c.candidate) for c in kept} - {
        (c.workload, c.region, c.candidate) for c in map(ReplicasColumn.parse, bounds)
    }
    for name in bounds:
        gone = ReplicasColumn.parse(name)
        same = [key for w, r, key in left if (w, r) == (gone.workload, gone.region)]
        gpu, precision, _, role = gone.candidate.split(".")
        assert any(k.split(".")[0::3] == [gpu, role] and precision in k for k in same)


def test_where_the_argument_does_not_hold_nothing_is_removed():
    # several configurations per pool (replicas of both may be used together), replica
    # loss (survivors' rows), and a caller's bound on a column other than replicas
    for policy in ({"max_configs_per_pool": 2}, {"max_configs_per_pool": None}):
        inst = two_regions(**policy)
        assert config_bounds(build_program(inst, build_candidates(inst))) == {}
    replica = two_regions(survive="replica")
    assert config_bounds(build_program(replica, build_candidates(replica))) == {}
    inst = two_regions()
    program = build_program(inst, build_candidates(inst))
    purchase = next(n for n in program.lp.variables if n.startswith("purchased["))
    assert config_bounds(program, {purchase: (0.0, 8.0)}) == {}


def test_a_pool_the_caller_bounds_is_neither_removed_nor_a_stand_in():
    inst = two_regions()
    program = build_program(inst, build_candidates(inst))
    removed = config_bounds(program)
    name = next(iter(removed))
    gone = ReplicasColumn.parse(name)
    # fix every other pool of its region at 0: no stand-in is left for it
    others = {
        ReplicasColumn(p.workload, p.candidate.key, p.region).name(): (0.0, 0.0)
        for p in program.sets.pools
        if p.region == gone.region and p.candidate.key != gone.candidate
    }
    assert name not in config_bounds(program, others)
    assert not set(others) & set(config_bounds(program, others))


def test_shared_groups_remove_nothing():
    # two 70B workloads in one region: without co-location two pools have a stand-in
    # (the layouts of two_regions); with it, a shared group's replicas credit both
    # workloads' capacity rows, which the comparison does not cover: none is removed
    def two_workloads(colocation: bool):
        return instance(
            {"east": {H100: (64, 2.0), H200: (64, 3.5)}},
            [
                workload("a", {"east": 0.5}, model=MODEL),
                workload("b", {"east": 0.5}, model=MODEL, prompt_tokens=3000),
            ],
            tensor_parallel=[1, 2, 4],
            models={MODEL: ["fp8"]},
            policy={"buy_unit": "node", "max_configs_per_pool": 1, "colocation": colocation},
        )

    apart, shared = two_workloads(False), two_workloads(True)
    assert config_bounds(build_program(apart, build_candidates(apart)))
    program = build_program(shared, build_candidates(shared))
    assert program.groups.templates
    assert config_bounds(program) == {}
