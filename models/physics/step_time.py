"""The step model of one replica layout: `step_model` splits a model's FLOPs, weights, KV
cache and collectives over the GPUs of a TP x PP (x DP attention groups, EP expert ranks)
layout and returns the per-GPU coefficients, a `StepModel`, whose passes, iterations and
prefills (the roofline arithmetic, `models.physics.step_passes`) are the step times.

FLOPs (`models.physics.flop_counts`) split over the `tp` GPUs of a stage, and a stage holds
ceil(layers / pp) layers. Linear FLOPs run at the weight precision's peak; attention runs
at the FP8 peak with an FP8 (or FP4) KV cache on a GPU with FP8 tensor cores, else at the
BF16 peak (`attention_precision`). The routed experts' grouped GEMM of 4-bit experts on a GPU
without FP4 tensor cores dequantises them in the kernel (W4A16) and reaches at most
`MoeEfficiency.dequant_gemm_rate` of the dense GEMM rate (`models.physics.moe.expert_layout`).
"""

from models.physics.catalog.moe_efficiency import MoeEfficiency, moe_efficiency_for
from models.physics.collectives import (
    group_link_bytes_per_s,
    tokens_dispatched,
    tp_allreduces_per_pass,
)
from models.physics.efficiency import Efficiency
from models.physics.flop_counts import attention_flops_per_pair, body_params, lm_head_params
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.memory import (
    ACTIVATION_BYTES_PER_ELEMENT,
    HIGH_PRECISION_BYTES_PER_ELEMENT,
    check_layout,
    expert_bytes_per_element,
    kv_bytes_per_token_per_gpu,
    kv_window,
    layers_per_stage,
    weight_bytes_per_gpu_ep,
)
from models.physics.moe import (
    COMBINE_BYTES_PER_ELEMENT,
    dispatch_bytes_per_element,
    expert_layout,
    moe_tp,
)
from models.physics.overlap import (
    OVERLAPPED_NORMAL_COMM_STRETCH,
    overlap_compute_share,
    overlap_token_floors,
)
from models.physics.pass_parts import PassParts
from models.physics.precision import Precision
from models.physics.step_passes import StepModel

__all__ = ["PassParts", "StepModel", "attention_precision", "step_model"]


def attention_precision(gpu: GpuSpec, kv_precision: Precision) -> Precision:
    """Precision attention math runs at: FP8 with an FP8/FP4 KV cache on a GPU with FP8
    tensor cores, else BF16."""
    if kv_precision is not Precision.BF16 and gpu.supports(Precision.FP8):
        return Precision.FP8
    return Precision.BF16


