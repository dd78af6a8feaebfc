"""What the hourly plan reports beside its counts: each pool's warm headroom and scaling
thresholds (models.autoscaling), the error budget each failure scenario spends
(models.failover_budget) and the idle hours of the day.

Headroom of a pool: its own GPU's start time (not the slowest one the rows plan for),
the actual demand of its (workload, region), its capacity per replica at its peak size.

Error budget of a region loss at UTC hour h, per workload with `slo.availability`:
R_h = the workload's actual demand over every region (the lost region's users are
rerouted), W_h = the warm capacity of the pools outside the lost region at hour h. The
loss spends max(R_h - W_h, 0) x failover_start_s requests of the budget; after the
start time the plan takes the supply to start what is missing (the outage is counted
for the start window only). A plan sized with static spare gives W_h >= R_h: no budget
spent. The worst hour is reported, and with `failure_probability_per_year` the
expected burn lambda x mean_h.

Idle GPU-hours per day: in each hour, each pool's GPUs times the share of its capacity
the hour's actual demand leaves unused, plus committed GPUs that run nothing.
"""

import math
from collections import defaultdict

from models.autoscaling import GPU_UTILISATION_NOTE, pool_headroom, scaling_thresholds
from models.failover_budget import expected_burn_minutes_per_year, scenario_budget
from models.instance import Instance
from models.scenarios import ScenarioKind, failure_scenarios
from models.time_demand import interactive_grid
from solver.periods import TimeProgram
from solver.plan import Hour, Plan, PoolHeadroom, ScenarioBudgetUse

SECONDS_PER_DAY = 86_400.0


def with_time_report(instance: Instance, program: TimeProgram, plan: Plan) -> Plan:
    """The plan with headroom, error budget and idle hours filled in."""
    idle_replicas, idle_gpus = idle_hours(instance, plan)
    return plan.model_copy(
        update={
            "headroom": headrooms(instance, program, plan),
            "error_budget_minutes_used": error_budgets(instance, plan),
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
        lone = candidate.capacity
        workload = next(w for w in instance.workloads if w.name == pool.workload)
        ttft = workload.slo.ttft_p99_ms
        thresholds = scaling_thresholds(
            capacity,
            headroom.headroom_rps,
            pool.count,
            lone.batch,
            max(lone.max_batch, 1),
            max(lone.prefill_s, 1e-9),
            workload.prompt_tokens.cv,
            None if ttft is None else ttft / 1000,
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
                queue_depth_scale_out=thresholds.queue_depth_scale_out,
                queue_depth_slo_edge=None
                if math.isinf(thresholds.queue_depth_slo_edge)
                else thresholds.queue_depth_slo_edge,
                signal_note=GPU_UTILISATION_NOTE,
            )
        )
    return tuple(rows)


def _capacity_by_region(hour: Hour, workload: str) -> dict[str, float]:
    capacity: dict[str, float] = defaultdict(float)
    for pool in hour.pools:
        if pool.workload == workload and pool.role == "unified":
            capacity[pool.region] += pool.count * (pool.requests_per_s_per_replica or 0.0)
    return capacity


def error_budgets(instance: Instance, plan: Plan) -> tuple[ScenarioBudgetUse, ...]:
    """Budget minutes each region loss spends, at its worst hour, per workload with an
    availability target."""
    grid = interactive_grid(instance)
    risk = {r.name: r.failure_probability_per_year for r in instance.regions}
    start_s = instance.policy.failover_start_s
    if start_s is None:
        start_s = max(instance.replica_start_s(g) for g in instance.gpu_specs)
    rows = []
    for workload in instance.workloads:
        availability = workload.slo.availability
        keys = [key for key in grid if key[0] == workload.name]
        if availability is None or workload.is_batch or not keys:
            continue
        average = math.fsum(sum(grid[key]) for key in keys) / 24
        if average <= 0:
            continue
        for scenario in failure_scenarios(instance):
            if scenario.kind is not ScenarioKind.REGION:
                continue
            by_hour = []
            for hour in plan.hours:
                load = math.fsum(grid[key][hour.hour] for key in keys)
                capacity = _capacity_by_region(hour, workload.name)
                warm = math.fsum(v for r, v in capacity.items() if r != scenario.lost_region)
                by_hour.append(
                    scenario_budget(
                        scenario.name,
                        hour.hour,
                        load,
                        warm,
                        warm,
                        start_s,
                        start_s,
                        average,
                        availability,
                        instance.policy.hours_per_month,
                    )
                )
            worst = max(by_hour, key=lambda b: (b.budget_minutes_used, -b.hour))
            probability = risk.get(scenario.lost_region or "")
            rows.append(
                ScenarioBudgetUse(
                    scenario=scenario.name,
                    workload=workload.name,
                    worst_hour=worst.hour,
                    failover_start_s=start_s,
                    shortfall_rps=worst.shortfall_rps,
                    budget_minutes=worst.budget_minutes,
                    budget_minutes_used=worst.budget_minutes_used,
                    expected_burn_minutes_per_year=None
                    if probability is None
                    else expected_burn_minutes_per_year(
                        probability, [b.budget_minutes_used for b in by_hour]
                    ),
                )
            )
    return tuple(rows)


def idle_hours(instance: Instance, plan: Plan) -> tuple[float, float]:
    """(idle replica-hours, idle GPU-hours) per day of the interactive pools, with
    committed GPUs that run nothing counted as idle GPU-hours."""
    grid = interactive_grid(instance)
    committed = {(c.region, c.gpu): c.committed_gpus for c in plan.committed}
    replicas = gpus = 0.0
    for hour in plan.hours:
        capacity: dict[tuple[str, str], float] = defaultdict(float)
        for pool in hour.pools:
            capacity[(pool.workload, pool.region)] += pool.count * (
                pool.requests_per_s_per_replica or 0.0
            )
        for pool in hour.pools:
            total = capacity[(pool.workload, pool.region)]
            load = grid.get((pool.workload, pool.region), (0.0,) * 24)[hour.hour]
            share = 1 - min(load / total, 1.0) if total > 0 else 1.0
            replicas += pool.count * share
            gpus += (pool.gpus or 0) * share
        for row in hour.gpus:
            gpus += max(committed.get((row.region, row.gpu), 0.0) - row.reserved, 0.0)
        for (r, g), count in committed.items():
            if not any((row.region, row.gpu) == (r, g) for row in hour.gpus):
                gpus += count
    return replicas, gpus
