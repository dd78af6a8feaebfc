"""Multi-LoRA: one base-model replica serving many low-rank adapters (S-LoRA, Punica).

Memory. The base weights are held once. An adapter of rank r adds, to every adapted
matrix W (d_in x d_out) of every layer, A (d_in x r) and B (r x d_out):
    adapter params = r x sum over adapted matrices (d_in + d_out) x layers
The adapted matrices (`LoraTarget`) default to every linear layer of the block, as PEFT's
`all-linear` (QLoRA) trains: q (h -> H d), k and v (h -> K d each), o (H d -> h), gate and
up (h -> I each), down (I -> h), so per layer r (7 h + 2 H d + 2 K d + 3 I) parameters
(h hidden, H attention heads, K KV heads, d head dim, I MLP width). Adapters are stored in
bf16 (`LORA_BYTES_PER_ELEMENT`). Under tensor parallelism the adapter splits like its base
matrix (Megatron layout): a column-parallel W (q, k, v, gate, up) keeps A whole and splits
B by tp; a row-parallel W (o, down) splits A by tp and keeps B whole. Pipeline stages hold
ceil(layers / pp) layers. Every adapter the replica serves is resident in HBM (S-LoRA's
unified pool without paging; paging adapters in is `models.colocation.swap`'s business).

Step cost. Punica's SGMV and S-LoRA's MBGMV kernels run, per adapted matrix and layer,
one batched kernel over the whole batch, segment by segment: the extra work of a step is
x A B for every token (2 r (d_in + d_out) FLOPs per matrix, linear in tokens) plus reading
the A and B of every DISTINCT adapter in the batch once from HBM. At decode batch sizes
the segments are a few tokens each, so the reads dominate and the step grows with the
number D of distinct adapters:
    lora_s(B) = pp x [ E[D(B)] x adapter bytes per GPU / HBM rate
                       + tokens x LoRA FLOPs per token per GPU / decode FLOP rate ]
    E[D(B)]   = sum_k 1 - (1 - p_k)^B
where the B sequences of the batch pick adapter k independently with its load share p_k
(the share of the replica's requests that use adapter k). With adapters of different
ranks the expected bytes are sum_k (1 - (1 - p_k)^B) x bytes_k. The adapters' kernels do
not overlap the base GEMMs (the conservative side: Punica runs them on the same stream).
No per-adapter launch floor is counted: one kernel serves all segments.

Assumptions: GQA attention (an MLA model's latent projections are not modelled: a
ValueError says so); an MoE model's routed experts carry no adapter, so its MLP targets
apply to the dense-MLP layers only.
"""

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from models.physics.efficiency import Efficiency
from models.physics.llm import Attention, LlmSpec
from models.physics.memory import does_not_fit_message, layers_per_stage
from models.physics.step_time import StepModel, step_model
from models.serving import capacity as replica_model
from models.serving.replica import (
    LatencyTargets,
    MixTokens,
    ReplicaCapacity,
    ReplicaConfig,
    Role,
    TrafficMix,
)
from models.serving.replica_layout import not_fitting_capacity, replica_memory_budget

DEFAULT_LORA_RANK = 16
"""Rank of an adapter whose entry gives none (PEFT's examples and S-LoRA's evaluation use
8 to 64; 16 is the middle)."""
LORA_BYTES_PER_ELEMENT = 2.0
"""Adapters are stored in bf16 whatever the base's weight precision."""


class LoraTarget(StrEnum):
    """A linear layer of the block that an adapter may adapt."""

    Q = "q"
    K = "k"
    V = "v"
    O = "o"  # noqa: E741 - the attention output projection's usual name
    GATE = "gate"
    UP = "up"
    DOWN = "down"


ALL_LINEAR = tuple(LoraTarget)
"""Every linear layer of the block (PEFT `all-linear`): the default."""
ATTENTION_ONLY = (LoraTarget.Q, LoraTarget.K, LoraTarget.V, LoraTarget.O)
"""The attention projections only (the original LoRA paper's choice)."""
_ROW_PARALLEL = {LoraTarget.O, LoraTarget.DOWN}
_MLP = {LoraTarget.GATE, LoraTarget.UP, LoraTarget.DOWN}


