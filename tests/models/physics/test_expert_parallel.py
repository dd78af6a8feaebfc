"""Expert parallelism and attention data parallelism: hand arithmetic for the all-to-all,
the experts a batch touches, DeepSeek-V3's weights per GPU, the load imbalance, the layout
rule, a capacity that rises with EP where the physics says so, and a plan that verifies."""

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.exit_codes import ExitCode
from models.io.loading import load_instance
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.catalog.moe_efficiency import trial_constants
from models.physics.efficiency import efficiency_for
from models.physics.flop_counts import expected_experts_touched
from models.physics.memory import (
    expert_layout_problem,
    kv_bytes_per_token_per_gpu,
    memory_budget,
    weight_bytes_per_gpu,
    weight_bytes_per_gpu_ep,
)
from models.physics.moe import (
    alltoall_bytes_per_token,
    alltoall_copies,
    expected_max_standard_normal,
    experts_touched_per_rank,
    load_imbalance,
)
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix
from solver.solve import SolveSettings, solve
from solver.verify.fleet import verify
from tests.paths import INSTANCES

FP8 = Precision.FP8
BF16_BYTES = 2


def test_alltoall_bytes_per_token_of_a_deepseek_v3_moe_layer_by_hand():
    # DeepSeek-V3: top-8 of 256 routed experts, hidden 7168, 58 MoE layers (61 - 3 dense).
    k, hidden, moe_layers = 8, 7168, 61 - 3
    dispatch_bytes, combine_bytes = 1, 2  # FP8 dispatch, BF16 combine
    per_layer = k * hidden * (dispatch_bytes + combine_bytes)  # 2 x k x hidden x bytes, mixed
    assert per_layer == 172_032
    llm = llm_catalog()["deepseek-v3"]
    assert alltoall_bytes_per_token(llm, FP8) == per_layer
    assert per_layer * moe_layers == 9_977_856  # ~10 MB per token through the whole model
    # BF16 weights dispatch in BF16: 2 x k x hidden x 2 bytes.
    assert alltoall_bytes_per_token(llm, Precision.BF16) == 2 * k * hidden * BF16_BYTES

    # An all-to-all sends once per distinct rank: 8 uniform choices over 8 ranks reach
    # 8 (1 - (7/8)^8) = 5.2511 ranks on average. Inside one 8-GPU H200 server the engines
    # all-gather instead (every token to all 8 GPUs, then a reduce-scatter), so DEP8 moves
    # per token and GPU 8 x 7168 x 3 x 58 / 8 GPUs x 7/8 leaving the GPU, over NVLink.
    distinct = 8 * (1 - (7 / 8) ** 8)
    assert alltoall_copies(k, 8, 1) == pytest.approx(distinct) == pytest.approx(5.2511, abs=1e-4)
    gpu = gpu_catalog()["h200"]
    efficiency = efficiency_for(gpu, FP8)
    nvlink_bytes_per_s = 450e9 * efficiency.scaleup_fraction
    steps = step_model(gpu, llm, FP8, FP8, 1, 1, efficiency, ep=8, dp=8)
    layout = steps.experts_layout
    expected_s = 8 * hidden * 3 * moe_layers / 8 * (7 / 8) / nvlink_bytes_per_s
    assert layout.alltoall_s_per_token == pytest.approx(expected_s, rel=1e-12)
    assert layout.alltoall_collectives == 2 * moe_layers
    # GB200's 72-GPU NVLink domain runs TensorRT-LLM's all-to-all: 5.2511 copies, the
    # NVLink at 900 GB/s.
    gb200 = gpu_catalog()["gb200"]
    nvl72 = efficiency_for(gb200, FP8)
    steps = step_model(gb200, llm, FP8, FP8, 1, 1, nvl72, ep=8, dp=8)
    expected_s = distinct * hidden * 3 * moe_layers / 8 * (7 / 8) / (900e9 * nvl72.scaleup_fraction)
    assert steps.experts_layout.alltoall_s_per_token == pytest.approx(expected_s, rel=1e-12)


def test_experts_touched_at_a_batch_by_hand():
    # Qwen3-235B-A22B: 128 experts, top-8. At 16 tokens an expert stays idle with
    # probability (1 - 8/128)^16 = 0.9375^16 = 0.356074.
    idle = 0.9375**16
    assert idle == pytest.approx(0.356074, abs=1e-6)
    assert expected_experts_touched(128, 8, 16) == pytest.approx(128 * (1 - idle))  # 82.42
    assert 128 * (1 - idle) == pytest.approx(82.42, abs=0.01)
    # Per EP rank of 8: its 16 experts, the same fraction touched.
    assert experts_touched_per_rank(128, 8, 8, 16) == pytest.approx(16 * (1 - idle))
    # One token touches exactly k experts; a large batch touches all of them.
    assert expected_experts_touched(128, 8, 1) == pytest.approx(8)
    assert expected_experts_touched(128, 8, 10_000) == pytest.approx(128)


