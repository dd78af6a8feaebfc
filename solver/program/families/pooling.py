"""Pooling: a pool of at least P replicas earns the capacity per replica of P behind one queue.

The replicas of one candidate serving one workload in one region sit behind one router,
and the capacity per replica q(n) of such a pool rises with its size n (M/G/c prompt
queue, `models.serving.capacity`). q(n) x n is not linear in replicas[w,c,r], so the program
credits it in steps: the pool's tiers P_1 < ... < P_K (solver.candidates.pools.Tier, from the
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
region (solver.candidates.pools.largest_useful_pool: the smallest pool that, credited as here,
alone carries the most the region may be sent, with a zone or a replica lost): a pool
larger than n_max could shed replicas and still carry every load, so crediting at most
n_max replicas and offering no step above n_max loses no plan, and the small M keeps the
relaxation tight (per step, these three rows are the convex hull of "no credit, or at
least P_k replicas"). The chain pooled[k] <= pooled[k-1] credits a step only on replicas
credited with the steps below: any plan can credit its steps that way (a pool of at
least P_k holds at least P_{k-1}), and the branching then never tries steps out of
order.

Where pool_used exists (survive: replica, or a limit on configurations), the steps are
laddered on it:

    pool_ladder[w,c,r,P_1]:   pool_at_least[1] - pool_used <= 0
    pool_ladder[w,c,r,P_k]:   pool_at_least[k] - pool_at_least[k-1] <= 0      (k >= 2)

The first holds in every integer solution: pool_at_least[1] = 1 gives replicas >= P_1 >=
1 (pool_size), and pool_open (replicas <= M x pool_used, solver.program.families.replica)
then sets the binary pool_used to 1. The others cut only integer solutions that credit a
step k with step k-1 uncredited, and each of those has a twin of the same cost that
satisfies every ladder row: uncredit each step above the lowest uncredited one, i. The
chain gives pooled[k] <= pooled[i] <= M x 0 = 0 for k > i (pooled_survivors likewise), so
pooled_open and pooled_survivors_open still hold at pool_at_least[k] = 0; every other row
pool_at_least enters only loosens when it falls to 0 (pool_size; replica_spare, whose
credit carries -spare_gain_k x pool_at_least[k] with spare_gain_k >= 0; pool_step_size
and solver.program.tightening's rows); pool_at_least costs nothing. So no optimum
moves. The relaxation's bound does not move either (pool_used costs nothing), but its
fractional pools do: chat-3region's root credits a TP2 pool at pool_at_least = 0.63 over
pool_used = n / M = 0.06; with the ladder HiGHS proves its optimum in fewer nodes (462
-> 354 over seeds 0-2, 545 -> 360 over 16; tests/bench/test_ladder_heuristics_bench.py:
the gain program by program).

The pool always has at least P_j replicas when it is credited with step j: that is
pool_size, not an assumption about the demand. Which steps exist is a matter of
optimality only (solver.candidates.pools.pool_tiers: sizes the region's supply and load can use).

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

from dataclasses import dataclass
from typing import ClassVar

from solver.candidates.pools import Tier
from solver.program.families import add_row, register
from solver.program.families.variables import PoolUsedColumn
from solver.program.families.zone import ZoneSurvivorsIndex
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index, ReplicasColumn
from solver.program.sets import Pool, ProgramSets


@dataclass(frozen=True)
class PoolIndex(Index):
    """[workload,candidate,region]: one pool (rows and columns of one pool share it; each
    family is a subclass naming itself)."""

    workload: str
    candidate: str
    region: str

    @classmethod
    def of(cls, pool: Pool) -> "PoolIndex":
        """The index of `pool`."""
        return cls(pool.workload, pool.candidate.key, pool.region)


@dataclass(frozen=True)
class PoolStep(Index):
    """[workload,candidate,region,pool]: one pooling step P of one pool (rows and columns
    of the pooling steps share it; each family is a subclass naming itself)."""

    workload: str
    candidate: str
    region: str
    pool: int
    """P_k: the pool size the step credits."""

    @classmethod
    def of(cls, pool: Pool, replicas: int) -> "PoolStep":
        """The index of `pool`'s step to a pool of `replicas`."""
        return cls(pool.workload, pool.candidate.key, pool.region, replicas)


class PoolAtLeastColumn(PoolStep):
    """pool_at_least[w,c,r,P]: 1 when the pool holds at least P replicas and is credited
    with the capacity per replica of a pool of P."""

    family: ClassVar[str] = "pool_at_least"


