"""Declared shared prefixes in the KV budget: which tier holds each, the hit rate that
gives, and the KV charged once per replica instead of once per sequence.

A replica holds the declared prefixes (`Workload.prefixes`) where `models.physics.kv_tiers`
says they are worth holding, placed by `models.serving.prefix_routing` for the policy's router
(random: `random_hits`; prefix affinity: the large-pool limit `affinity_hit_pool`). A
prefix held in HBM is stored once: its t tokens are a fixed charge on the replica's KV
budget, and each sequence carrying it holds only its own tokens, so
    footprint = P + O - sum_{i in HBM} s_i t_i
    sequences = (KV capacity - sum_{i in HBM} t_i) / footprint
A prefix held in DRAM or on SSD is fetched into the sequence's own blocks when used and
charged per sequence (conservative: an engine that shares fetched blocks holds less).
The decode step still reads the prefix's KV once per sequence (no shared-prefix
attention kernel is assumed), so only the KV budget changes, not the step time.

Without an explicit `prefix_cache_hit_rate` the prefixes also set the hit rate
(`models.serving.prefix_routing.hit_rate`); with one, that rate is used as given (the simple
form, e.g. for conversation reuse the prefixes do not describe) and the prefixes only
set the sharing.
"""

import math
from dataclasses import dataclass, replace

from models.physics.kv_tiers import (
    KvTier,
    SsdWear,
    TierName,
    replica_tiers,
    ssd_wear,
    ssd_write_bytes_per_s,
)
from models.physics.memory import MemoryBudget, kv_bytes_per_token_per_replica
from models.physics.step_time import StepModel
from models.serving.prefix_routing import (
    PrefixHits,
    affinity_min_replicas,
    pool_hits,
    random_hits,
    spill_threshold_s,
)
from models.serving.replica import MixTokens, ReplicaConfig, ServingContext, TrafficMix
from models.serving.replica_layout import replica_memory_budget, replica_step_model

HIT_RATE_CEILING = 0.999
"""The largest hit rate the batch model takes (as `MixTokens.of` clips)."""


@dataclass(frozen=True)
class PrefixKv:
    """One replica's prefixes: its tiers, where each prefix lives, the hit rate."""

    tiers: tuple[KvTier, ...]
    hits: PrefixHits


def replica_prefix_kv(
    mix: TrafficMix,
    config: ReplicaConfig,
    budget: MemoryBudget,
    steps: StepModel,
    pool_replicas: float = math.inf,
) -> PrefixKv:
    """Tiers of the replica (valued for tokens of the mix's mean prefix length) and the
    placement of the mix's declared prefixes under its router, in a pool of
    `pool_replicas` (affinity: `models.serving.prefix_routing.pool_hits`; random routing does not
    depend on the pool's size)."""
    mean_prefix = (
        sum(t * s for t, s in zip(mix.prefix_tokens, mix.prefix_shares, strict=True))
        / sum(mix.prefix_shares)
        if mix.prefix_tokens
        else 0.0
    )
    tiers = replica_tiers(
        config.gpu,
        config.gpus,
        steps,
        budget.kv_capacity_tokens,
        kv_bytes_per_token_per_replica(config.llm, config.kv_precision, config.tp, config.pp),
        mean_prefix,
    )
    prompt = max(mix.prompt_mean_tokens, 1.0)
    if mix.prefix_affinity:
        hits = pool_hits(mix.prefix_tokens, mix.prefix_shares, prompt, tiers, pool_replicas)
    else:
        hits = random_hits(mix.prefix_tokens, mix.prefix_shares, prompt, tiers)
    return PrefixKv(tiers, hits)


def pool_size_matters(mix: TrafficMix) -> bool:
    """Whether the mix's hit rate depends on the pool's size: prefix affinity over
    declared prefixes (`models.serving.prefix_routing.pool_hits`)."""
    return mix.prefix_affinity and bool(mix.prefix_tokens)


def prefix_mix(
    m: MixTokens,
    mix: TrafficMix,
    config: ReplicaConfig,
    budget: MemoryBudget,
    steps: StepModel,
    pool_replicas: float = 1,
) -> MixTokens:
    """`m` with the pool's prefix cache (`pool_prefix_cache`): its hit rate, and the
    declared prefixes held once per replica in HBM taken off each sequence's footprint
    and charged to the KV budget; `m` unchanged without declared prefixes."""
    if not mix.prefix_tokens:
        return m
    kv = pool_prefix_cache(mix, config, budget, steps, pool_replicas)
    return replace(
        m,
        hit=kv.hit_rate,
        footprint=max(m.footprint - kv.shared_tokens_per_request, 1.0),
        shared_kv_tokens=kv.shared_kv_tokens,
    )


def pool_mix_tokens(serving: ServingContext, pool_replicas: float = 1) -> MixTokens:
    """The mix in tokens as a replica of a pool of `pool_replicas` sees it: `prefix_mix`
    with the replica's own memory budget and step model (what `replica_capacity` takes,
    for the latency at a load, the frontier and the simulator)."""
    config, mix = serving.config, serving.mix
    budget = replica_memory_budget(config, serving.efficiency)
    steps = replica_step_model(config, serving.efficiency)
    return prefix_mix(MixTokens.of(mix), mix, config, budget, steps, pool_replicas)


@dataclass(frozen=True)
class KvTierReport:
    """What `fleetplan perf --kv-tiers` shows for one replica serving a mix."""

    tiers: tuple[KvTier, ...]
    hits: PrefixHits | None
    """Where the declared prefixes live and the hit rate (None without prefixes)."""
    ssd: SsdWear | None
    """The SSD tier's wear at the replica's capacity (None unless an SSD tier is used)."""
    spill_threshold_s: float | None
    """Prefill a hit on the mean declared prefix saves a mean prompt (None without)."""
    affinity_min_replicas: int | None = None
    """With prefix affinity: the smallest pool whose hit rate is the one reported
    (`models.serving.prefix_routing.affinity_min_replicas`); a smaller pool holds fewer prefixes
    between its replicas and hits less. None without affinity."""


