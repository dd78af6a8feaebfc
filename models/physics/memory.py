"""Device memory of one replica: weights, KV cache, activations, runtime reserve.

Assumptions, stated once:
- Linear layers (attention projections, MLPs, experts, routers) are stored in the weight
  precision; the input embedding, the LM head and the norm vectors stay in bf16, as FP8
  and FP4 checkpoints ship them (TensorRT-LLM ModelOpt, vLLM compressed-tensors).
- FP4 weights carry one FP8 scale per 16 elements (NVFP4 block scaling): 1/16 byte more
  per element. FP8 per-tensor or per-channel scales are negligible.
- Tensor parallelism (TP) splits every linear layer and the vocabulary across its GPUs;
  K/V projections and the KV cache of a GQA model split by KV head, so when TP exceeds
  the KV heads each GPU holds one head and the rest are replicas. MLA keeps one latent
  vector per token that every TP rank needs: the MLA cache is replicated across TP.
- Attention data parallelism (DP) runs `dp` copies of the attention (and of the dense
  layers, shared experts, router, embedding and LM head) in each stage, each copy split
  by TP over its own `tp` GPUs and holding its own sequences' KV cache; the routed
  experts of a stage are split over all tp x dp GPUs of the stage (EP ranks x the TP of
  each expert, `models.physics.moe`), so DP multiplies the replicated weights, never the
  routed experts. DP = 1 is plain TP.
- Pipeline parallelism (PP) splits the layers into `pp` stages; the heaviest stage has
  ceil(layers / pp) layers plus the embedding or the LM head, and it sets the budget.
- Activations of one forward pass of `prefill_chunk_tokens` tokens are held next to the
  weights; a fraction of HBM is reserved for the runtime.
- A sequence holds KV for its prompt plus its output: the scheduler reserves the whole
  footprint when it admits a request (TensorRT-LLM's guaranteed-no-evict policy; an
  engine that allocates on demand must preempt when full, which a TPOT target cannot
  afford). With variable lengths the mean prompt plus mean output is used.
"""

import math
from dataclasses import dataclass, replace

from models.physics.efficiency import Efficiency
from models.physics.hardware import GpuSpec
from models.physics.llm import Attention, LlmSpec
from models.physics.precision import Precision
from models.schema.quantities import counted

GIB = 2**30
ACTIVATION_BYTES_PER_ELEMENT = 2.0
"""Activations are bf16."""
HIGH_PRECISION_BYTES_PER_ELEMENT = 2.0
"""Embedding, LM head and norms stay in bf16 whatever the weight precision."""
HIDDEN_ACTIVATION_COPIES = 4
"""Hidden-sized activation buffers alive at once in a layer (residual, normed input,
attention output, MLP output)."""
_SCALE_BYTES_PER_ELEMENT = {Precision.BF16: 0.0, Precision.FP8: 0.0, Precision.FP4: 1 / 16}


def default_kv_precision(weight_precision: Precision) -> Precision:
    """KV-cache precision that goes with a weight precision: the same, but never below fp8
    (FP4 checkpoints pair NVFP4 weights with an FP8 KV cache)."""
    return Precision.BF16 if weight_precision is Precision.BF16 else Precision.FP8


def kv_precision_for(weight_precision: Precision, pinned: Precision | None = None) -> Precision:
    """The KV-cache precision a replica keeps: `pinned` (a model entry's `kv_precision`)
    when given, else `default_kv_precision(weight_precision)`. The one place the rule is
    applied: the candidate enumeration and the verifier both call it."""
    return pinned if pinned is not None else default_kv_precision(weight_precision)


def weight_bytes_per_element(precision: Precision) -> float:
    """Storage bytes per linear-layer weight: the element plus its share of block scales."""
    return precision.bytes_per_element + _SCALE_BYTES_PER_ELEMENT[precision]


def expert_bytes_per_element(llm: LlmSpec, precision: Precision) -> float:
    """Storage bytes per expert weight: the expert precision the checkpoint fixes
    (`expert_weight_precision`, e.g. GPT-OSS's MXFP4) when it is smaller than the weight
    precision, else the weight precision. MXFP4's scales (one byte per 32 elements) are
    charged as NVFP4's (one per 16): 1/32 byte per element too much."""
    own = weight_bytes_per_element(precision)
    if llm.expert_weight_precision is None:
        return own
    return min(own, weight_bytes_per_element(llm.expert_weight_precision))


