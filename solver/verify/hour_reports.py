"""The hour verifier's check of the figures an hourly plan reports beside its counts (part
of solver.verify.hours, held to its rule: from solver/ it reads the plan schema and the
verifier only), recomputed from the instance and the plan's hours as solver.time.readback.report
and solver.time.readback.batch state them:

1. Idle hours per day: in each hour, each interactive pool's replicas (and GPUs) times
   1 - min(warm_h / capacity, 1) of its phase (workload, region, role), warm_h the
   hour's warm rate (the idle share's load, solver.verify.hour_idle), capacity = sum
   of count x stated rate (each phase of a prefill/decode pair carries the whole
   demand; a shared group's share the mean of its members', each member's capacity
   counting the group at the member's stated rate), less the replicas the hour's batch
   soaks keep busy (x / C_b of each soaking pool); plus committed GPUs an hour does
   not use, and GPUs an hour pays beyond those its pools run (owned, reserved, on-demand
   and spot less used).
2. Batch placements: requests_per_day = 3,600 x the day's arrival rates, the
   workload's deadline, soaked within [requests_per_day without dedicated replicas,
   else 0; min(requests_per_day, 3,600 x the hours' soak rates)], the soak rate one the
   hours soak at, the dedicated replicas and their cost (D x 24 x GPUs x the tier's
   price), idle replica-hours before and after the soak (solver.time.readback.batch's rule:
   I_h = N_h (1 - warm_h / K_h), less x / C_b).
3. Headroom rows: the pool's start time, its stated rate and peak count, and the lag,
   steepest ramp and headroom of `models.operations.autoscaling.pool_headroom`.

Held finite only (solver.verify.hour_figures): the scale-out thresholds and a placement's
break-even price.
"""

import math
from collections import defaultdict

from models.operations.autoscaling import pool_headroom
from models.operations.time_demand import interactive_grid, warm_grid
from models.operations.time_periods import demand_grid
from models.schema.instance import Instance
from solver.plan.schema import Hour, Plan, ReplicaPool
from solver.verify.batch import batch_gpus, dedicated_spot_share
from solver.verify.hour_figures import HOURS_PER_DAY
from solver.verify.totals import money_close
from solver.verify.verdict import RELATIVE, Violation, close, differs

SECONDS_PER_HOUR = 3600.0


def stated_report_figures(instance: Instance, plan: Plan) -> list[Violation]:
    """Items 1-3 of the module docstring on a plan whose numbers are finite."""
    return (
        _idle_hours(instance, plan) + _batch_placements(instance, plan) + _headroom(instance, plan)
    )


def _rates(pool: ReplicaPool) -> dict[str, float]:
    """Each workload a pool serves with its stated requests/s per replica (a shared
    group's members at theirs)."""
    if pool.members:
        return {m.workload: m.requests_per_s_per_replica for m in pool.members}
    return {pool.workload: pool.requests_per_s_per_replica or 0.0}


def _soaked(hour: Hour, pool: ReplicaPool) -> float:
    """Replicas of `pool` running batch work in `hour`: x / C_b over its stated soaks."""
    return math.fsum(
        s.requests_per_s / s.batch_requests_per_s_per_replica
        for s in hour.batch_soak
        if (s.workload, s.region, s.configuration) == (pool.workload, pool.region, pool.key)
        and s.batch_requests_per_s_per_replica > 0
    )


def _idle_hours(instance: Instance, plan: Plan) -> list[Violation]:
    warm = warm_grid(instance)  # a (workload, region) with no demand: wholly idle
    grid = {
        key: warm.get(key, (0.0,) * len(rates)) for key, rates in interactive_grid(instance).items()
    }
    committed = {(c.region, c.gpu): c.committed_gpus for c in plan.committed}
    replicas = gpus = 0.0
    for hour in plan.hours:
        pools = [p for p in hour.pools if any((w, p.region) in grid for w in _rates(p))]
        capacity: dict[tuple[str, str, str], float] = defaultdict(float)
        for pool in pools:
            for workload, rate in _rates(pool).items():
                capacity[(workload, pool.region, pool.role)] += pool.count * rate
        for pool in pools:
            shares = []
            for workload in (w for w in _rates(pool) if (w, pool.region) in grid):
                total = capacity[(workload, pool.region, pool.role)]
                load = grid[(workload, pool.region)][hour.hour]
                shares.append(1 - min(load / total, 1.0) if total > 0 else 1.0)
            share = math.fsum(shares) / len(shares)
            idle = max(pool.count * share - _soaked(hour, pool), 0.0)
            replicas += idle
            gpus += idle * pool.replica_gpus
        in_use = {(row.region, row.gpu): row.reserved for row in hour.gpus}
        gpus += math.fsum(
            max(count - in_use.get(key, 0.0), 0.0) for key, count in committed.items()
        )
        gpus += math.fsum(  # paid beyond the GPUs the pools run (whole servers bought)
            max(row.existing + row.reserved + row.on_demand + row.spot - row.used, 0.0)
            for row in hour.gpus
        )
    found = []
    for name, recomputed in (
        ("idle_replica_hours_per_day", replicas),
        ("idle_gpu_hours_per_day", gpus),
    ):
        stated = getattr(plan, name)
        if stated is not None and not close(stated, recomputed):
            found.append(differs(name, stated, recomputed, "the hours' unused capacity gives"))
    return found


