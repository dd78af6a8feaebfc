"""The operating point of the MoE calibration rows (issue 34): the max_batch_size and
max_num_tokens trtllm-bench chose for the published runs (`calibration.trtllm_bench`),
the attention DP the runs' options enabled, and attention-DP groups in lockstep in an
offline run of fixed lengths (`models.serving.batch_model.offline_lockstep`). Hand
arithmetic and properties."""

import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calibration.moe_breakdown import worst_rows
from calibration.moe_rows import MoeRow, bench_settings, load_moe_rows, predict_moe
from calibration.rows import calibration_dir
from calibration.trtllm_bench import bench_caps, bench_requests
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.catalog.moe_efficiency import moe_efficiency_for, trial_constants
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.serving.batch_model import BatchModel, offline_lockstep
from models.serving.replica import MixTokens, Role, TrafficMix

FP8 = Precision.FP8


def test_bench_caps_by_hand():
    # 1,592 requests, 2048/128, pp 1: raw_bs 1592 >= 1024 -> 256 x ceil(1592 / 256) = 1792;
    # raw_tok = min(1592 x 17, 32768) = 27064 -> 1024 x ceil(26.43) = 27648; ISL + max_bs
    # = 3840 is less. With 4,000 requests raw_tok = min(68000, 32768) = 32768.
    assert bench_caps(1592.0, 2048, 128, 1) == (1792, 27648)
    assert bench_caps(4000.0, 2048, 128, 1) == (4096, 32768)
    # 100 requests, 1024/1024: raw_bs 100 < 256 -> max(64, 32 x 4) = 128; raw_tok 200
    # < 4096 -> max(2048, 256) = 2048; ISL + max_bs = 1152.
    assert bench_caps(100.0, 1024, 1024, 1) == (128, 2048)
    # 5,000 requests, pp 2, 8192/1024: raw_bs = 4096 / 2 = 2048 -> 2048; raw_tok =
    # min(2048 x 9, 32768) = 18432 -> 1024 x 18 = 18432; ISL + max_bs = 10240.
    assert bench_caps(5000.0, 8192, 1024, 2) == (2048, 18432)
    # 20 requests, 32768/1024: max_bs 64 (the floor); raw_tok 660 -> 2048, but the
    # whole prompt must fit (no chunking): 32768 + 64.
    assert bench_caps(20.0, 32768, 1024, 1) == (64, 32832)


@given(
    st.floats(1, 10_000),
    st.sampled_from([128, 1000, 2048, 8192]),
    st.sampled_from([128, 1000, 8192]),
    st.sampled_from([1, 2]),
)
def test_bench_caps_cover_the_estimate_and_a_whole_prompt(requests, isl, osl, pp):
    max_bs, max_tokens = bench_caps(requests, isl, osl, pp)
    assert max_bs >= min(requests, 4096) / pp and max_bs >= 64  # rounded up, never down
    assert max_tokens >= isl + max_bs and max_tokens >= 2048


def test_bench_requests_by_hand():
    """Qwen3-30B-A3B FP4 on one B200, 128/128 (FP8 KV): 0.9 x (memory - params / 2) over
    2 x 48 layers x max(1, 4) KV heads x 128 x 1 byte x 256 tokens."""
    (row,) = [
        r
        for r in load_moe_rows(calibration_dir())[0]
        if r.label == "trtllm v1.0 qwen3-30b-a3b b200 fp4 tp1pp1 128/128"
    ]
    llm, gpu = llm_catalog()["qwen3-30b-a3b"], gpu_catalog()["b200"]
    assert (llm.layers, llm.kv_heads, llm.head_dim) == (48, 4, 128)
    cache_gib = 0.9 * (gpu.hbm_gib - llm.total_params() * 0.5 / 2**30)
    per_request_gib = 2 * 48 * 4 * 128 * 1.0 * 256 / 2**30
    requests = bench_requests(llm, gpu, Precision.FP4, FP8, 1, 1, 128, 128)  # FP4 weights
    assert requests == pytest.approx(cache_gib / per_request_gib)
    assert bench_settings(row) == bench_caps(cache_gib / per_request_gib, 128, 128, 1)


def test_offline_fixed_lengths_run_in_lockstep():
    fixed = TrafficMix.fixed(1000, 1000)
    spread = dataclasses.replace(fixed, prompt_cv=0.5)
    assert offline_lockstep(MixTokens.of(fixed), offline=True)
    assert not offline_lockstep(MixTokens.of(fixed), offline=False)  # arrivals at random
    assert not offline_lockstep(MixTokens.of(spread), offline=True)  # lengths differ