def _expert_storage_extra(llm: LlmSpec, precision: Precision) -> float:
    """Bytes per expert weight saved (negative) by the checkpoint's expert precision;
    0.0 for a model without one."""
    return expert_bytes_per_element(llm, precision) - weight_bytes_per_element(precision)


# --- layout ----------------------------------------------------------------------------


def layout_problem(
    gpu: GpuSpec,
    llm: LlmSpec,
    weight_precision: Precision,
    kv_precision: Precision,
    tp: int,
    pp: int,
    ep: int = 1,
    dp: int = 1,
    redundant: int = 0,
) -> str | None:
    """Why a layout is impossible, or None when it is possible.

    Impossible: a non-positive TP or PP; TP not dividing the attention heads; TP and the
    KV heads not dividing one another (a GQA group would straddle GPUs); more stages than
    layers; a weight or KV precision the GPU has no tensor cores for (an FP8 KV cache is
    allowed everywhere: it is dequantised on load); an expert-parallel layout the
    rule of `expert_layout_problem` forbids.
    """
    if tp < 1 or pp < 1:
        return f"TP and PP must be at least 1 (got tp={tp}, pp={pp})"
    expert_problem = expert_layout_problem(llm, tp, ep, dp, redundant)
    if expert_problem is not None:
        return expert_problem
    if llm.attention_heads % tp:
        return (
            f"TP={tp} does not divide the {llm.attention_heads} attention heads of {llm.name}; "
            f"use a TP that divides {llm.attention_heads}"
        )
    if llm.attention is Attention.GQA and llm.kv_heads % tp and tp % llm.kv_heads:
        return f"TP={tp} and the {llm.kv_heads} KV heads of {llm.name} do not divide one another"
    if pp > llm.layers:
        return f"PP={pp} exceeds the {llm.layers} layers of {llm.name}"
    if not gpu.supports(weight_precision):
        supported = [p.value for p in Precision if gpu.supports(p)]
        return (
            f"{gpu.name} has no {weight_precision} tensor cores; weights can be "
            f"{' or '.join(supported)}"
        )
    if kv_precision is Precision.FP4 and not gpu.supports(Precision.FP4):
        return f"{gpu.name} cannot hold an fp4 KV cache; use fp8 or bf16"
    return None


def expert_layout_problem(
    llm: LlmSpec, tp: int, ep: int = 1, dp: int = 1, redundant: int = 0
) -> str | None:
    """Why an expert-parallel / attention-DP layout is impossible, or None.

    The rule (TensorRT-LLM's moe_ep_size x moe_tp_size = tp_size with attention DP,
    SGLang's ep_size = tp_size, vLLM's EP = TP x DP): a stage has tp x dp GPUs; its
    routed experts are split over all of them as `ep` expert-parallel ranks, each rank
    holding (experts + redundant) / ep whole experts, each expert split by TP over
    tp x dp / ep GPUs. So EP and DP are at least 1, `ep` divides tp x dp and the routed
    plus redundant experts (SGLang's and vLLM's EPLB: 256 + 32 = 288 slots over EP72), and
    a dense model has neither (attention DP of a dense model is just more replicas).
    Redundant copies need EP > 1 (on one rank a copy balances nothing) and at most one
    copy of each expert (`redundant` <= experts).
    """
    if ep < 1 or dp < 1:
        return f"EP and DP must be at least 1 (got ep={ep}, dp={dp})"
    if redundant < 0:
        return f"redundant experts must be at least 0 (got {redundant})"
    if ep == 1 and dp == 1 and redundant == 0:
        return None
    if not llm.is_moe and redundant:
        return f"{llm.name} is dense: {redundant} redundant experts need an MoE model"
    if not llm.is_moe:
        return (
            f"{llm.name} is dense: expert parallelism and attention data parallelism need an "
            f"MoE model (ep={ep}, dp={dp}); use more replicas instead of DP"
        )
    if redundant and ep == 1:
        return f"{redundant} redundant experts need EP > 1 (one rank holds every expert)"
    if redundant > llm.experts:
        return (
            f"{redundant} redundant experts is more than one copy of each of the "
            f"{llm.experts} routed experts of {llm.name}"
        )
    if (tp * dp) % ep:
        return (
            f"EP={ep} does not divide the tp x dp = {tp} x {dp} = {counted(tp * dp, 'GPU')} of a "
            "stage; "
            f"the expert layers are split over exactly those GPUs"
        )
    if (llm.experts + redundant) % ep:
        if redundant:
            return (
                f"EP={ep} does not divide the {llm.experts} routed + {redundant} redundant = "
                f"{llm.experts + redundant} experts of {llm.name}"
            )
        return f"EP={ep} does not divide the {llm.experts} routed experts of {llm.name}"
    return None