def test_deepseek_v3_weights_per_gpu_at_tp8_and_at_dep8_by_hand():
    h, layers, dense_layers, moe_layers = 7168, 61, 3, 58
    heads, q_lora, kv_lora, nope, rope, v = 128, 1536, 512, 128, 64, 128
    experts, shared, expert_width, dense_width, vocab = 256, 1, 2048, 18432, 129280
    # MLA projections of one layer (with the two latent norm vectors, as the catalog counts)
    q = h * q_lora + q_lora + q_lora * heads * (nope + rope)
    kv_down = h * (kv_lora + rope)  # replicated on every TP rank
    kv = kv_down + kv_lora + kv_lora * heads * (nope + v)
    o = heads * v * h
    attention = q + kv + o
    expert = 3 * h * expert_width
    router = h * experts
    dense_mlp = 3 * h * dense_width
    routed = moe_layers * experts * expert
    replicated_linear = (
        layers * attention + dense_layers * dense_mlp + moe_layers * (shared * expert + router)
    )
    vocab_bf16 = 2 * vocab * h * BF16_BYTES  # embedding and LM head stay bf16
    norms_bf16 = (2 * layers + 1) * h * BF16_BYTES
    fp8 = 1  # byte per weight

    # TP8: every linear layer split 8 ways except the MLA down-projection of K/V.
    tp8 = (
        (replicated_linear - layers * kv_down) / 8 * fp8
        + layers * kv_down * fp8
        + routed / 8 * fp8
        + vocab_bf16 / 8
        + norms_bf16
    )
    # DEP8 (attention DP 8 x EP 8, tp 1): attention, dense layers, shared expert, router
    # and vocabulary whole on every GPU; each GPU holds 32 of the 256 routed experts.
    dep8 = replicated_linear * fp8 + routed / 8 * fp8 + vocab_bf16 + norms_bf16

    llm = llm_catalog()["deepseek-v3"]
    assert weight_bytes_per_gpu(llm, FP8, 8) == pytest.approx(tp8, rel=1e-12)
    assert weight_bytes_per_gpu_ep(llm, FP8, 8, 1, ep=8, dp=1) == pytest.approx(tp8, rel=1e-12)
    assert weight_bytes_per_gpu_ep(llm, FP8, 1, 1, ep=8, dp=8) == pytest.approx(dep8, rel=1e-12)
    assert tp8 / 1e9 == pytest.approx(84.3, abs=0.1)  # GB per GPU
    assert dep8 / 1e9 == pytest.approx(100.7, abs=0.1)  # 16 GB more: replicated attention
    assert (dep8 - tp8) / 1e9 == pytest.approx(
        (replicated_linear - layers * kv_down) * 7 / 8 / 1e9 + vocab_bf16 * 7 / 8 / 1e9, rel=1e-9
    )


def test_mla_kv_is_per_group_under_attention_dp():
    """MLA's latent is not split by TP: at TP8 every GPU holds every token's latent; with
    DP8 each GPU holds only its own group's tokens, so the replica holds 8 x the tokens per
    byte of KV room."""
    llm = llm_catalog()["deepseek-v3"]
    latent_bytes = (512 + 64) * 61 * 1  # (kv_lora + rope) x layers x fp8
    assert kv_bytes_per_token_per_gpu(llm, FP8, 8) == latent_bytes
    assert kv_bytes_per_token_per_gpu(llm, FP8, 1) == latent_bytes
    gpu = gpu_catalog()["h200"]
    efficiency = efficiency_for(gpu, FP8)
    dep8 = memory_budget(gpu, llm, FP8, FP8, 1, 1, efficiency, ep=8, dp=8)
    room = dep8.kv_room_bytes_per_gpu
    assert dep8.sequence_kv_capacity_tokens == pytest.approx(room / latent_bytes)
    assert dep8.kv_capacity_tokens == pytest.approx(8 * room / latent_bytes)