def test_lockstep_groups_carry_an_even_share_by_hand():
    """Qwen3-235B-A22B DEP2 on H200, 1000/1000: in lockstep the busiest group prefills
    1/2 of an iteration's prompt tokens and holds the mean context; at random, 2 prompts
    of 1,000 tokens put 1.5 on the busiest group (E[max] of 2 on 2 bins), share 0.75."""
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["qwen3-235b-a22b"]
    steps = step_model(gpu, llm, FP8, FP8, 1, 1, efficiency_for(gpu, FP8), ep=2, dp=2)
    mix = MixTokens.of(TrafficMix.fixed(1000, 1000))
    lockstep = BatchModel(steps, mix, Role.UNIFIED, 0.0, 0.0, lockstep=True).steps
    random = BatchModel(steps, mix, Role.UNIFIED, 0.0, 0.0).steps
    assert lockstep.prefill_group_share(2000.0) == 0.5
    assert lockstep.decode_group_share(400.0) == 0.5
    assert random.prefill_group_share(2000.0) == pytest.approx(0.75)
    assert random.decode_group_share(400.0) > 0.5  # the busiest group's longer contexts


def test_deepseek_rows_read_as_the_tool_sizes_them():
    """DeepSeek-R1 FP8 at TP8 on H200, 1024/1024: its options set an FP8 KV cache on
    Hopper too, and its config names no head_dim, so the tool sizes a token as
    2 x 61 layers x max(8, 128) KV heads x (7168 / 128 = 56) x 1 byte."""
    row = MoeRow(
        "trtllm post-v1.0 deepseek-r1 h200 fp8 tp8pp1 1024/1024",
        "deepseek-r1",
        "h200",
        FP8,
        8,
        1,
        1,
        1,
        TrafficMix.fixed(1024, 1024),
        1.0,
    )
    assert row.kv_precision is FP8
    llm, gpu = llm_catalog()["deepseek-r1"], gpu_catalog()["h200"]
    cache_gib = 0.9 * (8 * gpu.hbm_gib - llm.total_params() * 1.0 / 2**30)
    per_request_gib = 2 * 61 * 128 * 56 * 1.0 * 2048 / 2**30
    requests = cache_gib / per_request_gib
    assert bench_requests(llm, gpu, FP8, row.kv_precision, 8, 1, 1024, 1024) == pytest.approx(
        requests
    )
    assert bench_settings(row) == bench_caps(requests, 1024, 1024, 1)


def test_tp_columns_of_attention_dp_models_read_as_attention_dp():
    """Since v1.0 the runs of Llama 4 Maverick and Qwen3 MoE enable attention DP: a TP8
    column is 8 attention groups with the experts split 8 ways (ep = 1), its label and
    family as published; v0.21's Maverick and v1.0's Scout (no attention DP) stay TP."""
    by_label = {r.label: r for r in load_moe_rows(calibration_dir())[0]}
    adp = by_label["trtllm v1.0 llama-4-maverick b200 fp4 tp8pp1 1000/1000"]
    assert (adp.tp, adp.dp, adp.ep, adp.family) == (1, 8, 1, "TP")
    assert (
        bench_settings(adp)[0]
        == bench_caps(
            bench_requests(
                llm_catalog()[adp.model],
                gpu_catalog()["b200"],
                Precision.FP4,
                FP8,
                8,
                1,
                1000,
                1000,
            ),
            1000,
            1000,
            1,
        )[0]
    )
    old = by_label["trtllm v0.21 llama-4-maverick h200 fp8 tp8pp1 1024/2048"]
    scout = by_label["trtllm v1.0 llama-4-scout h200 fp8 tp4pp1 1000/1000"]
    assert (old.tp, old.dp, scout.tp, scout.dp) == (8, 1, 4, 1)


def test_dequantising_kernels_take_their_own_half_rows():
    """GPT-OSS's MXFP4 experts on Hopper are dequantised in the kernel (W4A16), so their
    grouped GEMM takes `dequant_gemm_half_tokens` (32 here); FP8 experts on Hopper and
    MXFP4 experts on Blackwell (FP4 tensor cores) take `gemm_half_tokens` (64)."""
    constants = {"gemm_half_tokens": 64.0, "dequant_gemm_half_tokens": 32.0}
    fp4 = Precision.FP4

    def half(model: str, gpu_name: str, precision: Precision) -> float:
        gpu = gpu_catalog()[gpu_name]
        with trial_constants({"hopper": constants, "blackwell": constants}):
            steps = step_model(
                gpu, llm_catalog()[model], precision, FP8, 1, 1, efficiency_for(gpu, precision)
            )
        return steps.experts_layout.gemm_half_tokens

    assert half("gpt-oss-120b", "h200", FP8) == 32.0
    assert half("llama-4-scout", "h200", FP8) == 64.0
    assert half("gpt-oss-120b", "b200", fp4) == 64.0
    with trial_constants({"hopper": {"gemm_half_tokens": 64.0}}):  # none given: the same
        gpu = gpu_catalog()["h200"]
        steps = step_model(
            gpu, llm_catalog()["gpt-oss-120b"], FP8, FP8, 1, 1, efficiency_for(gpu, FP8)
        )
    assert steps.experts_layout.gemm_half_tokens == 64.0