def check_layout(
    llm: LlmSpec, tp: int, pp: int = 1, ep: int = 1, dp: int = 1, redundant: int = 0
) -> None:
    """Raise ValueError when TP/PP/EP/DP cannot split `llm` (heads, KV heads, layers,
    experts; see `expert_layout_problem`)."""
    if tp < 1 or pp < 1:
        raise ValueError(f"TP and PP must be at least 1 (got tp={tp}, pp={pp})")
    expert_problem = expert_layout_problem(llm, tp, ep, dp, redundant)
    if expert_problem is not None:
        raise ValueError(expert_problem)
    if llm.attention_heads % tp:
        raise ValueError(f"TP={tp} does not divide the {llm.attention_heads} attention heads")
    if llm.attention is Attention.GQA and llm.kv_heads % tp and tp % llm.kv_heads:
        raise ValueError(f"TP={tp} and the {llm.kv_heads} KV heads do not divide one another")
    if pp > llm.layers:
        raise ValueError(f"PP={pp} exceeds the {llm.layers} layers")


def layers_per_stage(llm: LlmSpec, pp: int) -> int:
    """Layers of the heaviest pipeline stage: ceil(layers / pp)."""
    return math.ceil(llm.layers / pp)


def kv_heads_per_gpu(llm: LlmSpec, tp: int) -> float:
    """KV heads one GPU holds: kv_heads / tp, at least 1 (replicated when TP exceeds them).
    MLA has a single shared latent, so every rank holds it: 1."""
    if llm.attention is Attention.MLA:
        return 1.0
    return max(llm.kv_heads / tp, 1.0)


# --- weights ---------------------------------------------------------------------------


def high_precision_params(llm: LlmSpec) -> int:
    """Parameters kept in bf16: embedding, LM head, norms."""
    return llm.embedding_params() + llm.norm_params()


def linear_params(llm: LlmSpec) -> int:
    """Parameters stored in the weight precision: every linear layer."""
    return llm.total_params() - high_precision_params(llm)


def weight_bytes(llm: LlmSpec, precision: Precision) -> float:
    """All weights of the model in bytes:
    linear_params x bytes(precision) + (embedding + LM head + norms) x 2, with the experts
    at `expert_bytes_per_element` instead where the checkpoint fixes their precision."""
    return (
        linear_params(llm) * weight_bytes_per_element(precision)
        + llm.expert_params_total() * _expert_storage_extra(llm, precision)
        + high_precision_params(llm) * HIGH_PRECISION_BYTES_PER_ELEMENT
    )


def _kv_projection_params(llm: LlmSpec) -> int:
    """K and V projection weights of one GQA layer: 2 x hidden x kv_heads x head_dim."""
    return 2 * llm.hidden_size * llm.kv_heads * llm.head_dim


