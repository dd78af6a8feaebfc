"""Read-back of shared groups, routing weights and the fleet's idle fraction.

Shared groups: each groups[t,r] > 0 becomes one `ReplicaPool` entry whose `workloads`
lists its members and whose `members` give a[w,t] per group replica.

Routing weights (models.serving.capacity_unit.routing_weights): in each region, the load of
workload w is split over every pool and group that serves it in proportion to what it
carries at the SLO,

    weight_p = credit_p / sum_q credit_q        credit_p = n_p q_p(n_p)  (a pool)
                                                credit_t = n_t a[w,t]    (a group)

so that every one of them runs at the same utilisation u[w,d] = load / sum_q credit_q.
Since the capacity rows hold, u <= 1 and a group replica then carries at most a[w,t] of
each member: the loads its template was evaluated at, or less.

Idle fraction at peak (no failure): a GPU of a pool is busy the fraction u[w,d] of its
capacity; a GPU of a group is busy the mean of its members' u[w,d] (each member's load
over its share a[w,t] of the group). The share is over the GPUs the bill covers
(`GpuUse.paid`: bought, in whole servers with buy_unit node, plus the owned GPUs in use),
not over the GPUs the pools hold, so a server bought for 3 busy GPUs counts 5 idle:

    idle = 1 - sum_p gpus_p x busy_p / sum_{r,g} paid[r,g].
"""

from collections import defaultdict
from collections.abc import Iterable

from solver.plan.records import GroupMember, ReplicaPool
from solver.plan.schema import Plan
from solver.program.build import FleetProgram
from solver.program.row_names import GroupsColumn


def group_counts(program: FleetProgram, values: dict[str, float]) -> dict[tuple[str, str], int]:
    """(template key, region) -> group replicas, for groups in use."""
    counts = {}
    for t in program.groups.templates:
        for r in program.sets.regions:
            count = round(values.get(GroupsColumn(t.key, r).name(), 0.0))
            if count > 0:
                counts[(t.key, r)] = count
    return counts


def group_gpus(program: FleetProgram, values: dict[str, float]) -> dict[tuple[str, str], int]:
    """(region, GPU type) -> GPUs of the shared groups in use."""
    used: dict[tuple[str, str], int] = defaultdict(int)
    templates = {t.key: t for t in program.groups.templates}
    for (key, r), count in group_counts(program, values).items():
        t = templates[key]
        used[(r, t.gpu)] += count * t.gpus
    return dict(used)


def group_pools(program: FleetProgram, values: dict[str, float]) -> list[ReplicaPool]:
    """One plan entry per shared group in use (routing weights filled by `with_routing`)."""
    sets = program.sets
    templates = {t.key: t for t in program.groups.templates}
    entries = []
    for (key, r), count in group_counts(program, values).items():
        t = templates[key]
        price = sets.offers[(r, t.gpu)].price_per_gpu_hour
        entries.append(
            ReplicaPool(
                workload="+".join(t.members),
                workloads=t.members,
                members=tuple(
                    GroupMember(workload=w, requests_per_s_per_replica=a)
                    for w, a in zip(t.members, t.capacity_requests_per_s, strict=True)
                ),
                region=r,
                gpu=t.gpu,
                precision=t.precision,
                kv_precision=t.kv_precision,
                tp=t.layout.tp,
                pp=t.layout.pp,
                count=count,
                gpus=count * t.gpus,
                limit=t.limit,
                cost_per_month=count * t.gpus * price * sets.hours_per_month,
                shared_engine=t.engine,
                swapped_weights=t.swapped,
            )
        )
    return entries


def _credit(entry: ReplicaPool, workload: str) -> float:
    """What the entry carries of `workload` at the SLO, all its replicas."""
    if entry.shared:
        share = next(m for m in entry.members if m.workload == workload)
        return entry.count * share.requests_per_s_per_replica
    return entry.count * (entry.requests_per_s_per_replica or 0.0)


def unified_credit(pools: Iterable[ReplicaPool]) -> dict[tuple[str, str], float]:
    """(workload, region) -> what the unified pools and groups there carry of the workload
    at the SLO, all their replicas: the denominator of its routing weights."""
    totals: dict[tuple[str, str], float] = defaultdict(float)
    for entry in pools:
        if entry.role != "unified":
            continue
        for w in entry.workloads:
            totals[(w, entry.region)] += _credit(entry, w)
    return totals


def routing_share(entry: ReplicaPool, workload: str, totals: dict[tuple[str, str], float]) -> float:
    """The entry's routing weight for `workload`: its credit over `totals`
    (`unified_credit`) in its region; 0 where they carry nothing."""
    total = totals.get((workload, entry.region), 0.0)
    return _credit(entry, workload) / total if total > 0 else 0.0


def with_routing(plan: Plan) -> Plan:
    """The plan with every unified pool's and group's routing weight, each group member's
    peak load, and the fleet's idle fraction at peak over the GPUs paid (see the module
    docstring), from the unified loads of its `none` scenario.
    """
    none = next((s for s in plan.scenarios if s.name == "none"), None)
    demand = {
        (load.workload, load.region): load.load_requests_per_s
        for load in (none.pools if none else ())
        if load.phase == "unified"
    }
    totals = unified_credit(plan.replicas)

    def share(entry: ReplicaPool, w: str) -> float:
        return routing_share(entry, w, totals)

    def busy(w: str, region: str) -> float:
        total = totals.get((w, region), 0.0)
        return min(demand.get((w, region), 0.0) / total, 1.0) if total > 0 else 0.0

    entries = []
    busy_gpus = 0.0
    for entry in plan.replicas:
        gpus = entry.gpus if entry.gpus is not None else entry.count * entry.replica_gpus
        if entry.role != "unified":
            entries.append(entry)
            busy_gpus += gpus * _phase_busy(plan, entry)
            continue
        if entry.shared:
            members = tuple(
                m.model_copy(
                    update={
                        "routing_weight": share(entry, m.workload),
                        "load_requests_per_s": share(entry, m.workload)
                        * demand.get((m.workload, entry.region), 0.0),
                    }
                )
                for m in entry.members
            )
            entries.append(entry.model_copy(update={"members": members}))
            busy_gpus += gpus * sum(busy(m.workload, entry.region) for m in members) / len(members)
        else:
            entries.append(
                entry.model_copy(update={"routing_weight": share(entry, entry.workload)})
            )
            busy_gpus += gpus * busy(entry.workload, entry.region)
    paid = sum(use.paid for use in plan.gpus) or sum(
        e.gpus if e.gpus is not None else e.count * e.replica_gpus for e in plan.replicas
    )
    idle = 1 - busy_gpus / paid if paid else 0.0
    return plan.model_copy(
        update={"replicas": tuple(entries), "idle_fraction": min(max(idle, 0.0), 1.0)}
    )


def _phase_busy(plan: Plan, entry: ReplicaPool) -> float:
    """Utilisation of a disaggregated pool's phase with no failure (from the plan's
    `none` scenario)."""
    none = next((s for s in plan.scenarios if s.name == "none"), None)
    if none is None:
        return 0.0
    for load in none.pools:
        if (
            load.workload == entry.workload
            and load.region == entry.region
            and (load.phase.startswith(str(entry.role)))
        ):
            return min(load.utilisation, 1.0)
    return 0.0
