"""Pool sizes no optimal plan needs: m replicas of a candidate become one of a larger one.

Let A and B be candidates of one workload for the same phase (role, and weight
precision for a disaggregated half) on the same GPU type in region r, with B m times
as many GPUs per replica (m = gpus(B) / gpus(A) a whole number). The program credits
a pool of n replicas of A at most

    credit_A(n) = q_A(1) n + sum_{k : P_k <= n} gain_k x min(n, M)

(its pooling steps P_k, solver.program.families.pooling; M its credit bound), on its own curve
and, in a scenario that reroutes users to r, on the curve at the TTFT target less
their round trip. Moving m replicas of A into one more replica of B keeps the GPUs of
each type, so the cost, the supply and purchase rows, whole servers and power, and
changes every capacity row by

    q_B(1) - (credit_A(n) - credit_A(n - m))  >=  0   when  credit_A(n) - credit_A(n - m) <= q_B(1)

(B's pool gains at least q_B(1) per added replica: pool_at_least and pooled of B stay
as they were). If that holds on every curve for every n > N, any plan can move A's
replicas m at a time until A holds at most N: the bound replicas[w,A,r] <= N loses no
optimum. Without pooling steps N = m - 1 as soon as m q_A(1) <= q_B(1): two H100
TP1 replicas never beat one TP2 replica that carries more than both. Moves only go
"up" (to more GPUs per replica, or to an earlier key among equal ones), so moves made
for several candidates end.

Sizes below N at which some move loses nothing are not needed either (a plan steps
down from them); where the sizes left have a gap above a contiguous low range, the
solve holds the pool to them (solver.program.families.pool_sizes). On the region-loss
bench, MI300X TP1 beside TP2 needs 0, 1 or 3 replicas where the program allowed 0 to 512,
since two TP1 replicas carry less than one TP2 (1.462 req/s each in a pool of 2 against
2.974 on two GPUs) but three pooled ones carry more than TP2 plus one alone at the
failover target (1.360); most other pools need at most one (the README's speed notes).

The bounds are applied by `solver.decompose.by_workload.optimise` to the plain solve only: not
where the caller bounds a candidate (explain's re-solves without a pool: B may be the
pool removed), not with a limit on configurations per pool (moving replicas to B may
add a configuration) or replica loss (its spare rows), not in a region whose zone loss
is a scenario (survivor credits have steps of their own), not in the elastic program
or with shared groups, and not in the hourly program (solver.time.periods: spot and started
replicas are bounded by the pool's own bound).
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from models.serving.replica import Role
from solver.candidates.pools import Tier
from solver.candidates.table import Candidate
from solver.program.build import FleetProgram, with_bounds
from solver.program.families.pool_sizes import PoolSizeIsColumn, add_pool_sizes
from solver.program.lp import LinearProgram
from solver.program.row_names import ReplicasColumn, split_name
from solver.program.sets import Pool, ProgramSets

Bounds = dict[str, tuple[float, float | None]]
Credit = tuple[float, tuple[float, ...]]
"""One curve as the capacity rows credit a pool: q(1) and each step's gain."""

RELATIVE_MARGIN = 1e-9
"""Relative slack in the comparison, against rounding in the credits."""
MAX_HIGH_SIZES = 2
"""Most sizes above a pool's contiguous low range encoded one binary each (more: the
replica bound only)."""


def pool_curves(sets: ProgramSets, pool: Pool, rtts_ms: Sequence[float | None]) -> list[Credit]:
    """q(1) and the steps' gains of `pool` on the curve of each round trip (None: its
    own curve; at the TTFT target less the round trip where that is tabulated, else its
    own), as the capacity rows credit them (`ProgramSets.tiers_at_rtt`)."""
    own = (pool.candidate.requests_per_s, tuple(tier.gain for tier in pool.tiers))
    credits = []
    for rtt_ms in rtts_ms:
        at = None if rtt_ms is None else sets.tiers_at_rtt(rtt_ms, pool)
        credits.append(own if at is None else (at[0], tuple(tier.gain for tier in at[1])))
    return credits


