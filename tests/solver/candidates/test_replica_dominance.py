"""Replica bounds from dominance (solver.candidates.replica_dominance): the hand cases of the bound,
the bound against a brute-force scan of its definition, and the plain program's optimum
kept with the bounds on."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.backends import get_backend
from solver.candidates.pools import Tier
from solver.candidates.replica_dominance import (
    PoolSizes,
    dominance_bounds,
    move_of,
    needed_replicas,
    needed_sizes,
    pooled_credit,
    sizes_start,
    with_sizes,
)
from solver.candidates.table import build_candidates
from solver.decompose.by_workload import optimise
from solver.program.build import build_program, with_bounds
from solver.program.families.pool_sizes import add_pool_sizes
from solver.program.families.pooling import PoolAtLeastColumn
from solver.program.lp import LinearProgram, Termination
from solver.program.row_names import ReplicasColumn
from solver.settings import SolveSettings
from tests.synthetic import instance, with_policy, workload

H100, H200 = "h100-sxm", "h200"
MODEL = "llama-3.3-70b"


def step(replicas: int, gain: float) -> Tier:
    """A pooling step at `replicas` with its gain on the pool's own curve only."""
    return Tier(replicas=replicas, gain=gain, spare_gain=0.0, zone_gain=0.0)


def test_two_lone_replicas_that_carry_less_than_one_twice_as_large_are_never_needed():
    # A: 1.0 req/s per replica, no steps; B: 2 x A's GPUs at 2.5 req/s.
    # Moving 2 replicas of A into one of B: -2 x 1.0 + 2.5 = +0.5 at every n >= 2.
    assert needed_replicas((), 64, 64, 2, [(1.0, ())], [2.5]) == 1
    # B at 1.9 < 2 x 1.0: a move would lose 0.1 req/s at any size; no bound.
    assert needed_replicas((), 64, 64, 2, [(1.0, ())], [1.9]) == 64


def test_a_pooling_step_keeps_the_odd_size_that_beats_the_move():
    # A: q(1) = 1.0, q(2) = 1.2 (step at 2, gain 0.2), credited on up to 40 replicas;
    # B: two of A's GPUs, 2.5 req/s alone. The capacity a move takes from A's pool:
    #   n = 2: 2 x 1.2 - 0                  = 2.4 <= 2.5
    #   n = 3: 3 x 1.2 - 1 x 1.0            = 2.6 >  2.5   (the pool falls below the step)
    #   n = 4: 4 x 1.2 - 2 x 1.2            = 2.4 <= 2.5   and so on above
    tiers = (step(2, 0.2),)
    assert pooled_credit((1.0, (0.2,)), tiers, 40, 3) == pytest.approx(3 * 1.2)
    assert needed_replicas(tiers, 64, 40, 2, [(1.0, (0.2,))], [2.5]) == 3
    # With M = 3 the step credits at most 3 replicas: n = 4 loses (4 + 3 x 0.2) - 2 x 1.2
    # = 2.2 and n = 5 loses (5 + 0.6) - (3 + 0.6) = 2.0, both <= 2.5: still N = 3.
    assert needed_replicas(tiers, 64, 3, 2, [(1.0, (0.2,))], [2.5]) == 3


def test_every_curve_must_allow_the_move():
    # On its own curve the move never loses (2 x 1.0 <= 2.5); at a failover target
    # A keeps 1.0 but B falls to 1.8 alone: 2 x 1.0 > 1.8, no bound.
    assert needed_replicas((), 64, 64, 2, [(1.0, ()), (1.0, ())], [2.5, 1.8]) == 64