def test_worst_rows_lead_with_the_largest_error():
    rows = load_moe_rows(calibration_dir())[0][:6]
    lines = worst_rows(rows, 3)
    assert len(lines) == 6  # two lines a row
    errors = [abs(float(line.split("%")[0])) for line in lines[::2]]
    assert errors == sorted(errors, reverse=True)
    assert all(abs(predict_moe(r) / r.measured - 1) * 100 <= errors[0] + 0.05 for r in rows)


def test_a_run_never_holds_more_sequences_than_its_requests():
    """GPT-OSS-120B DEP2 on B200, 1024/1024 (after v1.0): the run has 3,000 requests, so
    a rank holds at most ceil(3000 / 2) = 1,500 sequences whatever the KV estimate; the
    v1.0 rows (another table of runs) keep the tool's own cap."""
    by_label = {r.label: r for r in load_moe_rows(calibration_dir())[0]}
    row = by_label["trtllm post-v1.0 gpt-oss-120b b200 fp4 tp1pp1dp2ep2 1024/1024"]
    llm, gpu = llm_catalog()[row.model], gpu_catalog()["b200"]
    tool = bench_caps(
        bench_requests(llm, gpu, Precision.FP4, row.kv_precision, 2, 1, 1024, 1024), 1024, 1024, 1
    )
    assert tool[0] > 1500
    assert bench_settings(row) == (1500, tool[1])


def test_dequantising_kernels_run_at_their_own_rate():
    """`dequant_gemm_rate` (0.6: Marlin's large-batch rate over the FP16 GEMM's on an A100,
    calibration/moe_sources.py) slows only the grouped GEMM of 4-bit experts on a GPU without
    FP4 tensor cores. GPT-OSS on an A100 at BF16: peak(BF16) / peak(BF16) = 1, over 0.6 is
    1 / 0.6 = 1.667 a routed FLOP; at FP8 on an H100, peak(FP8) / peak(BF16) = 2 (the W4A16
    GEMM runs at BF16), over 0.6 is 3.333; Qwen3-235B's BF16 experts on the A100 and GPT-OSS's
    MXFP4 experts on a B200 (FP4 tensor cores) keep 1 and 1."""
    bf16 = Precision.BF16

    def slowdown(model: str, gpu_name: str, precision: Precision, rate: float) -> float:
        gpu = gpu_catalog()[gpu_name]
        rates = {"dequant_gemm_rate": rate}
        with trial_constants({"ampere": rates, "hopper": rates, "blackwell": rates}):
            steps = step_model(
                gpu, llm_catalog()[model], precision, bf16, 1, 1, efficiency_for(gpu, precision)
            )
        layout, llm = steps.experts_layout, llm_catalog()[model]
        rows = 1e6 * llm.experts_per_token / llm.experts  # every expert touched: T k / E
        assert layout.routed_cost(1e6) == pytest.approx(
            layout.compute_slowdown * (rows + layout.gemm_half_tokens) / rows
        )  # the saturating curve n / (n + n_half) on top of the rate
        return layout.compute_slowdown

    assert slowdown("gpt-oss-20b", "a100-80gb-sxm", bf16, 0.6) == pytest.approx(1 / 0.6)
    assert slowdown("gpt-oss-20b", "a100-80gb-sxm", bf16, 1.0) == 1.0
    assert slowdown("gpt-oss-120b", "h100-sxm", FP8, 0.6) == pytest.approx(2 / 0.6)
    assert slowdown("qwen3-235b-a22b", "a100-80gb-sxm", bf16, 0.6) == 1.0
    assert slowdown("gpt-oss-120b", "b200", Precision.FP4, 0.6) == 1.0


def test_the_catalog_reads_marlins_rate_on_ampere_only():
    """The catalog's sourced constant (calibration/moe_sources.py) reaches the A100 and no
    generation a fitted row runs on."""
    assert moe_efficiency_for("a100-80gb-sxm").dequant_gemm_rate == 0.6
    for name in ("h100-sxm", "h200", "b200", "mi300x"):
        assert moe_efficiency_for(name).dequant_gemm_rate == 1.0