def pooled_credit(credit: Credit, tiers: Sequence[Tier], bound: int, n: int) -> float:
    """The most the program credits a pool of n replicas: q(1) n plus each step's gain
    on up to `bound` replicas, over the steps P_k <= n (the best prefix of them)."""
    q_one, gains = credit
    total = best = q_one * max(n, 0)
    for tier, gain in zip(tiers, gains, strict=True):
        if tier.replicas > n:
            break
        total += gain * min(n, bound)
        best = max(best, total)
    return best


@dataclass(frozen=True)
class Move:
    """Moving m replicas of A into one more replica of B, size by size of A's pool."""

    m: int
    losing: frozenset[int]
    """Sizes n in [m, checked] at which the move could lower a capacity row."""
    checked: int
    beyond_loses: bool
    """Whether the move could lose at some size above `checked`."""

    def loses(self, n: int) -> bool:
        """Whether the move could lower a capacity row at a pool of n (True below m:
        there are not m replicas to move)."""
        if n < self.m:
            return True
        if n > self.checked:
            return self.beyond_loses
        return n in self.losing


def move_of(
    tiers: Sequence[Tier], most: int, bound: int, m: int, credits: list[Credit], lone: list[float]
) -> Move:
    """The sizes of A's pool at which moving m replicas into one of B could lose.

    Args:
        tiers: A's pooling steps in the region.
        most: The most replicas A's pool may hold (what the region can host).
        bound: M, the most replicas a step is credited on.
        m: gpus(B) / gpus(A).
        credits: A's q(1) and gains on each curve the region credits it on.
        lone: B's lone capacity on the same curves, in the same order.
    """
    checked = min(most, (tiers[-1].replicas if tiers else 1) + m)
    losing = set()
    beyond = False
    for credit, q_b in zip(credits, lone, strict=True):
        # Above `checked` the difference is at most m x the best capacity per replica.
        levels = [credit[0]]
        for gain in credit[1]:
            levels.append(levels[-1] + gain)
        beyond = beyond or m * max(levels) > q_b * (1 + RELATIVE_MARGIN)
        for n in range(m, checked + 1):
            lost = pooled_credit(credit, tiers, bound, n)
            lost -= pooled_credit(credit, tiers, bound, n - m)
            if lost > q_b * (1 + RELATIVE_MARGIN):
                losing.add(n)
    return Move(m, frozenset(losing), checked, beyond and most > checked)


def needed_sizes(most: int, moves: Sequence[Move]) -> tuple[int, ...]:
    """The sizes of A's pool (0 to `most`) at which every move could lose: any plan can
    move its way from another size down to one of these."""
    top = most
    for move in moves:
        if not move.beyond_loses:
            top = min(top, max([move.m - 1, *move.losing]))
    return tuple(n for n in range(top + 1) if all(move.loses(n) for move in moves))


def needed_replicas(
    tiers: Sequence[Tier], most: int, bound: int, m: int, credits: list[Credit], lone: list[float]
) -> int:
    """N: the most replicas of A's pool any plan needs beside B (`move_of`'s
    arguments): the largest size at which the move could lose, m - 1 when there is
    none, `most` when it could lose at any size."""
    return max(needed_sizes(most, [move_of(tiers, most, bound, m, credits, lone)]))


def _above(b: Candidate, a: Candidate) -> bool:
    """Whether replicas of A may move into B: more GPUs per replica (a whole multiple),
    or as many and an earlier key (so moves never go round in a circle)."""
    if b.gpus == a.gpus:
        return b.key < a.key
    return b.gpus > a.gpus and b.gpus % a.gpus == 0


def _phase(c: Candidate) -> tuple[Role, str | None]:
    return c.role, None if c.role is Role.UNIFIED else str(c.precision)


@dataclass(frozen=True)
class PoolSizes:
    """The sizes one pool needs: 0 to `low`, or one of `high` (each above low + 1)."""

    pool: Pool
    low: int
    high: tuple[int, ...]


@dataclass(frozen=True)
class Reduction:
    """What dominance lets the solve leave out: replica bounds, and the sizes in between
    that no plan needs (encoded by `with_sizes`)."""

    bounds: Bounds
    sizes: tuple[PoolSizes, ...] = ()


