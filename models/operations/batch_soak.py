"""Batch work with a deadline, served in the interactive fleet's idle hours or on
replicas of its own.

Capacity. A batch workload (`deadline_hours`, no latency SLO) on replicas of its own runs
at the largest batch memory and the engine allow (`models.serving.capacity.replica_capacity`
with no targets). Soaked on a replica of an interactive pool's configuration it decodes in
the same iterations as that pool's requests, so it is held to their TPOT target
(`soak_targets`): C_b requests/s; with long batch contexts the KV cache may fill first:
B = KV tokens / (P + O) sequences, and the capacity names `kv_memory` as its limit.

Sharing. In UTC hour h the interactive pool runs n_h warm replicas and carries d_h
requests/s at C_i each. A replica's time (and KV cache) split between the two in
proportion to load keeps both within bounds when

    d_h / C_i + x_h / C_b <= n_h

so the idle replica-hours are I_h = n_h - d_h / C_i and they hold at most
I_h x C_b x 3,600 batch requests. (The headroom the autoscaler keeps is part of n_h;
soaking it is safe only if batch yields at once, so callers that want the headroom
untouched pass n_h less the headroom replicas.)

Deadline. Requests arriving in hour h may be served in hours h .. h + D - 1,
D = max(1, floor(deadline_hours)) (rounding down is the safe side). On the cyclic day,
earliest-deadline-first is optimal for one fluid resource: the schedule serves, each
hour, the work due soonest; work still unserved at its last hour is the shortfall. The
day is repeated until the backlog carried from the day before is in steady state
(ceil(D / 24) + 3 days), and the last day is reported.

Shortfall. Dedicated batch replicas (C_d each, all day) add C_d x 3,600 requests of room
to every hour; the fewest that clear the shortfall is found by counting up. With
D >= 24 and room for the whole day, that is ceil(shortfall / (C_d x 86,400)).

Price. Soaking costs what keeping the idle replicas warm costs: nothing for committed
GPUs that would idle anyway, the on-demand price for ones the autoscaler would
otherwise release. Per batch request the soak costs c_s / (C_b x 3,600) (c_s per
replica-hour) and a dedicated replica p_d g_d / (C_d x 3,600), so soaking is cheaper
while the dedicated GPU-hour price p_d exceeds p* = c_s C_d / (C_b g_d).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.physics.efficiency import Efficiency
from models.schema.traffic import HOURS_PER_DAY
from models.serving.capacity import replica_capacity
from models.serving.edge_search import smallest_passing
from models.serving.replica import LatencyTargets, ReplicaCapacity, ReplicaConfig, TrafficMix

SECONDS_PER_HOUR = 3600.0
WARMUP_DAYS = 3


def batch_capacity(
    config: ReplicaConfig,
    mix: TrafficMix,
    efficiency: Efficiency,
    beside: LatencyTargets | None = None,
) -> ReplicaCapacity:
    """C_b: one replica of `config` running batch work of `mix`: with no latency target
    on a replica of its own, at the TPOT target of the interactive workload it runs
    `beside` on a soaked pool (`soak_targets`)."""
    targets = LatencyTargets() if beside is None else soak_targets(beside)
    return replica_capacity(config, mix, targets, efficiency)


def soak_targets(interactive: LatencyTargets) -> LatencyTargets:
    """What a batch soaked on an interactive pool is held to: that pool's TPOT target.
    Its requests decode in the same iterations as the interactive ones (the engine
    batches them together; a deployed pool has no priority between them), so a soak
    sized at the batch's own maximum throughput ran larger batches than the interactive
    TPOT allows: diurnal-chat-batch's peak hour replayed 70.4 ms p99 TPOT against its
    60 ms target (solver.simulate.soak). Its TTFT is the batch's own affair (no target)."""
    return LatencyTargets(tpot_p99_s=interactive.tpot_p99_s)


def idle_replica_hours(
    warm_replicas: Sequence[float],
    interactive_rps: Sequence[float],
    interactive_capacity_rps: float,
) -> tuple[float, ...]:
    """I_h = n_h - d_h / C_i per hour (never below 0).

    Raises:
        ValueError: mismatched lengths or a non-positive capacity.
    """
    if len(warm_replicas) != len(interactive_rps):
        raise ValueError(
            f"{len(warm_replicas)} hours of replicas for {len(interactive_rps)} of demand"
        )
    if interactive_capacity_rps <= 0:
        raise ValueError(f"interactive_capacity_rps must be > 0, got {interactive_capacity_rps}")
    return tuple(
        max(n - d / interactive_capacity_rps, 0.0)
        for n, d in zip(warm_replicas, interactive_rps, strict=True)
    )