def _batch_placements(instance: Instance, plan: Plan) -> list[Violation]:
    if not plan.batch:
        return []
    grid = demand_grid(instance)
    warm = warm_grid(instance)
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    workloads = {w.name: w for w in instance.workloads}
    found = []
    for index, row in enumerate(plan.batch):
        where = f"batch[{index}]"
        workload = workloads.get(row.workload)
        if workload is None or not workload.is_batch or (row.workload, row.region) not in grid:
            found.append(
                Violation(
                    requirement=where, message=f"no batch demand of {row.workload} in {row.region}"
                )
            )
            continue
        per_day = SECONDS_PER_HOUR * math.fsum(grid[(row.workload, row.region)])
        busiest, own = _dedicated(plan, row.workload, row.region)
        supply = instance.region(row.region).supply
        cost = 0.0
        for pool in own:
            offer = supply.get(pool.gpu)
            spot = (offer.spot_price_per_gpu_hour if offer else None) or 0.0
            share = (
                dedicated_spot_share(
                    busiest,
                    row.region,
                    pool.gpu,
                    batch_gpus(instance, busiest, row.region, pool.gpu),
                )
                if busiest is not None and spot
                else 0.0
            )
            listed = instance.price_per_gpu_hour(row.region, pool.gpu)
            price = share * spot + (1 - share) * listed  # its spot GPUs at spot, the rest listed
            cost += days * HOURS_PER_DAY * pool.count * pool.replica_gpus * price
        before, after = _idle_before_after(instance, plan, row.workload, row.region, warm)
        checks = (
            ("requests_per_day", row.requests_per_day, per_day, "3,600 x the day's rates is"),
            ("deadline_hours", row.deadline_hours, workload.deadline_hours, "the workload's is"),
            (
                "dedicated_replicas",
                row.dedicated_replicas,
                sum(p.count for p in own),
                "the hours run",
            ),
            (
                "idle_replica_hours_before",
                row.idle_replica_hours_before,
                before,
                "the hours' idle interactive replicas give",
            ),
            (
                "idle_replica_hours_after",
                row.idle_replica_hours_after,
                after,
                "the hours' idle replicas less the soak give",
            ),
        )
        found += [
            differs(f"{where}.{name}", stated, recomputed, what)
            for name, stated, recomputed, what in checks
            if not close(stated, recomputed)
        ]
        soak_room = SECONDS_PER_HOUR * math.fsum(
            s.requests_per_s
            for hour in plan.hours
            for s in hour.batch_soak
            if (s.batch, s.region) == (row.workload, row.region)
        )
        most = min(per_day, soak_room)
        least = 0.0 if own else per_day  # without dedicated replicas, all of it is soaked
        if not least * (1 - RELATIVE) <= row.soaked_requests_per_day <= most * (1 + RELATIVE):
            found.append(
                differs(
                    f"{where}.soaked_requests_per_day",
                    row.soaked_requests_per_day,
                    f"between {least:,.2f} and {most:,.2f}",
                    "the day's requests, the soak room and the dedicated pools put it",
                )
            )
        stated_rates = {
            s.batch_requests_per_s_per_replica
            for hour in plan.hours
            for s in hour.batch_soak
            if (s.batch, s.region) == (row.workload, row.region)
        }
        if stated_rates and not any(
            close(row.soak_requests_per_s_per_replica, rate) for rate in stated_rates
        ):
            found.append(
                differs(
                    f"{where}.soak_requests_per_s_per_replica",
                    row.soak_requests_per_s_per_replica,
                    ", ".join(f"{rate:.6g}" for rate in sorted(stated_rates)),
                    "the hours soak at C_b of",
                )
            )
        if not money_close(row.dedicated_cost_per_month, cost):
            found.append(
                differs(
                    f"{where}.dedicated_cost_per_month",
                    row.dedicated_cost_per_month,
                    cost,
                    "the dedicated GPUs at the tier's price cost",
                )
            )
    return found