class PooledColumn(PoolStep):
    """pooled[w,c,r,P]: replicas credited with the step to a pool of P."""

    family: ClassVar[str] = "pooled"


class PooledSurvivorsColumn(PoolStep):
    """pooled_survivors[w,c,r,P]: zone survivors credited with the step to P."""

    family: ClassVar[str] = "pooled_survivors"


class PoolSizeRow(PoolStep):
    """pool_size[w,c,r,P]."""

    family: ClassVar[str] = "pool_size"


class PooledWithinRow(PoolStep):
    """pooled_within[w,c,r,P]."""

    family: ClassVar[str] = "pooled_within"


class PooledOpenRow(PoolStep):
    """pooled_open[w,c,r,P]."""

    family: ClassVar[str] = "pooled_open"


class PoolLadderRow(PoolStep):
    """pool_ladder[w,c,r,P]."""

    family: ClassVar[str] = "pool_ladder"


class PooledSurvivorsWithinRow(PoolStep):
    """pooled_survivors_within[w,c,r,P]."""

    family: ClassVar[str] = "pooled_survivors_within"


class PooledSurvivorsOpenRow(PoolStep):
    """pooled_survivors_open[w,c,r,P]."""

    family: ClassVar[str] = "pooled_survivors_open"


POOL_SIZE = register(
    PoolSizeRow,
    "a pool credited with the queueing of P replicas behind one router holds at least P",
    "$/month per replica",
)
POOLED_WITHIN = register(
    PooledWithinRow,
    "a pooling step is credited on no more replicas than the step below (or the pool) is",
    "$/month per replica",
    reported=False,
)
POOLED_OPEN = register(
    PooledOpenRow,
    "a pooling step is credited only when the pool is at least that large",
    "$/month per replica",
    reported=False,
)
POOL_LADDER = register(
    PoolLadderRow,
    "a pool credited with a pooling step is used and credited with the step below",
    "$/month per pool",
    reported=False,
)
POOLED_SURVIVORS_WITHIN = register(
    PooledSurvivorsWithinRow,
    "a pooling step is credited on no more zone survivors than the step below (or the pool) is",
    "$/month per replica",
    reported=False,
)
POOLED_SURVIVORS_OPEN = register(
    PooledSurvivorsOpenRow,
    "a pooling step is credited to zone survivors only when the pool is at least that large",
    "$/month per replica",
    reported=False,
)


def add_pooling_variables(lp: LinearProgram, sets: ProgramSets) -> None:
    """pool_at_least (binary), pooled and, in zone-loss regions, pooled_survivors."""
    zone_regions = set(sets.zone_regions)
    for pool in sets.pools:
        for tier in pool.tiers:
            lp.add_variable(PoolAtLeastColumn.of(pool, tier.replicas).name(), upper=1, integer=True)
            lp.add_variable(PooledColumn.of(pool, tier.replicas).name(), upper=pool.credit_replicas)
            if pool.region in zone_regions:
                lp.add_variable(
                    PooledSurvivorsColumn.of(pool, tier.replicas).name(),
                    upper=pool.credit_replicas,
                )


def add_pool_steps(lp: LinearProgram, sets: ProgramSets) -> None:
    """pool_size, pooled_within and pooled_open for every tier of every pool (and their
    zone-survivor twins in zone-loss regions); pool_ladder where pool_used exists."""
    zone_regions = set(sets.zone_regions)
    for pool in sets.pools:
        w, key, r = pool.workload, pool.candidate.key, pool.region
        replicas = ReplicasColumn(w, key, r).name()
        bound = float(pool.credit_replicas)
        below, survivors_below = replicas, ZoneSurvivorsIndex(w, key, r).name()
        step_below = PoolUsedColumn(w, key, r).name() if sets.needs_pool_used else None
        for tier in pool.tiers:
            size = tier.replicas
            at_least = PoolAtLeastColumn.of(pool, size).name()
            pooled = PooledColumn.of(pool, size).name()
            if step_below is not None:
                terms = {at_least: 1.0, step_below: -1.0}
                add_row(lp, PoolLadderRow.of(pool, size), terms, Sense.LE, 0.0)
                step_below = at_least
            add_row(
                lp,
                PoolSizeRow.of(pool, size),
                {replicas: 1.0, at_least: -float(size)},
                Sense.GE,
                0.0,
            )
            add_row(lp, PooledWithinRow.of(pool, size), {pooled: 1.0, below: -1.0}, Sense.LE, 0.0)
            add_row(
                lp, PooledOpenRow.of(pool, size), {pooled: 1.0, at_least: -bound}, Sense.LE, 0.0
            )
            below = pooled
            if r not in zone_regions:
                continue
            survivors = PooledSurvivorsColumn.of(pool, size).name()
            add_row(
                lp,
                PooledSurvivorsWithinRow.of(pool, size),
                {survivors: 1.0, survivors_below: -1.0},
                Sense.LE,
                0.0,
            )
            add_row(
                lp,
                PooledSurvivorsOpenRow.of(pool, size),
                {survivors: 1.0, at_least: -bound},
                Sense.LE,
                0.0,
            )
            survivors_below = survivors