def layer_linear_params_per_gpu(llm: LlmSpec, tp: int) -> float:
    """Linear weights of one layer held by one TP rank (MLP and experts averaged over
    dense and MoE layers).

    Everything splits by TP except the K/V projections of a GQA model beyond the KV-head
    count (kv_heads_per_gpu heads each) and the MLA down-projections (replicated). A
    hybrid model's linear-attention layers split by TP whole; the token mixer is averaged
    over full- and linear-attention layers like the MLP.
    """
    attention = llm.attention_params_per_layer()
    if llm.attention is Attention.MLA:
        replicated = llm.hidden_size * (llm.kv_lora_rank + llm.qk_rope_head_dim)
        attention_per_gpu = (attention - replicated) / tp + replicated
    else:
        kv = _kv_projection_params(llm)
        kv_per_gpu = kv * kv_heads_per_gpu(llm, tp) / llm.kv_heads
        attention_per_gpu = (attention - kv) / tp + kv_per_gpu
    if llm.linear_attention_layers:
        linear = llm.linear_attention_layers * llm.linear_attention_params_per_layer() / tp
        full = llm.full_attention_layers * attention_per_gpu
        attention_per_gpu = (full + linear) / llm.layers
    mlp_total = llm.dense_mlp_layers * llm.dense_mlp_params() + llm.moe_layers * (
        llm.moe_layer_params()
    )
    return attention_per_gpu + mlp_total / llm.layers / tp


def weight_bytes_per_gpu(llm: LlmSpec, precision: Precision, tp: int, pp: int = 1) -> float:
    """Weight bytes on the most loaded GPU of a TP x PP replica.

    ceil(layers/pp) x layer_linear_params_per_gpu x bytes(precision)
    + vocab matrices on that stage (both at pp=1, one at pp>1) x vocab x hidden / tp x 2
    + norms x 2 (small; counted whole); experts at `expert_bytes_per_element` where the
    checkpoint fixes their precision.
    """
    check_layout(llm, tp, pp)
    layers = layers_per_stage(llm, pp)
    linear = layers * layer_linear_params_per_gpu(llm, tp) * weight_bytes_per_element(precision)
    expert_params_per_gpu = layers * llm.expert_params_total() / llm.layers / tp
    linear += expert_params_per_gpu * _expert_storage_extra(llm, precision)
    vocab_matrices = (1 if llm.tie_embeddings else 2) if pp == 1 else 1
    vocab = vocab_matrices * llm.vocab_size * llm.hidden_size / tp
    high = (vocab + llm.norm_params()) * HIGH_PRECISION_BYTES_PER_ELEMENT
    return linear + high


def routed_expert_bytes_per_gpu(
    llm: LlmSpec, precision: Precision, gpus_per_stage: int, pp: int = 1
) -> float:
    """Routed-expert weight bytes on one GPU of the heaviest stage when the stage's routed
    experts are split evenly over `gpus_per_stage` GPUs:
    ceil(layers/pp) / layers x moe_layers x experts x expert_params
    x expert_bytes_per_element / gpus_per_stage (shared experts are not routed)."""
    stage_share = layers_per_stage(llm, pp) / llm.layers
    routed = llm.moe_layers * llm.experts * llm.expert_params()
    return stage_share * routed * expert_bytes_per_element(llm, precision) / gpus_per_stage


def weight_bytes_per_gpu_ep(
    llm: LlmSpec,
    precision: Precision,
    tp: int,
    pp: int = 1,
    ep: int = 1,
    dp: int = 1,
    redundant: int = 0,
) -> float:
    """Weight bytes on the most loaded GPU of a TP x PP x DP replica with EP experts.

    Everything but the routed experts is laid out as in `weight_bytes_per_gpu` at TP and
    replicated on each of the dp attention groups; the routed experts of a stage are split
    over all tp x dp GPUs of the stage (ep ranks of experts / ep whole experts, each split
    over tp x dp / ep GPUs), so the GPU holds 1/(tp x dp) of them whatever `ep` is:

        weight_bytes_per_gpu(tp, pp) - routed(tp) + routed(tp x dp)

    with routed(n) = `routed_expert_bytes_per_gpu`(n). At dp = 1 the routed experts are
    already split over the tp GPUs: the value is `weight_bytes_per_gpu` exactly.
    `redundant` experts (EPLB) add their copies: the stage holds experts + redundant
    experts' weights over the same GPUs, routed(tp x dp) x (E + R) / E.
    """
    check_layout(llm, tp, pp, ep, dp, redundant)
    dense_layout = weight_bytes_per_gpu(llm, precision, tp, pp)
    if dp == 1 and redundant == 0:
        return dense_layout
    at_tp = routed_expert_bytes_per_gpu(llm, precision, tp, pp)
    slots = (llm.experts + redundant) / llm.experts
    return dense_layout - at_tp + routed_expert_bytes_per_gpu(llm, precision, tp * dp, pp) * slots


