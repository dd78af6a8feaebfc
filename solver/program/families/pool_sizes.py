"""pool_size_is[w,c,r,h]: the sizes a pool needs, where dominance leaves a gap.

solver.candidates.replica_dominance finds, for a pool of candidate c, the sizes no plan needs: at
those, moving m replicas into one of a larger candidate of the same GPU type loses no
capacity. What is left is 0..L and a few sizes h_1 < ... above L + 1 (MI300X TP1
beside TP2 on the region-loss bench: 0, 1 and 3, since two TP1 replicas carry less than
one TP2 but three pooled ones carry more than TP2 plus one alone at the failover target).
With one binary per high size,

    pool_size_is[w,c,r,h]   binary: the pool holds exactly h replicas
    pool_sizes_one:         sum_h pool_size_is[h] <= 1
    pool_size_floor:        replicas - sum_h h x pool_size_is[h] >= 0
    pool_size_ceiling:      replicas - sum_h (h - L) x pool_size_is[h] <= L
    pool_step_size[P]:      pool_at_least[P] - sum_{h >= P} pool_size_is[h] <= 0   (P > L)

so replicas is in 0..L (every binary 0) or exactly h, and a pooling step above L is
credited only with a size that reaches it. The relaxation is no tighter (the pool's
capacity is still the chord to its largest size), but branch and bound no longer
visits the needless sizes (the README's speed notes).

These rows are added to the program a solve runs (solver.decompose.by_workload), never to the
program the plan is read from and priced on: the sizes left out are needless for the
optimum, not infeasible.
"""

from dataclasses import dataclass
from typing import ClassVar

from solver.program.families import add_row, register
from solver.program.families.pooling import PoolAtLeastColumn, PoolIndex, PoolStep
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index, ReplicasColumn
from solver.program.sets import Pool


@dataclass(frozen=True)
class PoolSizeIsColumn(Index):
    """pool_size_is[w,c,r,h]: 1 when the pool holds exactly h replicas."""

    family: ClassVar[str] = "pool_size_is"
    workload: str
    candidate: str
    region: str
    size: int


class PoolSizesOneRow(PoolIndex):
    """pool_sizes_one[w,c,r]."""

    family: ClassVar[str] = "pool_sizes_one"


class PoolSizeFloorRow(PoolIndex):
    """pool_size_floor[w,c,r]."""

    family: ClassVar[str] = "pool_size_floor"


class PoolSizeCeilingRow(PoolIndex):
    """pool_size_ceiling[w,c,r]."""

    family: ClassVar[str] = "pool_size_ceiling"


class PoolStepSizeRow(PoolStep):
    """pool_step_size[w,c,r,P]."""

    family: ClassVar[str] = "pool_step_size"


for _row, _text in (
    (PoolSizesOneRow, "a pool holds at most one of its needed sizes above its low range"),
    (PoolSizeFloorRow, "a pool at one of its needed sizes holds at least that many"),
    (PoolSizeCeilingRow, "a pool holds its low range or one of its needed sizes"),
    (PoolStepSizeRow, "a pooling step is credited only with a needed size that reaches it"),
):
    register(_row, _text, "$/month per replica", reported=False)


def add_pool_sizes(lp: LinearProgram, pool: Pool, low: int, high: tuple[int, ...]) -> None:
    """The size binaries and rows of one pool (its replicas column must be in `lp`)."""
    w, key, r = pool.workload, pool.candidate.key, pool.region
    replicas = ReplicasColumn(w, key, r).name()
    chosen = {
        h: lp.add_variable(PoolSizeIsColumn(w, key, r, h).name(), upper=1, integer=True)
        for h in high
    }
    add_row(lp, PoolSizesOneRow.of(pool), dict.fromkeys(chosen.values(), 1.0), Sense.LE, 1.0)
    floor = {replicas: 1.0, **{y: -float(h) for h, y in chosen.items()}}
    add_row(lp, PoolSizeFloorRow.of(pool), floor, Sense.GE, 0.0)
    ceiling = {replicas: 1.0, **{y: -float(h - low) for h, y in chosen.items()}}
    add_row(lp, PoolSizeCeilingRow.of(pool), ceiling, Sense.LE, float(low))
    for tier in pool.tiers:
        if tier.replicas <= low:
            continue
        step = PoolAtLeastColumn.of(pool, tier.replicas).name()
        terms = {step: 1.0, **{y: -1.0 for h, y in chosen.items() if h >= tier.replicas}}
        add_row(lp, PoolStepSizeRow.of(pool, tier.replicas), terms, Sense.LE, 0.0)