def pool_credit(
    pool: Pool,
    zone_hit: bool = False,
    at: tuple[float, tuple[Tier, ...]] | None = None,
) -> dict[str, float]:
    """The requests/s a pool carries, as terms: q(1) per replica alive plus each
    pooling step's gain on the replicas credited with it. `zone_hit`: the pool's region
    has lost its fullest zone (its survivors and their steps are credited). `at`: q(1)
    and the steps on another curve of the pool (the same sizes; at a tighter TTFT
    target while it serves rerouted users, `ProgramSets.failover_tiers`)."""
    w, key, d = pool.workload, pool.candidate.key, pool.region
    q, tiers = at if at is not None else (pool.candidate.requests_per_s, pool.tiers)
    if zone_hit:
        terms = {ZoneSurvivorsIndex(w, key, d).name(): q}
        for tier in tiers:
            if tier.zone_gain:
                terms[PooledSurvivorsColumn.of(pool, tier.replicas).name()] = tier.zone_gain
        return terms
    terms = {ReplicasColumn(w, key, d).name(): q}
    for tier in tiers:
        terms[PooledColumn.of(pool, tier.replicas).name()] = tier.gain
    return terms


def pool_credit_less_one(pool: Pool) -> dict[str, float]:
    """The requests/s a pool carries with one replica lost, as terms:
    q(1) (replicas - pool_used) + sum_k spare_gain_k (pooled_k - pool_at_least_k)."""
    w, key, d = pool.workload, pool.candidate.key, pool.region
    q = pool.candidate.requests_per_s
    terms = {ReplicasColumn(w, key, d).name(): q, PoolUsedColumn(w, key, d).name(): -q}
    for tier in pool.tiers:
        if tier.spare_gain:
            terms[PooledColumn.of(pool, tier.replicas).name()] = tier.spare_gain
            terms[PoolAtLeastColumn.of(pool, tier.replicas).name()] = -tier.spare_gain
    return terms


def reached_steps(sets: ProgramSets, values: dict[str, float]) -> list[dict[str, float]]:
    """Per chosen pool, its pooling columns in the plan's twin that credits every step its
    replica count n reaches: pool_at_least[k] = 1 and pooled[k] = min(n, M) for each
    P_k <= n (pooled_survivors[k] = min(zone_survivors, M) in zone-loss regions); steps
    above n stay 0, as pool_size holds them.

    The twin costs what the plan costs (no pooling column is priced) and is a plan too:
    pool_size holds (n >= P_k), the chains pooled_within and pooled_survivors_within hold
    with equality or below (min(n, M) <= n), pooled_open and the columns' bounds at M;
    the credited steps are the ladder's first ones, so pool_ladder holds (pool_used = 1
    when n >= 1); replica_spare gains spare_gain_k x (min(n, M) - 1) >= 0 per step, and
    every capacity, Hall and spare row credits gains >= 0 (q never falls as the pool
    grows); solver.program.tightening's rows hold at every plan. The solver may leave a
    reached step uncredited where its row is slack anyway (peak.yaml's 6 x H100 pools:
    one credited q(2) on 6 replicas, the other q(1)); the read-back and the pricing LP
    of the twin read the capacity the pool really has."""
    zone_regions = set(sets.zone_regions)
    found = []
    for pool in sets.pools:
        w, key, r = pool.workload, pool.candidate.key, pool.region
        n = float(round(values.get(ReplicasColumn(w, key, r).name(), 0.0)))
        if n == 0 or not pool.tiers:
            continue
        bound = float(pool.credit_replicas)
        alive = values.get(ZoneSurvivorsIndex(w, key, r).name(), 0.0)
        columns = {}
        for tier in pool.tiers:
            if tier.replicas > n:
                break  # the tiers rise
            columns[PoolAtLeastColumn.of(pool, tier.replicas).name()] = 1.0
            columns[PooledColumn.of(pool, tier.replicas).name()] = min(n, bound)
            if r in zone_regions:
                columns[PooledSurvivorsColumn.of(pool, tier.replicas).name()] = min(alive, bound)
        found.append(columns)
    return found
