"""A whole pool of B replaced by m times as many replicas of A on the same GPUs, where
a pool runs one configuration (solver.candidates.config_dominance)."""

import math
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu, llm
from models.physics.precision import Precision
from models.serving.replica import ReplicaConfig, Role
from solver.backends import get_backend
from solver.candidates.config_dominance import (
    _check_points,
    _needed,
    _stands_in,
    _stands_in_at,
    config_bounds,
)
from solver.candidates.pools import PoolCurve, Tier
from solver.candidates.replica_dominance import pool_column, pool_curves, pooled_credit
from solver.candidates.table import Candidate, build_candidates
from solver.program.build import build_program, with_bounds
from solver.program.row_names import ReplicasColumn
from solver.program.sets import Pool
from solver.settings import SolveSettings
from tests.synthetic import instance, made_up_capacity, workload

H100, H200 = "h100-sxm", "h200"
MODEL = "llama-3.3-70b"


def step(replicas: int, gain: float) -> Tier:
    return Tier(replicas=replicas, gain=gain, spare_gain=0.0, zone_gain=0.0)


def pool(tp: int, pp: int, rps: float, most: int, steps: tuple[Tier, ...] = ()) -> Pool:
    """A hand-made pool of H100 replicas on tp x pp GPUs carrying `rps` alone (the
    physics is not under test: `_stands_in` reads the GPUs, sizes and credits given)."""
    config = ReplicaConfig(
        gpu(H100), llm(MODEL), Precision.FP8, Precision.FP8, tp, pp, Role.UNIFIED
    )
    capacity = made_up_capacity(config, requests_per_s=rps)
    candidate = Candidate("chat", capacity, PoolCurve(((1, capacity),), rps))
    return Pool("chat", candidate, "east", most, steps, largest_useful=most)


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


def test_more_per_gpu_at_every_size_stands_in():
    # A TP1 at 1.3 req/s, B TP2 at 2.5, no steps: m = 2 / 1, and A's pool holds
    # 2 x 10 = 20 replicas. A's 2n replicas carry 2.6 n > 2.5 n at every n = 1 .. 10.
    a, b = pool(1, 1, 1.3, 20), pool(2, 1, 2.5, 10)
    assert _stands_in(a, b, [(1.3, ())], [(2.5, ())])
    # and never the other way: TP2 has no whole number of replicas on one GPU
    assert not _stands_in(b, a, [(2.5, ())], [(1.3, ())])


