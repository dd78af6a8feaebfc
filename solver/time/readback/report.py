"""What the hourly plan reports beside its counts: each pool's warm headroom and scaling
thresholds (models.operations.autoscaling), the error budget each failure scenario spends
(models.operations.failover_budget) and the idle hours of the day.

Headroom of a pool: its own GPU's start time (not the slowest one the rows plan for),
the actual demand of its (workload, region), its capacity per replica at its peak size;
its thresholds from the physics of a replica in a pool of that size (`pool_thresholds`).

Error budget of a region loss at UTC hour h, per workload with `slo.availability`
(solver.time.readback.failover.error_budgets): the warm-rate demand beyond what the warm
survivors serve within reach, for failover_start_s seconds, as minutes of full outage;
the worst hour is reported, with the replicas started after the loss and, with
`failure_probability_per_year`, the expected burn lambda x mean_h.

Idle GPU-hours per day: in each hour, each pool's GPUs times the share of its capacity
the hour's actual demand leaves unused, plus committed GPUs that run nothing and GPUs
rented on demand that run nothing (the rest of a whole server).
"""

import math
from collections import defaultdict

from models.operations.autoscaling import (
    GPU_UTILISATION_NOTE,
    ScalingThresholds,
    pool_headroom,
    resident_batch,
    scaling_thresholds,
)
from models.operations.time_demand import interactive_grid, warm_grid
from models.schema.instance import Instance, Workload
from solver.candidates.table import Candidate
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.plan.time_records import PoolHeadroom
from solver.time.periods import TimeProgram
from solver.time.readback.failover import error_budgets
from solver.time.readback.idle import soaked_replicas

SECONDS_PER_DAY = 86_400.0


def with_time_report(instance: Instance, program: TimeProgram, plan: Plan) -> Plan:
    """The plan with headroom, error budget and idle hours filled in."""
    idle_replicas, idle_gpus = idle_hours(instance, plan)
    return plan.model_copy(
        update={
            "headroom": headrooms(instance, program, plan),
            "error_budget_minutes_used": error_budgets(instance, plan.hours),
            "idle_replica_hours_per_day": idle_replicas,
            "idle_gpu_hours_per_day": idle_gpus,
        }
    )


def headrooms(instance: Instance, program: TimeProgram, plan: Plan) -> tuple[PoolHeadroom, ...]:
    """Headroom and thresholds of every pool of the peak fleet (unified pools only:
    disaggregated halves scale on their own phase's signal)."""
    grid = interactive_grid(instance)
    policy = instance.policy
    rows = []
    for pool in plan.replicas:
        rates = grid.get((pool.workload, pool.region))
        capacity = pool.requests_per_s_per_replica
        if rates is None or not capacity or pool.role != "unified":
            continue
        candidate = next((c for c in program.table.of(pool.workload) if c.key == pool.key), None)
        if candidate is None:
            continue
        start_s = instance.replica_start_s(pool.gpu)
        headroom = pool_headroom(
            rates, capacity, start_s, policy.scale_detection_s, policy.burst_factor
        )
        workload = instance.workload(pool.workload)
        thresholds = pool_thresholds(
            capacity, headroom.headroom_rps, pool.count, candidate, workload
        )
        rows.append(
            PoolHeadroom(
                workload=pool.workload,
                region=pool.region,
                configuration=pool.key,
                replica_start_s=start_s,
                lag_s=headroom.lag_s,
                steepest_ramp_rps_per_minute=headroom.ramp.rps_per_minute,
                headroom_rps=headroom.headroom_rps,
                headroom_replicas=headroom.headroom_replicas,
                capacity_rps_per_replica=capacity,
                peak_replicas=pool.count,
                target_utilization=thresholds.target_utilization,
                kv_usage_scale_out=thresholds.kv_usage_scale_out,
                queue_depth_scale_out=thresholds.queue_trigger,
                queue_depth_slo_edge=None
                if math.isinf(thresholds.queue_depth_slo_edge)
                else thresholds.queue_depth_slo_edge,
                signal_note=GPU_UTILISATION_NOTE,
            )
        )
    return tuple(rows)


