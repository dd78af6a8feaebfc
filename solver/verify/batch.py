"""The hour verifier's batch checks (part of solver.verify.hours, held to its rule: from
solver/ it reads the plan schema and the row names only).

For every batch workload b and region r with volume:

1. C_b recomputed (a soak's stated `batch_requests_per_s_per_replica` held to it): one
   replica of each soaking pool's configuration running b's mix at the pool's workload's
   TPOT target (models.operations.batch_soak.batch_capacity, `soak_targets`); a
   dedicated batch pool's replicas serve b alone (no latency target) on their own
   configuration, times the spot goodput
   (models.operations.pricing_tiers.spot_batch_goodput) for the share of its GPUs the
   hour pays on spot.
2. The interactive pools keep their own load: per interactive (w, r) and hour,
   [sum_c (n_c - x_c / C_b,c) x q_c + min(P, D)] x u >= the hour's warm rate, with x_c
   the batch requests/s the hour soaks on unified pool c, q_c its stated capacity per
   replica (which the static verifier has held to at most the physics; recomputed,
   q(n_c) of the verifier's pool physics, where the plan states none: a fleet read back
   by fleet-import states layouts and counts only), and P and D the
   requests/s the workload's prefill and decode pools there carry (the pairs take the
   load the unified pools leave; a batch soaks unified pools only).
3. The deadline: the cyclic earliest-deadline-first schedule of b's arrivals in the
   hours' room (3,600 x (soaked requests/s + dedicated capacity)) misses nothing
   (models.operations.batch_soak.schedule_batch).
"""

import math
from collections import defaultdict

from models.operations.batch_soak import (
    SECONDS_PER_HOUR,
    BatchSchedule,
    batch_capacity,
    schedule_batch,
)
from models.operations.pricing_tiers import spot_batch_goodput
from models.operations.time_periods import demand_grid
from models.physics.efficiency import efficiency_for
from models.schema.instance import Instance
from models.schema.serving_inputs import latency_targets, pool_replica, traffic_mix
from models.serving.replica import ReplicaCapacity
from solver.plan.records import ReplicaPool
from solver.plan.time_records import Hour
from solver.program.row_names import timed_name
from solver.verify.fleet import Violation
from solver.verify.pools import margin_of, pool_physics

CAPACITY_TOLERANCE = 1e-6
"""Relative slack the checks allow a solver's floats: its rates hold their rows to a
feasibility tolerance (CBC's soak rates summed to 299,999.999124 of 300,000 batch
requests a day, 8.8e-4 short: 24 h x 3,600 s x ~1e-8 requests/s per hour), so a shortfall
within 1e-6 of the day's volume is rounding, not a missed deadline."""


def batch_replica(instance: Instance, batch: str, pool: ReplicaPool) -> ReplicaCapacity:
    """One replica of the pool's configuration (`pool_replica`, its speculation included,
    as the planner's soak and dedicated batch options time it) running `batch`'s mix: a
    dedicated pool's alone, a soaked interactive pool's at its workload's TPOT target."""
    config = pool_replica(instance, pool)
    mix = traffic_mix(instance.workload(batch), instance.policy.prefix_affinity)
    efficiency = efficiency_for(
        config.gpu, config.weight_precision, instance.efficiency, instance.engine
    )
    if pool.workload == batch:  # its own replicas: no latency target
        return batch_capacity(config, mix, efficiency)
    beside = latency_targets(instance.workload(pool.workload).slo)  # soaked beside it
    return batch_capacity(config, mix, efficiency, beside)


def check_batch(
    instance: Instance,
    hours: tuple[Hour, ...],
    warm: dict[tuple[str, str], tuple[float, ...]],
) -> list[Violation]:
    """Steps 1-3 of the module text over the plan's hours."""
    violations: list[Violation] = []
    batch = [w for w in instance.workloads if w.is_batch]
    if not batch:
        return violations
    grid = demand_grid(instance)
    rates: dict[tuple[str, str], float] = {}
    memo: dict = {}
    for hour in hours:
        violations += _check_shares(instance, hour, warm, rates, memo)
    for workload in batch:
        for region in workload.demand:
            arrivals = [rate * SECONDS_PER_HOUR for rate in grid[(workload.name, region)]]
            room = [0.0] * 24
            for hour in hours:
                room[hour.hour] = SECONDS_PER_HOUR * _room_rps(
                    instance, hour, workload.name, region, rates
                )
            schedule = schedule_batch(arrivals, room, workload.deadline_hours)
            if misses_deadline(schedule):
                violations.append(
                    Violation(
                        requirement=f"batch[{workload.name},{region}]",
                        message=f"{schedule.shortfall_requests:,.3g} of "
                        f"{schedule.arrivals_per_day:,.0f} requests a day miss their "
                        f"{workload.deadline_hours:g} h deadline in the hours' soak and "
                        "dedicated capacity",
                    )
                )
    return violations


