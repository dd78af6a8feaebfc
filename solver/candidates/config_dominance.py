"""Pools no optimal plan needs when a pool runs one configuration: a whole pool of B
becomes a pool of A on the same GPUs.

With `policy.max_configs_per_pool: 1` (the default) each (workload, region, phase)
runs at most one configuration, so two candidates A and B of the same phase are never
both in use there. Let them run on the same GPU type at the same weight precision,
with gpus(B) = m x gpus(A) for a whole m >= 1. A pool of n replicas of B then has a
stand-in: m x n replicas of A, the same GPUs, so the same purchases, whole servers,
site power, supply and tie-break on GPUs used (solver.program.families.objective),
the same configurations counted and the same precision. Where A's pool may hold
m x n replicas (m x max_replicas(B) <= max_replicas(A)) and, on every curve its region's
capacity rows credit (its own, and each round trip users may be rerouted from),

    credit_A(m n)  >=  credit_B(n)        for n = 1 .. max_replicas(B)

(credit as the pooling steps give it: solver.candidates.replica_dominance.pooled_credit),
the stand-in lowers no capacity row (nor a Hall row, a sum of such credits), and any
plan using B has one as cheap without it: `replicas[w,B,r] <= 0` loses no optimum.
The relation is strict (A's credit above B's by a relative margin at every n), so no two
pools stand in for each other and the pools removed always keep one that dominates
them: a chain B -> A -> A' composes (A' is checked at every size A may hold).

Checking every n is not needed: with every pooling gain >= 0 each credit is linear in n
between its breakpoints (the sizes where a step starts, and where the credit bound M
stops the steps' growth), so the difference is linear between the union of both sides'
breakpoints (A's at n = ceil(P_k / m) and floor(M_A / m)) and is checked at each
breakpoint, the size just below it, and the ends. A pair with a negative gain is not
compared.

**Sizes, and the cap.** The same move works size by size, and a capacity row never asks
more of a phase's pools than the most its region may be sent: a row of scenario f
holds load_f[w,r,mode] / u <= cap = L[w,r] / u (L: `ProgramSets.max_load`, the most
requests/s of w routed to r in any scenario; a mode's load is part of what is served
in r, each origin's served flows sum to its demand, u = policy.max_utilization), so a
pool credited cap or more on a curve carries that curve's rows alone. Say that m x n
replicas of A stand in for n of B (`_stands_in_at`) when m x n <= max_replicas(A) and

    on every curve:   credit_A(m n) > credit_B(n)   or   credit_A(m n) >= cap
    and               on some curve credit_B(n) < min(credit_A(m n), cap)   (strict)
                      or A comes before B (fewer GPUs per replica, or as many and an
                      earlier key: `_ordered`)

(each comparison with the relative margin). The second clause of the first line is taken
where B runs pipeline stages only (pp > 1); for other pools A must credit more on every
curve. Valid for any B, it is held to those: elsewhere it only swaps layouts of equal
cost and trades headroom away (disaggregated.yaml's 2 H100 TP4 decode replicas, 44.8
req/s for the region's 40, would give way to 4 TP2 ones at 40.4) where no measured
search needed it. A relation that asks less of some pairs is a part of the capped one,
so the argument below holds for it as it stands. Then a plan with a pool of n of B has one as
cheap with m x n of A in its place: the same GPUs as above, and every capacity row on
each curve still holds (A credits more than B did, or as much as any row there asks).
Moves end: each raises the phase's capped credit, the sum over curves of
min(credit, cap), or keeps it and moves to a configuration earlier in the order, and a
phase has finitely many (configuration, size) states. So from any plan, moving every
pool held at a size where something stands in leads to a plan as cheap in which every
pool of B holds at most N_B, the largest size at which nothing stands in:
`replicas[w,B,r] <= N_B` loses no optimum, and N_B = 0 removes B. The whole-pool
relation above (strict at every size, with A before B) is one case of it, checked at
the breakpoints; the sizes of the other pools are walked from the top down. The cap
covers capacity rows only: a program with Hall rows (a set of regions' credits summed
against demand that may exceed what one region is sent) is compared without it.

On chat-3region the cap is what decides. 2n H100 TP2 prefill replicas in us-east carry
a little more than n TP2 x PP2 ones up to n = 12 (168.6 against 167.8 req/s at n = 12);
from n = 13 the TP2 pool is past its credit bound M = 25 (its steps credit no more
replicas) and the PP2 pool, whose lone replica carries 7.57 req/s against 2 x 2.03 for
two TP2 ones, is credited more (181.8 against 177.7), so the whole-pool relation fails;
but there the TP2 pool carries more than the 159.6 req/s us-east may be sent, so it
stands in at every size. The PP2 pools go or keep a few sizes: 70 of the program's 130
pools removed (44 by the whole-pool relation without the cap), 13 more held below their
supply bound, the optimum unchanged ($236,520).

Where the argument holds: the limit of one configuration per pool, no replica loss and
no zone loss in the pool's region (their survivor rows credit n - 1 and n - ceil(n / Z)
replicas, which this comparison does not cover), no elastic slack or shared groups,
and a program whose every row family is in `ALLOWED_ROWS` (those whose terms in a
pool's columns the argument accounts for, or that have none). Pools the caller bounds
are neither removed nor stand-ins (explain's re-solve without a pool must not rely on
it); a caller's bound on another kind of column gives no reduction.
"""

