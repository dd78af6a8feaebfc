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

Where the argument holds: the limit of one configuration per pool, no replica loss and
no zone loss in the pool's region (their survivor rows credit n - 1 and n - ceil(n / Z)
replicas, which this comparison does not cover), no elastic slack or shared groups,
and a program whose every row family is in `ALLOWED_ROWS` (those whose terms in a
pool's columns the argument accounts for, or that have none). Pools the caller bounds
are neither removed nor stand-ins (explain's re-solve without a pool must not rely on
it); a caller's bound on another kind of column gives no reduction. On chat-3region
it removes 44 of 132 pools (an H100 TP4 prefill replica beside two TP2 ones that carry
more on the same eight GPUs), the optimum unchanged.
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


def config_bounds(program: FleetProgram, bounds: Bounds | None = None) -> Bounds:
    """replicas[w,B,r] <= 0 for every pool B with a stand-in A (module docstring) where
    the argument holds; {} elsewhere."""
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
    found: Bounds = {}
    for pools in alike.values():
        if len(pools) < 2:
            continue
        curves = [None, *sets.rerouted_rtts_at.get((pools[0].workload, pools[0].region), ())]
        credits = {id(pool): pool_curves(sets, pool, curves) for pool in pools}
        for b in pools:
            if any(_stands_in(a, b, credits[id(a)], credits[id(b)]) for a in pools if a is not b):
                found[pool_column(b)] = (0.0, 0.0)
    return found


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
