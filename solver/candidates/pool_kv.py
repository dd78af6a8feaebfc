"""The prefix cache of a chosen pool, for the plan: the KV tiers its replicas use and the
effective hit rate at the pool's real size (`models.schema.serving_inputs.
workload_prefix_cache`, the description the verifier and the simulator read too)."""

from typing import Any

from models.schema.instance import Instance
from models.schema.serving_inputs import workload_prefix_cache
from models.serving.replica import ReplicaConfig


def pool_kv_fields(
    instance: Instance, workload: str, config: ReplicaConfig, count: int
) -> dict[str, Any]:
    """`kv_tiers_used` and `prefix_hit_rate` of a pool of `count` replicas of `config`
    serving `workload` (empty when the workload has no prefix cache)."""
    kv = workload_prefix_cache(instance, workload, config, count)
    if not kv.cached:
        return {}
    return {
        "kv_tiers_used": tuple(tier.value for tier in kv.tiers_used),
        "prefix_hit_rate": kv.hit_rate,
    }