# --- KV cache --------------------------------------------------------------------------


def kv_bytes_per_token(llm: LlmSpec, kv_precision: Precision) -> float:
    """KV-cache bytes one token stores in the whole model, without TP replication:
    GQA: 2 x kv_heads x head_dim x layers x bytes; MLA: (kv_lora_rank + rope) x layers x bytes.
    """
    return llm.kv_elements_per_token_per_layer() * llm.layers * kv_precision.bytes_per_element


def _kv_elements_per_gpu_per_layer(llm: LlmSpec, tp: int) -> float:
    if llm.attention is Attention.MLA:
        return float(llm.kv_elements_per_token_per_layer())
    return 2 * kv_heads_per_gpu(llm, tp) * llm.head_dim


def kv_bytes_per_token_per_gpu(
    llm: LlmSpec, kv_precision: Precision, tp: int, pp: int = 1
) -> float:
    """KV bytes one token stores on the most loaded GPU:
    GQA: 2 x max(kv_heads/tp, 1) x head_dim x ceil(layers/pp) x bytes;
    MLA: (kv_lora_rank + rope) x ceil(layers/pp) x bytes (replicated on every TP rank)."""
    check_layout(llm, tp, pp)
    elements = _kv_elements_per_gpu_per_layer(llm, tp)
    return elements * layers_per_stage(llm, pp) * kv_precision.bytes_per_element


def kv_bytes_per_token_per_replica(
    llm: LlmSpec, kv_precision: Precision, tp: int, pp: int = 1
) -> float:
    """KV bytes one token occupies across all GPUs of the replica, replicas included:
    tp x per-rank elements per layer x layers x bytes. Equals `kv_bytes_per_token` when TP
    does not exceed the KV heads."""
    check_layout(llm, tp, pp)
    elements = _kv_elements_per_gpu_per_layer(llm, tp)
    return tp * elements * llm.layers * kv_precision.bytes_per_element


def windowed_kv_share(
    context_tokens: float, window_tokens: float, window_layer_share: float
) -> float:
    """Share of a full-context KV cache one sequence of `context_tokens` tokens holds (and
    one decode step reads) when `window_layer_share` of the layers keep only the last
    `window_tokens` tokens: 1 - s + s x min(1, window / context).

    1 without windowed layers or at a context within the window; never above 1.
    `LlmSpec.kv_layers_at_context` / layers for the model's own window and layers.
    """
    if window_tokens <= 0 or window_layer_share <= 0 or context_tokens <= window_tokens:
        return 1.0
    return 1.0 - window_layer_share + window_layer_share * window_tokens / context_tokens


def chunked_read_share(span_tokens: float, chunk_tokens: float, window_layer_share: float) -> float:
    """Share of the full attention reads at a mean attended span of `span_tokens` when
    `window_layer_share` of the layers attend within fixed chunks of `chunk_tokens`.

    A chunked layer's token at position x attends to x mod chunk tokens. The positions of
    a batch (or of one prompt's tokens) with mean span m are taken as spread evenly over
    [0, 2m], so a chunked layer reads E[x mod chunk] = (n x chunk^2 / 2 + r^2 / 2) / (2m)
    with n = floor(2m / chunk) whole chunks and r = 2m - n x chunk left over; the share is
    1 - s + s x E[x mod chunk] / m. 1 while 2m fits in one chunk; never above
    `windowed_kv_share` (a chunk reads no more than a window of the same size).
    """
    if chunk_tokens <= 0 or window_layer_share <= 0 or 2 * span_tokens <= chunk_tokens:
        return 1.0
    whole = math.floor(2 * span_tokens / chunk_tokens)
    rest = 2 * span_tokens - whole * chunk_tokens
    attended = (whole * chunk_tokens**2 / 2 + rest**2 / 2) / (2 * span_tokens)
    return 1.0 - window_layer_share + window_layer_share * attended / span_tokens


def kv_window(llm: LlmSpec) -> tuple[float, float]:
    """(window tokens, share of layers windowed) of `llm`: (0, 0) without a window."""
    return float(llm.sliding_window_tokens), llm.sliding_window_layers / llm.layers


