"""The vocabulary shared by the performance model and the planner: a replica
configuration, the traffic it serves (and the same in tokens, `MixTokens`), the latency it
must keep, and its capacity; and the serving context, the configuration, traffic and
efficiency that travel together.

The functions that fill `ReplicaCapacity` live in `models.serving.capacity`; the planner reads
only these records, so the program stays linear.
"""

from dataclasses import dataclass
from enum import StrEnum

from models.physics.efficiency import Efficiency
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.memory import kv_precision_for
from models.physics.precision import Precision
from models.physics.speculative import Speculation
from models.schema.traffic import TokenDistribution


class Role(StrEnum):
    """What a replica does: both phases, or one side of a disaggregated pair."""

    UNIFIED = "unified"
    PREFILL = "prefill"
    DECODE = "decode"


class Limit(StrEnum):
    """The factor that sets a replica's capacity at the SLO."""

    KV_MEMORY = "kv_memory"
    """No room for more resident sequences' KV cache."""
    HBM_BANDWIDTH = "hbm_bandwidth"
    """Decode steps are bandwidth-bound and throughput is what the bytes allow."""
    COMPUTE = "compute"
    """Steps are compute-bound (prefill, or decode at a large batch)."""
    TTFT_QUEUEING = "ttft_queueing"
    """More load would push the p99 time to first token past its target."""
    TPOT = "tpot"
    """A larger batch would push the time per output token past its target."""
    INTERCONNECT = "interconnect"
    """All-reduce or KV-transfer traffic over the links sets the pace."""


@dataclass(frozen=True)
class ReplicaConfig:
    """One way to lay out a replica: GPU, precisions, TP x PP (x DP attention groups, with
    EP expert-parallel ranks for the routed experts), role.

    `ep` divides the tp x dp GPUs of a stage (`models.physics.memory.expert_layout_problem`);
    ep = dp = 1 is the plain TP x PP replica."""

    gpu: GpuSpec
    llm: LlmSpec
    weight_precision: Precision
    kv_precision: Precision
    tp: int
    pp: int
    role: Role = Role.UNIFIED
    ep: int = 1
    """Expert-parallel ranks the routed experts of a stage are split over."""
    dp: int = 1
    """Attention data-parallel groups per stage, each of `tp` GPUs."""
    speculation: Speculation | None = None
    """Speculative decoding on the decode side (`models.physics.speculative`); None: plain."""
    redundant_experts: int = 0
    """Redundant copies of routed experts per MoE layer (EPLB): each of the `ep` ranks
    holds (experts + redundant) / ep of them."""

    @property
    def gpus(self) -> int:
        """GPUs in one replica: tp x pp x dp."""
        return self.tp * self.pp * self.dp

    @property
    def layout(self) -> str:
        """`tp4xpp1`, or `tp1xpp1xdp8 ep8` with attention DP or expert parallelism
        (`ep72+32` with 32 redundant experts)."""
        text = f"tp{self.tp}xpp{self.pp}"
        if self.dp > 1:
            text += f"xdp{self.dp}"
        text += f" ep{self.ep}" if self.ep > 1 else ""
        return text + (f"+{self.redundant_experts}" if self.redundant_experts else "")

    @property
    def label(self) -> str:
        """Short human label, e.g. `h100-sxm fp8 tp4xpp1 unified` (with speculation:
        `h100-sxm fp8 tp4xpp1 unified spec eagle k3 a0.7`)."""
        text = f"{self.gpu.name} {self.weight_precision} {self.layout} {self.role}"
        return text if self.speculation is None else f"{text} {self.speculation.label}"


def pool_kv_precision(
    weight_precision: Precision,
    kv_precision: Precision | None,
    pinned_kv_precision: Precision | None = None,
) -> Precision:
    """The KV precision a plan pool keeps: its own `kv_precision`, else its model entry's
    `pinned_kv_precision`, else the weights' rule (`models.physics.memory.kv_precision_for`:
    bf16 keeps bf16, fp8 and fp4 take fp8). `replica_of_pool` and a shared group's members
    read it."""
    return kv_precision or kv_precision_for(weight_precision, pinned_kv_precision)


def replica_of_pool(
    gpu: GpuSpec,
    llm: LlmSpec,
    weight_precision: Precision,
    kv_precision: Precision | None,
    *,
    tp: int,
    pp: int,
    role: Role,
    ep: int,
    dp: int,
    redundant_experts: int,
    speculation: Speculation | None,
    pinned_kv_precision: Precision | None = None,
) -> ReplicaConfig:
    """The configuration of a pool stated field by field: the one builder of a replica, for
    the planner's candidates, a plan pool's readers (the simulator, the verifier, the
    report, the capacity units, deploy through the verifier) and the layouts named by flags
    (perf, estimate, a group's member, a profile's run). Every layout field is a required
    keyword, so a caller that leaves out a field added later fails with a TypeError
    instead of reading its default, as eight builders did one by one.

    Args:
        kv_precision: the pool's own KV precision; None: the model entry's
            `pinned_kv_precision`, else the weights' rule (`pool_kv_precision`).
        speculation: the pool's option; a prefill replica decodes nothing and drops it.
    """
    return ReplicaConfig(
        gpu=gpu,
        llm=llm,
        weight_precision=weight_precision,
        kv_precision=pool_kv_precision(weight_precision, kv_precision, pinned_kv_precision),
        tp=tp,
        pp=pp,
        role=role,
        ep=ep,
        dp=dp,
        speculation=None if role is Role.PREFILL else speculation,
        redundant_experts=redundant_experts,
    )