NOT_STANDING_IN = {
    # A TP1 at 1.0 req/s, B TP2 at 2.5: A's two replicas on B's two GPUs carry
    # 2 x 1.0 = 2.0 < 2.5 at n = 1 (and 2.0 n < 2.5 n at every n)
    "a lower capacity on the same GPUs": (
        pool(1, 1, 1.0, 20),
        pool(2, 1, 2.5, 10),
        [(1.0, ())],
        [(2.5, ())],
    ),
    # A TP1 at 0.9 req/s alone, 1.2 from a pool of 2, its step credited on at most
    # M = min(max_replicas 40, largest_useful 10) = 10 replicas; B TP2 at 2.0 on up to
    # 20. 2n replicas of A carry 0.9 x 2n + 0.3 x min(2n, 10): 2.4 n > 2.0 n up to
    # n = 5, then 1.8 n + 3, below 2.0 n from n = 16 (31.8 < 32); at B's largest pool
    # 36 + 3 = 39 < 40
    "ahead in small pools, behind in large ones (A's step credited on 10)": (
        replace(pool(1, 1, 0.9, 40, (step(2, 0.3),)), largest_useful=10),
        pool(2, 1, 2.0, 20),
        [(0.9, (0.3,))],
        [(2.0, ())],
    ),
    # A TP1 1.3 and B TP2 2.5 on their own curves (2.6 n > 2.5 n), but on the curve of
    # users rerouted over a round trip (the TTFT target less it) 0.9 and 2.0: 1.8 n < 2.0 n
    "ahead on its own curve, behind on a rerouted one": (
        pool(1, 1, 1.3, 20),
        pool(2, 1, 2.5, 10),
        [(1.3, ()), (0.9, ())],
        [(2.5, ()), (2.0, ())],
    ),
    # A TP1: 1.0 alone on both curves; from a pool of 2, +0.5 on its own curve (1.5) but -0.5 on a
    # rerouted one. B TP2: 2.9 and 1.9, no steps. Each curve's best prefix beats B
    # (own 1.5 x 2n = 3n > 2.9 n; rerouted, the step left out, 2n > 1.9 n), but one pool
    # credits its step on the same x replicas in both rows: own 2n + 0.5 x >= 2.9 n
    # needs x >= 1.8 n, rerouted 2n - 0.5 x >= 1.9 n needs x <= 0.2 n. No pool of A
    # carries B's load on both, so a negative gain is not compared
    "a negative gain on one curve": (
        pool(1, 1, 1.0, 20, (step(2, 0.5),)),
        pool(2, 1, 2.9, 10),
        [(1.0, (0.5,)), (1.0, (-0.5,))],
        [(2.9, ()), (1.9, ())],
    ),
    # A TP1 at 1.3, B TP2 at 2.5 (2.6 n > 2.5 n), but A's pool may hold 15 replicas and
    # B's 10: a pool of 8 B needs 16 A
    "A's pool too small for m x B's": (
        pool(1, 1, 1.3, 15),
        pool(2, 1, 2.5, 10),
        [(1.3, ())],
        [(2.5, ())],
    ),
    # A on 4 GPUs (TP2 PP2) at 3.0 req/s, B on 6 (TP2 PP3) at 2.0: 6 / 4 is not whole,
    # so no count of A replicas is B's GPUs (n of A use 4n, not 6n: the purchases,
    # whole servers and power the argument keeps equal would move)
    "GPUs not a whole multiple": (
        pool(2, 2, 3.0, 20),
        pool(2, 3, 2.0, 10),
        [(3.0, ())],
        [(2.0, ())],
    ),
}


@pytest.mark.parametrize(
    "a, b, credits_a, credits_b", NOT_STANDING_IN.values(), ids=list(NOT_STANDING_IN)
)
def test_a_pool_that_carries_less_somewhere_does_not_stand_in(a, b, credits_a, credits_b):
    assert not _stands_in(a, b, credits_a, credits_b)


def test_two_empty_pools_do_not_stand_in_for_each_other():
    # the relation is strict, so no two pools stand in for each other (each would be
    # removed for the other): on the same GPUs with no replica allowed, "ahead at every
    # n = 1 .. 0" holds vacuously both ways, and neither stands in
    a, b = pool(1, 1, 1.3, 0), pool(1, 1, 1.0, 0)
    assert not _stands_in(a, b, [(1.3, ())], [(1.0, ())])
    assert not _stands_in(b, a, [(1.0, ())], [(1.3, ())])


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


def test_a_stand_in_that_carries_all_a_row_asks_covers_a_pipelined_pool():
    # A TP1 at 1.0 req/s, B TP1 x PP2 at 2.5 (more per GPU than two of A: 2.5 > 2.0 at
    # every n), no steps; a row asks at most cap = 11.9 req/s (what the region may be
    # sent). 2n of A carry 2n >= 11.9 from n = 6 on, so A stands in from n = 6 (its pool
    # holds 2 x 20 = 40 >= 2n up to n = 20) and B needs at most 5 replicas. (At exactly
    # the cap the relative margin says no: the comparison leans towards keeping a size.)
    a, b = pool(1, 1, 1.0, 40), pool(1, 2, 2.5, 20)
    ca, cb = [(1.0, ())], [(2.5, ())]
    assert not _stands_in(a, b, ca, cb)  # below the cap B carries more: no whole removal
    assert not _stands_in_at(a, b, ca, cb, 5, 11.9)  # 2 x 5 = 10 < 11.9 and < 12.5
    assert _stands_in_at(a, b, ca, cb, 6, 11.9)  # 2 x 6 = 12 >= 11.9
    assert not _stands_in_at(a, b, ca, cb, 6, 12.0)  # 12 is the cap itself: kept
    assert not _stands_in_at(a, b, ca, cb, 6, math.inf)  # no cap (Hall rows): 12 < 15
    assert _needed(b, [(a, ca)], cb, 11.9) == 5
    # A's pool too small for 2n: from n = 21 nothing holds them, B keeps its top
    assert _needed(pool(1, 2, 2.5, 25), [(a, ca)], cb, 11.9) == 25
    # the same numbers for a TP2 B without pipeline stages: A must carry more, so no size
    unstaged = pool(2, 1, 2.5, 20)
    assert not _stands_in_at(a, unstaged, ca, cb, 6, 11.9)
    assert _needed(unstaged, [(a, ca)], cb, 11.9) == 20