def soak_requests_by_hour(
    idle_by_hour: Sequence[float], batch_capacity_rps: float
) -> tuple[float, ...]:
    """I_h x C_b x 3,600: batch requests each hour's idle replicas can serve."""
    if batch_capacity_rps < 0:
        raise ValueError(f"batch_capacity_rps must be >= 0, got {batch_capacity_rps}")
    return tuple(idle * batch_capacity_rps * SECONDS_PER_HOUR for idle in idle_by_hour)


@dataclass(frozen=True)
class BatchSchedule:
    """The steady-state earliest-deadline-first schedule of one day."""

    window_hours: int
    """D: hours a request may wait, its arrival hour included."""
    served_by_hour: tuple[float, ...]
    """Batch requests served in each hour."""
    shortfall_requests: float
    """Requests per day that pass their last hour unserved."""
    arrivals_per_day: float
    capacity_per_day: float

    @property
    def fits(self) -> bool:
        """Nothing misses its deadline (within 1e-9 of the day's volume)."""
        return self.shortfall_requests <= 1e-9 * max(self.arrivals_per_day, 1.0)


def deadline_window_hours(deadline_hours: float) -> int:
    """D = max(1, floor(deadline_hours))."""
    if deadline_hours <= 0:
        raise ValueError(f"deadline_hours must be > 0, got {deadline_hours}")
    return max(1, math.floor(deadline_hours))


def schedule_batch(
    arrivals_by_hour: Sequence[float],
    capacity_by_hour: Sequence[float],
    deadline_hours: float,
) -> BatchSchedule:
    """Fluid earliest-deadline-first on the cyclic day (see the module text).

    Args:
        arrivals_by_hour: batch requests arriving in each UTC hour.
        capacity_by_hour: batch requests the fleet can serve in each UTC hour.
        deadline_hours: the workload's deadline.

    Raises:
        ValueError: not 24 hours, or a negative value.
    """
    for values in (arrivals_by_hour, capacity_by_hour):
        if len(values) != HOURS_PER_DAY or any(v < 0 for v in values):
            raise ValueError(f"need {HOURS_PER_DAY} hourly values >= 0, got {list(values)}")
    window = deadline_window_hours(deadline_hours)
    days = math.ceil(window / HOURS_PER_DAY) + WARMUP_DAYS
    last_day = (days - 1) * HOURS_PER_DAY
    backlog: list[list[float]] = []  # [last hour it may be served in, requests], by due
    served = [0.0] * HOURS_PER_DAY
    shortfall = 0.0
    for t in range(days * HOURS_PER_DAY):
        hour = t % HOURS_PER_DAY
        if arrivals_by_hour[hour] > 0:
            backlog.append([t + window - 1, arrivals_by_hour[hour]])
        room = capacity_by_hour[hour]
        for item in backlog:
            take = min(room, item[1])
            item[1] -= take
            room -= take
            if t >= last_day:
                served[hour] += take
            if room <= 0:
                break
        for item in backlog:
            if item[0] == t and item[1] > 0 and t >= last_day:
                shortfall += item[1]
        backlog = [item for item in backlog if item[0] > t and item[1] > 0]
    # Over capacity the backlog grows each day and the oldest work may not yet have
    # reached its deadline inside the simulated days; in steady state every request is
    # served or missed, so a day misses at least its arrivals less what it served.
    shortfall = max(shortfall, math.fsum(arrivals_by_hour) - math.fsum(served))
    return BatchSchedule(
        window_hours=window,
        served_by_hour=tuple(served),
        shortfall_requests=shortfall,
        arrivals_per_day=math.fsum(arrivals_by_hour),
        capacity_per_day=math.fsum(capacity_by_hour),
    )


