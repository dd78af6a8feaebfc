"""Batch workloads in the hourly plan: soak the trough first, then dedicated replicas.

For a batch workload b (`deadline_hours`) with daily volume in region o:

1. Room in the trough. Every interactive pool in o serving the SAME model runs n_h
   replicas at C_i(n_h) each and carries d_h (its share of the hour's actual demand).
   Its idle replicas are I_h = n_h - headroom replicas - d_h / C_i (the autoscaler's
   headroom is left untouched), plus the replicas of its configuration that the
   committed GPUs left unused in that hour could hold (already paid for). A replica of
   that configuration running b's mix with no latency target serves C_b requests/s
   (models.batch_soak.batch_capacity: the largest batch that fits, often `kv_memory`
   for long contexts). Sharing a replica in proportion to load keeps
   d_h / C_i + x_h / C_b <= n_h.
2. Schedule. Earliest-deadline-first on the cyclic day (models.batch_soak.schedule_batch)
   serves what arrives within its deadline window in the room of each hour.
3. Shortfall. The fewest all-day dedicated replicas of b's cheapest candidate in o
   (price x GPUs / capacity, on demand; or spot where offered, at the spot price over
   its goodput, models.pricing_tiers.spot_batch_goodput) clear the rest
   (models.batch_soak.dedicated_replicas_for). They run every hour and are paid by the
   hour at their tier's price.

This is a schedule after the interactive program, not a term in it: the program's
hours are sized for the interactive SLO alone, and batch only takes what they leave.
"""

import math

from models.batch_soak import (
    SECONDS_PER_HOUR,
    dedicated_replicas_for,
    idle_replica_hours,
    schedule_batch,
    soak_breakeven_price_per_gpu_hour,
    soak_requests_by_hour,
)
from models.instance import Instance
from models.pricing_tiers import spot_batch_goodput
from models.time_periods import demand_grid
from solver.candidates import CandidateTable
from solver.periods import TimeProgram
from solver.plan import BatchPlacement, Hour, HourGpus, Plan, ReplicaPool
from solver.pools import physics_of

HOURS_PER_DAY = 24


def with_batch(instance: Instance, table: CandidateTable, program: TimeProgram, plan: Plan) -> Plan:
    """The plan with every batch workload placed (soaked, then dedicated)."""
    batch = [w for w in instance.workloads if w.is_batch]
    if not batch:
        return plan
    grid = demand_grid(instance)
    headroom = {(h.workload, h.region, h.configuration): h.headroom_replicas for h in plan.headroom}
    committed = {(c.region, c.gpu): c.committed_gpus for c in plan.committed}
    hours = list(plan.hours)
    placements = []
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    for workload in batch:
        model = workload.model
        for region in workload.demand:
            arrivals = tuple(rate * SECONDS_PER_HOUR for rate in grid[(workload.name, region)])
            room = [0.0] * HOURS_PER_DAY
            idle_by_hour = [0.0] * HOURS_PER_DAY
            limit, soak_rate, soak_price = "", 0.0, None
            for hour in hours:
                for pool in hour.pools:
                    if pool.region != region or pool.role != "unified":
                        continue
                    owner = next(w for w in instance.workloads if w.name == pool.workload)
                    if owner.is_batch or owner.model != model:
                        continue
                    config = _config(table, pool)
                    if config is None:
                        continue
                    batch_physics = physics_of(instance, workload.name, config).at(1)
                    c_b = batch_physics.requests_per_s if batch_physics.fits else 0.0
                    limit, soak_rate = str(batch_physics.limit), c_b
                    c_i = pool.requests_per_s_per_replica or 0.0
                    load = grid.get((pool.workload, region), (0.0,) * 24)[hour.hour]
                    spare = _committed_spare(hour, committed, pool)
                    warm = max(pool.count - headroom.get((pool.workload, region, pool.key), 0), 0)
                    idle = idle_replica_hours([warm + spare], [load], c_i)[0] if c_i else 0.0
                    idle_by_hour[hour.hour] += idle
                    room[hour.hour] += soak_requests_by_hour([idle], c_b)[0]
                    price = _price(instance, region, pool.gpu) * pool.replica_gpus
                    soak_price = soak_price or price
            schedule = schedule_batch(arrivals, room, workload.deadline_hours)
            soaked = math.fsum(schedule.served_by_hour)
            # Each hour's soak uses the same share of that hour's idle replica-hours as of
            # its room (pools of several configurations soak at their own rates).
            idle_before = math.fsum(idle_by_hour)
            used_hours = math.fsum(
                idle * served / space
                for idle, served, space in zip(
                    idle_by_hour, schedule.served_by_hour, room, strict=True
                )
                if space > 0
            )
            dedicated = _dedicated(instance, table, workload.name, region)
            count = 0
            if not schedule.fits:
                if dedicated is None:
                    raise ValueError(
                        f"batch workload {workload.name} in {region}: the trough leaves "
                        f"{schedule.shortfall_requests:,.0f} requests/day unserved and no "
                        "candidate can serve it on dedicated replicas"
                    )
                count = dedicated_replicas_for(
                    arrivals, room, dedicated[1], workload.deadline_hours
                )
            placement = BatchPlacement(
                workload=workload.name,
                region=region,
                requests_per_day=math.fsum(arrivals),
                deadline_hours=workload.deadline_hours,
                soaked_requests_per_day=soaked,
                soak_limit=limit,
                soak_requests_per_s_per_replica=soak_rate,
                idle_replica_hours_before=idle_before,
                idle_replica_hours_after=idle_before - used_hours,
            )
            if dedicated is not None:
                pool, rate, tier, price = dedicated
                gpus = pool.replica_gpus
                placement = placement.model_copy(
                    update={
                        "dedicated_replicas": count,
                        "dedicated_configuration": pool.key,
                        "dedicated_tier": tier,
                        "dedicated_cost_per_month": days * HOURS_PER_DAY * count * gpus * price,
                        "breakeven_price_per_gpu_hour": None
                        if soak_price is None or not soak_rate
                        else soak_breakeven_price_per_gpu_hour(soak_price, soak_rate, rate, gpus),
                    }
                )
                if count:
                    counted = pool.model_copy(update={"count": count, "gpus": count * gpus})
                    hours = [_add_dedicated(h, counted, tier, price) for h in hours]
            placements.append(placement)
    cost = days * math.fsum(h.cost_per_hour for h in hours)
    return plan.model_copy(
        update={
            "hours": tuple(hours),
            "batch": tuple(placements),
            "cost_per_month": cost,
            "replicas": plan.replicas
            + tuple(p for h in hours[:1] for p in h.pools if _is_batch(instance, p.workload)),
        }
    )


