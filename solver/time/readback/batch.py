"""Batch workloads in the hourly plan, read back from the program
(solver.program.families.batch_work), where soaking the trough and dedicated replicas were
chosen together with the interactive fleet at the least cost.

Per batch workload and region the plan reports:

- soaked requests per day: each hour, what the schedule serves up to the soak's room
  (3,600 x the soaked requests/s), the rest on dedicated replicas;
- the limit of a batch replica on the interactive configuration (C_b, at the interactive
  TPOT target: `tpot`, or `kv_memory` when long contexts fill the cache first);
- idle replica-hours before and after: each hour, the interactive pools of the same
  model run N_h replicas of capacity K_h and carry the warm rate (demand plus the
  autoscaler's headroom, never soaked): idle I_h = N_h (1 - warm_h / K_h); the soak
  takes x_h / C_b of them;
- the dedicated replicas (count, configuration, tier, cost) and the break-even price:
  the dedicated GPU-hour price above which soaking is cheaper per batch request,
  p* = c_s C_d / (C_b g_d) with c_s the soaked replica's on-demand price per hour
  (models.operations.batch_soak.soak_breakeven_price_per_gpu_hour).
"""

import math

from models.operations.batch_soak import (
    SECONDS_PER_HOUR,
    soak_breakeven_price_per_gpu_hour,
)
from models.operations.time_demand import warm_grid
from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from solver.candidates.table import Candidate
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.plan.time_records import BatchPlacement, BatchSoak
from solver.program.families.batch_work import BatchWork, DedicatedOption, SoakOption
from solver.program.row_names import timed_name
from solver.time.periods import TimeProgram


def replica_pool(
    candidate: Candidate, workload: str, region: str, count: int, rate: float, price: float
) -> ReplicaPool:
    """A plan entry of `count` replicas of a candidate, each serving `rate` requests/s,
    paid `price` per GPU-hour."""
    return ReplicaPool(
        workload=workload,
        region=region,
        **candidate.layout_fields,
        count=count,
        gpus=count * candidate.gpus,
        limit=candidate.capacity.limit,
        requests_per_s_per_replica=rate,
        cost_per_month=0.0,
    )


def dedicated_pools(
    program: TimeProgram, values: dict[str, float]
) -> tuple[tuple[ReplicaPool, str, float], ...]:
    """(pool, tier, price per GPU-hour) of every dedicated batch pool the program runs."""
    found = []
    for work in program.batch:
        for option in work.dedicated:
            count = round(values.get(option.column, 0.0))
            if count < 1:
                continue
            pool = replica_pool(
                option.candidate,
                work.batch,
                work.region,
                count,
                option.rps_per_replica,
                option.price_per_gpu_hour,
            )
            found.append((pool, option.tier, option.price_per_gpu_hour))
    return tuple(found)


def hour_soaks(program: TimeProgram, values: dict[str, float]) -> dict[int, tuple[BatchSoak, ...]]:
    """UTC hour -> the batch soaked on interactive pools in that hour."""
    soaks: dict[int, list[BatchSoak]] = {h: [] for h in range(HOURS_PER_DAY)}
    for work in program.batch:
        for part in program.periods:
            for option in work.soak:
                rate = values.get(timed_name(option.column, part.first_hour), 0.0)
                if rate <= 1e-9:
                    continue
                for hour in part.period.hours:
                    soaks[hour].append(
                        BatchSoak(
                            batch=work.batch,
                            workload=option.workload,
                            region=work.region,
                            configuration=option.candidate.key,
                            requests_per_s=rate,
                            batch_requests_per_s_per_replica=option.batch_rps_per_replica,
                            limit=option.limit,
                        )
                    )
    return {h: tuple(s) for h, s in soaks.items()}