import math
from collections import defaultdict
from collections.abc import Sequence

from solver.candidates.pools import Tier
from solver.candidates.replica_dominance import (
    RELATIVE_MARGIN,
    Bounds,
    Credit,
    pool_column,
    pool_curves,
    pooled_credit,
)
from solver.program.build import FleetProgram
from solver.program.families.hall import HallRow
from solver.program.row_names import ReplicasColumn, split_name
from solver.program.sets import Pool

ALLOWED_ROWS = frozenset(
    {
        "capacity",
        "hall",
        "demand",
        "mode_split",
        "gpu_supply",
        "purchase",
        "whole_servers",
        "region_cost",
        "power",
        "extra_kw",
        "rack_space",
        "extra_racks",
        "pool_open",
        "pool_size",
        "pooled_within",
        "pooled_open",
        "pool_ladder",
        "configs_per_pool",
        "one_precision",
        "precision_open",
    }
)
"""Row families the argument holds for: a pool's columns enter them through its
credits (capacity, hall), its GPUs (purchase), its own pooling steps and open binary,
its configuration count and precision, or not at all. `pool_ladder` orders a pool's own
steps (step k credited only with step k - 1 and the pool open): the removed pool's
columns at 0 meet it, and the stand-in credited with every step its count reaches meets
it as any pool does."""

HALL = HallRow.family


def config_bounds(
    program: FleetProgram, bounds: Bounds | None = None, sizes: bool = False
) -> Bounds:
    """replicas[w,B,r] <= 0 for every pool B that a pool of A stands in for at every size
    (module docstring), and with `sizes` replicas[w,B,r] <= N_B for every other pool
    held at a size where one does, where the argument holds; {} elsewhere. (Without
    `sizes` for the callers that read a bound as "the pool is out": the plan floored at
    the regions' fleets, solver.decompose.regions.join, floors no pool with a bound.)"""
    sets = program.sets
    bounds = bounds or {}
    if (
        sets.instance.policy.max_configs_per_pool != 1
        or sets.survives_replica_loss
        or sets.slack is not None
        or program.groups.templates
        or any(split_name(name)[0] != ReplicasColumn.family for name in bounds)
        or any(row.family not in ALLOWED_ROWS for row in program.lp.constraints.values())
    ):
        return {}
    zone_regions = set(sets.zone_regions)
    alike: dict[tuple, list[Pool]] = defaultdict(list)
    for pool in sets.pools:
        c = pool.candidate
        if pool.region not in zone_regions and pool_column(pool) not in bounds:
            key = (pool.workload, pool.region, c.gpu, c.role, str(c.precision))
            alike[key].append(pool)
    hall = any(row.family == HALL for row in program.lp.constraints.values())
    found: Bounds = {}
    for pools in alike.values():
        if len(pools) < 2:
            continue
        w, r = pools[0].workload, pools[0].region
        curves = [None, *sets.rerouted_rtts_at.get((w, r), ())]
        credits = {id(pool): pool_curves(sets, pool, curves) for pool in pools}
        cap = math.inf if hall else sets.max_load.get((w, r), 0.0) * sets.load_per_capacity
        for b in pools:
            if any(
                _ordered(a, b) and _stands_in(a, b, credits[id(a)], credits[id(b)])
                for a in pools
                if a is not b
            ):
                found[pool_column(b)] = (0.0, 0.0)
                continue
            most = _needed(
                b, [(a, credits[id(a)]) for a in pools if a is not b], credits[id(b)], cap
            )
            if most == 0 or (sizes and most < b.max_replicas):
                found[pool_column(b)] = (0.0, float(most))
    return found