def dedicated_replicas_for(
    arrivals_by_hour: Sequence[float],
    soak_by_hour: Sequence[float],
    dedicated_capacity_rps: float,
    deadline_hours: float,
) -> int:
    """The fewest all-day dedicated batch replicas (C_d each) that, with the soak, leave
    no shortfall (bisection: more replicas never miss more).

    Raises:
        ValueError: a non-positive dedicated capacity.
    """
    if dedicated_capacity_rps <= 0:
        raise ValueError(f"dedicated_capacity_rps must be > 0, got {dedicated_capacity_rps}")
    per_hour = dedicated_capacity_rps * SECONDS_PER_HOUR

    def fits(count: int) -> bool:
        room = [soak + count * per_hour for soak in soak_by_hour]
        return schedule_batch(arrivals_by_hour, room, deadline_hours).fits

    low, high = 0, max(1, math.ceil(max(arrivals_by_hour) / per_hour))  # high: each hour
    if fits(low):  # serves its own arrivals, so it always fits
        return 0
    return smallest_passing(fits, low, high)


@dataclass(frozen=True)
class SoakResult:
    """Idle interactive hours before and after a batch workload soaks them."""

    idle_replica_hours_before: float
    """sum_h I_h."""
    soaked_requests: float
    """Batch requests per day served on idle interactive replicas."""
    idle_replica_hours_after: float
    """sum_h (I_h - served_h / (C_b x 3,600))."""
    shortfall_requests: float
    """Batch requests per day the soak cannot serve before their deadline."""
    dedicated_replicas: int
    """Dedicated batch replicas that clear the shortfall."""
    batch_capacity: ReplicaCapacity | None
    """C_b on the interactive configuration, with the limit that sets it (when known)."""


def soak(
    warm_replicas: Sequence[float],
    interactive_rps: Sequence[float],
    interactive_capacity_rps: float,
    batch_arrivals_by_hour: Sequence[float],
    batch_capacity_rps: float,
    deadline_hours: float,
    dedicated_capacity_rps: float | None = None,
    batch_capacity_record: ReplicaCapacity | None = None,
) -> SoakResult:
    """How much batch the interactive trough absorbs, and what is left over.

    `dedicated_capacity_rps` (default: C_b, the same configuration) prices the
    shortfall in dedicated replicas.
    """
    idle = idle_replica_hours(warm_replicas, interactive_rps, interactive_capacity_rps)
    room = soak_requests_by_hour(idle, batch_capacity_rps)
    schedule = schedule_batch(batch_arrivals_by_hour, room, deadline_hours)
    soaked = math.fsum(schedule.served_by_hour)
    per_replica_hour = batch_capacity_rps * SECONDS_PER_HOUR
    used_hours = soaked / per_replica_hour if per_replica_hour > 0 else 0.0
    extra = 0
    if not schedule.fits:
        extra = dedicated_replicas_for(
            batch_arrivals_by_hour,
            room,
            dedicated_capacity_rps or batch_capacity_rps,
            deadline_hours,
        )
    return SoakResult(
        idle_replica_hours_before=math.fsum(idle),
        soaked_requests=soaked,
        idle_replica_hours_after=math.fsum(idle) - used_hours,
        shortfall_requests=schedule.shortfall_requests,
        dedicated_replicas=extra,
        batch_capacity=batch_capacity_record,
    )


def cost_per_million_requests(price_per_replica_hour: float, capacity_rps: float) -> float:
    """price / (C x 3,600) x 1e6: USD per million requests at full load."""
    if capacity_rps <= 0:
        raise ValueError(f"capacity_rps must be > 0, got {capacity_rps}")
    return price_per_replica_hour / (capacity_rps * SECONDS_PER_HOUR) * 1e6


def soak_breakeven_price_per_gpu_hour(
    soak_cost_per_replica_hour: float,
    soak_capacity_rps: float,
    dedicated_capacity_rps: float,
    dedicated_gpus_per_replica: int,
) -> float:
    """p* = c_s C_d / (C_b g_d): the dedicated GPU-hour price above which soaking is
    cheaper per batch request (0 when the soaked replicas cost nothing extra)."""
    if soak_capacity_rps <= 0 or dedicated_gpus_per_replica < 1:
        raise ValueError(
            "need soak_capacity_rps > 0 and dedicated_gpus_per_replica >= 1, got "
            f"{soak_capacity_rps}, {dedicated_gpus_per_replica}"
        )
    return (
        soak_cost_per_replica_hour
        * dedicated_capacity_rps
        / (soak_capacity_rps * dedicated_gpus_per_replica)
    )
