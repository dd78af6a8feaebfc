"""Batch work inside the hourly program: soaked on interactive pools in their idle hours
or served by dedicated replicas, whichever costs less, chosen with the interactive fleet.

For a batch workload b (`deadline_hours`, window D = min(24, max(1, floor(deadline))))
with A_a requests arriving in UTC hour a in region r:

    soak[b,w,c,r]@p      >= 0: batch requests/s served on the interactive pool (w,c,r)
                         in every hour of period p (w of b's model, c unified)
    dedicated[b,c,r,t]   integer >= 0: all-day replicas of b's candidate c on tier t
                         (`on_demand`: paid through the pricing rows as GPUs used in
                         every period, committed or on demand; `spot` where offered:
                         days x 24 x spot price x gpus(c), serving C_c x goodput,
                         models.operations.pricing_tiers.spot_batch_goodput)
    batch_served[b,r,a,k] >= 0: requests arriving in hour a served k hours later
                         (0 <= k < D; hour (a + k) mod 24 on the cyclic day)

    batch_arrivals[b,r,a]:  sum_k batch_served[b,r,a,k] = A_a
    batch_room[b,r,h]:      sum_{a,k : (a + k) mod 24 = h} batch_served[b,r,a,k]
                            <= 3,600 x (sum_{w,c} soak[b,w,c,r]@p(h)
                                        + sum_{c,t} C_{c,t} x dedicated[b,c,r,t])
    capacity[none,w,r,unified]@p  (the static row) gains - (q_top(c) / C_b(c)) x soak
    soak_within[w,c,r]@p:   sum_b soak[b,w,c,r]@p / C_b(c) <= replicas[w,c,r]@p

C_b(c) is one replica of the interactive configuration c running b's mix at w's TPOT
target (models.operations.batch_soak.batch_capacity, `soak_targets`: b's requests decode
in the same iterations as w's; long contexts: `kv_memory`); soaking
x requests/s takes x / C_b replicas' time, whose interactive capacity is at most
q_top(c) each (the candidate's ceiling, an unlimited pool's capacity per replica:
q(n) <= q_top, so the row stays sound at any pool size). The row is the `none`
scenario's at the warm rate: the autoscaler's headroom is never soaked, and batch
yields to failover (a loss is rare; its deadline slips). Dedicated GPUs join every
period's supply row and purchase row (so the period's whole servers, power and racks
count them: solver.program.families.servers, power), and the on-demand ones its pricing
rows: a committed GPU the interactive trough leaves idle hosts batch for free.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import ClassVar

from models.operations.batch_soak import soak_targets
from models.operations.pricing_tiers import spot_batch_goodput
from models.operations.time_periods import demand_grid
from models.schema.instance import Instance
from models.schema.serving_inputs import latency_targets
from models.schema.traffic import HOURS_PER_DAY
from models.serving.replica import Role
from solver.candidates.pools import physics_of
from solver.candidates.table import Candidate, CandidateTable
from solver.program.families import FAMILIES, register
from solver.program.families.capacity import CapacityRow
from solver.program.families.supply import PurchaseRow
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import Constraint, LinearProgram, Sense
from solver.program.row_names import GpuSupplyRow, Index, ReplicasColumn, timed_name

SECONDS_PER_HOUR = 3600.0
SOAK_EPSILON = 1e-6
"""$/month per batch request/s soaked: keeps the soak at what the schedule uses."""


@dataclass(frozen=True)
class SoakColumn(Index):
    """soak[b,w,c,r]: batch requests/s of b on the interactive pool (w,c,r)."""

    family: ClassVar[str] = "soak"
    batch: str
    workload: str
    candidate: str
    region: str


@dataclass(frozen=True)
class DedicatedColumn(Index):
    """dedicated[b,c,r,t]: all-day replicas of b's candidate c in r on tier t."""

    family: ClassVar[str] = "dedicated"
    batch: str
    candidate: str
    region: str
    tier: str


@dataclass(frozen=True)
class BatchServedColumn(Index):
    """batch_served[b,r,a,k]: requests arriving in UTC hour a served k hours later."""

    family: ClassVar[str] = "batch_served"
    batch: str
    region: str
    arrival: int
    delay: int


@dataclass(frozen=True)
class BatchArrivalsRow(Index):
    """batch_arrivals[b,r,a]."""

    family: ClassVar[str] = "batch_arrivals"
    batch: str
    region: str
    arrival: int


@dataclass(frozen=True)
class SoakWithinRow(Index):
    """soak_within[w,c,r]."""

    family: ClassVar[str] = "soak_within"
    workload: str
    candidate: str
    region: str


@dataclass(frozen=True)
class BatchRoomRow(Index):
    """batch_room[b,r,h]."""

    family: ClassVar[str] = "batch_room"
    batch: str
    region: str
    hour: int


register(
    BatchArrivalsRow,
    "every batch request arriving in the hour is served within its deadline",
    "$/month per batch request a day",
)
register(
    SoakWithinRow,
    "the batch soaked on a pool takes no more replicas' time than the pool runs",
    "$/month per replica",
)
register(
    BatchRoomRow,
    "the hour's batch work fits its soaked and dedicated capacity",
    "$/month per batch request",
)