def pool_thresholds(
    capacity_rps_per_replica: float,
    headroom_rps: float,
    replicas: int,
    candidate: Candidate,
    workload: Workload,
) -> ScalingThresholds:
    """The scale-out thresholds of a pool of `replicas` credited C = `capacity_rps_per_replica`
    each (models.operations.autoscaling.scaling_thresholds), read from the physics of a
    replica in a pool of its size (`candidate.curve`), never a lone replica's: the batch
    at C is B = C x B_n / q(n) (`resident_batch`), so the KV-usage threshold is
    u* x B / B_max at the pool's own rate. A TTFT-limited replica alone carries
    q(1) < q(n); its batch at q(1) put the threshold near 40% of the usage at the target."""
    physics = candidate.curve.physics(replicas)
    ttft = workload.slo.ttft_p99_ms
    return scaling_thresholds(
        capacity_rps_per_replica,
        headroom_rps,
        replicas,
        resident_batch(capacity_rps_per_replica, physics.batch, physics.requests_per_s),
        max(physics.max_batch, 1),
        max(physics.prefill_s, 1e-9),
        workload.prompt_tokens.cv,
        None if ttft is None else ttft / 1000,
    )


def _served(pool: ReplicaPool) -> dict[str, float]:
    """Each workload a pool serves with its requests/s per replica (a group's members)."""
    if pool.members:
        return {m.workload: m.requests_per_s_per_replica for m in pool.members}
    return {pool.workload: pool.requests_per_s_per_replica or 0.0}


def idle_hours(instance: Instance, plan: Plan) -> tuple[float, float]:
    """(idle replica-hours, idle GPU-hours) per day of the interactive pools, with
    committed and on-demand GPUs that run nothing counted as idle GPU-hours. A pool's
    idle share is 1 - load / capacity of its phase (workload, region, role), the load at
    the hour's warm rate (what its period is planned at; the autoscaler's headroom is no
    idle capacity, as batch soaking reads it, solver.time.readback.batch): each phase
    of a prefill/decode pair carries the whole load, as the plan's idle_fraction reads it;
    a shared group's, the mean of its members' (each member's phase capacity counting the
    group's replicas at the member's rate, GroupMember.requests_per_s_per_replica); less
    the replicas soaking batch work that hour (solver.time.readback.idle.soaked_replicas)."""
    warm = warm_grid(instance)  # a (workload, region) with no demand: wholly idle
    grid = {
        key: warm.get(key, (0.0,) * len(rates)) for key, rates in interactive_grid(instance).items()
    }
    committed = {(c.region, c.gpu): c.committed_gpus for c in plan.committed}
    replicas = gpus = 0.0
    for whole in plan.hours:
        hour = whole.model_copy(
            update={
                "pools": tuple(
                    p for p in whole.pools if any((w, p.region) in grid for w in _served(p))
                )
            }
        )
        capacity: dict[tuple[str, str, str], float] = defaultdict(float)
        for pool in hour.pools:
            for workload, rate in _served(pool).items():
                capacity[(workload, pool.region, pool.role)] += pool.count * rate
        for pool in hour.pools:
            shares = []
            for workload in (w for w in _served(pool) if (w, pool.region) in grid):
                total = capacity[(workload, pool.region, pool.role)]
                load = grid[(workload, pool.region)][hour.hour]
                shares.append(1 - min(load / total, 1.0) if total > 0 else 1.0)
            share = math.fsum(shares) / len(shares)
            idle = max(pool.count * share - soaked_replicas(whole, pool), 0.0)
            replicas += idle
            gpus += idle * pool.replica_gpus
        for row in hour.gpus:
            gpus += max(committed.get((row.region, row.gpu), 0.0) - row.reserved, 0.0)
            paid = row.existing + row.reserved + row.on_demand + row.spot
            gpus += max(paid - row.used, 0.0)
        for (r, g), count in committed.items():
            if not any((row.region, row.gpu) == (r, g) for row in hour.gpus):
                gpus += count
    return replicas, gpus