def misses_deadline(schedule: BatchSchedule) -> bool:
    """Whether the schedule misses more than `CAPACITY_TOLERANCE` of the day's volume (the
    solver's own rounding; `BatchSchedule.fits` allows 1e-9, tighter than any backend)."""
    return schedule.shortfall_requests > CAPACITY_TOLERANCE * max(schedule.arrivals_per_day, 1.0)


def _capacity(instance: Instance, batch: str, pool: ReplicaPool, rates: dict):
    key = (batch, pool.workload, pool.key)
    if key not in rates:
        rates[key] = batch_replica(instance, batch, pool)
    return rates[key]


def _rate(instance: Instance, batch: str, pool: ReplicaPool, rates: dict) -> float:
    """C_b in requests/s (0 when the batch mix does not fit the configuration), x the
    configuration's `policy.capacity_margin` factor (`margin_of`)."""
    capacity = _capacity(instance, batch, pool, rates)
    if not capacity.fits:
        return 0.0
    return capacity.requests_per_s * margin_of(instance, capacity.config)


def _check_shares(
    instance: Instance,
    hour: Hour,
    warm: dict[tuple[str, str], tuple[float, ...]],
    rates: dict,
    memo: dict | None = None,
) -> list[Violation]:
    """Step 2 for one hour (`memo`: the pools' physics, for capacities the plan does not
    state)."""
    memo = {} if memo is None else memo
    found = []
    at = hour.hour
    soaked: dict[tuple[str, str], float] = defaultdict(float)  # (w, r) -> capacity lost
    batches = [w.name for w in instance.workloads if w.is_batch]
    for soak in hour.batch_soak:
        if soak.batch not in batches:  # looked up below: '' was StopIteration, exit 70
            found.append(
                Violation(
                    requirement=timed_name(
                        f"soak[{soak.batch},{soak.workload},{soak.configuration},{soak.region}]",
                        at,
                    ),
                    message=f"names batch workload {soak.batch!r}, not one of the "
                    f"instance's batch workloads ({', '.join(batches)})",
                )
            )
            continue
        pool = next(
            (
                p
                for p in hour.pools
                if (p.workload, p.region, p.key) == (soak.workload, soak.region, soak.configuration)
            ),
            None,
        )
        if pool is None:
            found.append(
                Violation(
                    requirement=timed_name(
                        f"soak[{soak.batch},{soak.workload},{soak.configuration},{soak.region}]",
                        at,
                    ),
                    message="soaks a pool that does not run this hour",
                )
            )
            continue
        c_b = _rate(instance, soak.batch, pool, rates)
        if c_b > 0 and not math.isclose(
            soak.batch_requests_per_s_per_replica, c_b, rel_tol=CAPACITY_TOLERANCE
        ):
            found.append(
                Violation(
                    requirement=timed_name(
                        f"soak[{soak.batch},{soak.workload},{pool.key},{soak.region}]", at
                    ),
                    message=f"states {soak.batch_requests_per_s_per_replica:.6g} {soak.batch} "
                    f"requests/s per replica; C_b recomputed is {c_b:.6g}",
                )
            )
        if c_b <= 0:
            found.append(
                Violation(
                    requirement=timed_name(
                        f"soak[{soak.batch},{soak.workload},{pool.key},{soak.region}]", at
                    ),
                    message=f"{soak.batch} does not fit on {pool.label}",
                )
            )
            continue
        soaked[(soak.workload, soak.region)] += (
            soak.requests_per_s / c_b * _per_replica(instance, pool, memo)
        )
    u = instance.policy.max_utilization
    for (w, r), lost in soaked.items():
        capacity = math.fsum(
            p.count * _per_replica(instance, p, memo)
            for p in hour.pools
            if (p.workload, p.region) == (w, r) and p.role == "unified"
        )
        load = warm.get((w, r), (0.0,) * 24)[hour.hour]
        split = min(  # the prefill/decode pairs carry the rest: no more than either side
            math.fsum(
                p.count * _per_replica(instance, p, memo)
                for p in hour.pools
                if (p.workload, p.region) == (w, r) and p.role == role
            )
            for role in ("prefill", "decode")
        )
        if (capacity - lost + split) * u < load * (1 - CAPACITY_TOLERANCE) - CAPACITY_TOLERANCE:
            found.append(
                Violation(
                    requirement=timed_name(f"capacity[none,{w},{r},unified]", at),
                    message=f"the pools carry {capacity * u:.2f} requests/s; the batch they "
                    f"soak takes {lost * u:.2f} of it, leaving less than the warm "
                    f"{load:.2f}",
                )
            )
    return found


