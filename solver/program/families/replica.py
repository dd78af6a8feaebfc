"""Surviving the loss of any one replica (survive: replica): N+1 on every phase.

    pool_open[w,c,d]:     replicas[w,c,d] - M_c x pool_used[w,c,d] <= 0
    replica_spare[w,d,phase,c]:
        sum_{c' != c in C_w(phase)} credit[w,c',d] + credit_less_one[w,c,d]
            >= load_none[w,d,mode(phase)] / u      (u = policy.max_utilization)

    credit[w,c',d]        = q_c' x replicas[w,c',d] + pooling steps (families.pooling)
    credit_less_one[w,c,d] = q_c x (replicas[w,c,d] - pool_used[w,c,d]) + pooling steps
                            of a pool one replica smaller (families.pooling)

M_c = floor(available GPUs / gpus(c)) is the pool's own bound, so the big-M is tight.
One replica of one pool fails at a time: for every pool c that has replicas, the phase
still carries its `none` load (users stay in their region) without one replica of c.
The worst single loss is the pool with the largest q_c, and a row per pool makes the
max linear (without pooling steps, credit_less_one is the pool's credit less q_c x
pool_used: one replica fewer; with them, the survivors are credited as a pool one
replica smaller). This is N+1 on each phase of each region: the phase's load is routed
to whichever pools are alive, so a spare of any pool covers the loss of a replica of
another, and one spare per (workload, region, phase) is what the policy asks, not one
per pool.
"""

from dataclasses import dataclass
from typing import ClassVar

from solver.program.families import add_row, register
from solver.program.families.pooling import pool_credit, pool_credit_less_one
from solver.program.families.split import load_terms
from solver.program.families.variables import PoolUsedColumn
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index, ReplicasColumn, ReplicaSpareRow
from solver.program.sets import ProgramSets


@dataclass(frozen=True)
class PoolOpenRow(Index):
    """pool_open[w,c,d]."""

    family: ClassVar[str] = "pool_open"
    workload: str
    candidate: str
    region: str


POOL_OPEN = register(
    PoolOpenRow,
    "a pool with replicas counts as used",
    "$/month per replica",
    reported=False,
)
REPLICA_SPARE = register(
    ReplicaSpareRow,
    "the phase still carries its no-failure load after losing one replica of the pool",
    "$/month per request/s of load",
)


def add_pool_open(lp: LinearProgram, sets: ProgramSets) -> None:
    """pool_open rows for every pool, where pool_used exists (survive: replica, or a
    limit on the configurations of a pool)."""
    if not sets.needs_pool_used:
        return
    for pool in sets.pools:
        w, key, d = pool.workload, pool.candidate.key, pool.region
        add_row(
            lp,
            PoolOpenRow(w, key, d),
            {
                ReplicasColumn(w, key, d).name(): 1.0,
                PoolUsedColumn(w, key, d).name(): -float(pool.max_replicas),
            },
            Sense.LE,
            0.0,
        )


def add_replica_spare(lp: LinearProgram, sets: ProgramSets) -> None:
    """replica_spare rows for every pool and phase (survive: replica)."""
    if not sets.survives_replica_loss:
        return
    for (w, d), modes in sets.modes.items():
        if ("none", w, d) not in sets.inflow:
            continue
        for mode in modes:
            load = load_terms(sets, "none", w, d, mode)
            for phase in mode.phases:
                pools = sets.phase_pools(w, d, phase)
                for lost in pools:
                    terms = {var: -sets.load_per_capacity for var in load}
                    for pool in pools:
                        if pool is lost:
                            terms.update(pool_credit_less_one(pool))
                        else:
                            terms.update(pool_credit(pool))
                    index = ReplicaSpareRow(w, d, phase.label, lost.candidate.key)
                    add_row(lp, index, terms, Sense.GE, 0.0)
