"""A workload of the instance file as the serving model's inputs: its traffic mix, its
latency targets, the replica configuration of a pool serving it and that pool's prefix
cache.

The schema turns its records into models.serving's here, at the edge, so that the physics
and the serving model never import the instance schema (issue 31)."""

from dataclasses import replace
from typing import Protocol

from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.instance import Instance, Slo, Workload
from models.serving.prefix_kv import PoolKv, pool_kv
from models.serving.replica import (
    LatencyTargets,
    ReplicaConfig,
    Role,
    ServingContext,
    TrafficMix,
    replica_of_pool,
)


def traffic_mix(workload: Workload, prefix_affinity: bool) -> TrafficMix:
    """The mix of a workload from the instance file; `prefix_affinity` is the
    policy's routing (`instance.policy.prefix_affinity`; it matters only with declared
    prefixes, and is required so that no caller plans one router and replays another)."""
    mix = TrafficMix.of_lengths(
        workload.prompt_tokens, workload.output_tokens, workload.prefix_cache_hit_rate
    )
    if not workload.prefixes:
        return mix
    return replace(
        mix,
        prefix_tokens=tuple(p.tokens for p in workload.prefixes for _ in range(p.count)),
        prefix_shares=tuple(p.share for p in workload.prefixes for _ in range(p.count)),
        hit_rate_from_prefixes="prefix_cache_hit_rate" not in workload.model_fields_set,
        prefix_affinity=prefix_affinity,
    )


def latency_targets(slo: Slo) -> LatencyTargets:
    """Targets from an instance SLO (ms at the edge, seconds inside)."""
    return LatencyTargets(
        ttft_p99_s=None if slo.ttft_p99_ms is None else slo.ttft_p99_ms / 1e3,
        tpot_p99_s=None if slo.tpot_p99_ms is None else slo.tpot_p99_ms / 1e3,
    )


def workload_prefix_cache(
    instance: Instance, workload: str, config: ReplicaConfig, pool_replicas: float
) -> PoolKv:
    """The prefix cache of a pool of `pool_replicas` replicas of `config` serving the
    instance's `workload`: the hit rate, the HBM copies of the declared prefixes and the
    tiers holding them (`models.serving.prefix_kv.pool_kv`, under the policy's router).

    The one description of the cache that the plan states (`prefix_hit_rate`,
    `kv_tiers_used`), the verifier recomputes and the simulator replays; the planner's
    capacity takes the same numbers through `models.serving.prefix_kv.prefix_mix`."""
    entry = next(w for w in instance.workloads if w.name == workload)
    efficiency = efficiency_for(
        config.gpu, config.weight_precision, instance.efficiency, instance.engine
    )
    mix = traffic_mix(entry, instance.policy.prefix_affinity)
    return pool_kv(ServingContext(config, mix, efficiency), max(pool_replicas, 1))


class PoolLayout(Protocol):
    """What a plan pool states of its layout, by the names of the plan's pools
    (`solver.plan.records.ReplicaPool` is one; models/ does not import it)."""

    @property
    def workload(self) -> str: ...
    @property
    def gpu(self) -> str: ...
    @property
    def precision(self) -> Precision: ...
    @property
    def kv_precision(self) -> Precision | None: ...
    @property
    def tp(self) -> int: ...
    @property
    def pp(self) -> int: ...
    @property
    def role(self) -> Role: ...
    @property
    def ep(self) -> int: ...
    @property
    def dp(self) -> int: ...
    @property
    def redundant_experts(self) -> int: ...
    @property
    def speculative(self) -> str | None: ...


def pool_replica(instance: Instance, pool: PoolLayout) -> ReplicaConfig:
    """The replica configuration of a dedicated plan pool of the instance
    (`models.serving.replica.replica_of_pool`): its GPU and its workload's model resolved,
    its KV precision the pool's, else the model entry's `kv_precision`, else the weights'
    rule, its speculative option resolved by name (an unknown name decodes plainly: the
    verifier names it first)."""
    model = instance.workload(pool.workload).model
    speculation = instance.speculations.get(pool.speculative) if pool.speculative else None
    return replica_of_pool(
        instance.gpu_specs[pool.gpu],
        instance.llm_specs[model],
        Precision(pool.precision),
        pool.kv_precision,
        tp=pool.tp,
        pp=pool.pp,
        role=pool.role,
        ep=pool.ep,
        dp=pool.dp,
        redundant_experts=pool.redundant_experts,
        speculation=speculation,
        pinned_kv_precision=instance.model_entry(model).kv_precision,
    )