@dataclass(frozen=True)
class TrafficMix:
    """The token mix a replica serves (means, p99s, spreads), from one workload."""

    prompt_mean_tokens: float
    prompt_p99_tokens: float
    prompt_cv: float
    output_mean_tokens: float
    output_p99_tokens: float
    output_cv: float
    prefix_cache_hit_rate: float = 0.0
    prefix_tokens: tuple[float, ...] = ()
    """Declared shared prefixes' lengths (`Workload.prefixes`), tokens."""
    prefix_shares: tuple[float, ...] = ()
    """Their shares of the requests, in the same order."""
    hit_rate_from_prefixes: bool = False
    """Whether the hit rate comes from where the prefixes are held
    (`models.serving.prefix_kv`) rather than `prefix_cache_hit_rate`."""
    prefix_affinity: bool = False
    """Whether the router keeps each prefix's requests on its home replicas."""

    @classmethod
    def of_lengths(
        cls,
        prompt: TokenDistribution,
        output: TokenDistribution,
        prefix_cache_hit_rate: float = 0.0,
    ) -> "TrafficMix":
        """The mix of prompt and output length distributions."""
        return cls(
            prompt_mean_tokens=prompt.mean_tokens,
            prompt_p99_tokens=prompt.p99_tokens,
            prompt_cv=prompt.cv,
            output_mean_tokens=output.mean_tokens,
            output_p99_tokens=output.p99_tokens,
            output_cv=output.cv,
            prefix_cache_hit_rate=prefix_cache_hit_rate,
        )

    @classmethod
    def fixed(cls, prompt_tokens: float, output_tokens: float) -> "TrafficMix":
        """Every request has exactly these lengths (benchmarks' synthetic traffic)."""
        return cls(prompt_tokens, prompt_tokens, 0.0, output_tokens, output_tokens, 0.0)


@dataclass(frozen=True)
class MixTokens:
    """The traffic mix reduced to what the model uses, in tokens."""

    prompt: float
    prompt_p99: float
    prompt_scv: float
    output: float
    output_scv: float
    """Squared coefficient of variation of the output length, cv_o^2."""
    output_p99: float
    hit: float
    context: float
    """Mean context a decode step attends to: P + O (1 + cv_o^2) / 2."""
    footprint: float
    """KV tokens one sequence holds: P + O, less the shared prefixes held once per replica
    (`models.serving.prefix_kv`)."""
    shared_kv_tokens: float = 0.0
    """KV tokens of shared prefixes held once per replica in HBM (a fixed charge on the
    KV budget, `models.serving.prefix_kv`)."""

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
            output_scv=mix.output_cv**2,
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
class LatencyTargets:
    """p99 latency targets in seconds; None means no target (offline)."""

    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None

    @property
    def is_offline(self) -> bool:
        """No latency target at all."""
        return self.ttft_p99_s is None and self.tpot_p99_s is None


@dataclass(frozen=True)
class ServingContext:
    """One replica at work, as every serving model reads it: its layout (`config`), the
    traffic it serves (`mix`) and the fractions of peak its GPU achieves (`efficiency`).
    Passed whole where the three travel together; the load, the pool size and the targets
    vary per question and stay arguments."""

    config: ReplicaConfig
    mix: TrafficMix
    efficiency: Efficiency


@dataclass(frozen=True)
class ReplicaCapacity:
    """What one replica can carry at the SLO, and why not more.

    `requests_per_s` is the rate of the replica's own phase: whole requests for a
    unified replica, prompts for a prefill replica, generations for a decode replica.
    It is 0.0 when the replica does not fit or cannot meet the SLO at any load;
    `reason` then says why, with numbers.
    """

    config: ReplicaConfig
    fits: bool
    meets_slo: bool
    requests_per_s: float
    limit: Limit
    reason: str
    weight_bytes_per_gpu: float
    kv_bytes_per_token: float
    """KV bytes one token stores across the whole replica."""
    kv_capacity_tokens: float
    """Tokens of KV cache the replica can hold."""
    max_batch: int
    """Sequences that fit at the mix's mean context."""
    batch: float
    """Mean decode batch at the operating point."""
    prefill_s: float
    """Prefill time of a mean prompt (after prefix-cache hits), unloaded."""
    decode_step_s: float
    """Decode step time at the operating batch."""
    ttft_p99_s: float
    """p99 TTFT at the operating point (inf when unmet)."""
    tpot_p99_s: float
    """p99 time per output token at the operating point."""
    best_ttft_p99_s: float
    """p99 TTFT as load goes to zero: the best this configuration can do."""
    best_tpot_s: float
    """Time per output token at batch 1: the best this configuration can do."""
    output_tokens_per_s: float
    """Output tokens/s of the whole replica at the operating point."""
    kv_transfer_bytes_per_request: float
    """Prompt KV bytes a prefill replica ships to a decode replica (disaggregated)."""

    @property
    def output_tokens_per_s_per_gpu(self) -> float:
        """Output tokens/s divided by the replica's GPUs."""
        return self.output_tokens_per_s / self.config.gpus