def dominance(program: FleetProgram, bounds: Bounds | None = None) -> Reduction:
    """replicas[w,c,r] <= N for every pool where a larger replica makes more needless,
    and the sizes up to N a plan needs where they leave a gap (at most `MAX_HIGH_SIZES`
    of them above the contiguous low range).

    Pools the caller bounds are left out, both as A and as B (explain's re-solve
    without a pool must not rely on it); any bound on another kind of column, and the
    programs where the argument does not hold (the module docstring), give none."""
    sets = program.sets
    bounds = bounds or {}
    if sets.needs_pool_used or sets.slack is not None or program.groups.templates:
        return Reduction({})
    if any(split_name(name)[0] != ReplicasColumn.family for name in bounds):
        return Reduction({})  # a bound on a pool's steps or purchases: not the plain program
    zone_regions = set(sets.zone_regions)
    alike: dict[tuple, list[Pool]] = defaultdict(list)
    for pool in sets.pools:
        c = pool.candidate
        if pool.region not in zone_regions:
            alike[(pool.workload, pool.region, c.gpu, _phase(c))].append(pool)
    found: Bounds = {}
    sizes = []
    for pools in alike.values():
        if len(pools) < 2:
            continue
        free = [p for p in pools if pool_column(p) not in bounds]
        for pool in free:
            a = pool.candidate
            curves = [None, *sets.rerouted_rtts_at.get((pool.workload, pool.region), ())]
            credits = pool_curves(sets, pool, curves)
            most, bound = pool.max_replicas, pool.credit_replicas
            moves = [
                move_of(pool.tiers, most, bound, other.candidate.gpus // a.gpus, credits, lone)
                for other in free
                if other is not pool and _above(other.candidate, a)
                for lone in [[lone_capacity(other.candidate, rtt_ms) for rtt_ms in curves]]
            ]
            needed = needed_sizes(most, moves)
            if needed[-1] >= most:
                continue
            found[pool_column(pool)] = (0.0, float(needed[-1]))
            low = next((n - 1 for n in range(len(needed)) if needed[n] != n), len(needed) - 1)
            high = needed[low + 1 :]
            if 0 < len(high) <= MAX_HIGH_SIZES:
                sizes.append(PoolSizes(pool, low, high))
    return Reduction(found, tuple(sizes))


def dominance_bounds(program: FleetProgram, bounds: Bounds | None = None) -> Bounds:
    """The replica bounds of `dominance`."""
    return dominance(program, bounds).bounds


def lone_capacity(b: Candidate, rtt_ms: float | None) -> float:
    """A lone replica's capacity on the curve at `rtt_ms` (its own curve for None, or
    where the failover curve is not tabulated: what the capacity rows credit it)."""
    if rtt_ms is None:
        return b.requests_per_s
    curve = b.failover_curve(rtt_ms)
    return b.requests_per_s if curve is None else curve.requests_per_s(1)


def pool_column(pool: Pool) -> str:
    """The name of the pool's replicas column."""
    return ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name()


def with_sizes(lp: LinearProgram, sizes: Sequence[PoolSizes]) -> LinearProgram:
    """A copy of `lp` with the size binaries and rows (solver.program.families.pool_sizes) of
    every pool in `sizes` whose replicas it has."""
    found = [size for size in sizes if pool_column(size.pool) in lp.variables]
    if not found:
        return lp
    copy = with_bounds(lp, {})
    for size in found:
        add_pool_sizes(copy, size.pool, size.low, size.high)
    return copy


def sizes_start(sizes: Sequence[PoolSizes], values: dict[str, float]) -> dict[str, float]:
    """The size binaries of a plan of the program (a warm start), so that it stays a plan
    of the program with the size rows: pool_size_is[h] = 1 where the pool holds h."""
    found = {}
    for size in sizes:
        held = round(values.get(pool_column(size.pool), 0.0))
        for h in size.high:
            w, key, r = size.pool.workload, size.pool.candidate.key, size.pool.region
            found[PoolSizeIsColumn(w, key, r, h).name()] = float(held == h)
    return found