def _ordered(a: Pool, b: Pool) -> bool:
    """Whether A comes before B in the order that breaks ties: fewer GPUs per replica,
    then the earlier key."""
    ga, gb = a.candidate.gpus, b.candidate.gpus
    return ga < gb or (ga == gb and a.candidate.key < b.candidate.key)


def _needed(
    b: Pool, others: list[tuple[Pool, list[Credit]]], credits_b: list[Credit], cap: float
) -> int:
    """N: the largest size of B's pool (from its top down) at which no A stands in
    (`_stands_in_at`); 0 when one does at every size."""
    n = b.max_replicas
    while n >= 1 and any(
        _stands_in_at(a, b, credits_a, credits_b, n, cap) for a, credits_a in others
    ):
        n -= 1
    return n


def _stands_in_at(
    a: Pool, b: Pool, credits_a: list[Credit], credits_b: list[Credit], n: int, cap: float
) -> bool:
    """Whether m x n replicas of A stand in for a pool of n of B (the module docstring's
    capped relation): on every curve A's credit is above B's, or (B running pipeline
    stages) at `cap` or more (all any capacity row asks); and above B's below the cap on
    one curve, or A before B (`_ordered`)."""
    ga, gb = a.candidate.gpus, b.candidate.gpus
    if gb % ga or (gb // ga) * n > a.max_replicas:
        return False
    k = (gb // ga) * n
    covering = cap if b.candidate.config.pp > 1 else math.inf
    strict = False
    for credit_a, credit_b in dict.fromkeys(zip(credits_a, credits_b, strict=True)):
        if min(credit_a[1], default=0.0) < 0 or min(credit_b[1], default=0.0) < 0:
            return False
        ours = pooled_credit(credit_a, a.tiers, a.credit_replicas, k)
        theirs = pooled_credit(credit_b, b.tiers, b.credit_replicas, n)
        if ours <= theirs * (1 + RELATIVE_MARGIN) and ours < covering * (1 + RELATIVE_MARGIN):
            return False
        strict = strict or theirs * (1 + RELATIVE_MARGIN) < min(ours, cap)
    return strict or _ordered(a, b)


def _stands_in(a: Pool, b: Pool, credits_a: list[Credit], credits_b: list[Credit]) -> bool:
    """Whether m x n replicas of A carry more than n of B on every curve, at every n B's
    pool may hold (m = gpus(B) / gpus(A), whole), A's pool holding them."""
    ga, gb = a.candidate.gpus, b.candidate.gpus
    if gb % ga:
        return False
    m = gb // ga
    most = b.max_replicas
    if most < 1 or m * most > a.max_replicas:
        return False
    points = _check_points(a.tiers, a.credit_replicas, b.tiers, b.credit_replicas, m, most)
    # each pair of curves once (many round trips share theirs)
    for credit_a, credit_b in dict.fromkeys(zip(credits_a, credits_b, strict=True)):
        if min(credit_a[1], default=0.0) < 0 or min(credit_b[1], default=0.0) < 0:
            return False
        for n in points:
            ours = pooled_credit(credit_a, a.tiers, a.credit_replicas, m * n)
            theirs = pooled_credit(credit_b, b.tiers, b.credit_replicas, n)
            if ours <= theirs * (1 + RELATIVE_MARGIN):
                return False
    return True


def _check_points(
    tiers_a: Sequence[Tier], bound_a: int, tiers_b: Sequence[Tier], bound_b: int, m: int, most: int
) -> list[int]:
    """The sizes n of B's pool at which both credits' breakpoints fall, the size below
    each, and 1 and `most`: between them credit_A(m n) - credit_B(n) is linear in n."""
    starts = {1, most, bound_b, bound_b + 1, bound_a // m, bound_a // m + 1}
    starts |= {tier.replicas for tier in tiers_b}
    starts |= {math.ceil(tier.replicas / m) for tier in tiers_a}
    points = set()
    for n in starts:
        points |= {n - 1, n}
    return sorted(n for n in points if 1 <= n <= most)
