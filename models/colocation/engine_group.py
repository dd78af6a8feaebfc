"""One engine, several workloads: multi-LoRA adapters of one base and same-model merges.

Workloads whose models share one base architecture may be served by ONE engine of that
base: the base weights are held once, each LoRA adapter (`base:` entries, `rank`) adds its
own bytes, and every iteration pays the multi-LoRA step cost, which grows with the number
of distinct adapters in the batch (`models.colocation.lora.multi_lora_capacity`). Workloads of the
same model with no adapter at all are the special case of zero adapters: a same-model
merge (`models.colocation.merge`), one pool at the strictest SLO.

The engine meets the strictest SLO among its members (the smallest p99 TTFT and TPOT
targets, `models.colocation.merge.merge_workloads`), and its token mix is the ENVELOPE of theirs:
the largest mean, p99 and cv of prompts and outputs, and the smallest prefix-cache hit
rate, over the members. The rate-weighted mixture of `models.colocation.merge` is exact for the
planned proportions only; the program may route any loads up to each member's share,
which shifts the mixture, and the envelope dominates every mixture of the members'
requests (each request's lengths are at most the envelope's in distribution). With it
the feasible loads are down-closed: fewer requests of any member lower the load, and the
distinct adapters in the batch (E[D] = sum_k 1 - (1 - p_k)^B) only fall with fewer
sequences, so a replica carries any loads at or below its members' capacities.

Capacity along the planned loads lambda_w: C = the combined requests/s one replica of the
layout carries at the strictest SLO with the envelope mix, every adapter resident and
the LoRA step cost at the adapters' shares p_k = lambda_k / sum lambda (plain base-model
traffic counted as adapter traffic's complement: the shares are of all the engine's
requests, so E[D] is not overstated); each member's share a_w = C x lambda_w / sum lambda.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.colocation.lora import DEFAULT_LORA_RANK, AdapterLoad, multi_lora_capacity
from models.colocation.merge import WorkloadLoad, merge_workloads
from models.physics.efficiency import Efficiency
from models.serving.replica import LatencyTargets, Limit, ReplicaConfig, TrafficMix


@dataclass(frozen=True)
class EngineMember:
    """One workload on a shared engine: its adapter (None: the base model itself)."""

    name: str
    adapter: str | None
    """The adapter model the workload uses (a `base:` entry), None for the base."""
    rank: int | None
    mix: TrafficMix
    targets: LatencyTargets
    requests_per_s: float


@dataclass(frozen=True)
class EngineGroup:
    """A shared engine's capacity along its members' loads."""

    members: tuple[str, ...]
    capacity_requests_per_s: tuple[float, ...]
    """a_w for each member, in `members` order: C x lambda_w / sum lambda."""
    total_requests_per_s: float
    """C: all members together."""
    load_scale: float
    """C / sum lambda: above 1 the replica carries every member's planned load."""
    adapters: int
    adapter_bytes_per_gpu: float
    limit: Limit
    problems: tuple[str, ...]
    """Why it cannot serve (does not fit, misses the SLO at any load); empty when it can."""

    @property
    def feasible(self) -> bool:
        """Whether the engine carries a positive load within the strictest SLO."""
        return not self.problems and self.total_requests_per_s > 0


def envelope_mix(mixes: Sequence[TrafficMix]) -> TrafficMix:
    """The largest mean, p99 and cv of prompts and outputs, the smallest hit rate (see
    the module docstring); declared prefixes are dropped (their hits are not credited)."""
    return TrafficMix(
        prompt_mean_tokens=max(m.prompt_mean_tokens for m in mixes),
        prompt_p99_tokens=max(m.prompt_p99_tokens for m in mixes),
        prompt_cv=max(m.prompt_cv for m in mixes),
        output_mean_tokens=max(m.output_mean_tokens for m in mixes),
        output_p99_tokens=max(m.output_p99_tokens for m in mixes),
        output_cv=max(m.output_cv for m in mixes),
        prefix_cache_hit_rate=min(m.prefix_cache_hit_rate for m in mixes),
    )


def strictest_targets(members: Sequence[EngineMember], model: str) -> LatencyTargets:
    """The smallest p99 TTFT and TPOT targets among the members (`models.colocation.merge`)."""
    merged = merge_workloads(
        [
            WorkloadLoad(m.name, model, m.mix, m.targets, max(m.requests_per_s, 1e-12))
            for m in members
        ]
    )
    return merged.targets


def engine_group(
    config: ReplicaConfig, members: Sequence[EngineMember], efficiency: Efficiency
) -> EngineGroup:
    """One engine of `config` (the base model's unified layout) serving `members` at
    their planned loads' proportions (see the module docstring).

    Raises:
        ValueError: no members, duplicate names, or no positive load.
    """
    names = [m.name for m in members]
    if not members or len(set(names)) != len(names):
        raise ValueError(f"an engine group needs distinct members, got {names}")
    total = math.fsum(m.requests_per_s for m in members)
    if total <= 0 or any(m.requests_per_s < 0 for m in members):
        raise ValueError("an engine group needs loads >= 0, some positive")
    rates: dict[str, float] = {}
    ranks: dict[str, int] = {}
    for m in members:
        if m.adapter is not None:
            rates[m.adapter] = rates.get(m.adapter, 0.0) + m.requests_per_s
            ranks[m.adapter] = max(ranks.get(m.adapter, 0), m.rank or DEFAULT_LORA_RANK)
    adapters = [AdapterLoad(a, ranks[a], rates[a]) for a in sorted(rates)]
    base_rate = total - math.fsum(rates.values())
    mix = envelope_mix([m.mix for m in members])
    targets = strictest_targets(members, config.llm.name)
    replica = multi_lora_capacity(
        config, _with_base_share(adapters, base_rate), mix, targets, efficiency
    )
    capacity = replica.capacity
    problems: tuple[str, ...] = ()
    if not capacity.fits or not capacity.meets_slo or capacity.requests_per_s <= 0:
        problems = (capacity.reason or "the shared engine carries no load within the SLO",)
    rate = capacity.requests_per_s if not problems else 0.0
    return EngineGroup(
        members=tuple(names),
        capacity_requests_per_s=tuple(rate * m.requests_per_s / total for m in members),
        total_requests_per_s=rate,
        load_scale=rate / total,
        adapters=len(adapters),
        adapter_bytes_per_gpu=replica.adapter_bytes_per_gpu,
        limit=capacity.limit,
        problems=problems,
    )


def _with_base_share(adapters: list[AdapterLoad], base_rate: float) -> list[AdapterLoad]:
    """The adapters plus, when the base model has traffic of its own, a rank-0 entry for
    it: its share keeps the adapters' p_k shares of ALL the engine's requests, and a
    rank-0 adapter has no bytes and no FLOPs."""
    if base_rate <= 0:
        return adapters
    return [*adapters, AdapterLoad("(base)", 0, base_rate)]