@settings(max_examples=200, deadline=None)
@given(
    q_one=st.floats(0.1, 5.0),
    gains=st.lists(st.floats(0.0, 1.0), min_size=0, max_size=3),
    m=st.integers(1, 4),
    lone=st.floats(0.1, 20.0),
    most=st.integers(1, 40),
    bound=st.integers(1, 40),
)
def test_the_bound_is_the_last_size_a_move_could_lose_at(q_one, gains, m, lone, most, bound):
    tiers = tuple(step(2**k, gain) for k, gain in enumerate(gains, start=1))
    credit = (q_one, tuple(gains))
    found = needed_replicas(tiers, most, bound, m, [credit], [lone])

    def loses(n: int) -> bool:
        lost = pooled_credit(credit, tiers, bound, n) - pooled_credit(credit, tiers, bound, n - m)
        return lost > lone * (1 + 1e-9)

    # Brute force over every size the pool may hold: no move above the bound loses.
    assert all(not loses(n) for n in range(max(found + 1, m), most + 1))
    # ... and it is tight: a move could lose at the bound, or it is m - 1, or no bound
    # at all (a move could lose at sizes beyond the pool's, were it larger).
    assert found in (min(m - 1, most), most) or loses(found)


def region_loss_instance():
    """A 70B model in two regions that fail over to each other, on two GPU types with
    TP1, TP2 and TP4 layouts (so a larger replica of the same type exists)."""
    return instance(
        {"east": {H100: (64, 2.0), H200: (64, 3.5)}, "west": {H100: (64, 2.2)}},
        [workload("chat", {"east": 6.0, "west": 3.0}, model=MODEL, max_failover_rtt_ms=80)],
        links=[("east", "west", 40)],
        survive="region",
        tensor_parallel=[1, 2, 4],
        models={MODEL: ["fp8"]},
        policy={"buy_unit": "gpu", "max_configs_per_pool": None},
    )


def test_the_bounds_keep_the_optimum_of_the_plain_program():
    inst = region_loss_instance()
    program = build_program(inst, build_candidates(inst))
    bounds = dominance_bounds(program)
    assert bounds  # some layout has a larger one of its GPU type that carries more
    for name, (lower, upper) in bounds.items():
        assert lower == 0.0
        assert upper < program.lp.variables[name].upper
    backend = get_backend("highs")
    settings = SolveSettings.of(inst, mip_gap=0.0, time_limit_s=60).started().with_duals(False)
    free = backend.run(program.lp, settings)
    bounded = backend.run(with_bounds(program.lp, bounds), settings)
    assert bounded.objective == pytest.approx(free.objective, rel=1e-9)
    # optimise applies them, and returns the program's columns only
    optimised = optimise(program, backend, settings).result
    assert optimised.objective == pytest.approx(free.objective, rel=1e-9)
    assert set(optimised.values) <= set(program.lp.variables)


def test_a_pool_the_caller_bounds_is_neither_bounded_nor_relied_on():
    inst = region_loss_instance()
    program = build_program(inst, build_candidates(inst))
    name = next(iter(dominance_bounds(program)))
    region = ReplicasColumn.parse(name).region
    # Fix every other pool of the region at 0: nothing is left to move replicas to.
    names = [
        ReplicasColumn(p.workload, p.candidate.key, p.region).name()
        for p in program.sets.pools
        if p.region == region
    ]
    fixed = {other: (0.0, 0.0) for other in names if other != name}
    assert name not in dominance_bounds(program, fixed)
    assert not set(fixed) & set(dominance_bounds(program, fixed))


def test_no_bounds_with_a_limit_on_configurations_per_pool():
    inst = region_loss_instance()
    limited = with_policy(inst, max_configs_per_pool=1)
    assert dominance_bounds(build_program(limited, build_candidates(limited))) == {}


def test_the_sizes_a_pool_needs_leave_out_those_a_move_gains_at():
    # A (one GPU): q(1) = 1.42 and q(2) = 1.46 on its own curve; at the failover target
    # q(1) = 1.36 and q(2) = 1.46. B (two GPUs) carries 2.97 alone on both. Moving two
    # replicas of A into one of B takes from A's pool:
    #   own curve: n = 2: 2 x 1.46 = 2.92; n = 3: 3 x 1.46 - 1.42 = 2.96; n >= 4: 2.92
    #   failover:  n = 2: 2.92;           n = 3: 3 x 1.46 - 1.36 = 3.02 > 2.97
    # so every size but 3 (and those below m = 2) can give way to B.
    tiers = (step(2, 0.04),)
    credits = [(1.42, (0.04,)), (1.36, (0.10,))]
    move = move_of(tiers, 64, 22, 2, credits, [2.97, 2.97])
    assert move.losing == {3}
    assert not move.beyond_loses  # 2 x 1.46 = 2.92 <= 2.97 at any larger size
    assert needed_sizes(64, [move]) == (0, 1, 3)