@dataclass(frozen=True)
class SoakOption:
    """One interactive pool a batch workload may soak."""

    column: str
    """Its static name; in period p, `timed_name(column, p)` (solver.program.row_names)."""
    workload: str
    candidate: Candidate
    batch_rps_per_replica: float
    """C_b on the pool's configuration."""
    limit: str
    """What sets C_b (e.g. kv_memory)."""


@dataclass(frozen=True)
class DedicatedOption:
    """One dedicated replica type of a batch workload."""

    column: str
    candidate: Candidate
    tier: str
    rps_per_replica: float
    """C_c, times the goodput on spot."""
    price_per_gpu_hour: float


@dataclass(frozen=True)
class BatchWork:
    """The columns of one batch workload in one region, for the read-back."""

    batch: str
    region: str
    deadline_hours: float
    window_hours: int
    arrivals_by_hour: tuple[float, ...]
    soak: tuple[SoakOption, ...] = ()
    dedicated: tuple[DedicatedOption, ...] = ()
    served: dict[tuple[int, int], str] = field(default_factory=dict)
    """(arrival hour, delay) -> batch_served column."""


def window_hours(deadline_hours: float) -> int:
    """D = min(24, max(1, floor(deadline))): on the cyclic day, waiting longer than a day
    is waiting a day (the day's capacity must cover the day's volume)."""
    return min(HOURS_PER_DAY, max(1, math.floor(deadline_hours)))


def add_batch_work(
    lp: LinearProgram,
    instance: Instance,
    table: CandidateTable,
    parts: Sequence,
    used: dict[tuple[str, str, int], dict[str, float]],
) -> tuple[BatchWork, ...]:
    """Every batch workload's columns and rows (see the module text); the on-demand
    dedicated columns join `used` (region, GPU, period) for the pricing rows.

    Args:
        parts: the periods' programs (solver.time.periods.PeriodProgram).
    """
    grid = demand_grid(instance)
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    works = []
    shares: dict[tuple[str, str, str, int], dict[str, float]] = {}
    for b in (w for w in instance.workloads if w.is_batch):
        for r in b.demand:
            arrivals = tuple(rate * SECONDS_PER_HOUR for rate in grid[(b.name, r)])
            if sum(arrivals) <= 0:
                continue
            work = BatchWork(b.name, r, b.deadline_hours, window_hours(b.deadline_hours), arrivals)
            soak = _soak_options(instance, b, r, parts)
            dedicated = _dedicated_options(instance, table, b.name, r)
            work = BatchWork(**{**work.__dict__, "soak": soak, "dedicated": dedicated})
            for option in dedicated:
                lp.add_variable(option.column, integer=True)
                gpus = float(option.candidate.gpus)
                if option.tier == "spot":
                    lp.add_objective({option.column: days * 24 * option.price_per_gpu_hour * gpus})
                for part in parts:
                    hour = part.first_hour
                    if option.tier == "on_demand":
                        used.setdefault((r, option.candidate.gpu, hour), {})[option.column] = gpus
                    _join_supply(lp, instance, r, option.candidate.gpu, hour, option.column, gpus)
                    _join_purchase(lp, instance, r, option.candidate.gpu, hour, option.column, gpus)
            room = {h: {} for h in range(HOURS_PER_DAY)}
            for option in dedicated:
                for h in room:
                    room[h][option.column] = -SECONDS_PER_HOUR * option.rps_per_replica
            for part in parts:
                hour = part.first_hour
                weight = part.period.weight_hours
                for option in soak:
                    name = timed_name(option.column, hour)
                    if name not in lp.variables:
                        lp.add_variable(name)
                        lp.add_objective({name: SOAK_EPSILON * weight})
                    _deduct_from_capacity(lp, option, hour, name)
                    key = (option.workload, option.candidate.key, r, hour)
                    shares.setdefault(key, {})[name] = 1.0 / option.batch_rps_per_replica
                    for h in part.period.hours:
                        room[h][name] = -SECONDS_PER_HOUR
            for a in range(HOURS_PER_DAY):
                terms = {}
                for k in range(work.window_hours):
                    name = BatchServedColumn(b.name, r, a, k).name()
                    lp.add_variable(name)
                    work.served[(a, k)] = name
                    terms[name] = 1.0
                    room[(a + k) % HOURS_PER_DAY][name] = 1.0
                _add(lp, BatchArrivalsRow(b.name, r, a), terms, Sense.EQ, arrivals[a])
            for h, terms in room.items():
                _add(lp, BatchRoomRow(b.name, r, h), terms, Sense.LE, 0.0)
            works.append(work)
    for (w, key, r, hour), terms in shares.items():
        replicas = ReplicasColumn(w, key, r).at(hour).name()
        if replicas not in lp.variables:
            for name in terms:  # the pool is not in this period's program: no soak
                lp.variables[name] = replace(lp.variables[name], upper=0.0)
            continue
        _add(lp, SoakWithinRow(w, key, r).at(hour), {**terms, replicas: -1.0}, Sense.LE, 0.0)
    return tuple(works)


