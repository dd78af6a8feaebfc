"""Shared prefixes under a router: the hit rate it keeps, the imbalance a popular prefix
makes, and the queueing delay at which a warm replica stops being worth the wait.

Hit rate. A declared prefix (tokens t_i, share s_i of requests) hits on a replica that
holds its KV in a used tier (`models.kv_tiers`); a token held in tier k saves
value_k / recompute of its prefill (HBM: all of it). The hit rate is the fraction of
prompt prefill saved:
    h = sum_i s_i t_i (value_k(i) / recompute) / P_mean     over the prefixes held
- random (least-loaded) routing over n replicas: every replica sees every prefix, so
  every replica must hold every prefix it is to hit: the replica's own tiers are the
  cache (`place_prefixes` over one replica's tiers).
- prefix affinity: each prefix is homed on k_i = ceil(s_i n) replicas (a prefix hotter
  than one replica's share 1/n is replicated so that no replica carries more than its
  share of it), so the pool's n replicas hold sum_i k_i t_i tokens between them: the
  placement runs over n times each tier's capacity with prefix i charged k_i t_i. An
  affinity router can always fall back to random routing, so its hit rate is taken as
  the larger of the two: affinity never lowers the hit rate.
The planning form (`affinity_hit_pool`) is the large-pool limit of affinity: every prefix
that fits one replica's used tiers is held somewhere; it holds for pools of at least
`affinity_min_replicas` replicas, which the verifier checks.

Imbalance. Under affinity a prefix's requests go to its k_i home replicas only, in
pieces of s_i / k_i of the pool's load; requests with no declared prefix (share
F = 1 - sum s_i, floored at 0) go to the least-loaded replica. Pieces are packed largest
first onto the least-loaded replica (LPT), then the free load fills the lowest replicas
(water-filling). The imbalance I = n x the heaviest replica's load (1 = balanced): the
pool carries capacity / I per replica at the same p99 on its hottest replica.

Spill threshold. A request whose warm replica has a queue can go to a cold one, which
must prefill the prefix too: waiting is better while the wait is below the prefill a hit
saves, prefill(P, no hit) - prefill(P - t, t cached) (`models.step_time.prefill_s`), ms.
"""

import math
from dataclasses import dataclass

from models.kv_tiers import KvTier, Placement, TierName, place_prefixes
from models.step_time import StepModel

PREFIX_HBM_SHARE = 0.5
"""Share of a replica's HBM KV capacity offered to held prefixes; the rest is the running
batch's. A planning assumption: engines evict cached prefixes under batch pressure, so
the share they keep under load is a fraction of the cache."""


@dataclass(frozen=True)
class PrefixHits:
    """Where a replica's prefixes live and the hit rate that gives."""

    placement: Placement
    hit_rate: float
    """Fraction of prompt prefill saved, value-weighted by tier."""


def hit_rate(
    tokens: tuple[float, ...],
    shares: tuple[float, ...],
    prompt_mean_tokens: float,
    placement: Placement,
    tiers: tuple[KvTier, ...],
) -> float:
    """sum_i s_i t_i x value_k(i) / recompute_k(i) / P_mean over the held prefixes."""
    by_name = {tier.tier: tier for tier in tiers}
    saved = 0.0
    for t, s, where in zip(tokens, shares, placement.tiers, strict=True):
        if where is None:
            continue
        tier = by_name[where]
        saved += s * t * tier.value_s_per_token / tier.recompute_s_per_token
    return min(saved / prompt_mean_tokens, 1.0)


def random_hits(
    tokens: tuple[float, ...],
    shares: tuple[float, ...],
    prompt_mean_tokens: float,
    tiers: tuple[KvTier, ...],
) -> PrefixHits:
    """Random routing: one replica's tiers hold what it hits."""
    placement = place_prefixes(tokens, shares, tiers, PREFIX_HBM_SHARE)
    return PrefixHits(placement, hit_rate(tokens, shares, prompt_mean_tokens, placement, tiers))


def home_replicas(share: float, pool_replicas: int) -> int:
    """k = ceil(s n): replicas a prefix of share s is homed on (at least one)."""
    return max(1, math.ceil(share * pool_replicas - 1e-12))