@settings(max_examples=200, deadline=None)
@given(
    q_one=st.floats(0.1, 5.0),
    gains=st.lists(st.floats(0.0, 1.0), min_size=0, max_size=3),
    others=st.lists(st.tuples(st.integers(1, 4), st.floats(0.1, 20.0)), min_size=1, max_size=3),
    most=st.integers(1, 40),
    bound=st.integers(1, 40),
)
def test_a_size_is_needed_exactly_when_no_move_gains_there(q_one, gains, others, most, bound):
    tiers = tuple(step(2**k, gain) for k, gain in enumerate(gains, start=1))
    credit = (q_one, tuple(gains))
    moves = [move_of(tiers, most, bound, m, [credit], [lone]) for m, lone in others]
    needed = needed_sizes(most, moves)

    def loses(n: int, m: int, lone: float) -> bool:
        if n < m:
            return True
        lost = pooled_credit(credit, tiers, bound, n) - pooled_credit(credit, tiers, bound, n - m)
        return lost > lone * (1 + 1e-9)

    checked = min(move.checked for move in moves)
    for n in range(most + 1):
        every_move_loses = all(loses(n, m, lone) for m, lone in others)
        # A size left out has a move that loses nothing there: a plan steps down from it.
        assert n in needed or not every_move_loses
        # Up to where every move was scanned, the needed sizes are exactly the others
        # (above it a size may be kept for safety).
        if n <= checked:
            assert (n in needed) == every_move_loses


def test_the_size_rows_leave_a_pool_its_needed_sizes_only():
    inst = region_loss_instance()
    program = build_program(inst, build_candidates(inst))
    pool = replace(program.sets.pools[0], tiers=(step(2, 0.1), step(4, 0.1)))
    replicas = ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name()
    steps = {p: PoolAtLeastColumn.of(pool, p).name() for p in (2, 4)}

    def feasible(n: int, credited: int | None) -> bool:
        """Whether the pool may hold n replicas with the step at `credited` on."""
        lp = LinearProgram("sizes")
        lp.add_variable(replicas, lower=n, upper=n, integer=True)
        for p, name in steps.items():
            on = 1.0 if p == credited else 0.0
            lp.add_variable(name, lower=on, upper=on, integer=True)
        add_pool_sizes(lp, pool, 1, (3, 4))  # needed: 0, 1, 3 and 4
        result = get_backend("highs").solve(lp, mip_gap=0.0)
        return result.termination is Termination.OPTIMAL

    assert [n for n in range(6) if feasible(n, None)] == [0, 1, 3, 4]
    # the step at 2 lies above the low range: credited at 3 or 4, not at 1
    assert [n for n in range(6) if feasible(n, 2)] == [3, 4]
    assert [n for n in range(6) if feasible(n, 4)] == [4]


def test_a_start_at_a_needed_size_gets_its_size_binaries():
    inst = region_loss_instance()
    program = build_program(inst, build_candidates(inst))
    pool = replace(program.sets.pools[0], tiers=(step(2, 0.1),))
    sizes = [PoolSizes(pool, 1, (3,))]
    replicas = ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name()
    step_column = PoolAtLeastColumn.of(pool, 2).name()
    lp = LinearProgram("start")
    lp.add_variable(replicas, upper=3, integer=True)
    lp.add_variable(step_column, upper=1, integer=True)
    lp = with_sizes(lp, sizes)
    for held, credited in ((0, 0.0), (1, 0.0), (3, 1.0)):
        start = {replicas: float(held), step_column: credited}
        start |= sizes_start(sizes, start)
        assert all(row.slack(start) >= 0 for row in lp.constraints.values())
