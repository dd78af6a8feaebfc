"""The unified (or decode-only) replica as functions of its mean batch B.

`models.capacity` states the model; this module holds its moving parts, shared by the
capacity search (`models.capacity`) and the throughput frontier (`models.frontier`):
the traffic mix in tokens (`MixTokens`), one iteration t(B) with the prompt tokens that
ride along, the p99 TTFT and TPOT at B (`BatchModel`), the M/G/c prompt wait of a pool
(`pooled_wait_p99_s`), the KV transfer between disaggregated replicas
(`kv_transfer_s`), and the bisection every search uses (`bisect_edge`).
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

from models.efficiency import Efficiency
from models.memory import MemoryBudget, kv_bytes_per_token, memory_budget
from models.queueing import wait_quantile_s
from models.replica import ReplicaConfig, Role, TrafficMix
from models.step_time import PassParts, StepModel, step_model

Z_P99 = 2.326347874
"""Standard normal quantile at 0.99."""
BISECTION_STEPS = 48
"""Steps of the bisection over the batch (or the rate): a relative precision of ~1e-14."""


def pooled_wait_p99_s(
    rate: float, service_s: float, service_scv: float, pool_replicas: float = 1
) -> float:
    """p99 wait of a prompt for a prefill lane when `pool_replicas` replicas, each fed
    `rate` prompts/s, share one queue: M/G/c with c = pool_replicas and arrivals c x rate,
    `models.queueing.wait_quantile_s(c x rate, service_s, cs^2, c, 0.99)`.

    c = 1 is the single FCFS server. `UNLIMITED_POOL` (math.inf) is the limit c -> inf
    at a fixed per-lane utilisation rho = rate x service_s: no wait while rho < 1,
    math.inf from rho >= 1 (never below any finite pool's wait)."""
    if math.isinf(pool_replicas):
        return 0.0 if rate * service_s < 1 else math.inf
    servers = int(pool_replicas)
    return wait_quantile_s(servers * rate, service_s, service_scv, servers, 0.99)


def bisect_edge(ok: Callable[[float], bool], low: float, high: float) -> tuple[float, float]:
    """Bisection for the edge of a monotone predicate, true at `low` and false beyond the
    edge: `BISECTION_STEPS` halvings of [low, high], keeping `ok(low)`. Returns the final
    (low, high) bracket."""
    for _ in range(BISECTION_STEPS):
        mid = (low + high) / 2
        if ok(mid):
            low = mid
        else:
            high = mid
    return low, high


def batch_p99(batch: float) -> float:
    """p99 of a Poisson number of sequences with mean `batch`: B + 2.326 sqrt(B)."""
    return batch + Z_P99 * math.sqrt(max(batch, 0.0))


def within_target(value: float, target: float | None, check: bool = True) -> bool:
    """Whether `value` meets `target` (always, with no target or `check` False)."""
    return not check or target is None or value <= target


def kv_transfer_s(config: ReplicaConfig, prompt_tokens: float, efficiency: Efficiency) -> float:
    """Seconds to ship a prompt's KV cache from a prefill replica to a decode replica over
    the replica's NICs: P x KV bytes per token / (gpus x NIC bytes/s x scaleout_fraction)."""
    return kv_transfer_bytes(config, prompt_tokens) / nic_bytes_per_s(config, efficiency)


def kv_transfer_bytes(config: ReplicaConfig, prompt_tokens: float) -> float:
    """KV bytes of a prompt of `prompt_tokens` tokens: P x KV bytes per token."""
    return prompt_tokens * kv_bytes_per_token(config.llm, config.kv_precision)


def nic_bytes_per_s(config: ReplicaConfig, efficiency: Efficiency) -> float:
    """What the replica's NICs carry: gpus x NIC bytes/s x scaleout_fraction."""
    return config.gpus * config.gpu.scaleout_bytes_per_s * efficiency.scaleout_fraction


def replica_memory_budget(config: ReplicaConfig, efficiency: Efficiency) -> MemoryBudget:
    """The memory budget of the replica's layout (`models.memory.memory_budget`)."""
    return memory_budget(
        config.gpu,
        config.llm,
        config.weight_precision,
        config.kv_precision,
        config.tp,
        config.pp,
        efficiency,
        config.ep,
        config.dp,
    )


def replica_step_model(config: ReplicaConfig, efficiency: Efficiency) -> StepModel:
    """The step model of the replica's layout."""
    return step_model(
        config.gpu,
        config.llm,
        config.weight_precision,
        config.kv_precision,
        config.tp,
        config.pp,
        efficiency,
        ep=config.ep,
        dp=config.dp,
    )


@dataclass(frozen=True)
class MixTokens:
    """The traffic mix reduced to what the model uses, in tokens."""

    prompt: float
    prompt_p99: float
    prompt_scv: float
    output: float
    output_p99: float
    hit: float
    context: float
    """Mean context a decode step attends to: P + O (1 + cv_o^2) / 2."""
    footprint: float
    """KV tokens one sequence holds: P + O, less the shared prefixes held once per replica
    (`models.prefix_kv`)."""
    shared_kv_tokens: float = 0.0
    """KV tokens of shared prefixes held once per replica in HBM (a fixed charge on the
    KV budget, `models.prefix_kv`)."""

    def kv_sequences(self, kv_capacity_tokens: float) -> float:
        """Sequences the KV cache holds: (capacity - shared prefixes) / footprint."""
        return max(kv_capacity_tokens - self.shared_kv_tokens, 0.0) / self.footprint

    @classmethod
    def of(cls, mix: TrafficMix) -> "MixTokens":
        """The mix in tokens: lengths floored at one token, the p99s at least the means,
        the prefix-cache hit rate clipped to [0, 0.999]."""
        prompt = max(mix.prompt_mean_tokens, 1.0)
        output = max(mix.output_mean_tokens, 1.0)
        return cls(
            prompt=prompt,
            prompt_p99=max(mix.prompt_p99_tokens, prompt),
            prompt_scv=mix.prompt_cv**2,
            output=output,
            output_p99=max(mix.output_p99_tokens, output),
            hit=min(max(mix.prefix_cache_hit_rate, 0.0), 0.999),
            context=prompt + output * (1 + mix.output_cv**2) / 2,
            footprint=prompt + output,
        )

    @property
    def new_prompt(self) -> float:
        """Prompt tokens that need prefill compute: P (1 - h)."""
        return self.prompt * (1 - self.hit)

    @property
    def new_prompt_p99(self) -> float:
        """New tokens of a p99 prompt: P99 (1 - h)."""
        return self.prompt_p99 * (1 - self.hit)

    @property
    def cached_prompt(self) -> float:
        """Prompt tokens served from the prefix cache: P h."""
        return self.prompt * self.hit


@dataclass(frozen=True)
class BatchPoint:
    """The state of a unified or decode replica at a mean batch B."""

    batch: float
    step_s: float
    rate: float
    tpot_p99_s: float
    ttft_p99_s: float


class BatchModel:
    """The unified/decode replica as functions of the batch B (the model is stated in the
    `models.capacity` docstring, "Unified replica" and "Pools")."""

    def __init__(
        self,
        steps: StepModel,
        mix: MixTokens,
        role: Role,
        transfer_s: float,
        transfer_p99_s: float,
        pool_replicas: float = 1,
    ):
        self.steps = steps
        self.mix = mix
        self.pool_replicas = pool_replicas
        self.prefill = role is Role.UNIFIED
        self.transfer_s = transfer_s
        self.transfer_p99_s = transfer_p99_s
        self.budget_tokens = steps.pp * steps.chunk_tokens
        self.prefill_context = mix.cached_prompt + mix.new_prompt / 2

    def prefill_tokens(self, batch: float) -> float:
        """Prompt tokens per iteration: Q(B) = B P (1-h) / O (0 for a decode replica)."""
        return batch * self.mix.new_prompt / self.mix.output if self.prefill else 0.0

    def lane_batch_limit(self) -> float:
        """Largest B whose prompts fit the token budget: B + Q(B) <= pp x chunk."""
        if not self.prefill:
            return math.inf
        return self.budget_tokens / (1 + self.mix.new_prompt / self.mix.output)

    def step_s(self, batch: float) -> float:
        """t(B): one iteration with B decode tokens and Q(B) prompt tokens."""
        return self.steps.iteration_s(
            batch, self.mix.context, self.prefill_tokens(batch), self.prefill_context
        )

    def parts(self, batch: float) -> PassParts:
        """The stage pass of t(B), split into its roofline terms."""
        return self.steps.iteration_parts(
            batch, self.mix.context, self.prefill_tokens(batch), self.prefill_context
        )

    def own_prefill_s(self, batch: float, prompt_new: float, lane_tokens: float) -> float:
        """S(P): iterations a prompt of `prompt_new` new tokens needs when it has the lane."""
        mix, steps = self.mix, self.steps
        tokens = min(lane_tokens, self.prefill_tokens(batch) + prompt_new)
        one = steps.iteration_s(batch, mix.context, tokens, self.prefill_context)
        return one * max(1.0, prompt_new / lane_tokens)

    def ttft_p99_s(self, batch: float, step_s: float, rate: float) -> float:
        """p99 TTFT at batch B (unified): residual + S(P) + sqrt(W99^2 + (S(P99)-S(P))^2),
        W99 the M/G/c wait of the replica's pool (`pooled_wait_p99_s`)."""
        if not self.prefill:
            return self.transfer_p99_s
        mix, steps = self.mix, self.steps
        lane_tokens = self.budget_tokens - batch
        if lane_tokens <= 0:
            return math.inf
        full_s = steps.iteration_s(batch, mix.context, lane_tokens, self.prefill_context)
        lane_rate = lane_tokens / full_s
        service_s = mix.new_prompt / lane_rate
        wait_s = pooled_wait_p99_s(rate, service_s, mix.prompt_scv, self.pool_replicas)
        if math.isinf(wait_s):
            return math.inf
        own_s = self.own_prefill_s(batch, mix.new_prompt, lane_tokens)
        own_p99_s = self.own_prefill_s(batch, mix.new_prompt_p99, lane_tokens)
        residual_s = step_s * (1 - math.exp(-batch))
        return residual_s + own_s + math.hypot(wait_s, own_p99_s - own_s)

    def point(self, batch: float) -> BatchPoint:
        """The operating point at mean batch B."""
        step_s = self.step_s(batch)
        rate = batch / (self.mix.output * step_s)
        tpot_s = self.step_s(batch_p99(batch))
        return BatchPoint(batch, step_s, rate, tpot_s, self.ttft_p99_s(batch, step_s, rate))