def _dedicated(plan: Plan, workload: str, region: str) -> tuple[Hour | None, list[ReplicaPool]]:
    """The batch workload's own pools (they run in every hour alike: the busiest hour's),
    with that hour (None without hours)."""
    hours: list[Hour] = list(plan.hours)
    pools = [[p for p in h.pools if (p.workload, p.region) == (workload, region)] for h in hours]
    if not hours:
        return None, []
    most = max(range(len(hours)), key=lambda i: sum(p.count for p in pools[i]))
    return hours[most], pools[most]


def _idle_before_after(
    instance: Instance, plan: Plan, batch: str, region: str, warm: dict
) -> tuple[float, float]:
    """(sum_h I_h, sum_h max(I_h - soaked_h, 0)) over the interactive workloads of the
    batch workload's model in its region (solver.time.readback.batch's rule, recomputed)."""
    model = next(w.model for w in instance.workloads if w.name == batch)
    interactive = [w.name for w in instance.workloads if not w.is_batch and w.model == model]
    before = after = 0.0
    for hour in plan.hours:
        for name in interactive:
            pools = [
                p
                for p in hour.pools
                if (p.workload, p.region) == (name, region) and p.role == "unified"
            ]
            capacity = math.fsum(p.count * (p.requests_per_s_per_replica or 0.0) for p in pools)
            if capacity <= 0:
                continue
            load = warm.get((name, region), (0.0,) * HOURS_PER_DAY)[hour.hour]
            idle = sum(p.count for p in pools) * max(1 - load / capacity, 0.0)
            soaked = math.fsum(
                s.requests_per_s / s.batch_requests_per_s_per_replica
                for s in hour.batch_soak
                if (s.batch, s.workload, s.region) == (batch, name, region)
                and s.batch_requests_per_s_per_replica > 0
            )
            before += idle
            after += max(idle - soaked, 0.0)
    return before, after


def _headroom(instance: Instance, plan: Plan) -> list[Violation]:
    grid = interactive_grid(instance)
    policy = instance.policy
    found = []
    for index, row in enumerate(plan.headroom):
        where = f"headroom[{index}]"
        pool = next(
            (
                p
                for p in plan.replicas
                if (p.workload, p.region, p.key) == (row.workload, row.region, row.configuration)
            ),
            None,
        )
        rates = grid.get((row.workload, row.region))
        if pool is None or rates is None or not pool.requests_per_s_per_replica:
            found.append(
                Violation(
                    requirement=where,
                    message=f"{row.configuration} for {row.workload} "
                    f"in {row.region} is no interactive pool of the peak fleet",
                )
            )
            continue
        start_s = instance.replica_start_s(pool.gpu)
        capacity = pool.requests_per_s_per_replica
        headroom = pool_headroom(
            rates, capacity, start_s, policy.scale_detection_s, policy.burst_factor
        )
        checks = (
            ("replica_start_s", row.replica_start_s, start_s, "the GPU's replica start is"),
            ("capacity_rps_per_replica", row.capacity_rps_per_replica, capacity, "the pool states"),
            ("peak_replicas", row.peak_replicas, pool.count, "the peak fleet runs"),
            ("lag_s", row.lag_s, headroom.lag_s, "start + detection is"),
            (
                "steepest_ramp_rps_per_minute",
                row.steepest_ramp_rps_per_minute,
                headroom.ramp.rps_per_minute,
                "the demand's steepest ramp is",
            ),
            (
                "headroom_rps",
                row.headroom_rps,
                headroom.headroom_rps,
                "burst x the largest rise within the lag is",
            ),
            (
                "headroom_replicas",
                row.headroom_replicas,
                headroom.headroom_replicas,
                "headroom / capacity per replica, rounded up, is",
            ),
        )
        found += [
            differs(f"{where}.{name}", stated, recomputed, what)
            for name, stated, recomputed, what in checks
            if not close(stated, recomputed)
        ]
    return found