def affinity_hits(
    tokens: tuple[float, ...],
    shares: tuple[float, ...],
    prompt_mean_tokens: float,
    tiers: tuple[KvTier, ...],
    pool_replicas: int,
) -> PrefixHits:
    """Prefix affinity over `pool_replicas`: n x each tier holds k_i t_i per prefix;
    never below random routing (the router falls back to it). The placement returned is
    the one whose hit rate is reported; its `hbm_tokens` is per replica."""
    n = pool_replicas
    charged = tuple(t * home_replicas(s, n) for t, s in zip(tokens, shares, strict=True))
    pooled = tuple(
        KvTier(t.tier, t.capacity_tokens * n, t.fetch_s_per_token, t.recompute_s_per_token)
        for t in tiers
    )
    placement = place_prefixes(charged, shares, pooled, PREFIX_HBM_SHARE)
    per_replica = Placement(placement.tiers, placement.hbm_tokens / n)
    hits = PrefixHits(per_replica, hit_rate(tokens, shares, prompt_mean_tokens, placement, tiers))
    fallback = random_hits(tokens, shares, prompt_mean_tokens, tiers)
    return hits if hits.hit_rate >= fallback.hit_rate else fallback


def affinity_hit_pool(
    tokens: tuple[float, ...],
    shares: tuple[float, ...],
    prompt_mean_tokens: float,
    tiers: tuple[KvTier, ...],
) -> PrefixHits:
    """The large-pool limit of affinity: each prefix that fits one replica's used tiers
    (HBM at `PREFIX_HBM_SHARE`) on its own is held on its home replicas. A home replica
    holds its prefixes in HBM when one fits there; the per-replica HBM charge is
    max(largest such prefix, sum_i s_i t_i): a replica homes at least one whole prefix,
    and on average k_i / n -> s_i of each."""
    where: list[TierName | None] = []
    for t in tokens:
        home = None
        for tier in tiers:
            room = tier.capacity_tokens * (PREFIX_HBM_SHARE if tier.tier is TierName.HBM else 1)
            if (tier.used or tier.tier is TierName.HBM) and room >= t:
                home = tier.tier
                break
        where.append(home)
    in_hbm = [(t, s) for t, s, w in zip(tokens, shares, where, strict=True) if w is TierName.HBM]
    hbm = max(max((t for t, _ in in_hbm), default=0.0), sum(t * s for t, s in in_hbm))
    placement = Placement(tuple(where), hbm)
    pooled = PrefixHits(placement, hit_rate(tokens, shares, prompt_mean_tokens, placement, tiers))
    fallback = random_hits(tokens, shares, prompt_mean_tokens, tiers)
    return pooled if pooled.hit_rate >= fallback.hit_rate else fallback


def affinity_min_replicas(
    tokens: tuple[float, ...], shares: tuple[float, ...], tiers: tuple[KvTier, ...]
) -> int:
    """Smallest pool whose affinity placement holds every prefix `affinity_hit_pool` holds:
    the first n (up to 4096) with affinity_hits' hit rate at the large-pool limit's."""
    prompt = sum(t * s for t, s in zip(tokens, shares, strict=True))  # keeps h <= 1
    target = affinity_hit_pool(tokens, shares, prompt, tiers).hit_rate
    n = 1
    while n < 4096:
        if affinity_hits(tokens, shares, prompt, tiers, n).hit_rate >= target - 1e-9:
            return n
        n += 1
    return n


def imbalance(shares: tuple[float, ...], pool_replicas: int) -> float:
    """I = n x the heaviest replica's share of the load under affinity (see the module
    docstring: pieces s_i / k_i packed largest first, free load water-filled)."""
    n = pool_replicas
    if n <= 1:
        return 1.0
    pieces = sorted(
        (s / home_replicas(s, n) for s in shares for _ in range(home_replicas(s, n))),
        reverse=True,
    )
    loads = [0.0] * n
    for piece in pieces:
        lightest = min(range(n), key=loads.__getitem__)
        loads[lightest] += piece
    free = max(0.0, 1.0 - sum(shares))
    level = _water_level(sorted(loads), free)
    return n * max(max(loads), level)


def _water_level(loads: list[float], free: float) -> float:
    """The level free load `free` raises the lowest of `loads` (sorted) to."""
    remaining = free
    for i in range(len(loads)):
        nxt = loads[i + 1] if i + 1 < len(loads) else math.inf
        width = i + 1
        rise = (nxt - loads[i]) * width if math.isfinite(nxt) else math.inf
        if remaining <= rise:
            return loads[i] + remaining / width
        remaining -= rise
    return loads[-1]


def spill_threshold_s(steps: StepModel, prompt_tokens: float, prefix_tokens: float) -> float:
    """The prefill a hit on `prefix_tokens` saves a prompt of `prompt_tokens`:
    prefill_s(P) - prefill_s(P - t, cached t). Waiting for a warm replica beats a cold
    one while the queueing delay is below it."""
    prefix = min(prefix_tokens, prompt_tokens)
    return steps.prefill_s(prompt_tokens) - steps.prefill_s(prompt_tokens - prefix, prefix)