def with_batch(
    instance: Instance, program: TimeProgram, plan: Plan, values: dict[str, float]
) -> Plan:
    """The plan with every batch workload's placement reported."""
    if not program.batch:
        return plan
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    dedicated = dedicated_pools(program, values)
    placements = []
    for work in program.batch:
        served = [0.0] * HOURS_PER_DAY
        for (a, k), column in work.served.items():
            served[(a + k) % HOURS_PER_DAY] += values.get(column, 0.0)
        soaked = 0.0
        for hour in plan.hours:
            mine = [s for s in hour.batch_soak if (s.batch, s.region) == (work.batch, work.region)]
            room = SECONDS_PER_HOUR * math.fsum(s.requests_per_s for s in mine)
            soaked += min(served[hour.hour], room)
        before, after = _idle(instance, plan, work)
        soak = _chosen_soak(program, work, values)
        own = [
            (p, t, price)
            for p, t, price in dedicated
            if (p.workload, p.region) == (work.batch, work.region)
        ]
        placement = BatchPlacement(
            workload=work.batch,
            region=work.region,
            requests_per_day=math.fsum(work.arrivals_by_hour),
            deadline_hours=work.deadline_hours,
            soaked_requests_per_day=soaked,
            soak_limit=soak.limit if soak else "",
            soak_requests_per_s_per_replica=soak.batch_rps_per_replica if soak else 0.0,
            idle_replica_hours_before=before,
            idle_replica_hours_after=after,
            dedicated_replicas=sum(p.count for p, _, _ in own),
            dedicated_configuration="+".join(dict.fromkeys(p.key for p, _, _ in own)),
            dedicated_tier="+".join(dict.fromkeys(t for _, t, _ in own)),
            dedicated_cost_per_month=math.fsum(
                days * HOURS_PER_DAY * (p.gpus or 0) * price for p, _, price in own
            ),
            breakeven_price_per_gpu_hour=_breakeven(instance, work, soak),
        )
        placements.append(placement)
    return plan.model_copy(update={"batch": tuple(placements)})


def _idle(instance: Instance, plan: Plan, work: BatchWork) -> tuple[float, float]:
    """(sum_h I_h, sum_h max(I_h - soaked_h, 0)) over the interactive workloads of the
    batch workload's model in its region: I_h = N_h x (1 - warm_h / K_h) with N_h the
    replicas of the workload's unified pools in hour h, K_h their capacity and warm_h
    the hour's warm rate (demand plus the autoscaler's headroom, which is never soaked);
    soaked_h = sum over the soaked pools of x / C_b replicas."""
    warm = warm_grid(instance)
    model = instance.workload(work.batch).model
    interactive = [w.name for w in instance.workloads if not w.is_batch and w.model == model]
    before = after = 0.0
    for hour in plan.hours:
        for name in interactive:
            pools = [
                p
                for p in hour.pools
                if (p.workload, p.region) == (name, work.region) and p.role == "unified"
            ]
            replicas = sum(p.count for p in pools)
            capacity = math.fsum(p.count * (p.requests_per_s_per_replica or 0.0) for p in pools)
            if capacity <= 0:
                continue
            load = warm.get((name, work.region), (0.0,) * 24)[hour.hour]
            idle = replicas * max(1 - load / capacity, 0.0)
            soaked = math.fsum(
                s.requests_per_s / s.batch_requests_per_s_per_replica
                for s in hour.batch_soak
                if (s.batch, s.workload, s.region) == (work.batch, name, work.region)
            )
            before += idle
            after += max(idle - soaked, 0.0)
    return before, after


def _chosen_soak(
    program: TimeProgram, work: BatchWork, values: dict[str, float]
) -> SoakOption | None:
    """The interactive pool soaking the most of the day (the first one when none soaks)."""
    if not work.soak:
        return None

    def day_rps(option: SoakOption) -> float:
        return math.fsum(
            values.get(timed_name(option.column, p.first_hour), 0.0) * p.period.weight_hours
            for p in program.periods
        )

    return max(work.soak, key=day_rps)


def _breakeven(instance: Instance, work: BatchWork, soak: SoakOption | None) -> float | None:
    """p* against the dedicated option cheapest per request (None without both)."""
    if soak is None or not work.dedicated:
        return None
    price = instance.price_per_gpu_hour(work.region, soak.candidate.gpu) * soak.candidate.gpus
    best: DedicatedOption = min(
        work.dedicated,
        key=lambda o: o.price_per_gpu_hour * o.candidate.gpus / o.rps_per_replica,
    )
    return soak_breakeven_price_per_gpu_hour(
        price, soak.batch_rps_per_replica, best.rps_per_replica, best.candidate.gpus
    )