def kv_bytes_per_sequence(llm: LlmSpec, kv_precision: Precision, context_tokens: float) -> float:
    """KV bytes one sequence of `context_tokens` tokens holds in the whole model (no TP
    replication): per token per layer x bytes x (full layers x context + window layers
    x min(context, window)) = `kv_bytes_per_token` x context x `windowed_kv_share`."""
    share = windowed_kv_share(context_tokens, *kv_window(llm))
    return kv_bytes_per_token(llm, kv_precision) * context_tokens * share


# --- activations and the budget ------------------------------------------------------


def mlp_width(llm: LlmSpec) -> int:
    """Widest MLP intermediate one token activates: the dense MLP, or the routed plus shared
    experts it is sent to."""
    moe = (llm.experts_per_token + llm.shared_experts) * llm.moe_intermediate_size
    return max(llm.intermediate_size if llm.dense_mlp_layers else 0, moe)


def activation_bytes_per_gpu(llm: LlmSpec, tp: int, tokens_per_pass: int) -> float:
    """Peak activation memory of one forward pass on one GPU:
    tokens x (4 x hidden + 2 x mlp_width / tp) x 2 bytes (gate and up outputs of the MLP
    plus the hidden-sized buffers of one layer; layers run one after another)."""
    width = HIDDEN_ACTIVATION_COPIES * llm.hidden_size + 2 * mlp_width(llm) / tp
    return tokens_per_pass * width * ACTIVATION_BYTES_PER_ELEMENT


@dataclass(frozen=True)
class MemoryBudget:
    """Where one GPU's memory goes, and what is left for the KV cache (bytes)."""

    hbm_bytes_per_gpu: float
    weight_bytes_per_gpu: float
    activation_bytes_per_gpu: float
    reserve_bytes_per_gpu: float
    kv_bytes_per_token_per_gpu: float
    """KV bytes one token stores on the most loaded GPU."""
    kv_bytes_per_token: float
    """KV bytes one token occupies across the replica (replicas included)."""
    dp_groups: int = 1
    """Attention data-parallel groups: each holds its own sequences' KV cache."""
    window_tokens: float = 0.0
    """Window of the model's windowed (sliding or chunked) layers; 0: none."""
    window_layer_share: float = 0.0
    """Share of the layers that keep only `window_tokens` of KV."""

    def at_context(self, context_tokens: float) -> "MemoryBudget":
        """This budget for sequences of `context_tokens` tokens: KV bytes per token x
        `windowed_kv_share`, so the capacities count real tokens of such sequences (a
        window layer holds min(context, window) of them). Itself without a window."""
        share = windowed_kv_share(context_tokens, self.window_tokens, self.window_layer_share)
        if share == 1.0:
            return self
        return replace(
            self,
            kv_bytes_per_token_per_gpu=self.kv_bytes_per_token_per_gpu * share,
            kv_bytes_per_token=self.kv_bytes_per_token * share,
            window_tokens=0.0,
            window_layer_share=0.0,
        )

    @property
    def kv_room_bytes_per_gpu(self) -> float:
        """HBM left for the KV cache: HBM - weights - activations - reserve (may be < 0)."""
        return (
            self.hbm_bytes_per_gpu
            - self.weight_bytes_per_gpu
            - self.activation_bytes_per_gpu
            - self.reserve_bytes_per_gpu
        )

    @property
    def sequence_kv_capacity_tokens(self) -> float:
        """Tokens of KV cache one attention group holds, the longest sequence that fits:
        KV room per GPU / KV bytes per token per GPU (0 when the weights leave no room)."""
        return max(self.kv_room_bytes_per_gpu, 0.0) / self.kv_bytes_per_token_per_gpu

    @property
    def kv_capacity_tokens(self) -> float:
        """Tokens of KV cache the replica holds: dp_groups x `sequence_kv_capacity_tokens`
        (each attention DP group holds its own sequences)."""
        return self.dp_groups * self.sequence_kv_capacity_tokens

    def max_sequences(self, tokens_per_sequence: float) -> int:
        """Whole sequences of `tokens_per_sequence` tokens that fit in the KV cache:
        dp_groups x those that fit in one group."""
        per_group = self.sequence_kv_capacity_tokens // max(tokens_per_sequence, 1.0)
        return self.dp_groups * int(per_group)


