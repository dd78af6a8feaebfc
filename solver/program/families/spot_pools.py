"""Spot replicas in interactive pools (with `policy.spot_confidence` = a): the pool keeps
its SLO with confidence a while some of its spot replicas are taken back.

Per period p (solver.time.periods) and unified pool (w, c, r) whose GPU offer in r has a
spot price s and `spot_interruptions_per_hour` lambda:

    spot[w,c,r]@p         integer 0..N: the pool's replicas on spot (N its replica bound)
    spot_open[w,c,r]@p    binary: the pool runs any spot replica

    spot_within[w,c,r]@p:  spot - replicas <= 0
    spot_open[w,c,r]@p:    spot - N x spot_open <= 0
    capacity[f,w,r,unified]@p  (every scenario where r serves), and with survive:
    replica_spare[w,r,unified,c']@p, group_spare[w,r,t]@p  replica (a replica lost
                           on top of the spot replicas down, as the hour verifier
                           checks it) gain - q_top(c) x (u x spot + beta x spot_open)
    gpu_cover[r,g,p]  gains + gpus(c) x spot   (spot GPUs are neither committed nor on
                           demand)
    objective         + days x w_p x s x gpus(c) x spot

u = lambda T / (1 + lambda T): the share of time a spot replica is down, T its replica
start plus `policy.scale_detection_s` (models.operations.pricing_tiers.spot_down_fraction). Of n
spot replicas, Q(n u, a) or fewer are down with confidence a (Q the Poisson quantile;
Poisson(n u) is a little heavier-tailed than Binomial(n, u), so conservative). Q is not
linear in n, so the row charges the expected loss plus a fixed margin

    beta = max_{1 <= n <= N} (Q(n u, a) - n u)

which bounds the quantile from above at every n <= N: u n + beta >= Q(n u, a). Each
replica down is worth at most q_top (the candidate's ceiling) of capacity, so the row
stays sound at any pool size. The margin is charged once per pool that uses spot, which
makes spot pay only where the pool is large enough to spread it.

Interruptions are in reality correlated (a provider reclaims a type or a zone at once);
independence understates the tail, so the confidence is a floor, not a guarantee.
"""

from dataclasses import dataclass
from typing import ClassVar

from models.operations.pricing_tiers import spot_down_fraction, spot_margin
from models.schema.instance import Instance
from models.serving.replica import Role
from solver.program.build import FleetProgram
from solver.program.families import FAMILIES, register
from solver.program.families.capacity import CapacityRow
from solver.program.families.pooling import PoolIndex
from solver.program.families.pricing import GpuCoverRow
from solver.program.lp import Constraint, LinearProgram, Sense
from solver.program.row_names import (
    GroupSpareRow,
    Index,
    ReplicasColumn,
    ReplicaSpareRow,
)


class SpotColumn(PoolIndex):
    """spot[w,c,r]: the pool's replicas on spot."""

    family: ClassVar[str] = "spot"


class SpotOpenColumn(PoolIndex):
    """spot_open[w,c,r]: 1 when the pool runs any spot replica."""

    family: ClassVar[str] = "spot_open"


class SpotWithinRow(PoolIndex):
    """spot_within[w,c,r]."""

    family: ClassVar[str] = "spot_within"


class SpotOpenRow(PoolIndex):
    """spot_open_row[w,c,r]."""

    family: ClassVar[str] = "spot_open_row"


register(SpotWithinRow, "a pool's spot replicas are among its replicas", "$/month per replica")
register(SpotOpenRow, "a pool runs spot replicas only where it pays the margin", "$/month")


@dataclass(frozen=True)
class SpotTerms:
    """u and beta of one pool."""

    down_fraction: float
    margin_replicas: float
    """beta."""


def add_spot_pools(
    lp: LinearProgram, program: FleetProgram, period: int, weight_hours: float
) -> dict[tuple[str, str, str], SpotTerms]:
    """The spot split of every pool of one period (`period`: its first UTC hour, every
    row's and column's typed `period`) that may run on spot; returns its terms by
    (workload, candidate, region)."""
    sets = program.sets
    instance: Instance = sets.instance
    confidence = instance.policy.spot_confidence
    found: dict[tuple[str, str, str], SpotTerms] = {}
    if confidence is None:
        return found
    days = instance.policy.hours_per_month / 24
    for pool in sets.pools:
        c, r, w = pool.candidate, pool.region, pool.workload
        offer = instance.region(r).supply.get(c.gpu)
        if c.role is not Role.UNIFIED or offer is None or offer.spot_price_per_gpu_hour is None:
            continue
        cover = GpuCoverRow(r, c.gpu, period=period).name()
        if cover not in lp.constraints:
            continue
        restart_s = instance.replica_start_s(c.gpu) + instance.policy.scale_detection_s
        u = spot_down_fraction(offer.spot_interruptions_per_hour, restart_s)
        beta = spot_margin(u, pool.max_replicas, confidence)
        index = (w, c.key, r)
        spot = SpotColumn(*index).at(period).name()
        spot_open = SpotOpenColumn(*index).at(period).name()
        lp.add_variable(spot, upper=float(pool.max_replicas), integer=True)
        lp.add_variable(spot_open, upper=1.0, integer=True)
        lp.add_objective({spot: days * weight_hours * offer.spot_price_per_gpu_hour * c.gpus})
        replicas = ReplicasColumn(*index).at(period).name()
        _add(lp, SpotWithinRow(*index).at(period), {spot: 1.0, replicas: -1.0})
        _add(lp, SpotOpenRow(*index).at(period), {spot: 1.0, spot_open: -float(pool.max_replicas)})
        _extend(lp, cover, {spot: float(c.gpus)})
        q_top = max(c.requests_per_s, c.ceiling)
        for row in _served_rows(lp, program, (w, r), period):
            _extend(lp, row, {spot: -q_top * u, spot_open: -q_top * beta})
        found[index] = SpotTerms(u, beta)
    return found


def _served_rows(
    lp: LinearProgram, program: FleetProgram, place: tuple[str, str], period: int
) -> list[str]:
    """The period's rows where w's unified phase in r carries its load: the capacity row
    of every routing scenario, and with survive: replica the rows without one replica of
    a pool or a shared group (replica_spare, group_spare): its spot replicas may be down
    in each, as the hour verifier takes them down before it checks each scenario."""
    sets = program.sets
    w, r = place
    names = [CapacityRow(f.name, w, r, Role.UNIFIED.value) for f in sets.routing_scenarios]
    names += [
        ReplicaSpareRow(w, r, Role.UNIFIED.value, other.key)
        for other in sets.table.of(w)
        if other.role is Role.UNIFIED
    ]
    names += [GroupSpareRow(w, r, t.key) for t in program.groups.templates if w in t.members]
    rows = (index.at(period).name() for index in names)
    return [row for row in rows if row in lp.constraints]


def _extend(lp: LinearProgram, name: str, terms: dict[str, float]) -> None:
    row = lp.constraints[name]
    coefficients = dict(row.coefficients)
    for var, coef in terms.items():
        coefficients[var] = coefficients.get(var, 0.0) + coef
    lp.constraints[name] = Constraint(name, row.family, coefficients, row.sense, row.rhs)


def _add(lp: LinearProgram, index: Index, terms: dict[str, float]) -> None:
    if index.family not in FAMILIES:
        raise ValueError(f"row family {index.family} is not registered")
    lp.add_constraint(index.name(), index.family, terms, Sense.LE, 0.0)
