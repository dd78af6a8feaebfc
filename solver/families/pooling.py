"""Pooling: a pool of at least P replicas earns the capacity per replica of P behind one queue.

The replicas of one candidate serving one workload in one region sit behind one router,
and the capacity per replica q(n) of such a pool rises with its size n (M/G/c prompt
queue, `models.capacity`). q(n) x n is not linear in replicas[w,c,r], so the program
credits it in steps: the pool's tiers P_1 < ... < P_K (solver.pools.Tier, from the
candidate's ladder), with P_0 = 1 and q_k = q(P_k). Per pool and step k >= 1:

    pool_at_least[w,c,r,P_k]  binary: the pool is credited with step k
    pooled[w,c,r,P_k]         >= 0: replicas credited with the step's gain

    pool_size[w,c,r,P_k]:      replicas - P_k x pool_at_least[k] >= 0
    pooled_within[w,c,r,P_k]:  pooled[k] - pooled[k-1] <= 0      (pooled[0] = replicas)
    pooled_open[w,c,r,P_k]:    pooled[k] - M x pool_at_least[k] <= 0

and the pool's capacity in every capacity row is the telescoping sum

    q_0 x replicas + sum_k (q_k - q_{k-1}) x pooled[k]

Sound: let j be the largest step credited. Then replicas >= P_j, and the credit is at
most q_0 n + sum_{k <= j} (q_k - q_{k-1}) n = q_j n <= q(n) n, what the physics gives a
pool of n (q never falls as the pool grows). Steps credited out of order, or on fewer
replicas, only credit less. Never worse than before: every pool_at_least = 0 is the old
program (q(1) per replica, any pool size), so pooling can only lower the optimum.

M = min(the pool's replica bound, n_max), n_max the largest pool worth having in the
region (solver.pools.largest_useful_pool: the smallest pool that, credited as here,
alone carries the most the region may be sent, with a zone or a replica lost): a pool
larger than n_max could shed replicas and still carry every load, so crediting at most
n_max replicas and offering no step above n_max loses no plan, and the small M keeps the
relaxation tight (per step, these three rows are the convex hull of "no credit, or at
least P_k replicas"). The chain pooled[k] <= pooled[k-1] credits a step only on replicas
credited with the steps below: any plan can credit its steps that way (a pool of at
least P_k holds at least P_{k-1}), and the branching then never tries steps out of
order.

The pool always has at least P_j replicas when it is credited with step j: that is
pool_size, not an assumption about the demand. Which steps exist is a matter of
optimality only (solver.pools.pool_tiers: sizes the region's supply and load can use).

Survivors, with the same steps (n - 1 and n - ceil(n / Z) never fall as n grows, so a
pool credited with P_k keeps at least the survivors of a pool of P_k):

- one replica lost (survive: replica), in replica_spare[..,c] for the lost pool:
      q_0 (replicas - pool_used) + sum_k (q(R_k) - q(R_{k-1})) (pooled[k] - pool_at_least[k])
  with R_k = max(1, P_k - 1): n - 1 >= R_k survivors at q(R_k) each.
- its fullest zone lost (survive: zone), in capacity[lose=<r>/zone,..]:
      q_0 x zone_survivors + sum_k (q(S_k) - q(S_{k-1})) x pooled_survivors[k]
      pooled_survivors_within[w,c,r,P_k]:  pooled_survivors[k] - pooled_survivors[k-1]
                                           <= 0    (pooled_survivors[0] = zone_survivors)
      pooled_survivors_open[w,c,r,P_k]:    pooled_survivors[k] - M x pool_at_least[k] <= 0
  with S_k = max(1, P_k - ceil(P_k / Z)).
"""

from solver.families import register
from solver.lp import LinearProgram, Sense
from solver.sets import ProgramSets

POOL_SIZE = register(
    "pool_size",
    "[workload,candidate,region,pool]",
    "a pool credited with the queueing of P replicas behind one router holds at least P",
    "$/month per replica",
)
POOLED_WITHIN = register(
    "pooled_within",
    "[workload,candidate,region,pool]",
    "a pooling step is credited on no more replicas than the step below (or the pool) is",
    "$/month per replica",
    reported=False,
)
POOLED_OPEN = register(
    "pooled_open",
    "[workload,candidate,region,pool]",
    "a pooling step is credited only when the pool is at least that large",
    "$/month per replica",
    reported=False,
)
POOLED_SURVIVORS_WITHIN = register(
    "pooled_survivors_within",
    "[workload,candidate,region,pool]",
    "a pooling step is credited on no more zone survivors than the step below (or the pool) is",
    "$/month per replica",
    reported=False,
)
POOLED_SURVIVORS_OPEN = register(
    "pooled_survivors_open",
    "[workload,candidate,region,pool]",
    "a pooling step is credited to zone survivors only when the pool is at least that large",
    "$/month per replica",
    reported=False,
)
BIG_M_FAMILIES = (POOLED_OPEN.name, POOLED_SURVIVORS_OPEN.name)
"""Rows whose pool_at_least coefficient is the pool's replica bound (solver.diagnose
widens it with the bound)."""


def add_pooling_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """pool_at_least (binary), pooled and, in zone-loss regions, pooled_survivors."""
    zone_regions = set(sets.zone_regions)
    for pool in sets.pools:
        w, c, r = pool.workload, pool.candidate, pool.region
        for tier in pool.tiers:
            lp.add_variable(sets.pool_at_least(w, c, r, tier.replicas), upper=1, integer=True)
            lp.add_variable(sets.pooled(w, c, r, tier.replicas), upper=pool.credit_replicas)
            if r in zone_regions:
                lp.add_variable(
                    sets.pooled_survivors(w, c, r, tier.replicas), upper=pool.credit_replicas
                )


def add_pool_steps(lp: LinearProgram, sets: ProgramSets) -> None:
    """pool_size, pooled_within and pooled_open for every tier of every pool (and their
    zone-survivor twins in zone-loss regions)."""
    zone_regions = set(sets.zone_regions)
    for pool in sets.pools:
        w, c, r = pool.workload, pool.candidate, pool.region
        replicas = sets.replicas(w, c, r)
        bound = float(pool.credit_replicas)
        below, survivors_below = replicas, sets.zone_survivors(w, c, r)
        for tier in pool.tiers:
            size = tier.replicas
            index = f"{w},{c.key},{r},{size}"
            at_least = sets.pool_at_least(w, c, r, size)
            pooled = sets.pooled(w, c, r, size)
            lp.add_constraint(
                f"pool_size[{index}]",
                POOL_SIZE.name,
                {replicas: 1.0, at_least: -float(size)},
                Sense.GE,
                0.0,
            )
            lp.add_constraint(
                f"pooled_within[{index}]",
                POOLED_WITHIN.name,
                {pooled: 1.0, below: -1.0},
                Sense.LE,
                0.0,
            )
            lp.add_constraint(
                f"pooled_open[{index}]",
                POOLED_OPEN.name,
                {pooled: 1.0, at_least: -bound},
                Sense.LE,
                0.0,
            )
            below = pooled
            if r not in zone_regions:
                continue
            survivors = sets.pooled_survivors(w, c, r, size)
            lp.add_constraint(
                f"pooled_survivors_within[{index}]",
                POOLED_SURVIVORS_WITHIN.name,
                {survivors: 1.0, survivors_below: -1.0},
                Sense.LE,
                0.0,
            )
            lp.add_constraint(
                f"pooled_survivors_open[{index}]",
                POOLED_SURVIVORS_OPEN.name,
                {survivors: 1.0, at_least: -bound},
                Sense.LE,
                0.0,
            )
            survivors_below = survivors
