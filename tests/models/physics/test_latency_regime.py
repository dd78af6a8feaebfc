"""The low-latency regime (issue 12): batch-1 decode sits near its physical floor, and
tensor parallelism trades per-GPU throughput for latency the way the seed's "each doubling
buys less" says. The latency constants (step overhead, all-reduce latency) come from
latency rows and a physical floor, never from max-throughput rows.

Floors derived here, as products of named factors:
- weights: the bytes one GPU streams per decode step over its peak HBM bandwidth;
- all-reduces: 2 per layer, each at least the NCCL ring latency on NVLink
  (base 6.6 us + 2 (n - 1) hops x 0.6 us at n = 8: 15 us; NVIDIA/nccl src/graph/tuning.cc).
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu, llm
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix

BF16, FP8 = Precision.BF16, Precision.FP8
NCCL_BASE_S, NVLINK_HOP_S = 6.6e-6, 0.6e-6
ALLREDUCE_FLOOR_S = NCCL_BASE_S + 2 * (8 - 1) * NVLINK_HOP_S  # 15.0 us
CONTEXT_TOKENS = 1000
TPOT_BAND = 2.0
"""Batch-1 TPOT must lie within [1, 2] x its physical floor: the floor leaves out the
engine's step overhead (~1-2 ms) and reads at peak bandwidth, real kernels at ~70-90%."""


def _tpot_s(model: str, gpu_name: str, precision: Precision, tp: int, batch: float = 1.0):
    spec = gpu(gpu_name)
    steps = step_model(spec, llm(model), precision, FP8, tp, 1, efficiency_for(spec, precision))
    return steps.decode_step_s(batch, CONTEXT_TOKENS)


def _weight_floor_s(model: str, bytes_per_param: float, tp: int, hbm_bytes_per_s: float):
    """Linear weights at the weight precision plus the BF16 LM head, split over TP, over
    the peak bandwidth (the input embedding is a lookup, not a stream)."""
    spec = llm(model)
    head_params = spec.vocab_size * spec.hidden_size
    body_params = spec.total_params() - 2 * head_params  # embedding and LM head untied
    per_gpu_bytes = (body_params * bytes_per_param + head_params * 2) / tp
    return per_gpu_bytes / hbm_bytes_per_s


def test_batch1_tpot_of_70b_fp8_tp8_on_h100_is_near_its_physical_floor():
    layers, tp, h100_hbm_bytes_per_s = 80, 8, 3.35e12
    weights_s = _weight_floor_s("llama-3.3-70b", 1.0, tp, h100_hbm_bytes_per_s)
    assert weights_s == pytest.approx(2.63e-3, rel=0.01)  # 8.8 GB per GPU at 3.35 TB/s
    allreduces_s = 2 * layers * ALLREDUCE_FLOOR_S  # 160 x 15 us = 2.4 ms
    floor_s = weights_s + allreduces_s
    tpot_s = _tpot_s("llama-3.3-70b", "h100-sxm", FP8, tp)
    assert floor_s <= tpot_s <= TPOT_BAND * floor_s


def test_tp8_beats_tp4_on_best_tpot_of_a_70b_model():
    for gpu_name in ("h100-sxm", "h200"):
        tp4 = _tpot_s("llama-3.3-70b", gpu_name, FP8, 4)
        tp8 = _tpot_s("llama-3.3-70b", gpu_name, FP8, 8)
        assert tp8 < tp4
        # each doubling buys less: TP8 does not halve TP4's step (fixed costs stay)
        assert tp8 > tp4 / 2


def test_tp4_beats_tp8_on_throughput_per_gpu_at_a_loose_tpot():
    mix = TrafficMix.fixed(1000, 300)
    loose = LatencyTargets(ttft_p99_s=5.0, tpot_p99_s=0.1)
    spec = gpu("h100-sxm")
    efficiency = efficiency_for(spec, FP8)
    per_gpu = {}
    for tp in (4, 8):
        config = ReplicaConfig(spec, llm("llama-3.3-70b"), FP8, FP8, tp, 1, Role.UNIFIED)
        capacity = replica_capacity(config, mix, loose, efficiency)
        assert capacity.fits and capacity.meets_slo
        per_gpu[tp] = capacity.output_tokens_per_s_per_gpu
    assert per_gpu[4] > per_gpu[8]


def test_llama_8b_tp2_is_not_slower_than_tp1_at_batch_1():
    """TP2 halves the weights each GPU streams and adds 2 x 32 all-reduces: at batch 1
    the saving (~3 ms of BF16 weights) exceeds the cost (64 x ~15 us ~ 1 ms)."""
    spec, model = gpu("h100-sxm"), llm("llama-3.1-8b")
    efficiency = efficiency_for(spec, BF16)
    tp1 = _tpot_s("llama-3.1-8b", "h100-sxm", BF16, 1)
    tp2 = _tpot_s("llama-3.1-8b", "h100-sxm", BF16, 2)
    assert tp2 <= tp1
    achieved_bw = spec.hbm_bytes_per_s * efficiency.hbm_fraction
    saving_s = _weight_floor_s("llama-3.1-8b", 2.0, 2, achieved_bw)  # half of TP1's read
    cost_s = 2 * model.layers * efficiency.allreduce_latency_s
    assert tp1 - tp2 == pytest.approx(saving_s - cost_s, rel=0.15)


@settings(max_examples=30, deadline=None)
@given(
    model=st.sampled_from(["llama-3.1-8b", "llama-3.3-70b", "qwen3-32b"]),
    gpu_name=st.sampled_from(["h100-sxm", "h200", "b200", "a100-80gb-sxm"]),
    tp=st.sampled_from([1, 2, 4, 8]),
)
def test_batch1_decode_never_beats_streaming_the_weights_at_peak(model, gpu_name, tp):
    """Whatever the factors, one decode step reads every weight of the GPU's shard once:
    it cannot beat that read at peak bandwidth plus the all-reduce floor."""
    spec = gpu(gpu_name)
    precision = BF16
    try:
        tpot_s = _tpot_s(model, gpu_name, precision, tp)
    except ValueError:  # TP does not split the model's heads
        return
    floor_s = _weight_floor_s(model, 2.0, tp, spec.hbm_bytes_per_s)
    if tp > 1:
        floor_s += 2 * llm(model).layers * NCCL_BASE_S
    assert tpot_s >= floor_s * 0.98  # 2%: norms and biases left out of the floor
