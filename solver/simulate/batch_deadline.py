"""A dedicated batch pool in a replay: a deadline, not a latency SLO, so it is checked by
throughput rather than replayed request by request.

A batch workload b's own replicas carry no TTFT or TPOT target: what the plan promises is
that every request arriving in a day is served within `deadline_hours`. One hour of
engine replay cannot show that (the work of one hour may be served up to D - 1 hours
later), so the replay states the throughput arithmetic over the day the replayed hour
belongs to, from the plan's own figures:

    room_h = 3,600 x (sum over b's dedicated pools in r of n_h x q_h + soaked x_h)

requests served in UTC hour h (n_h replicas at the plan's stated requests/s per replica
q_h, a spot replica's its goodput; x_h the batch requests/s the hour soaks beside
interactive pools), against the day's arrivals a_h = 3,600 x the hour's batch rate (the
instance's demand grid, the month's grown demand in a plan of months). The deadline is met
when the earliest-deadline-first schedule of those arrivals in that room leaves nothing
past D = max(1, floor(deadline_hours)) hours
(models.operations.batch_soak.schedule_batch); at a flat rate with the same room every
hour that is a_h <= room_h, i.e. volume / (24 x 3,600 x n q) <= 1 day.
"""

import math

from pydantic import BaseModel, ConfigDict, computed_field

from models.operations.batch_soak import SECONDS_PER_HOUR, schedule_batch
from models.operations.procurement import month_instance
from models.operations.time_periods import demand_grid
from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from solver.plan.records import ReplicaPool
from solver.plan.time_records import Hour

MISS_TOLERANCE = 1e-6
"""Fraction of the day's volume a schedule may leave past the deadline and still meet it:
the solver's rates hold their rows to a feasibility tolerance (as the hour verifier)."""


class BatchDeadline(BaseModel):
    """One batch workload's dedicated pools in one region, checked by throughput."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    workload: str
    region: str
    pools: tuple[str, ...]
    """`n x label` of the replayed hour's dedicated pools."""
    replicas: int
    """Dedicated replicas in the replayed hour."""
    requests_per_s: float
    """Their throughput in the replayed hour: sum of n x q (the plan's stated q)."""
    soaked_requests_per_s: float
    """Batch requests/s the replayed hour soaks beside interactive pools."""
    requests_per_day: float
    """The day's arrivals."""
    capacity_per_day: float
    """Requests the day's hours can serve: sum_h room_h."""
    deadline_hours: float
    missed_requests_per_day: float
    """Requests a day past their deadline in the EDF schedule."""

    @computed_field
    @property
    def met(self) -> bool:
        """Nothing past the deadline (within `MISS_TOLERANCE` of the day's volume)."""
        return self.missed_requests_per_day <= MISS_TOLERANCE * max(self.requests_per_day, 1.0)

    @property
    def volume_over_capacity(self) -> float:
        """The day's arrivals over the requests its hours serve (inf: no room)."""
        return self.requests_per_day / self.capacity_per_day if self.capacity_per_day else math.inf

    @property
    def words(self) -> str:
        """The check in one line, with its numbers."""
        verdict = (
            "deadline met"
            if self.met
            else f"DEADLINE MISSED: {self.missed_requests_per_day:,.0f} requests a day late"
        )
        soaked = (
            f" + {self.soaked_requests_per_s:,.2f} soaked" if self.soaked_requests_per_s else ""
        )
        return (
            f"{self.workload} {self.region}: {', '.join(self.pools)} (dedicated batch, a "
            f"{self.deadline_hours:g} h deadline, no latency SLO: checked by throughput, "
            f"not replayed): {self.requests_per_s:,.2f}{soaked} requests/s this hour; "
            f"{self.requests_per_day:,.0f} requests a day against {self.capacity_per_day:,.0f} "
            f"the day's hours serve (volume / capacity = {self.volume_over_capacity:.3f}), "
            f"earliest deadline first: {verdict}"
        )


def dedicated_batch(instance: Instance, pool: ReplicaPool) -> bool:
    """Whether `pool` is a batch workload's own (not a shared group)."""
    batch = {w.name for w in instance.workloads if w.is_batch}
    return not pool.members and pool.workload in batch


def batch_deadlines(
    instance: Instance,
    replayed: tuple[ReplicaPool, ...],
    day: tuple[Hour, ...],
    hour: int | None,
    month: int | None,
) -> tuple[BatchDeadline, ...]:
    """The check of the module text for each (batch workload, region) with a dedicated
    pool among `replayed` (the replayed hour's pools), over `day` (its 24 hours; none for
    a static plan, whose fleet runs every hour as replayed)."""
    found: dict[tuple[str, str], list[ReplicaPool]] = {}
    for pool in replayed:
        if pool.count and dedicated_batch(instance, pool):
            found.setdefault((pool.workload, pool.region), []).append(pool)
    if not found:
        return ()
    grown = month_instance(instance, month) if month else instance
    grid = demand_grid(grown)
    checks = []
    for (workload, region), pools in found.items():
        arrivals = [rate * SECONDS_PER_HOUR for rate in grid.get((workload, region), ())]
        room = [0.0] * HOURS_PER_DAY
        soaked_now = 0.0
        for h in day:
            room[h.hour] = SECONDS_PER_HOUR * _room_rps(h, workload, region)
            if h.hour == hour:
                soaked_now = _soaked_rps(h, workload, region)
        if not day:
            room = [SECONDS_PER_HOUR * math.fsum(_throughput(p) for p in pools)] * HOURS_PER_DAY
        if len(arrivals) != HOURS_PER_DAY:
            arrivals = [0.0] * HOURS_PER_DAY
        deadline = instance.workload(workload).deadline_hours or float(HOURS_PER_DAY)
        schedule = schedule_batch(arrivals, room, deadline)
        checks.append(
            BatchDeadline(
                workload=workload,
                region=region,
                pools=tuple(f"{p.count} x {p.label}" for p in pools),
                replicas=sum(p.count for p in pools),
                requests_per_s=math.fsum(_throughput(p) for p in pools),
                soaked_requests_per_s=soaked_now,
                requests_per_day=schedule.arrivals_per_day,
                capacity_per_day=schedule.capacity_per_day,
                deadline_hours=deadline,
                missed_requests_per_day=schedule.shortfall_requests,
            )
        )
    return tuple(checks)


def _throughput(pool: ReplicaPool) -> float:
    return pool.count * (pool.requests_per_s_per_replica or 0.0)


def _soaked_rps(hour: Hour, workload: str, region: str) -> float:
    return math.fsum(
        s.requests_per_s for s in hour.batch_soak if (s.batch, s.region) == (workload, region)
    )


def _room_rps(hour: Hour, workload: str, region: str) -> float:
    """The hour's dedicated throughput (the plan's stated n x q) plus its soaked rate."""
    dedicated = math.fsum(
        _throughput(p)
        for p in hour.pools
        if (p.workload, p.region) == (workload, region) and not p.members
    )
    return dedicated + _soaked_rps(hour, workload, region)