def test_load_imbalance_formula_by_hand():
    # 1 token x top-2 over 2 ranks (of 128 experts): the 2 choices land on 2 ranks as a
    # multinomial: both on one rank w.p. 1/2 (max 2), one each w.p. 1/2 (max 1), so
    # E[max] = 1.5 against a mean of 1: imbalance 1.5.
    assert load_imbalance(1, 2, 2, 128) == pytest.approx(2 * 1 / 2 + 1 * 1 / 2)
    # 3 choices (3 tokens, top-1) over 3 ranks: E[max] = (3 x 3 + 2 x 18 + 1 x 6) / 27,
    # mean 1: imbalance 51/27.
    assert load_imbalance(3, 1, 3, 128) == pytest.approx(51 / 27)
    # routing_skew scales the excess: 1 + 2 x (51/27 - 1).
    assert load_imbalance(3, 1, 3, 128, routing_skew=2.0) == pytest.approx(1 + 2 * (51 / 27 - 1))
    assert load_imbalance(64, 8, 1, 128) == 1.0  # one rank holds everything
    # One token, top-1 over 8 ranks: one rank gets it all, 8 x the mean (the cap).
    assert load_imbalance(1, 1, 8, 128) == pytest.approx(8.0)
    # Many choices: the normal maximum, 1 + E[max of 8 normals] x sd / mean, with
    # 1024 x 8 choices over 8 ranks: mean 1024, sd sqrt(1024 x 7/8) = 29.93.
    sd = math.sqrt(1024 * 7 / 8)
    expected = 1 + expected_max_standard_normal(8) * sd / 1024
    assert load_imbalance(1024, 8, 8, 256) == pytest.approx(expected)
    assert expected_max_standard_normal(8) == pytest.approx(1.4236, abs=1e-3)  # tabulated


@given(
    tokens=st.floats(1, 1e5),
    more=st.floats(1.0, 100.0),
    k=st.sampled_from([1, 2, 4, 8]),
    ep=st.sampled_from([1, 2, 4, 8, 16, 32]),
)
def test_imbalance_is_at_least_one_and_falls_with_the_batch(tokens, more, k, ep):
    experts = 256
    low, high = (
        load_imbalance(tokens, k, ep, experts),
        load_imbalance(tokens * more, k, ep, experts),
    )
    assert 1.0 <= high <= low + 1e-12
    assert low <= ep * min(k, experts / ep) / k + 1e-12


def test_layout_rule():
    qwen = llm_catalog()["qwen3-235b-a22b"]
    assert expert_layout_problem(qwen, 1, 8, 8) is None
    assert expert_layout_problem(qwen, 8, 8, 1) is None
    assert expert_layout_problem(qwen, 2, 8, 4) is None
    assert "does not divide the tp x dp" in expert_layout_problem(qwen, 1, 8, 4)
    assert "does not divide the 8 routed experts" in expert_layout_problem(
        llm_catalog()["mixtral-8x7b"], 1, 16, 16
    )
    assert "is dense" in expert_layout_problem(llm_catalog()["llama-3.1-8b"], 1, 1, 2)


def test_ep1_dp1_is_the_tensor_parallel_model():
    """The default layout is today's: same weights, same replica size, same step."""
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["mixtral-8x7b"]
    efficiency = efficiency_for(gpu, FP8)
    plain = ReplicaConfig(gpu, llm, FP8, FP8, 4, 1)
    assert plain.gpus == 4 and plain.label == "h200 fp8 tp4xpp1 unified"
    steps = step_model(gpu, llm, FP8, FP8, 4, 1, efficiency)
    touched = expected_experts_touched(8, 2, 64)
    parts = steps.iteration_parts(64, 1000)
    assert parts.weight_read_s == pytest.approx(steps.dense_weight_bytes / steps.hbm_bytes_per_s)
    # TP4 splits each expert's intermediate (i = 14,336 / 4 = 3,584). The GEMMs stream
    # the FP8 row in, the BF16 gate/up pair out, the FP8 activated row in and the BF16 row
    # out: 4,096 x (1 + 2) + 3,584 x 1 + 3,584 x 4 bytes a row a layer, 64 tokens x 2
    # rows, 32 layers.
    rows_bytes = 64 * 2 * (4096 * 3 + 3584 * 5) * 32
    assert parts.expert_read_s == pytest.approx(
        (touched * steps.expert_weight_bytes + rows_bytes) / steps.hbm_bytes_per_s
    )
    # Between the GEMMs: permute 4,096 x (2 + 1), combine 4,096 x (2 + 2/2), activation
    # 3,584 x (4 + 1) bytes a row a layer.
    kernel_bytes = 64 * 2 * (4096 * 6 + 3584 * 5) * 32
    assert parts.expert_kernels_s == pytest.approx(kernel_bytes / steps.hbm_bytes_per_s)
    assert steps.experts_layout.alltoall_s(64) == 0.0