def adapted_shapes(
    llm: LlmSpec, targets: Sequence[LoraTarget] = ALL_LINEAR
) -> list[tuple[LoraTarget, int, int, int]]:
    """(target, d_in, d_out, layers it appears in) for every adapted matrix.

    Raises:
        ValueError: for an MLA model.
    """
    if llm.attention is Attention.MLA:
        raise ValueError(f"multi-LoRA physics covers GQA attention; {llm.name} uses MLA")
    h, q_out, kv_out = llm.hidden_size, llm.attention_heads * llm.head_dim, llm.kv_heads
    kv_out *= llm.head_dim
    width = llm.intermediate_size
    shapes = {
        LoraTarget.Q: (h, q_out),
        LoraTarget.K: (h, kv_out),
        LoraTarget.V: (h, kv_out),
        LoraTarget.O: (q_out, h),
        LoraTarget.GATE: (h, width),
        LoraTarget.UP: (h, width),
        LoraTarget.DOWN: (width, h),
    }
    return [(t, *shapes[t], llm.dense_mlp_layers if t in _MLP else llm.layers) for t in targets]


def adapter_params(llm: LlmSpec, rank: int, targets: Sequence[LoraTarget] = ALL_LINEAR) -> int:
    """Parameters of one adapter: rank x sum (d_in + d_out) x layers over adapted matrices."""
    return sum(
        rank * (d_in + d_out) * layers for _, d_in, d_out, layers in adapted_shapes(llm, targets)
    )


def adapter_bytes(llm: LlmSpec, rank: int, targets: Sequence[LoraTarget] = ALL_LINEAR) -> float:
    """Bytes of one adapter in bf16: adapter_params x 2."""
    return adapter_params(llm, rank, targets) * LORA_BYTES_PER_ELEMENT


def adapter_params_per_gpu(
    llm: LlmSpec, rank: int, tp: int, pp: int = 1, targets: Sequence[LoraTarget] = ALL_LINEAR
) -> float:
    """Adapter parameters on the most loaded GPU of a TP x PP replica.

    Column-parallel W: r (d_in + d_out / tp); row-parallel W (o, down): r (d_in / tp + d_out);
    over the ceil(layers / pp) layers of the heaviest stage (MLP targets: that stage's share
    of the dense-MLP layers).
    """
    stage = layers_per_stage(llm, pp) / llm.layers
    total = 0.0
    for target, d_in, d_out, layers in adapted_shapes(llm, targets):
        per_layer = d_in / tp + d_out if target in _ROW_PARALLEL else d_in + d_out / tp
        total += rank * per_layer * layers * stage
    return total


def adapter_bytes_per_gpu(
    llm: LlmSpec, rank: int, tp: int, pp: int = 1, targets: Sequence[LoraTarget] = ALL_LINEAR
) -> float:
    """Bytes of one adapter on the most loaded GPU: adapter_params_per_gpu x 2."""
    return adapter_params_per_gpu(llm, rank, tp, pp, targets) * LORA_BYTES_PER_ELEMENT


def expected_distinct_adapters(shares: Sequence[float], batch: float) -> float:
    """E[D] = sum_k 1 - (1 - p_k)^B: distinct adapters among B sequences that each pick
    adapter k with probability p_k (independently). Shares may sum to less than 1 (the
    rest is base-model traffic, which needs no adapter)."""
    _check_shares(shares)
    if batch <= 0:
        return 0.0
    return sum(1 - (1 - p) ** batch for p in shares)


@dataclass(frozen=True)
class AdapterLoad:
    """One adapter a base replica serves: its name, rank and planned requests/s."""

    name: str
    rank: int
    requests_per_s: float


@dataclass(frozen=True)
class LoraStepModel(StepModel):
    """A base model's step model plus the multi-LoRA cost of the adapters in the batch
    (see the module docstring). Build it with `lora_step_model`."""

    adapter_shares: tuple[float, ...]
    """Load share p_k of each adapter."""
    adapter_bytes_per_gpu: tuple[float, ...]
    """Bytes of each adapter on one GPU of the heaviest stage."""
    lora_flops_per_token: float
    """Share-weighted LoRA FLOPs of one token on one GPU of the heaviest stage."""

    def lora_s(self, batch: float, tokens: float) -> float:
        """Extra seconds of one iteration with `batch` sequences and `tokens` tokens:
        pp x (sum_k (1 - (1 - p_k)^B) bytes_k / HBM rate + tokens x FLOPs / rate)."""
        sequences = max(batch, 1.0)
        read_bytes = sum(
            (1 - (1 - p) ** sequences) * size
            for p, size in zip(self.adapter_shares, self.adapter_bytes_per_gpu, strict=True)
        )
        compute_s = tokens * self.lora_flops_per_token / self.decode_linear_flops_per_s
        return self.pp * (read_bytes / self.hbm_bytes_per_s + compute_s)

    def iteration_s(
        self,
        batch: float,
        context_tokens: float,
        prefill_tokens: float = 0.0,
        prefill_context_tokens: float = 0.0,
    ) -> float:
        """The base iteration plus `lora_s(B, B + prefill tokens)`."""
        base = super().iteration_s(batch, context_tokens, prefill_tokens, prefill_context_tokens)
        return base + self.lora_s(batch, batch + prefill_tokens)