def _soak_options(instance: Instance, b, r: str, parts: Sequence) -> tuple[SoakOption, ...]:
    """The unified interactive pools of b's model in r, with C_b > 0 on their
    configuration."""
    options: dict[str, SoakOption] = {}
    for part in parts:
        sets = part.program.sets
        for pool in sets.pools:
            owner = instance.workload(pool.workload)
            c = pool.candidate
            if pool.region != r or owner.model != b.model or c.role is not Role.UNIFIED:
                continue
            column = SoakColumn(b.name, pool.workload, c.key, r).name()
            if column in options or c.requests_per_s <= 0:
                continue
            own = physics_of(instance, b.name, c.config)
            beside = latency_targets(owner.slo)  # b decodes beside the owner's requests
            physics = replace(own, targets=soak_targets(beside)).at(1)
            if not physics.fits or physics.requests_per_s <= 0:
                continue
            options[column] = SoakOption(
                column, pool.workload, c, physics.requests_per_s, str(physics.limit)
            )
    return tuple(options.values())


def _deduct_from_capacity(lp: LinearProgram, option: SoakOption, hour: int, name: str) -> None:
    """capacity[none,w,r,unified]@p less q_top / C_b per soaked batch request/s, q_top the
    candidate's ceiling (an unlimited pool's capacity per replica: q(n) <= q_top)."""
    index = CapacityRow("none", option.workload, _region(option), Role.UNIFIED.value).at(hour)
    row = lp.constraints.get(index.name())
    if row is None:
        return
    q_top = max(option.candidate.requests_per_s, option.candidate.ceiling)
    coefficients = {**row.coefficients, name: -q_top / option.batch_rps_per_replica}
    lp.constraints[row.name] = Constraint(row.name, row.family, coefficients, row.sense, row.rhs)


def _region(option: SoakOption) -> str:
    return SoakColumn.parse(option.column).region


def _dedicated_options(
    instance: Instance, table: CandidateTable, b: str, r: str
) -> tuple[DedicatedOption, ...]:
    """b's candidates in r on demand, and on spot where the offer has a spot price."""
    supply = instance.region(r).supply
    options = []
    for c in table.of(b):
        offer = supply.get(c.gpu)
        if offer is None or c.requests_per_s <= 0:
            continue
        tiers = [("on_demand", instance.price_per_gpu_hour(r, c.gpu), c.requests_per_s)]
        if offer.spot_price_per_gpu_hour is not None:
            duration = c.capacity.batch / max(c.requests_per_s, 1e-12)
            goodput = spot_batch_goodput(
                offer.spot_interruptions_per_hour, instance.replica_start_s(c.gpu), duration
            )
            if goodput > 0:
                tiers.append(("spot", offer.spot_price_per_gpu_hour, c.requests_per_s * goodput))
        for tier, price, rate in tiers:
            column = DedicatedColumn(b, c.key, r, tier).name()
            options.append(DedicatedOption(column, c, tier, rate, price))
    return tuple(options)


def _join_supply(
    lp: LinearProgram, instance: Instance, r: str, g: str, hour: int, column: str, gpus: float
) -> None:
    """The dedicated GPUs join the period's gpu_supply[r,g] row (a new one where the
    period has none)."""
    name = GpuSupplyRow(r, g).at(hour).name()
    row = lp.constraints.get(name)
    if row is None:
        available = instance.region(r).available_gpus(g)
        lp.add_constraint(name, GpuSupplyRow.family, {column: gpus}, Sense.LE, float(available))
        return
    coefficients = {**row.coefficients, column: gpus}
    lp.constraints[name] = Constraint(name, row.family, coefficients, row.sense, row.rhs)


def _join_purchase(
    lp: LinearProgram, instance: Instance, r: str, g: str, hour: int, column: str, gpus: float
) -> None:
    """The dedicated GPUs join the period's purchase[r,g] row, purchased >= used -
    existing (a new one where the period has none but buys the type), so that its
    whole servers and site rows count them."""
    purchased = PurchasedColumn(r, g).at(hour).name()
    if purchased not in lp.variables:
        return
    name = PurchaseRow(r, g).at(hour).name()
    row = lp.constraints.get(name)
    if row is None:
        existing = float(instance.region(r).existing.get(g, 0))
        lp.add_constraint(
            name, PurchaseRow.family, {purchased: 1.0, column: -gpus}, Sense.GE, -existing
        )
        return
    coefficients = {**row.coefficients, column: -gpus}
    lp.constraints[name] = Constraint(name, row.family, coefficients, row.sense, row.rhs)


def _add(lp: LinearProgram, index: Index, terms: dict[str, float], sense: Sense, rhs: float):
    if index.family not in FAMILIES:
        raise ValueError(f"row family {index.family} is not registered")
    lp.add_constraint(index.name(), index.family, terms, sense, rhs)