def _is_batch(instance: Instance, workload: str) -> bool:
    return next(w for w in instance.workloads if w.name == workload).is_batch


def _config(table: CandidateTable, pool: ReplicaPool):
    for candidate in table.of(pool.workload):
        if candidate.key == pool.key:
            return candidate.config
    return None


def _price(instance: Instance, region: str, gpu: str) -> float:
    return instance.price_per_gpu_hour(region, gpu)


def _committed_spare(hour: Hour, committed: dict[tuple[str, str], float], pool: ReplicaPool) -> int:
    """Replicas of the pool's configuration that committed GPUs idle this hour could hold."""
    paid = committed.get((pool.region, pool.gpu), 0.0)
    row = next((g for g in hour.gpus if (g.region, g.gpu) == (pool.region, pool.gpu)), None)
    in_use = row.reserved if row is not None else 0.0
    return math.floor(round(max(paid - in_use, 0.0), 9) / pool.replica_gpus)


def _dedicated(instance: Instance, table: CandidateTable, workload: str, region: str):
    """(pool template, C_d, tier, $/GPU-hour) of the cheapest dedicated batch replica in
    the region per request served, or None when no candidate runs there."""
    supply = instance.region(region).supply
    best = None
    for candidate in table.of(workload):
        offer = supply.get(candidate.gpu)
        if offer is None or candidate.requests_per_s <= 0:
            continue
        tiers = [("on_demand", instance.price_per_gpu_hour(region, candidate.gpu), 1.0)]
        if offer.spot_price_per_gpu_hour is not None:
            duration = candidate.capacity.batch / max(candidate.requests_per_s, 1e-12)
            goodput = spot_batch_goodput(
                offer.spot_interruptions_per_hour,
                instance.replica_start_s(candidate.gpu),
                duration,
            )
            if goodput > 0:
                tiers.append(("spot", offer.spot_price_per_gpu_hour, goodput))
        for tier, price, goodput in tiers:
            rate = candidate.requests_per_s * goodput
            per_request = price * candidate.gpus / rate
            if best is None or per_request < best[0]:
                c = candidate.config
                template = ReplicaPool(
                    workload=workload,
                    region=region,
                    gpu=candidate.gpu,
                    precision=candidate.precision,
                    kv_precision=candidate.kv_precision,
                    tp=c.tp,
                    pp=c.pp,
                    ep=c.ep,
                    dp=c.dp,
                    role=candidate.role,
                    count=0,
                    gpus=0,
                    limit=candidate.capacity.limit,
                    requests_per_s_per_replica=candidate.requests_per_s,
                    cost_per_month=0.0,
                )
                best = (per_request, template, rate, tier, price)
    return None if best is None else best[1:]


def _add_dedicated(hour: Hour, pool: ReplicaPool, tier: str, price: float) -> Hour:
    """The hour with the dedicated pool running and its GPUs paid at its tier."""
    gpus = list(hour.gpus)
    index = next(
        (i for i, g in enumerate(gpus) if (g.region, g.gpu) == (pool.region, pool.gpu)), None
    )
    extra = float(pool.gpus or 0)
    row = gpus[index] if index is not None else HourGpus(region=pool.region, gpu=pool.gpu, used=0)
    update = {"used": row.used + int(extra)}
    update[tier] = getattr(row, tier) + extra
    row = row.model_copy(update=update)
    if index is None:
        gpus.append(row)
    else:
        gpus[index] = row
    return hour.model_copy(
        update={
            "pools": (*hour.pools, pool),
            "gpus": tuple(gpus),
            "cost_per_hour": hour.cost_per_hour + extra * price,
        }
    )
