"""Pool sizes no optimal plan needs: m replicas of a candidate become one of a larger one.

Let A and B be candidates of one workload for the same phase (role, and weight
precision for a disaggregated half) on the same GPU type in region r, with B m times
as many GPUs per replica (m = gpus(B) / gpus(A) a whole number). The program credits
a pool of n replicas of A at most

    credit_A(n) = q_A(1) n + sum_{k : P_k <= n} gain_k x min(n, M)

(its pooling steps P_k, solver.families.pooling; M its credit bound), on its own curve
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

Measured on the 10 x 20 x 6 region-loss bench: MI300X TP1 (1.423 req/s alone, 1.462
per replica in a pool of 2; 1.360 alone at the failover target) beside TP2 (2.974 on
two GPUs): N = 3, where the program allowed 64 to 512. The bounds are applied by
`solver.decompose.optimise` to the plain solve only: not where the caller bounds a
candidate (explain's re-solves without a pool: B may be the pool removed), not with a
limit on configurations per pool (moving replicas to B may add a configuration), not
where the loss of one replica or of a zone is a scenario (their survivor credits have
steps of their own), not in the elastic program or with shared groups.
"""

from collections import defaultdict
from collections.abc import Sequence
from itertools import pairwise

from models.replica import Role
from solver.candidates import Candidate
from solver.pools import Tier
from solver.program import FleetProgram
from solver.row_names import ReplicasColumn, split_name
from solver.sets import Pool

Bounds = dict[str, tuple[float, float | None]]
Credit = tuple[float, tuple[float, ...]]
"""One curve as the capacity rows credit a pool: q(1) and each step's gain."""

RELATIVE_MARGIN = 1e-9
"""Relative slack in the comparison, against rounding in the credits."""


def pool_curves(pool: Pool, rtts_ms: Sequence[float | None]) -> list[Credit]:
    """q(1) and the steps' gains of `pool` on the curve of each round trip (None: its
    own curve; at the TTFT target less the round trip where that is tabulated, else its
    own), as the capacity rows credit them (`ProgramSets.failover_tiers`)."""
    c = pool.candidate
    own = (c.requests_per_s, tuple(tier.gain for tier in pool.tiers))
    credits = []
    for rtt_ms in rtts_ms:
        curve = None if rtt_ms is None else c.failover_curve(rtt_ms)
        if curve is None:
            credits.append(own)
            continue
        levels = [curve.requests_per_s(1), *(curve.requests_per_s(t.replicas) for t in pool.tiers)]
        gains = tuple(high - low for low, high in pairwise(levels))
        credits.append((levels[0], gains))
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


def needed_replicas(
    tiers: Sequence[Tier], most: int, bound: int, m: int, credits: list[Credit], lone: list[float]
) -> int:
    """N: the most replicas of a pool of A any plan needs, given B with m times its GPUs.

    Args:
        tiers: A's pooling steps in the region.
        most: The most replicas A's pool may hold (what the region can host).
        bound: M, the most replicas a step is credited on.
        m: gpus(B) / gpus(A).
        credits: A's q(1) and gains on each curve the region credits it on.
        lone: B's lone capacity on the same curves, in the same order.

    Returns:
        The largest n <= most at which moving m replicas into one of B could lower a
        capacity row on some curve (m - 1 when there is none; `most` when it could
        happen at arbitrarily large n).
    """
    top = (tiers[-1].replicas if tiers else 1) + m
    needed = m - 1
    for credit, q_b in zip(credits, lone, strict=True):
        # Above `top` the difference is at most m x the best capacity per replica.
        levels = [credit[0]]
        for gain in credit[1]:
            levels.append(levels[-1] + gain)
        if most > top and m * max(levels) > q_b * (1 + RELATIVE_MARGIN):
            return most
        for n in range(m, min(most, top) + 1):
            lost = pooled_credit(credit, tiers, bound, n)
            lost -= pooled_credit(credit, tiers, bound, n - m)
            if lost > q_b * (1 + RELATIVE_MARGIN):
                needed = max(needed, n)
    return min(needed, most)


def _above(b: Candidate, a: Candidate) -> bool:
    """Whether replicas of A may move into B: more GPUs per replica (a whole multiple),
    or as many and an earlier key (so moves never go round in a circle)."""
    if b.gpus == a.gpus:
        return b.key < a.key
    return b.gpus > a.gpus and b.gpus % a.gpus == 0


def _phase(c: Candidate) -> tuple[Role, str | None]:
    return c.role, None if c.role is Role.UNIFIED else str(c.precision)


def dominance_bounds(program: FleetProgram, bounds: Bounds | None = None) -> Bounds:
    """replicas[w,c,r] <= N for every pool where a larger replica makes more needless.

    Pools the caller bounds are left out, both as A and as B (explain's re-solve
    without a pool must not rely on it); any bound on another kind of column, and the
    programs where the argument does not hold (the module docstring), give none."""
    sets = program.sets
    bounds = bounds or {}
    if sets.needs_pool_used or sets.slack is not None or program.groups.templates:
        return {}
    if any(split_name(name)[0] != ReplicasColumn.family for name in bounds):
        return {}  # a bound on a pool's steps or purchases: not the plain program
    zone_regions = set(sets.zone_regions)
    alike: dict[tuple, list[Pool]] = defaultdict(list)
    for pool in sets.pools:
        c = pool.candidate
        if pool.region not in zone_regions:
            alike[(pool.workload, pool.region, c.gpu, _phase(c))].append(pool)
    found: Bounds = {}
    for pools in alike.values():
        if len(pools) < 2:
            continue
        free = [p for p in pools if _name(p) not in bounds]
        for pool in free:
            a = pool.candidate
            curves = [None, *sets.rerouted_rtts_at.get((pool.workload, pool.region), ())]
            credits = pool_curves(pool, curves)
            needed = pool.max_replicas
            for other in free:
                b = other.candidate
                if other is pool or not _above(b, a):
                    continue
                lone = [_lone(b, rtt_ms) for rtt_ms in curves]
                m = b.gpus // a.gpus
                most, bound = pool.max_replicas, pool.credit_replicas
                needed = min(needed, needed_replicas(pool.tiers, most, bound, m, credits, lone))
            if needed < pool.max_replicas:
                found[_name(pool)] = (0.0, float(needed))
    return found


def _lone(b: Candidate, rtt_ms: float | None) -> float:
    """B's lone capacity on the curve at `rtt_ms` (its own curve for None, or where the
    failover curve is not tabulated: what the capacity rows credit it)."""
    if rtt_ms is None:
        return b.requests_per_s
    curve = b.failover_curve(rtt_ms)
    return b.requests_per_s if curve is None else curve.requests_per_s(1)


def _name(pool: Pool) -> str:
    return ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name()
