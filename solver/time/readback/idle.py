"""The idle share of an hourly plan, over the GPUs paid, as a static plan states it
(`Plan.idle_fraction`, solver.readback.groups) summed over the day's hours:

    idle = 1 - sum_h busy_h / sum_h paid_h

    busy_h = sum over the hour's interactive pools of gpus x u, u the utilisation (at
             most 1) of the pool's (workload, region, phase) with no failure in the
             hour's period plan, at the warm rate the period is planned for; a shared
             group's GPUs x the mean u of its members; plus the GPUs of dedicated batch
             replicas (sized by the program to the batch work they run that hour); plus
             the replicas soaking batch work on interactive pools, x / C_b of each
             soaking pool (`soaked_replicas`; the soak takes idle capacity only)
    paid_h = every committed GPU (paid every hour, used or not) + the owned GPUs in use
             + the GPUs rented on demand (whole servers where GPUs come in servers) and
             on spot that hour

so a server of 8 rented for 3 busy GPUs is 5 idle GPUs that hour, and a commitment idle
through the trough counts idle in every trough hour.
"""

import math

from models.serving.replica import Role
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.plan.time_records import Hour


def busy_gpus(plan: Plan, pools: tuple[ReplicaPool, ...]) -> float:
    """GPUs of `pools` busy with no failure, at the utilisation of `plan`'s `none`
    scenario (the static rule, over every pool and shared group)."""
    none = next((s for s in plan.scenarios if s.name == "none"), None)
    if none is None:
        return 0.0
    busy_at: dict[tuple[str, str, str], float] = {}
    for load in none.pools:  # a phase reads `decode` or `decode-fp8`: the first one counts
        role = next((r for r in Role if load.phase.startswith(r)), "")
        busy_at.setdefault((load.workload, load.region, role), min(max(load.utilisation, 0), 1))
    busy = 0.0
    for entry in pools:
        members = [m.workload for m in entry.members] if entry.shared else [entry.workload]
        u = [busy_at.get((w, entry.region, str(entry.role)), 0.0) for w in members]
        busy += entry.count * entry.replica_gpus * math.fsum(u) / len(u)
    return busy


def soaked_replicas(hour: Hour, pool: ReplicaPool) -> float:
    """Replicas of `pool` busy with batch work in `hour`: x / C_b summed over the hour's
    soaks of the pool (x batch requests/s, C_b one replica's batch rate)."""
    return math.fsum(
        s.requests_per_s / s.batch_requests_per_s_per_replica
        for s in hour.batch_soak
        if (s.workload, s.region, s.configuration) == (pool.workload, pool.region, pool.key)
        and s.batch_requests_per_s_per_replica > 0
    )


def hourly_idle_fraction(
    hours: list[Hour],
    period_plans: dict[int, Plan],
    batch_pools: tuple[ReplicaPool, ...],
    committed_gpus: float,
) -> float | None:
    """The day's idle share over the GPUs paid (the module text); None when nothing is
    paid."""
    busy = paid = 0.0
    batch_gpus = sum(p.count * p.replica_gpus for p in batch_pools)
    for hour in hours:
        plan = period_plans[hour.period]
        busy += busy_gpus(plan, plan.replicas) + batch_gpus
        busy += math.fsum(soaked_replicas(hour, p) * p.replica_gpus for p in hour.pools)
        paid += committed_gpus + math.fsum(g.existing + g.on_demand + g.spot for g in hour.gpus)
    if paid <= 0:
        return None
    return min(max(1.0 - busy / paid, 0.0), 1.0)
