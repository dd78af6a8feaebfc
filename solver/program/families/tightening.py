"""Valid inequalities that tighten the relaxation of the pool ladder (settings.tighten).

Neither family changes the set of integer plans: each row holds at every integer point
of the program as built (the proofs below), so the optimum and every plan are those of
the program without them; only the LP relaxation, and so branch and bound, can differ.
They are off by default (`SolveSettings.tighten`): on the shipped instances they did not
shorten the solve (tests/bench/test_tightening_bench.py prints both side by side).

step_needs_pool[w,c,r,P]  (where pool_used exists: survive: replica, or
policy.max_configs_per_pool):

    pool_at_least[w,c,r,P] - pool_used[w,c,r] <= 0

Valid: pool_at_least = 1 gives replicas >= P >= 1 (pool_size), and pool_open
(replicas <= M x pool_used, M the pool's replica bound) then gives pool_used >= 1 / M > 0,
so the binary pool_used is 1. With pool_at_least = 0 the row reads -pool_used <= 0.
In the relaxation pool_open alone allows pool_used = replicas / M (M = 256 for an H100
TP2 pool), while a credited step asks pool_used >= pool_at_least >= pooled / M_credit.

step_servers[w,c,r,P]  (where r buys GPU type g = g(c) in servers of n_g > 1 GPUs):

    k x pool_at_least[w,c,r,P] - servers[r,g] <= 0,   k = ceil((gpus(c) x P - E) / n_g)

with E the existing GPUs of type g in r; written only where k >= 1 and
(gpus(c) x P - E) / n_g is not a whole number (elsewhere the LP already implies it).
Valid: pool_at_least = 1 gives replicas >= P (pool_size), so the GPUs of type g used in
r are at least gpus(c) x P; purchase gives purchased >= used - E, whole_servers
purchased = n_g x servers, hence servers >= (gpus(c) x P - E) / n_g, and servers is an
integer, so servers >= k (Chvatal-Gomory rounding of that chain). With pool_at_least = 0
the row reads -servers <= 0. Example: one 8-GPU server, a TP1 pool's step to P = 2
replicas: k = ceil(2 / 8) = 1, so a credited step buys a whole server where the LP
alone would buy a quarter of one.
"""

import math
from typing import ClassVar

from solver.program.families import add_row, register
from solver.program.families.pooling import PoolAtLeastColumn, PoolStep
from solver.program.families.servers import ServersColumn, server_offers
from solver.program.families.variables import PoolUsedColumn
from solver.program.lp import LinearProgram, Sense
from solver.program.sets import ProgramSets


class StepNeedsPoolRow(PoolStep):
    """step_needs_pool[w,c,r,P]."""

    family: ClassVar[str] = "step_needs_pool"


class StepServersRow(PoolStep):
    """step_servers[w,c,r,P]."""

    family: ClassVar[str] = "step_servers"


STEP_NEEDS_POOL = register(
    StepNeedsPoolRow,
    "a pool credited with a pooling step counts as used",
    "$/month per pool",
    reported=False,
)
STEP_SERVERS = register(
    StepServersRow,
    "a pool credited with a pooling step of P replicas has the whole servers they need",
    "$/month per server",
    reported=False,
)


def step_servers_needed(gpus: int, pool: int, existing: int, node_gpus: int) -> int | None:
    """k = ceil((gpus x pool - existing) / node_gpus) where that rounding adds to what the
    LP implies (the quotient is not whole) and k >= 1; None otherwise."""
    beyond = gpus * pool - existing
    if beyond <= 0 or beyond % node_gpus == 0:
        return None
    return math.ceil(beyond / node_gpus)


def add_tightening(lp: LinearProgram, sets: ProgramSets, on: bool) -> None:
    """step_needs_pool and step_servers for every pooling step (nothing when `on` is
    false, or in the elastic program)."""
    if not on or sets.slack:
        return
    servers = server_offers(sets)
    for pool in sets.pools:
        w, key, r = pool.workload, pool.candidate.key, pool.region
        used = PoolUsedColumn(w, key, r).name() if sets.needs_pool_used else None
        node = servers.get((r, pool.candidate.gpu))
        for tier in pool.tiers:
            at_least = PoolAtLeastColumn.of(pool, tier.replicas).name()
            if used is not None:
                add_row(
                    lp,
                    StepNeedsPoolRow.of(pool, tier.replicas),
                    {at_least: 1.0, used: -1.0},
                    Sense.LE,
                    0.0,
                )
            if node is None:
                continue
            existing = sets.offers[(r, pool.candidate.gpu)].existing
            k = step_servers_needed(pool.candidate.gpus, tier.replicas, existing, node)
            if k is not None:
                add_row(
                    lp,
                    StepServersRow.of(pool, tier.replicas),
                    {at_least: float(k), ServersColumn(r, pool.candidate.gpu).name(): -1.0},
                    Sense.LE,
                    0.0,
                )