def test_attention_dp_with_ep_lifts_qwen3_235b_capacity_over_tp8():
    """Qwen3-235B-A22B has 4 KV heads: at TP8 each is held twice, and every layer pays two
    all-reduces. DEP8 keeps a sequence's KV on one GPU (2 x 4 x 128 x 94 bytes per token
    there, against 2 x 1 x 128 x 94 on each of 8 GPUs at TP8: half the HBM per token for
    the replica) and trades the all-reduces for all-to-alls: more tokens fit and more
    requests/s meet the same TPOT, at the documented all-to-all defaults (20 us a
    collective, no grouped-GEMM loss). At the fitted Hopper constants (100 us, the top of
    the NVLink grid) the 2 x 94 collectives cost 18.8 ms a step and DEP8 falls below TP8 at
    this 60 ms TPOT: the trade depends on that latency."""
    with trial_constants({"hopper": {"alltoall_latency_s": 20e-6, "gemm_half_tokens": 0.0}}):
        _dep8_over_tp8()


def _dep8_over_tp8() -> None:
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["qwen3-235b-a22b"]
    efficiency = efficiency_for(gpu, FP8)
    assert kv_bytes_per_token_per_gpu(llm, FP8, 8) == 2 * 1 * 128 * 94
    assert kv_bytes_per_token_per_gpu(llm, FP8, 1) == 2 * 4 * 128 * 94
    mix = TrafficMix.fixed(2000, 400)
    targets = LatencyTargets(ttft_p99_s=2.0, tpot_p99_s=0.06)
    tp8 = replica_capacity(ReplicaConfig(gpu, llm, FP8, FP8, 8, 1), mix, targets, efficiency)
    dep8 = replica_capacity(
        ReplicaConfig(gpu, llm, FP8, FP8, 1, 1, Role.UNIFIED, ep=8, dp=8), mix, targets, efficiency
    )
    assert dep8.config.gpus == tp8.config.gpus == 8
    assert dep8.kv_capacity_tokens > 1.5 * tp8.kv_capacity_tokens
    assert dep8.requests_per_s > tp8.requests_per_s
    # Both layouts all-gather every token to the 8 GPUs of the server; with expert
    # parallelism the experts are whole on each rank, which permutes, multiplies and
    # combines 1/8 of the routed rows, where ep = 1 (each expert split 8 ways) moves all
    # of them through every GPU.
    ep1 = replica_capacity(
        ReplicaConfig(gpu, llm, FP8, FP8, 1, 1, Role.UNIFIED, ep=1, dp=8), mix, targets, efficiency
    )
    assert dep8.requests_per_s > ep1.requests_per_s


def test_moe_ep_instance_plans_an_ep_layout_that_verifies():
    """With TP8 ruled out (tensor_parallel [1]) the plan must use DEP8; it verifies, and
    the verifier catches a DEP replica booked at the wrong GPU count. (With every TP
    open, TP2 wins the 60 ms TPOT since the slowest attention group prefills whole
    prompts: `models.physics.moe`, issue 34.)"""
    base = load_instance(INSTANCES / "moe-ep.yaml")
    policy = base.policy.model_copy(update={"tensor_parallel": [1]})
    instance = base.model_copy(update={"policy": policy})
    plan = solve(instance, SolveSettings.of(instance, backend="highs", mip_gap=0.0))
    check = verify(instance, plan)
    assert check.ok, check.violations
    dep = [p for p in plan.replicas if p.ep == 8 and p.dp == 8]
    assert dep and all(p.gpus == p.count * 8 for p in dep)
    assert dep[0].key == "h200.fp8.tp1pp1dp8ep8.unified"
    # The verifier rebuilds the layout from the plan's ep/dp: a wrong GPU count is caught.
    wrong = plan.model_copy(
        update={"replicas": (dep[0].model_copy(update={"gpus": dep[0].count}),)}
    )
    assert any("x DP 8" in v.message for v in verify(instance, wrong).violations)


def test_perf_ep_dp_flags(run_cli):
    args = ["perf", "-m", "qwen3-235b-a22b", "-g", "h200", "-p", "fp8", "-i", "2000", "-o", "400"]
    result = run_cli(*args, "--tp", "1", "--dp", "8", "--ep", "8", "--json")
    assert result.exit_code == ExitCode.OK
    data = json.loads(result.stdout)
    assert (data["ep"], data["dp"], data["tp"], data["gpus"]) == (8, 8, 1, 8)
    bad = run_cli(*args, "--tp", "1", "--dp", "4", "--ep", "8")
    assert bad.exit_code == ExitCode.BAD_INPUT
    assert "--ep" in bad.stderr and "does not divide" in bad.stderr
