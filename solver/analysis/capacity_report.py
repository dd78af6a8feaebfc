"""One capacity unit across generations, and what routing by GPU count would do.

The unit (models.serving.capacity_unit): requests/s of the reference mix at its SLO on one
replica of the reference configuration. Here the reference workload is the one with the
most peak demand, its mix and SLO the unit's, and the reference configuration its first
dedicated unified pool in the plan. Every dedicated unified pool then states what one of
its replicas holds in that unit (`ReplicaPool.capacity_units_per_replica`): its own model
on its own layout, serving the reference mix at the reference SLO.

Routing by GPU count: where a workload has dedicated unified pools of several
configurations in one region, `models.serving.capacity_unit.routing_by_gpu_count` gives the p99s
each pool would show if the region's traffic were split by GPU count instead of by
capacity (the plan's `routing_weight`); the slower pool breaks its SLO, by the amount shown.
"""

import math
from collections import defaultdict

from pydantic import BaseModel, ConfigDict

from models.operations.scenarios import ScenarioKind
from models.physics.efficiency import efficiency_for
from models.schema.instance import Instance
from models.schema.serving_inputs import latency_targets, pool_replica, traffic_mix
from models.serving.capacity_unit import (
    PoolShare,
    capacity_units,
    define_capacity_unit,
    routing_by_gpu_count,
)
from models.serving.replica import Role
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class GpuCountRouting(BaseModel):
    """One pool under routing by GPU count instead of by capacity."""

    model_config = _FROZEN

    workload: str
    region: str
    configuration: str
    weight_by_capacity: float
    weight_by_gpus: float
    utilisation: float
    ttft_p99_ms: float | None
    """None when the queue grows without bound."""
    ttft_target_ms: float | None
    tpot_p99_ms: float | None
    tpot_target_ms: float | None
    breaks_slo: bool


def with_capacity_units(instance: Instance, plan: Plan) -> tuple[Plan, str]:
    """The plan with every dedicated unified pool's capacity in the unit, and the unit's
    statement (empty when the plan has no dedicated unified pool)."""
    pools = [e for e in plan.replicas if not e.shared and e.role == Role.UNIFIED]
    if not pools:
        return plan, ""
    demand = {
        w: sum(level.peak_rps for level in instance.workload(w).demand.values())
        for w in {e.workload for e in pools}
    }
    reference_workload = max(sorted(demand), key=lambda w: demand[w])
    reference = next(e for e in pools if e.workload == reference_workload)
    ref = instance.workload(reference_workload)
    model = ref.model
    efficiency = efficiency_for(
        instance.gpu_specs[reference.gpu], reference.precision, instance.efficiency, instance.engine
    )
    mix = traffic_mix(ref, instance.policy.prefix_affinity)
    try:
        unit = define_capacity_unit(
            f"{reference_workload}-rps",
            pool_replica(instance, reference),
            mix,
            latency_targets(ref.slo),
            efficiency,
        )
    except ValueError:
        return plan, ""
    entries = []
    for entry in plan.replicas:
        if entry.shared or entry.role != Role.UNIFIED:
            entries.append(entry)
            continue
        eff = efficiency_for(
            instance.gpu_specs[entry.gpu], entry.precision, instance.efficiency, instance.engine
        )
        units = capacity_units(pool_replica(instance, entry), unit, eff)
        entries.append(entry.model_copy(update={"capacity_units_per_replica": units}))
    statement = (
        f"1 unit = 1 request/s of {reference_workload}'s mix at its SLO; one "
        f"{unit.reference} replica of {model} holds {unit.reference_requests_per_s:.3g} units"
    )
    return plan.model_copy(update={"replicas": tuple(entries)}), statement


def _shown_fleet(plan: Plan) -> tuple[tuple[ReplicaPool, ...], dict[tuple[str, str], float]]:
    """The pools that serve together and each (workload, region)'s load on its unified
    pools, as the plan's scenario 'none' states them: a static plan's pools at its peak
    (demand_growth included); an hourly plan's in the hour its scenarios show (its
    `replicas` are each pool at its largest count over the day, pools that may never run
    in the same hour)."""
    none = next((s for s in plan.scenarios if s.name == ScenarioKind.NONE), None)
    loads: dict[tuple[str, str], float] = defaultdict(float)
    for row in () if none is None else none.pools:
        if row.phase.startswith(Role.UNIFIED):
            loads[(row.workload, row.region)] += row.load_requests_per_s
    hour = None if none is None else none.hour
    pools = next((h.pools for h in plan.hours if h.hour == hour), plan.replicas)
    return pools, loads


def gpu_count_routing(instance: Instance, plan: Plan) -> tuple[GpuCountRouting, ...]:
    """Every pool of every (workload, region) served by several dedicated unified
    configurations, under routing by GPU count (see the module docstring), at the load
    and with the pools of the plan's scenario 'none' (`_shown_fleet`)."""
    pools, loads = _shown_fleet(plan)
    grouped: dict[tuple[str, str], list[ReplicaPool]] = defaultdict(list)
    for e in pools:
        if not e.shared and e.role == Role.UNIFIED and e.count > 0:
            grouped[(e.workload, e.region)].append(e)
    rows = []
    for (w, r), entries in grouped.items():
        if len(entries) < 2:
            continue
        workload = instance.workload(w)
        shares = [
            PoolShare(
                e.label,
                pool_replica(instance, e),
                e.count,
                e.requests_per_s_per_replica or 0.0,
            )
            for e in entries
        ]
        targets = latency_targets(workload.slo)
        load = loads.get((w, r), 0.0)
        efficiency = {
            e.label: efficiency_for(
                instance.gpu_specs[e.gpu], e.precision, instance.efficiency, instance.engine
            )
            for e in entries
        }
        mix = traffic_mix(workload, instance.policy.prefix_affinity)
        for m in routing_by_gpu_count(shares, load, mix, targets, efficiency):
            rows.append(
                GpuCountRouting(
                    workload=w,
                    region=r,
                    configuration=m.name,
                    weight_by_capacity=m.weight_by_capacity,
                    weight_by_gpus=m.weight_by_gpus,
                    utilisation=m.utilisation,
                    ttft_p99_ms=None if math.isinf(m.ttft_p99_s) else m.ttft_p99_s * 1e3,
                    ttft_target_ms=_ms(targets.ttft_p99_s),
                    tpot_p99_ms=None if math.isinf(m.tpot_p99_s) else m.tpot_p99_s * 1e3,
                    tpot_target_ms=_ms(targets.tpot_p99_s),
                    breaks_slo=m.breaks_slo,
                )
            )
    return tuple(rows)


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1e3
