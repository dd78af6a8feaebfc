"""The prefix cache of a chosen pool, for the plan: the KV tiers its replicas use and the
effective hit rate at the pool's real size (`models.serving.prefix_kv.pool_kv`)."""

from typing import Any

from models.physics.efficiency import efficiency_for
from models.schema.instance import Instance
from models.schema.serving_inputs import traffic_mix
from models.serving.prefix_kv import pool_kv
from models.serving.replica import ReplicaConfig, ServingContext


def pool_kv_fields(
    instance: Instance, workload: str, config: ReplicaConfig, count: int
) -> dict[str, Any]:
    """`kv_tiers_used` and `prefix_hit_rate` of a pool of `count` replicas of `config`
    serving `workload` (empty when the workload has no prefix cache)."""
    entry = instance.workload(workload)
    mix = traffic_mix(entry, instance.policy.prefix_affinity)
    efficiency = efficiency_for(
        config.gpu, config.weight_precision, instance.efficiency, instance.engine
    )
    kv = pool_kv(ServingContext(config, mix, efficiency), max(count, 1))
    if kv is None:
        return {}
    return {
        "kv_tiers_used": tuple(tier.value for tier in kv.tiers_used),
        "prefix_hit_rate": kv.hit_rate,
    }