def memory_budget(
    gpu: GpuSpec,
    llm: LlmSpec,
    weight_precision: Precision,
    kv_precision: Precision,
    tp: int,
    pp: int,
    efficiency: Efficiency,
    ep: int = 1,
    dp: int = 1,
    redundant: int = 0,
) -> MemoryBudget:
    """The memory budget of the most loaded GPU of a TP x PP (x DP, EP) replica.

    With attention DP each group's GPUs hold the KV of the group's own sequences at the
    per-GPU share of TP (an MLA latent is not split by TP: every rank of the group holds
    it), so the replica holds dp x the tokens one group holds.

    A model with windowed layers carries its window (`MemoryBudget.at_context` applies it
    for a sequence length); the KV per token here is the full-context one.

    Raises ValueError for a layout TP/PP/EP/DP cannot split (see `check_layout`).
    """
    window = kv_window(llm)
    return MemoryBudget(
        hbm_bytes_per_gpu=gpu.hbm_bytes,
        weight_bytes_per_gpu=weight_bytes_per_gpu_ep(
            llm, weight_precision, tp, pp, ep, dp, redundant
        ),
        activation_bytes_per_gpu=activation_bytes_per_gpu(llm, tp, efficiency.prefill_chunk_tokens),
        reserve_bytes_per_gpu=gpu.hbm_bytes * efficiency.memory_reserve_fraction,
        kv_bytes_per_token_per_gpu=kv_bytes_per_token_per_gpu(llm, kv_precision, tp, pp),
        kv_bytes_per_token=kv_bytes_per_token_per_replica(llm, kv_precision, tp, pp),
        dp_groups=dp,
        window_tokens=window[0],
        window_layer_share=window[1],
    )


def smallest_fitting_tp(
    gpu: GpuSpec,
    llm: LlmSpec,
    weight_precision: Precision,
    kv_precision: Precision,
    pp: int,
    efficiency: Efficiency,
    tokens_needed: float,
) -> int | None:
    """The smallest TP (power of two up to the node size) at which `tokens_needed` tokens
    of KV fit next to the weights, or None."""
    tp = 1
    while tp <= gpu.gpus_per_node:
        if layout_problem(gpu, llm, weight_precision, kv_precision, tp, pp) is None:
            budget = memory_budget(gpu, llm, weight_precision, kv_precision, tp, pp, efficiency)
            if budget.kv_capacity_tokens >= tokens_needed:
                return tp
        tp *= 2
    return None


def does_not_fit_message(
    budget: MemoryBudget,
    tokens_needed: float,
    label: str,
    remedy: str,
) -> str:
    """A vLLM-style out-of-memory message: what is needed, what is available, the largest
    context that would fit, and what to change."""
    weights, act = budget.weight_bytes_per_gpu, budget.activation_bytes_per_gpu
    reserve, hbm = budget.reserve_bytes_per_gpu, budget.hbm_bytes_per_gpu
    room = budget.kv_room_bytes_per_gpu
    needed_kv = tokens_needed * budget.kv_bytes_per_token_per_gpu
    head = (
        f"{label} does not fit: per GPU it needs {weights / GIB:.1f} GiB of weights + "
        f"{act / GIB:.1f} GiB of activations + {reserve / GIB:.1f} GiB runtime reserve + "
        f"{needed_kv / GIB:.2f} GiB of KV for one {tokens_needed:,.0f}-token request "
        f"= {(weights + act + reserve + needed_kv) / GIB:.1f} GiB, but has {hbm / GIB:.1f} GiB"
    )
    if room <= 0:  # it read "the weights alone leave -334.2 GiB for the KV cache"
        over = f", {-room / GIB:.1f} GiB more than it has" if room < 0 else ""
        detail = f"; weights, activations and reserve alone fill it{over}: no room for KV cache"
    else:
        detail = f"; the largest context that fits is {budget.kv_capacity_tokens:,.0f} tokens"
    return f"{head}{detail}. {remedy}"