def test_equal_pools_above_the_cap_stand_in_one_way_only():
    # two pipelined layouts on 4 GPUs each carrying 3.0 req/s a replica, cap 8.9: from
    # n = 3 each carries all a row asks (9 >= 8.9), so neither beats the other there and
    # the order decides: the earlier key stands in for the later, never the reverse (no
    # circle of moves). Below n = 3 neither is above the other: 6 < 8.9, equal credits.
    x, y = pool(2, 2, 3.0, 10), pool(1, 4, 3.0, 10)
    first, second = (y, x) if y.candidate.key < x.candidate.key else (x, y)
    c = [(3.0, ())]
    assert _stands_in_at(first, second, c, c, 3, 8.9)
    assert not _stands_in_at(second, first, c, c, 3, 8.9)
    assert not _stands_in_at(first, second, c, c, 2, 8.9)  # 6 < 8.9 and 6 == 6
    assert _needed(second, [(first, c)], c, 8.9) == 2
    assert _needed(first, [(second, c)], c, 8.9) == 10


def test_pipelined_pools_go_where_the_smaller_layout_carries_the_region_and_the_optimum_kept():
    # a 70B model in two regions on H100 and H200 with TP 1-4 and PP 1-2 at the policy
    # defaults: the TP2 x PP2 pools are credited more than twice as many TP2 replicas
    # at some size (so the whole-pool relation keeps them: main removed the TP4 and
    # TP4 x PP2 pools and H200 TP1 x PP2 only), but from there the TP2 pool carries all
    # the region may be sent: with the cap they go too, and the optimum is kept (gap 0)
    inst = two_regions(pipeline_parallel=[1, 2])
    program = build_program(inst, build_candidates(inst))
    removed = config_bounds(program)
    sized = config_bounds(program, sizes=True)
    assert set(removed) <= set(sized)
    assert all(bound == (0.0, 0.0) for bound in removed.values())
    staged = {
        "replicas[chat,h100-sxm.fp8.tp2pp2.unified,east]",
        "replicas[chat,h100-sxm.fp8.tp2pp2.unified,west]",
        "replicas[chat,h200.fp8.tp2pp2.unified,east]",
    }
    assert staged <= set(removed)
    pools = {pool_column(p): p for p in program.sets.pools}
    credits = {name: pool_curves(program.sets, pools[name], [None, 40.0]) for name in staged}
    for name in staged:  # not by the whole-pool relation: by the cap
        smaller = pools[name.replace("tp2pp2", "tp2pp1")]
        mine = pool_curves(program.sets, smaller, [None, 40.0])
        assert not _stands_in(smaller, pools[name], mine, credits[name])
    backend = get_backend("highs")
    settings = SolveSettings.of(inst, mip_gap=0.0, time_limit_s=60).started().with_duals(False)
    free = backend.run(program.lp, settings)
    bounded = backend.run(with_bounds(program.lp, sized), settings)
    assert bounded.objective == pytest.approx(free.objective, rel=1e-9)