def _per_replica(instance: Instance, pool: ReplicaPool, memo: dict) -> float:
    """q_c: the pool's stated capacity per replica, or q(n) recomputed where it states
    none (a fleet's layout and count; a shared group states its own)."""
    if pool.requests_per_s_per_replica is not None or pool.shared or pool.count < 1:
        return pool.requests_per_s_per_replica or 0.0
    (recomputed,) = pool_physics(instance, (pool,), memo)
    return recomputed.requests_per_s(pool.count)


def dedicated_spot_share(hour: Hour, region: str, gpu: str, batch_gpus: float) -> float:
    """The share of an hour's dedicated batch GPUs of type `gpu` in `region` (all its
    batch workloads' pools there, `batch_gpus` of them) that the hour pays on spot: the
    offer's spot GPUs less those of interactive spot pools (`Hour.spot_pools`), shared
    over those pools alike, at most 1. One share for them all: the hour states its spot
    GPUs per offer, not per pool, and a batch may run some replicas on spot and the rest
    on committed or rented GPUs of the same type."""
    row = next((g for g in hour.gpus if (g.region, g.gpu) == (region, gpu)), None)
    if row is None or not row.spot or batch_gpus <= 0:
        return 0.0
    per_replica = {
        (p.workload, p.key): (p.gpus or 0) / max(p.count, 1)
        for p in hour.pools
        if p.region == region and p.gpu == gpu
    }
    interactive = math.fsum(
        s.replicas * per_replica.get((s.workload, s.configuration), 0.0)
        for s in hour.spot_pools
        if s.region == region
    )
    return min(max(row.spot - interactive, 0.0) / batch_gpus, 1.0)


def batch_gpus(instance: Instance, hour: Hour, region: str, gpu: str) -> float:
    """GPUs of type `gpu` the hour's dedicated batch pools hold in `region`."""
    batch = {w.name for w in instance.workloads if w.is_batch}
    return math.fsum(
        p.gpus or 0
        for p in hour.pools
        if p.workload in batch and p.region == region and p.gpu == gpu
    )


def _room_rps(instance: Instance, hour: Hour, batch: str, region: str, rates: dict) -> float:
    """Soaked requests/s plus the dedicated pools' capacity, in one hour."""
    room = math.fsum(
        s.requests_per_s for s in hour.batch_soak if (s.batch, s.region) == (batch, region)
    )
    supply = instance.region(region).supply
    for pool in hour.pools:
        if (pool.workload, pool.region) != (batch, region):
            continue
        rate = pool.count * _rate(instance, batch, pool, rates)
        offer = supply.get(pool.gpu)
        share = dedicated_spot_share(
            hour, region, pool.gpu, batch_gpus(instance, hour, region, pool.gpu)
        )
        if share and offer and offer.spot_interruptions_per_hour:
            capacity = _capacity(instance, batch, pool, rates)
            duration_s = capacity.batch / max(capacity.requests_per_s, 1e-12)
            goodput = spot_batch_goodput(
                offer.spot_interruptions_per_hour, instance.replica_start_s(pool.gpu), duration_s
            )
            rate *= 1 - share + share * goodput
        room += rate
    return room
