"""Pools no optimal plan needs: a replica of another layout, on any GPU type of the same
region, that costs no more and carries more in every row.

Let A and B be pools of one workload's same phase in region r, with u_c the monthly cost
of one replica of c (its GPUs at the region's price, and the tie-break per GPU), and on
every curve f the region's capacity rows credit (its own, and each round trip users may
be rerouted from: solver.program.families.capacity)

    top_A(f)   = q_A(f, 1) + sum_k max(0, gain_k(f))    the most one replica of A is
                                                         ever credited (every step)
    lone_B(f)  = q_B(f, 1)                               the least one more replica of
                                                         B adds (its steps unchanged)

B dominates A when u_B <= u_A and lone_B(f) >= top_A(f) on every curve, and one of them
is strict, or B's key is the earlier (so the relation is a strict order: transitive,
since top >= lone, and never circular). Moving every replica of A into B's pool then
costs no more and lowers no capacity row. The move adds GPUs of B's type, so it needs
room in the supply:

- The cover. For each workload w, c_p alone, N_p = ceil(L_wr / min_f q_c(f, 1))
  replicas, carries phase p of any load of w that r may be sent (L_wr,
  `ProgramSets.max_load`, per unit of capacity); one mode's covers cost
  sum_p u_c N_p, and C*_wr is the cheapest mode's. Where every workload's covers fit
  r's supply together, an optimal plan spends at most C*_r = sum_w C*_wr in r: a plan
  spending more could replace all it has in r by the covers and pay less.
- So after the moves (which never raise what r costs) r uses at most C*_r / u_g GPUs of
  type g (u_g one GPU's monthly cost), when every GPU in r is bought at its price (no
  existing fleet there: its GPUs cost nothing until used up). Where that fits g's
  supply, any dominated A can move into a B on g that nothing dominates. A GPU type the
  workloads compete for (the cheap one a decomposed join overfills, solver.decompose.join)
  has no such room, and pools moving into it stay.

So `replicas[w,A,r] <= 0` loses no optimum for every A with such a dominator. (An A100
TP2 replica of a 70B model carries almost nothing; one MI300X TP2 replica costs less than
an A100 TP4 one and carries more than the A100's largest pool credits per replica.) On the
region-loss bench about half the pools go, every program's optimum unchanged (the
README's speed notes).

The argument takes a program whose rows and columns are the plain ones (`PLAIN_ROWS`,
`PLAIN_COLUMNS`): no whole servers, site power, replica or zone loss, limit on
configurations, spot or pricing tiers, shared groups or elastic slack, each of which
changes what a move costs or carries. That is every part of a decomposed solve (they
buy single GPUs), and an instance that buys single GPUs. Regions with an existing
fleet, a zone-loss scenario, or a pool the caller bounds from below are left alone;
pools the caller bounds are neither moved nor moved into (explain's re-solve without a
pool must not rely on it), and so are regions whose supply the caller narrows (a part
re-solved within what the other parts leave of it, solver.decompose.join). Same-GPU
dominance (solver.candidates.replica_dominance) then runs on the pools left (`optimal_reduction`):
its moves never fill a pool removed here, and they keep the GPUs of each type, so a
narrowed supply row holds after them.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from solver.candidates.config_dominance import config_bounds
from solver.candidates.replica_dominance import (
    Bounds,
    Reduction,
    dominance,
    lone_capacity,
    pool_column,
    pool_curves,
    with_sizes,
)
from solver.program.build import FleetProgram, with_bounds
from solver.program.families.capacity import CapacityRow
from solver.program.families.demand import DemandRow
from solver.program.families.hall import HallRow
from solver.program.families.pooling import (
    PoolAtLeastColumn,
    PooledColumn,
    PooledOpenRow,
    PooledWithinRow,
    PoolSizeRow,
)
from solver.program.families.split import ModeSplitRow
from solver.program.families.supply import PurchaseRow
from solver.program.families.variables import ModeLoadColumn, PurchasedColumn, ServedColumn
from solver.program.lp import LinearProgram
from solver.program.row_names import GpuSupplyRow, ReplicasColumn, split_name
from solver.program.sets import Pool, ProgramSets

PLAIN_ROWS = frozenset(
    row.family
    for row in (
        CapacityRow,
        DemandRow,
        HallRow,
        ModeSplitRow,
        GpuSupplyRow,
        PurchaseRow,
        PoolSizeRow,
        PooledWithinRow,
        PooledOpenRow,
    )
)
"""Row families of a program the argument holds for (a Hall row, solver.program.families.hall,
is a sum of capacity rows' credits: a move that lowers no capacity row lowers none)."""
PLAIN_COLUMNS = frozenset(
    column.family
    for column in (ReplicasColumn, ServedColumn, PurchasedColumn, PoolAtLeastColumn, PooledColumn)
)
"""Column families of such a program (and the serving modes' load columns)."""
PRICED_COLUMNS = frozenset((PurchasedColumn.family, ReplicasColumn.family))
"""The columns its objective may price: purchases, and the tie-break on replicas."""


def optimal_reduction(
    program: FleetProgram,
    bounds: Bounds | None = None,
    narrowed: frozenset[str] = frozenset(),
    configs: bool = True,
) -> Reduction:
    """What the dominance arguments let the solve leave out: the pools removed here
    (`swap_bounds`, not in the `narrowed` regions) and, with one configuration per pool,
    those a pool of another layout on the same GPUs stands in for
    (solver.candidates.config_dominance, pools and sizes; with `configs` only),
    then same-GPU dominance
    (solver.candidates.replica_dominance.dominance) on the pools left."""
    removed = swap_bounds(program, bounds, narrowed)
    if configs:
        removed |= config_bounds(program, {**(bounds or {}), **removed}, sizes=True)
    same_gpu = dominance(program, {**(bounds or {}), **removed})
    return Reduction({**removed, **same_gpu.bounds}, same_gpu.sizes)


def reduced_program(
    program: FleetProgram, bounds: Bounds | None = None, supply: dict[str, float] | None = None
) -> LinearProgram:
    """The program's LP to solve: within the caller's `bounds` (which win) and, for each
    gpu_supply row named in `supply`, within that many GPUs; reduced to the pools and
    sizes an optimal plan needs (`optimal_reduction`)."""
    bounds, supply = bounds or {}, supply or {}
    narrowed = frozenset(GpuSupplyRow.parse(name).region for name in supply)
    reduction = optimal_reduction(program, bounds, narrowed)
    lp = with_sizes(with_bounds(program.lp, {**reduction.bounds, **bounds}), reduction.sizes)
    for name, gpus in supply.items():
        lp.constraints[name] = replace(lp.constraints[name], rhs=gpus)
    return lp


def swap_bounds(
    program: FleetProgram, bounds: Bounds | None = None, narrowed: frozenset[str] = frozenset()
) -> Bounds:
    """replicas[w,A,r] <= 0 for every pool A another pool of its workload, phase and
    region dominates (the module docstring), where the argument holds (not in the
    `narrowed` regions, whose supply the caller lowers); {} elsewhere."""
    sets = program.sets
    bounds = bounds or {}
    if not _plain(program) or any(split_name(n)[0] != ReplicasColumn.family for n in bounds):
        return {}
    zone_regions = set(sets.zone_regions)
    found: Bounds = {}
    for r in sets.regions:
        offers = [offer for (region, _), offer in sets.offers.items() if region == r]
        if r in zone_regions or r in narrowed:
            continue
        if any(o.existing > 0 or o.price_per_gpu_hour <= 0 for o in offers):
            continue
        pools = [p for w in sets.workloads for p in sets.pools_at.get((w, r), ())]
        if any(bounds.get(pool_column(p), (0.0, None))[0] > 0 for p in pools):
            continue
        found |= _region_bounds(sets, r, [p for p in pools if pool_column(p) not in bounds])
    return found


def _plain(program: FleetProgram) -> bool:
    """Whether the program has the plain rows and columns only."""
    sets, lp = program.sets, program.lp
    if sets.slack is not None or program.groups.templates:
        return False
    if any(row.family not in PLAIN_ROWS for row in lp.constraints.values()):
        return False
    for name in lp.variables:
        family = split_name(name)[0]
        if family not in PLAIN_COLUMNS and not ModeLoadColumn.owns(family):
            return False
    return all(split_name(name)[0] in PRICED_COLUMNS for name in lp.objective)


@dataclass(frozen=True)
class _Replica:
    """One replica of a pool, as the argument compares it."""

    pool: Pool
    cost: float
    """u_c: $/month, its GPUs and their tie-break."""
    lone: tuple[float, ...]
    """q_c(f, 1) on each curve."""
    top: tuple[float, ...]
    """top_c(f): q_c(f, 1) and every positive step's gain, on each curve."""

    def dominates(self, other: "_Replica") -> bool:
        """Whether one more of this replica replaces one of `other` (the module
        docstring's strict order)."""
        pairs = list(zip(self.lone, other.top, strict=True))
        if self.cost > other.cost or any(mine < theirs for mine, theirs in pairs):
            return False
        strictly = self.cost < other.cost or any(mine > theirs for mine, theirs in pairs)
        return strictly or self.pool.candidate.key < other.pool.candidate.key


def _region_bounds(sets: ProgramSets, r: str, pools: Sequence[Pool]) -> Bounds:
    """The bounds of the pools of region r (none bounded by the caller)."""
    gpu_cost = {
        g: offer.price_per_gpu_hour * sets.hours_per_month + sets.tie_break_per_gpu
        for (region, g), offer in sets.offers.items()
        if region == r
    }
    replicas = {}
    for p in pools:
        curves = [None, *sets.rerouted_rtts_at.get((p.workload, r), ())]
        replicas[pool_column(p)] = _Replica(
            p,
            p.candidate.gpus * gpu_cost[p.candidate.gpu],
            tuple(lone_capacity(p.candidate, rtt_ms) for rtt_ms in curves),
            tuple(q + sum(max(0.0, g) for g in gains) for q, gains in pool_curves(sets, p, curves)),
        )
    spend = 0.0
    gpus: dict[str, int] = {}
    for w in sets.workloads:
        cover = _cover(sets, w, r, replicas)
        if cover is None:
            return {}
        spend += cover[0]
        for g, n in cover[1].items():
            gpus[g] = gpus.get(g, 0) + n
    if any(n > sets.offers[(r, g)].available for g, n in gpus.items()):
        return {}  # the covers do not fit together: no bound on what r costs
    roomy = {g for g, each in gpu_cost.items() if spend / each <= sets.offers[(r, g)].available}
    found: Bounds = {}
    for w in sets.workloads:
        for mode in sets.modes.get((w, r), ()):
            for phase in mode.phases:
                names = [pool_column(p) for p in sets.phase_pools(w, r, phase)]
                alike = [replicas[n] for n in names if n in replicas]
                kept = [a for a in alike if not any(b.dominates(a) for b in alike if b is not a)]
                for a in alike:
                    if all(a is not k for k in kept) and any(
                        b.pool.candidate.gpu in roomy and b.dominates(a) for b in kept
                    ):
                        found[pool_column(a.pool)] = (0.0, 0.0)
    return found


def _cover(
    sets: ProgramSets, w: str, r: str, replicas: dict[str, _Replica]
) -> tuple[float, dict[str, int]] | None:
    """C*_{w,r} and the GPUs of each type it takes: the least one of w's modes' covers
    cost (each phase's cheapest pool alone carrying the most r may be sent of w, on
    every curve), among the modes whose covers fit r's supply; (0, {}) when w has no
    pool in r; None when no mode's covers fit."""
    load = sets.max_load.get((w, r), 0.0) * sets.load_per_capacity
    modes = sets.modes.get((w, r), ())
    if not modes:
        return 0.0, {}
    best = None
    for mode in modes:
        spent = 0.0
        gpus: dict[str, int] = {}
        for phase in mode.phases:
            covers = []
            for p in sets.phase_pools(w, r, phase):
                replica = replicas.get(pool_column(p))
                if replica is None or min(replica.lone) <= 0:
                    continue
                count = math.ceil(load / min(replica.lone) * (1 - 1e-12)) if load > 0 else 0
                if count <= p.max_replicas:
                    covers.append((count * replica.cost, count, p))
            if not covers:
                break
            cost, count, p = min(covers, key=lambda cover: cover[0])
            spent += cost
            gpus[p.candidate.gpu] = gpus.get(p.candidate.gpu, 0) + count * p.candidate.gpus
        else:
            fits = all(n <= sets.offers[(r, g)].available for g, n in gpus.items())
            if fits and (best is None or spent < best[0]):
                best = (spent, gpus)
    return best
