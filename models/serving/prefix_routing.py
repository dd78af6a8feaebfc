"""Shared prefixes under a router: the hit rate it keeps, the imbalance a popular prefix
makes, and the queueing delay at which a warm replica stops being worth the wait.

Hit rate. A declared prefix (tokens t_i, share s_i of requests) hits on a replica that
holds its KV in a used tier (`models.physics.kv_tiers`); a token held in tier k saves
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
that fits one replica's used tiers is held somewhere. It holds for pools of at least
`affinity_min_replicas` replicas (the first n whose finite placement `affinity_hits`
reaches it); `pool_hits` gives the hit rate at a pool's real size: the finite
placement's below that minimum, the limit from it on. The candidate's pool curve q(n)
carries it (the sizes of its pooling ladder), and the verifier recomputes it at the
plan's replica count.

Imbalance. A popular prefix concentrates load on its homes. Hot prefixes are
replicated: prefix i is homed on k_i = ceil(s_i n) replicas, so no home need carry more
than the mean 1/n of it; a prefix homed on every replica (k_i = n, e.g. a system prompt on
every request) does not steer the router. Splitting each prefix's requests evenly over
its homes still leaves the packing remainder (`replica_loads`, `imbalance`: pieces
s_i / k_i packed largest first, the free share F = 1 - sum of the steering s_i
water-filled; I = heaviest load over the mean). The planned router avoids it by the
wrap-around rule (McNaughton): the steering prefixes laid end to end over the replicas,
each filled to the mean, the free requests last; a prefix then spans at most k_i + 1
replicas, and only a prefix crossing a replica boundary needs the extra copy, so at most
n - 1 copies in all. Every replica carries the mean load, nothing is spilled in
planning, and the hot prefix's price is memory: the pool holds sum_i k_i t_i plus
(n - 1) x the longest steering prefix (`affinity_hits`; in the large-pool limit
sum_i s_i t_i + the longest per replica, `affinity_hit_pool`). That memory is what
the KV budget, batch, capacity and p99 TTFT (at the mean load) are computed with.

Spill threshold. A request whose warm replica has a queue can go to a cold one, which
must prefill the prefix too: waiting is better while the wait is below the prefill a hit
saves, prefill(P, no hit) - prefill(P - t, t cached) (`models.physics.step_time.prefill_s`), ms.
"""

import functools
import heapq
import math
from dataclasses import dataclass

from models.physics.kv_tiers import KvTier, Placement, TierName, place_prefixes
from models.physics.step_time import StepModel

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
    """Prefix affinity over `pool_replicas`: n x each tier holds k_i t_i per prefix, and
    HBM the wrap-around's extra copies, (n - 1) x the longest steering prefix (see the
    module docstring, "Imbalance"); never below random routing (the router falls back to
    it). The placement returned is the one whose hit rate is reported; its `hbm_tokens`
    is per replica."""
    n = pool_replicas
    charged = tuple(t * home_replicas(s, n) for t, s in zip(tokens, shares, strict=True))
    straddle = (n - 1) * max((tokens[i] for i in routed(shares, n)), default=0.0)
    pooled = tuple(
        KvTier(
            t.tier,
            max(
                t.capacity_tokens * n
                - (straddle / PREFIX_HBM_SHARE if t.tier is TierName.HBM else 0.0),
                0.0,
            ),
            t.fetch_s_per_token,
            t.recompute_s_per_token,
        )
        for t in tiers
    )
    placement = place_prefixes(charged, shares, pooled, PREFIX_HBM_SHARE)
    per_replica = Placement(placement.tiers, (placement.hbm_tokens + straddle) / n)
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
    sum_i s_i t_i + the longest steering prefix held there: on average k_i / n -> s_i
    copies of each, and at most one wrap-around copy per replica."""
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
    hbm = sum(t * s for t, s in in_hbm) + max((t for t, s in in_hbm if s < 1), default=0.0)
    placement = Placement(tuple(where), hbm)
    pooled = PrefixHits(placement, hit_rate(tokens, shares, prompt_mean_tokens, placement, tiers))
    fallback = random_hits(tokens, shares, prompt_mean_tokens, tiers)
    return pooled if pooled.hit_rate >= fallback.hit_rate else fallback


@functools.lru_cache(maxsize=256)
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


def pool_hits(
    tokens: tuple[float, ...],
    shares: tuple[float, ...],
    prompt_mean_tokens: float,
    tiers: tuple[KvTier, ...],
    pool_replicas: float,
) -> PrefixHits:
    """Affinity in a pool of n replicas, as planned and verified: below
    `affinity_min_replicas` the prefixes its n replicas hold between them
    (`affinity_hits`: never below random routing's); from it on, the large-pool limit
    (`affinity_hit_pool`). `pool_replicas` may be `math.inf` (the ceiling)."""
    if pool_replicas < affinity_min_replicas(tokens, shares, tiers):
        return affinity_hits(tokens, shares, prompt_mean_tokens, tiers, int(pool_replicas))
    return affinity_hit_pool(tokens, shares, prompt_mean_tokens, tiers)


def routed(shares: tuple[float, ...], pool_replicas: int) -> tuple[int, ...]:
    """The prefixes that steer the router in a pool of n: those homed on fewer than n
    replicas (k_i < n). A prefix homed on every replica (a system prompt on every
    request) is held everywhere: its requests are steered by their other prefixes, or
    go to the least-loaded replica."""
    return tuple(i for i, s in enumerate(shares) if home_replicas(s, pool_replicas) < pool_replicas)


def replica_loads(shares: tuple[float, ...], pool_replicas: int) -> tuple[float, ...]:
    """Each replica's share of the pool's load under affinity with each prefix's requests
    split evenly over its homes (no wrap-around), heaviest first: the routed
    prefixes' pieces s_i / k_i packed largest first onto the least-loaded replica (LPT),
    then the free load F = max(0, 1 - sum of routed s_i) water-filled from the lowest."""
    n = pool_replicas
    keep = routed(shares, n)
    homes = {i: home_replicas(shares[i], n) for i in keep}
    pieces = sorted((shares[i] / k for i, k in homes.items() for _ in range(k)), reverse=True)
    heap = [(0.0, r) for r in range(n)]
    for piece in pieces:
        load, r = heapq.heappop(heap)
        heapq.heappush(heap, (load + piece, r))
    loads = sorted(load for load, _ in heap)
    free = max(0.0, 1.0 - sum(shares[i] for i in keep))
    level = _water_level(loads, free)
    return tuple(sorted((max(load, level) for load in loads), reverse=True))


def imbalance(shares: tuple[float, ...], pool_replicas: int) -> float:
    """I = the heaviest replica's load over the mean (1 = balanced) when each prefix's
    requests are split evenly over its homes (`replica_loads`): what the wrap-around
    rule's extra copies avoid."""
    if pool_replicas <= 1:
        return 1.0
    loads = replica_loads(shares, pool_replicas)
    return loads[0] * pool_replicas / sum(loads)


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