def kv_tier_report(serving: ServingContext, requests_per_s: float) -> KvTierReport:
    """The replica's tiers (valued for its mean prefix, or for the prompt when none is
    declared), the prefixes' placement, the SSD lifetime at `requests_per_s` (write-through
    of every computed prompt token, `models.physics.kv_tiers.ssd_write_bytes_per_s`) and the spill
    threshold for the mean declared prefix."""
    config, mix = serving.config, serving.mix
    budget = replica_memory_budget(config, serving.efficiency)
    steps = replica_step_model(config, serving.efficiency)
    replica_bytes = kv_bytes_per_token_per_replica(
        config.llm, config.kv_precision, config.tp, config.pp
    )
    if mix.prefix_tokens:
        held = replica_prefix_kv(mix, config, budget, steps)
        tiers, hits = held.tiers, held.hits
        mean_prefix = sum(
            t * s for t, s in zip(mix.prefix_tokens, mix.prefix_shares, strict=True)
        ) / sum(mix.prefix_shares)
        spill_s: float | None = spill_threshold_s(steps, mix.prompt_mean_tokens, mean_prefix)
        hit = hits.hit_rate if mix.hit_rate_from_prefixes else mix.prefix_cache_hit_rate
    else:
        tiers = replica_tiers(
            config.gpu,
            config.gpus,
            steps,
            budget.kv_capacity_tokens,
            replica_bytes,
            mix.prompt_mean_tokens,
        )
        hits, spill_s, hit = None, None, mix.prefix_cache_hit_rate
    ssd = next((t for t in tiers if t.tier is TierName.SSD and t.used), None)
    wear = None
    if ssd is not None and config.gpu.nvme_dwpd is not None:
        new_tokens = mix.prompt_mean_tokens * (1 - hit)
        written = ssd_write_bytes_per_s(requests_per_s, new_tokens, replica_bytes)
        wear = ssd_wear(config.gpu, config.gpus, written)
    min_replicas = (
        affinity_min_replicas(mix.prefix_tokens, mix.prefix_shares, tiers)
        if pool_size_matters(mix)
        else None
    )
    return KvTierReport(tiers, hits, wear, spill_s, min_replicas)


@dataclass(frozen=True)
class PoolKv:
    """A pool's prefix cache at its real size: what its replicas hold and hit. The one
    description of the cache that the capacity (`prefix_mix`), the plan, the verifier and
    the simulator all read (issue 35)."""

    tiers_used: tuple[TierName, ...]
    """Tiers holding the declared prefixes, fastest first (HBM alone for a bare
    `prefix_cache_hit_rate`; empty without a prefix cache)."""
    hit_rate: float
    """Effective prefix-cache hit rate the capacity uses: from the prefixes' placement
    under the pool's router at its size, or the workload's `prefix_cache_hit_rate`."""
    shared_kv_tokens: float = 0.0
    """KV tokens of the declared prefixes each replica holds once in HBM (its copies)."""
    shared_tokens_per_request: float = 0.0
    """Mean tokens of a request's prompt held in those shared copies: sum over the prefixes
    in HBM of s_i t_i, taken off each sequence's KV footprint."""

    @property
    def cached(self) -> bool:
        """Whether the pool has a prefix cache at all."""
        return bool(self.tiers_used)


NO_PREFIX_CACHE = PoolKv((), 0.0)


def pool_prefix_cache(
    mix: TrafficMix,
    config: ReplicaConfig,
    budget: MemoryBudget,
    steps: StepModel,
    pool_replicas: float,
) -> PoolKv:
    """The prefix cache of a pool of `pool_replicas` replicas of `config` serving `mix`:
    the declared prefixes placed under the pool's router (`replica_prefix_kv`), the hit
    rate (from the placement, or the mix's `prefix_cache_hit_rate` when the workload
    states one), the tiers used and the HBM copies (declared prefixes only: `pool_kv`
    covers a mix without them)."""
    stated = min(max(mix.prefix_cache_hit_rate, 0.0), HIT_RATE_CEILING)
    held = replica_prefix_kv(mix, config, budget, steps, pool_replicas).hits
    where = held.placement.tiers
    order = (TierName.HBM, TierName.DRAM, TierName.SSD)
    in_hbm = sum(
        t * s
        for t, s, tier in zip(mix.prefix_tokens, mix.prefix_shares, where, strict=True)
        if tier is TierName.HBM
    )
    hit = min(held.hit_rate, HIT_RATE_CEILING) if mix.hit_rate_from_prefixes else stated
    return PoolKv(
        tuple(t for t in order if t in set(where)),
        hit,
        shared_kv_tokens=held.placement.hbm_tokens,
        shared_tokens_per_request=in_hbm,
    )


def pool_kv(serving: ServingContext, pool_replicas: float) -> PoolKv:
    """`pool_prefix_cache` of a replica with its own memory budget and step model; without
    declared prefixes, HBM alone at the stated hit rate, or `NO_PREFIX_CACHE`."""
    config, mix, efficiency = serving.config, serving.mix, serving.efficiency
    if not mix.prefix_tokens:
        stated = min(max(mix.prefix_cache_hit_rate, 0.0), HIT_RATE_CEILING)
        return PoolKv((TierName.HBM,), stated) if stated > 0 else NO_PREFIX_CACHE
    budget = replica_memory_budget(config, efficiency)
    steps = replica_step_model(config, efficiency)
    return pool_prefix_cache(mix, config, budget, steps, pool_replicas)