def lora_step_model(
    config: ReplicaConfig,
    adapters: Sequence[AdapterLoad],
    efficiency: Efficiency,
    targets: Sequence[LoraTarget] = ALL_LINEAR,
    base_requests_per_s: float = 0.0,
) -> LoraStepModel:
    """The step model of `config` (the base model's layout) serving `adapters`, with
    `base_requests_per_s` of plain base-model traffic beside them."""
    llm, tp, pp = config.llm, config.tp, config.pp
    base = step_model(
        config.gpu, llm, config.weight_precision, config.kv_precision, tp, pp, efficiency
    )
    total = sum(a.requests_per_s for a in adapters) + base_requests_per_s
    shares = tuple(a.requests_per_s / total if total > 0 else 0.0 for a in adapters)
    params = [adapter_params_per_gpu(llm, a.rank, tp, pp, targets) for a in adapters]
    flops = sum(2 * p * n for p, n in zip(shares, params, strict=True))
    return LoraStepModel(
        **{f.name: getattr(base, f.name) for f in dataclasses.fields(StepModel)},
        adapter_shares=shares,
        adapter_bytes_per_gpu=tuple(n * LORA_BYTES_PER_ELEMENT for n in params),
        lora_flops_per_token=flops,
    )


@dataclass(frozen=True)
class MultiLoraReplica:
    """A base replica serving many adapters: its memory and its capacity at the SLO."""

    capacity: ReplicaCapacity
    """Capacity for the combined traffic (requests/s of all adapters together)."""
    adapter_bytes_per_gpu: float
    """All resident adapters' bytes on one GPU of the heaviest stage."""
    expected_distinct_adapters: float
    """E[D] at the operating mean batch."""
    lora_s: float
    """Extra seconds per iteration at the operating batch."""
    adapter_requests_per_s: tuple[float, ...]
    """Each adapter's share of the capacity (its load share x the capacity)."""


def multi_lora_capacity(
    config: ReplicaConfig,
    adapters: Sequence[AdapterLoad],
    mix: TrafficMix,
    targets: LatencyTargets,
    efficiency: Efficiency,
    lora_targets: Sequence[LoraTarget] = ALL_LINEAR,
    pool_replicas: float = 1,
) -> MultiLoraReplica:
    """The largest combined request rate one base replica carries with every adapter in
    `adapters` resident, their traffic in the proportions of their planned loads, at the
    SLO `targets` (the strictest of the adapters' workloads; see `models.colocation.merge`).

    The single-replica model of `models.serving.capacity` with two changes: the weights per GPU
    grow by every adapter's bytes, and every iteration pays `LoraStepModel.lora_s`.
    """
    if config.role is not Role.UNIFIED:
        raise ValueError("multi-LoRA capacity is modelled for unified replicas")
    steps = lora_step_model(config, adapters, efficiency, lora_targets)
    llm = config.llm
    resident = sum(
        adapter_bytes_per_gpu(llm, a.rank, config.tp, config.pp, lora_targets) for a in adapters
    )
    budget = replica_memory_budget(config, efficiency)
    budget = dataclasses.replace(
        budget, weight_bytes_per_gpu=budget.weight_bytes_per_gpu + resident
    )
    m = MixTokens.of(mix)
    needed = m.prompt_p99 + m.output_p99
    if budget.kv_capacity_tokens < needed:
        message = (
            f"{config.label} with {len(adapters)} adapters ({resident / 2**30:.2f} GiB per GPU)"
        )
        capacity = not_fitting_capacity(
            config,
            does_not_fit_message(
                budget, needed, message, "Serve fewer adapters per replica or use a larger TP."
            ),
            budget,
        )
    else:
        capacity = replica_model.batch_capacity(
            config, m, targets, efficiency, budget, steps, pool_replicas
        )
    batch = capacity.batch
    total = sum(a.requests_per_s for a in adapters)
    return MultiLoraReplica(
        capacity=capacity,
        adapter_bytes_per_gpu=resident,
        expected_distinct_adapters=expected_distinct_adapters(steps.adapter_shares, batch),
        lora_s=steps.lora_s(batch, batch + batch * m.new_prompt / m.output) if batch else 0.0,
        adapter_requests_per_s=tuple(
            capacity.requests_per_s * a.requests_per_s / total if total else 0.0 for a in adapters
        ),
    )


def _check_shares(shares: Sequence[float]) -> None:
    if any(p < 0 for p in shares) or math.fsum(shares) > 1 + 1e-9:
        raise ValueError("adapter load shares must be >= 0 and sum to at most 1")