def step_model(
    gpu: GpuSpec,
    llm: LlmSpec,
    weight_precision: Precision,
    kv_precision: Precision,
    tp: int,
    pp: int,
    efficiency: Efficiency,
    ep: int = 1,
    dp: int = 1,
    moe: MoeEfficiency | None = None,
    redundant: int = 0,
) -> StepModel:
    """The per-GPU coefficients of a TP x PP (x DP attention groups, EP expert ranks)
    replica of `llm` on `gpu`. `moe`: the all-to-all latency and routing skew
    (default: `models.physics.catalog.moe_efficiency.moe_efficiency_for(gpu)`).

    `redundant` experts (EPLB) add their copies to each rank's weights and slots.
    Raises ValueError for a layout TP/PP/EP/DP cannot split or a precision the GPU lacks.
    """
    check_layout(llm, tp, pp, ep, dp, redundant)
    stage_layers = layers_per_stage(llm, pp)
    stage = stage_layers / llm.layers
    linear_peak = gpu.peak_flops(weight_precision)
    attention_peak = gpu.peak_flops(attention_precision(gpu, kv_precision))
    body = body_params(llm)
    head = lm_head_params(llm)

    weights = weight_bytes_per_gpu_ep(llm, weight_precision, tp, pp, ep, dp, redundant)
    if pp == 1 and not llm.tie_embeddings:
        # The input embedding is a lookup, not a stream. With PP the heaviest stage is
        # taken to be the last one, whose LM head is read in full.
        weights -= llm.vocab_size * llm.hidden_size / tp * HIGH_PRECISION_BYTES_PER_ELEMENT
    stage_moe_layers = llm.moe_layers * stage
    expert_bytes_per_weight = expert_bytes_per_element(llm, weight_precision)
    expert_split = moe_tp(tp, dp, ep)  # GPUs each routed expert is split over (tp at ep=dp=1)
    expert_bytes = stage_moe_layers * llm.expert_params() / expert_split * expert_bytes_per_weight
    dense_weights = weights - (llm.experts + redundant) // ep * expert_bytes
    routed_flops = 2 * llm.experts_per_token * llm.expert_params() * stage_moe_layers
    moe = moe or moe_efficiency_for(gpu)

    tp_link = group_link_bytes_per_s(gpu, efficiency, tp)
    hop_link = group_link_bytes_per_s(gpu, efficiency, tp * pp * dp)
    token_bytes = llm.hidden_size * ACTIVATION_BYTES_PER_ELEMENT
    ring_factor = 2 * (tp - 1) / tp
    dispatch = dispatch_bytes_per_element(weight_precision)
    overlapped = efficiency.overlaps(tp, dp, ep)  # where the engine runs it (DeepEP's a2a)
    dispatched = tokens_dispatched(ep, dp, alltoall_backend=overlapped)

    return StepModel(
        tp=tp,
        pp=pp,
        chunk_tokens=efficiency.prefill_chunk_tokens * dp,  # each group's token budget
        overhead_s=efficiency.step_overhead_s,
        sequence_overhead_s=efficiency.sequence_overhead_s,
        prefill_linear_flops_per_token=2 * body * stage / tp,
        decode_linear_flops_per_token=2 * (body + head) * stage / tp,
        prefill_attention_flops_per_pair=attention_flops_per_pair(llm, decode=False) * stage / tp,
        decode_attention_flops_per_pair=attention_flops_per_pair(llm, decode=True) * stage / tp,
        prefill_linear_flops_per_s=linear_peak * efficiency.prefill_flops_fraction,
        decode_linear_flops_per_s=linear_peak * efficiency.decode_flops_fraction,
        prefill_attention_flops_per_s=attention_peak * efficiency.prefill_flops_fraction,
        decode_attention_flops_per_s=attention_peak * efficiency.decode_flops_fraction,
        dense_weight_bytes=dense_weights,
        expert_weight_bytes=expert_bytes,
        experts=llm.experts,
        experts_per_token=llm.experts_per_token,
        kv_bytes_per_token=kv_bytes_per_token_per_gpu(llm, kv_precision, tp, pp),
        hbm_bytes_per_s=gpu.hbm_bytes_per_s * efficiency.hbm_fraction,
        allreduces_per_pass=tp_allreduces_per_pass(
            llm, tp, stage_layers, stage_moe_layers, dispatched
        ),
        allreduce_latency_s=efficiency.allreduce_latency_s,
        norm_allreduce_s=stage_layers * efficiency.allreduce_latency_s
        if llm.qk_norm_across_heads and tp > 1
        else 0.0,
        allreduce_s_per_token=ring_factor * token_bytes / tp_link,
        hop_latency_s=efficiency.pp_hop_latency_s,
        hop_s_per_token=token_bytes / hop_link / dp,  # each group hands off its own tokens
        dp=dp,
        attention_chunk_tokens=kv_window(llm)[0] if llm.window_is_chunked else 0.0,
        chunked_layer_share=kv_window(llm)[1] if llm.window_is_chunked else 0.0,
        routed_flops_per_token=routed_flops / (tp * dp),
        two_batch_overlap=overlapped,
        overlap_token_floors=overlap_token_floors(efficiency.overlap_engine),
        dispatch_share=dispatch / (dispatch + COMBINE_BYTES_PER_ELEMENT),
        overlap_compute_share=overlap_compute_share(gpu.sm_count),
        overlap_comm_stretch=OVERLAPPED_NORMAL_COMM_STRETCH,
        experts_layout=expert_layout(
            gpu,
            llm,
            weight_precision,
            tp,
            ep,
            dp,
            stage_moe_layers,
            efficiency,
            alltoall_latency_s=moe.alltoall_latency_s,
            routing_skew=moe.routing_skew,
            gemm_half_tokens=moe.gemm_half_tokens,
            dequant_half_tokens=moe.dequant_gemm_half_tokens,
            dequant_rate=moe.dequant_gemm_rate,
            redundant=redundant,
        )
        if llm.is_moe
        else None,
    )
