"""Step times: prefill FLOPs, the decode roofline, all-reduces, MoE, PP; hand arithmetic as
named factors."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu, llm
from models.physics.collectives import allreduces_per_step, ring_allreduce_s
from models.physics.efficiency import Efficiency, efficiency_for
from models.physics.flop_counts import (
    body_params,
    expected_experts_touched,
    lm_head_params,
    prefill_flops,
)
from models.physics.memory import weight_bytes_per_gpu
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, TrafficMix

BF16, FP8 = Precision.BF16, Precision.FP8
# Fixed factors for hand arithmetic: nothing here depends on the calibrated catalog.
EFF = Efficiency(
    prefill_flops_fraction=0.5,
    decode_flops_fraction=0.5,
    hbm_fraction=0.8,
    scaleup_fraction=0.7,
    scaleout_fraction=0.8,
    allreduce_latency_s=10e-6,
    pp_hop_latency_s=20e-6,
    step_overhead_s=0.0,
)


def test_cold_32k_prefill_of_a_70b_model_on_8_h100s():
    model, tokens = llm("llama-3.3-70b"), 32768
    layers, heads, head_dim = 80, 64, 128
    linear = 2 * body_params(model) * tokens + 2 * lm_head_params(model)
    attention = 2 * layers * tokens**2 * heads * head_dim  # causal: QK^T and PV, half the pairs
    assert prefill_flops(model, tokens) == pytest.approx(linear + attention)
    assert prefill_flops(model, tokens) == pytest.approx(6e15, rel=0.05)
    gpus, bf16_peak_flops = 8, 989e12
    at_peak_s = prefill_flops(model, tokens) / (gpus * bf16_peak_flops)
    assert at_peak_s == pytest.approx(0.76, abs=0.03)
    steps = step_model(gpu("h100-sxm"), model, BF16, BF16, 8, 1, efficiency_for("h100-sxm", BF16))
    assert steps.prefill_s(tokens) > 1.0


def test_prefix_cache_hits_remove_prefill_work():
    model = llm("llama-3.3-70b")
    cold = prefill_flops(model, 4000)
    warm = prefill_flops(model, 1000, cached_tokens=3000)
    # the 1000 new tokens still attend to the 3000 cached ones
    pairs = 1000 * 3000 + 1000**2 / 2
    expected = 2 * body_params(model) * 1000 + 2 * lm_head_params(model) + 2 * 64 * 256 * 80 * pairs
    assert warm == pytest.approx(expected)
    assert warm < cold / 3


def test_405b_pays_252_allreduces_per_decode_step():
    model = llm("llama-3.1-405b")
    assert allreduces_per_step(model, tp=8) == 2 * 126
    steps = step_model(gpu("h200"), model, FP8, FP8, 8, 1, EFF)
    assert steps.allreduces_per_pass == 252
    assert allreduces_per_step(model, tp=1) == 0


def test_ring_allreduce_hand_calculation():
    message_bytes, ranks, link_bytes_per_s, latency_s = 16e6, 8, 450e9, 10e-6
    expected = latency_s + 2 * (8 - 1) / 8 * message_bytes / link_bytes_per_s
    assert ring_allreduce_s(message_bytes, ranks, link_bytes_per_s, latency_s) == expected
    assert ring_allreduce_s(message_bytes, 1, link_bytes_per_s, latency_s) == 0.0


def test_tp_beyond_a_node_runs_its_allreduces_over_the_nic():
    h100, model = gpu("h100-sxm"), llm("llama-3.1-405b")
    hidden_bytes = 16384 * 2
    in_node = step_model(h100, model, FP8, FP8, 8, 1, EFF)
    across = step_model(h100, model, FP8, FP8, 16, 1, EFF)
    assert in_node.allreduce_s_per_token == pytest.approx(
        2 * 7 / 8 * hidden_bytes / (450e9 * EFF.scaleup_fraction)
    )
    nic_bytes_per_s = 400e9 / 8
    assert across.allreduce_s_per_token == pytest.approx(
        2 * 15 / 16 * hidden_bytes / (nic_bytes_per_s * EFF.scaleout_fraction)
    )


def test_each_doubling_of_tp_buys_less():
    h100, model = gpu("h100-sxm"), llm("llama-3.3-70b")
    step = {
        tp: step_model(h100, model, FP8, FP8, tp, 1, EFF).decode_step_s(1, 1000)
        for tp in (1, 2, 4, 8)
    }
    speedups = [step[1] / step[2], step[2] / step[4], step[4] / step[8]]
    # Weights halve with each doubling; the 2 x 80 all-reduce latencies do not. TP=1 pays
    # none, so the decline shows from TP=2 on: t = W / tp + L  =>  (W/2 + L) / (W/4 + L) >
    # (W/4 + L) / (W/8 + L).
    assert all(speedup < 2 for speedup in speedups)
    assert speedups[1] > speedups[2]


def test_tokens_per_gpu_lower_at_tp8_than_tp4_for_a_model_that_fits_at_tp4():
    h100, model = gpu("h100-sxm"), llm("llama-3.3-70b")
    mix = TrafficMix.fixed(1000, 1000)
    eff = efficiency_for(h100, FP8)
    per_gpu = {
        tp: replica_capacity(
            ReplicaConfig(h100, model, FP8, FP8, tp, 1), mix, LatencyTargets(), eff
        ).output_tokens_per_s_per_gpu
        for tp in (4, 8)
    }
    assert per_gpu[4] > 0
    assert per_gpu[8] < per_gpu[4]


def test_decode_step_flat_while_memory_bound_then_linear_past_the_crossing_batch():
    h100, model = gpu("h100-sxm"), llm("llama-3.1-8b")
    steps = step_model(h100, model, BF16, BF16, 1, 1, EFF)
    # Linear layers: 2 FLOPs and 2 bytes (bf16) per streamed parameter, so the roofs cross at
    # B* = (peak x decode fraction) / (bandwidth x hbm fraction) x (2 bytes / 2 FLOPs).
    peak_flops, bandwidth = 989e12, 3.35e12
    crossing = (peak_flops * 0.5) / (bandwidth * 0.8) * (2 / 2)
    assert crossing == pytest.approx(184.51, abs=0.01)
    parts = steps.pass_parts(crossing, 0.0)
    assert parts.linear_compute_s == pytest.approx(parts.weight_read_s, rel=1e-3)
    context = 1.0  # attention negligible
    t1 = steps.decode_step_s(1, context)
    assert steps.decode_step_s(crossing / 4, context) == pytest.approx(t1, rel=0.01)
    assert steps.decode_step_s(crossing, context) == pytest.approx(t1, rel=0.01)
    assert steps.decode_step_s(4 * crossing, context) == pytest.approx(
        2 * steps.decode_step_s(2 * crossing, context), rel=0.01
    )


def test_decode_at_batch_one_streams_the_weights():
    h100, model = gpu("h100-sxm"), llm("llama-3.1-8b")
    steps = step_model(h100, model, BF16, BF16, 1, 1, EFF)
    input_embedding_bytes = 128256 * 4096 * 2  # a lookup, not streamed
    streamed = weight_bytes_per_gpu(model, BF16, 1) - input_embedding_bytes
    assert steps.decode_step_s(1, 0) == pytest.approx(streamed / (3.35e12 * 0.8), rel=1e-3)


def test_moe_reads_only_the_experts_a_batch_touches():
    assert expected_experts_touched(8, 2, 1) == pytest.approx(2)
    assert expected_experts_touched(256, 8, 4) == pytest.approx(256 * (1 - (1 - 8 / 256) ** 4))
    assert expected_experts_touched(8, 2, 1000) == pytest.approx(8)
    steps = step_model(gpu("h100-sxm"), llm("mixtral-8x7b"), FP8, FP8, 1, 1, EFF)
    hbm = steps.hbm_bytes_per_s
    # The routed experts are their own kernel: its read is the experts touched plus the
    # rows its GEMMs stream, Mixtral (hidden 4,096, inter 14,336, FP8 rows, 32 layers;
    # Hopper's grouped GEMM writes the gate/up pair in BF16, the activation is its own
    # kernel): 4,096 x (1 + 2) + 14,336 x (1 + 4) = 83,968 bytes a row a layer, 2 rows a
    # token; the permute, activation and combine kernels move 4,096 x (4 + 1 + 2/2) +
    # 14,336 x (4 + 1) = 96,256 more, their time added to the GEMMs'.
    row_bytes = (4096 * 3 + 14336 * 5) * 32
    assert steps.experts_layout.row_bytes == row_bytes == 83_968 * 32
    assert steps.experts_layout.kernel_row_bytes == (4096 * 6 + 14336 * 5) * 32 == 96_256 * 32

    def expert_weights_s(batch: float) -> float:
        parts = steps.pass_parts(batch, 0)
        assert parts.weight_read_s == pytest.approx(steps.dense_weight_bytes / hbm)
        return parts.expert_read_s - 2 * batch * row_bytes / hbm

    one, many = expert_weights_s(1), expert_weights_s(64)
    full = 8 * steps.expert_weight_bytes / hbm
    assert one == pytest.approx(2 * steps.expert_weight_bytes / hbm)
    assert one < many <= full
    assert many == pytest.approx(full, rel=1e-3)


def test_pp_splits_the_weights_adds_hops_and_a_bubble():
    h100, model = gpu("h100-sxm"), llm("llama-3.3-70b")
    pp1 = step_model(h100, model, FP8, FP8, 2, 1, EFF)
    pp2 = step_model(h100, model, FP8, FP8, 2, 2, EFF)
    assert pp2.dense_weight_bytes < 0.6 * pp1.dense_weight_bytes
    batch, context = 64, 1000
    hop = 20e-6 + (batch / 2) * 8192 * 2 / (450e9 * 0.7)
    expected = 2 * (pp2.pass_s(batch / 2, batch / 2 * context) + hop)
    assert pp2.decode_step_s(batch, context) == pytest.approx(expected)
    # one sequence: one micro-batch, the other stage idles (the bubble)
    assert pp2.decode_step_s(1, context) == pytest.approx(
        2 * (pp2.pass_s(1, context) + 20e-6 + 8192 * 2 / (450e9 * 0.7))
    )
    assert pp2.decode_step_s(1, context) > pp1.decode_step_s(1, context)


def test_each_pipeline_stage_turn_pays_the_step_overhead():
    """With PP every micro-batch is an engine step on every stage (TensorRT-LLM's
    `_executor_loop_pp` schedules one micro-batch a turn), so the fixed step overhead is
    paid pp times an iteration; the per-sequence overhead once per sequence."""
    h100, model = gpu("h100-sxm"), llm("llama-3.3-70b")
    step_overhead_s, sequence_overhead_s = 2e-3, 10e-6
    eff = EFF.model_copy(
        update={"step_overhead_s": step_overhead_s, "sequence_overhead_s": sequence_overhead_s}
    )
    pp1 = step_model(h100, model, FP8, FP8, 2, 1, eff)
    pp2 = step_model(h100, model, FP8, FP8, 2, 2, eff)
    batch, context = 64, 1000
    hop = 20e-6 + (batch / 2) * 8192 * 2 / (450e9 * 0.7)
    pass_s = pp2.pass_s(batch / 2, batch / 2 * context)
    # 2 stage turns x (pass + hop + 2 ms) + 64 sequences x 10 us
    expected = 2 * (pass_s + hop + 2e-3) + 64 * 10e-6
    assert pp2.decode_step_s(batch, context) == pytest.approx(expected)
    # pp = 1: one turn, one overhead
    assert pp1.decode_step_s(batch, context) == pytest.approx(
        pp1.pass_s(batch, batch * context) + 2e-3 + 64 * 10e-6
    )
    # a 16,384-token prompt in 2 chunks of 8,192 through 2 stages: (2 + 2 - 1) turns
    chunk = 8192
    chunk_s = (
        pp2.pass_s(0.0, 0.0, chunk, chunk * 16384 / 2) + 20e-6 + chunk * 8192 * 2 / (450e9 * 0.7)
    )
    assert pp2.prefill_s(2 * chunk) == pytest.approx(3 * (chunk_s + 2e-3))


@settings(max_examples=50, deadline=None)
@given(
    bandwidth_tb_s=st.floats(min_value=0.5, max_value=10),
    factor=st.floats(min_value=1.0, max_value=4.0),
    batch=st.floats(min_value=1, max_value=2048),
    context=st.floats(min_value=1, max_value=65536),
    tp=st.sampled_from([1, 2, 4, 8]),
)
def test_more_hbm_bandwidth_never_slows_a_decode_step(bandwidth_tb_s, factor, batch, context, tp):
    base = gpu("h100-sxm")
    slow = base.model_copy(update={"hbm_tb_s": bandwidth_tb_s})
    fast = base.model_copy(update={"hbm_tb_s": bandwidth_tb_s * factor})
    model = llm("llama-3.3-70b")
    t_slow = step_model(slow, model, FP8, FP8, tp, 1, EFF).decode_step_s(batch, context)
    t_fast = step_model(fast, model, FP8, FP8, tp, 1, EFF).decode_step_s(batch, context)
    assert t_fast <= t_slow * (1 + 1e-12)


@settings(max_examples=100, deadline=None)
@given(
    layout=st.sampled_from(
        [
            ("llama-3.1-8b", 1, 1),
            ("llama-3.3-70b", 4, 1),
            ("llama-3.3-70b", 4, 2),
            ("mixtral-8x7b", 2, 1),
            ("qwen3-30b-a3b", 2, 2),
        ]
    ),
    batch=st.floats(min_value=0.0, max_value=1024),
    context=st.floats(min_value=1, max_value=32768),
    loads=st.lists(st.floats(min_value=0.0, max_value=16384), max_size=12),
    prefill_context=st.floats(min_value=0.0, max_value=32768),
)
def test_the_fast_paths_time_exactly_what_the_roofline_record_times(
    layout, batch, context, loads, prefill_context
):
    """`iterations_s` (the decode side worked out once per batch) and `pass_s` (no
    record) do the same arithmetic as `iteration_parts` / `pass_parts`: equal to the bit,
    dense and MoE, with and without pipeline stages."""
    name, tp, pp = layout
    eff = EFF.model_copy(update={"step_overhead_s": 2e-3, "sequence_overhead_s": 10e-6})
    steps = step_model(gpu("h100-sxm"), llm(name), FP8, FP8, tp, pp, eff)
    one_by_one = [steps.iteration_s(batch, context, load, prefill_context) for load in loads]
    assert steps.iterations_s(batch, context, loads, prefill_context) == one_by_one
    m = steps.micro_batches(batch)
    for load, seconds in zip(loads, one_by_one, strict=True):
        parts = steps.iteration_parts(batch, context, load, prefill_context)
        b, q = batch / m, load / m
        assert steps.pass_s(b, b * context, q, q * prefill_context) == parts.total_s
        sequences_s = eff.sequence_overhead_s * batch
        if pp == 1:
            assert seconds == parts.total_s + eff.step_overhead_s + sequences_s
        else:
            turn_s = parts.total_s + steps.hop_s(b + q) + eff.step_overhead_s
            assert seconds == pp * turn_s + sequences_s
