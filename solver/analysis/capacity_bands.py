"""The measured error band of each pool's capacity, written into the plan
(`ReplicaPool.capacity_band`): which band (`models.physics.error_bands.band_for`: the
engine profile, the model family of the pool's layout, max throughput or, on a GPU that
borrows another's efficiency factors, the borrowed regime) and what
`policy.capacity_margin: auto` multiplied the capacity by (1 / (1 + p90) when p90 > 0).
"""

from models.physics.error_bands import Band, band_for, capacity_derate
from models.schema.instance import Instance
from models.schema.policy import CapacityMargin
from solver.plan.records import CapacityBand, ReplicaPool
from solver.plan.schema import Plan


def capacity_band(instance: Instance, pool: ReplicaPool) -> CapacityBand | None:
    """The band of a dedicated pool; None for a shared group, an unknown GPU or model,
    or a profile with no measured band."""
    gpu = instance.gpu_specs.get(pool.gpu)
    workload = next((w for w in instance.workloads if w.name == pool.workload), None)
    llm = instance.llm_specs.get(workload.model) if workload is not None else None
    if pool.shared or gpu is None or llm is None:
        return None
    found = band_for(instance.engine, gpu, llm, pool.ep, pool.dp)
    return None if found is None else _record(found, instance)


def _record(found: Band, instance: Instance) -> CapacityBand:
    auto = instance.policy.capacity_margin == CapacityMargin.AUTO
    return CapacityBand(
        family=found.family,
        regime=found.regime,
        p10=round(found.p10, 4),
        median=round(found.median, 4),
        p90=round(found.p90, 4),
        rows=found.rows,
        flag=found.flag,
        capacity_factor=capacity_derate(found) if auto else 1.0,
        text=found.describe(),
    )


def with_bands(instance: Instance, plan: Plan) -> Plan:
    """The plan with each dedicated pool's `capacity_band`, in `replicas` and in every
    hour's pools (the peak fleet is an hour's pools, field for field)."""
    found: dict[tuple, CapacityBand | None] = {}

    def banded(pool: ReplicaPool) -> ReplicaPool:
        key = (pool.workload, pool.key, pool.shared)
        if key not in found:
            found[key] = capacity_band(instance, pool)
        return pool.model_copy(update={"capacity_band": found[key]})

    hours = tuple(
        hour.model_copy(update={"pools": tuple(map(banded, hour.pools))}) for hour in plan.hours
    )
    return plan.model_copy(update={"replicas": tuple(map(banded, plan.replicas)), "hours": hours})


def pools_run(plan: Plan) -> tuple[ReplicaPool, ...]:
    """The plan's pools: its peak fleet's, every hour's and every month's (a plan's cost
    over a horizon, and a lever's $/month, its mean month, count a pool of a later month
    or an off-peak hour too)."""
    hours = [*plan.hours, *(hour for month in plan.months for hour in month.hours)]
    return (*plan.replicas, *(p for hour in hours for p in hour.pools))


def uncertain_pools(plan: Plan) -> tuple[str, ...]:
    """`gb200 moe-tp BORROWED -42%/+62%`, one per (GPU, family, band) of the plan's pools
    in use (`pools_run`) whose capacity rests on a borrowed GPU generation or an
    unmeasured regime."""
    found = []
    for pool in pools_run(plan):
        b = pool.capacity_band
        if pool.count and b is not None and b.uncertain:
            word = (b.flag or "borrowed").upper()
            found.append(f"{pool.gpu} {b.family} {word} {b.p10:+.0%}/{b.p90:+.0%}")
    return tuple(dict.fromkeys(found))
