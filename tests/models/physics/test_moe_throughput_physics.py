"""Issue 34's MoE throughput physics by hand: the grouped-GEMM curve, W4A16 experts on
Hopper, the per-rank token cap on the busiest DEP group, tokens per expert on the busiest
rank and the EP8 all-to-all over NVLink."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import Efficiency, efficiency_for
from models.physics.moe import (
    alltoall_copies,
    alltoall_link_s_per_byte,
    expert_compute_precision,
    expert_layout,
    grouped_gemm_efficiency,
)
from models.physics.precision import Precision
from models.physics.step_time import step_model

FP8, FP4, BF16 = Precision.FP8, Precision.FP4, Precision.BF16


def test_grouped_gemm_efficiency_by_hand():
    # n / (n + n_half): 64 / 128 = 0.5, 192 / 256 = 0.75; no loss at n_half = 0.
    assert grouped_gemm_efficiency(64, 64) == 0.5
    assert grouped_gemm_efficiency(192, 64) == 0.75
    assert grouped_gemm_efficiency(3, 0.0) == 1.0
    assert grouped_gemm_efficiency(0, 64) == 0.0


@given(st.floats(0.1, 1e5), st.floats(0.1, 1e5), st.floats(1, 512))
def test_grouped_gemm_efficiency_saturates(n, more, half):
    low, high = grouped_gemm_efficiency(n, half), grouped_gemm_efficiency(n + more, half)
    assert 0 < low <= high < 1


def test_w4a16_experts_on_hopper_by_hand():
    """GPT-OSS stores its experts MXFP4: Hopper has no FP4 tensor cores, so they run at
    BF16, half the FP8 peak the other layers of an FP8 row run at; Blackwell runs FP4."""
    h200, b200 = gpu_catalog()["h200"], gpu_catalog()["b200"]
    oss, qwen = llm_catalog()["gpt-oss-120b"], llm_catalog()["qwen3-30b-a3b"]
    assert expert_compute_precision(h200, oss, FP8) is BF16
    assert expert_compute_precision(b200, oss, FP4) is FP4
    assert expert_compute_precision(h200, qwen, FP8) is FP8
    efficiency = efficiency_for(h200, FP8)
    layout = expert_layout(h200, oss, FP8, 1, 1, 1, oss.moe_layers, efficiency)
    assert layout.compute_slowdown == h200.peak_flops(FP8) / h200.peak_flops(BF16)
    assert layout.compute_slowdown == pytest.approx(2.0, rel=0.01)
    assert layout.routed_cost(1000) == layout.compute_slowdown  # n_half = 0: no GEMM loss


def test_the_layout_divides_a_dequantising_gemm_by_its_rate_by_hand():
    """`expert_layout(..., dequant_rate=r)` costs the routed FLOPs of a GEMM that dequantises
    its experts in the kernel 1 / r more, and no other's. GPT-OSS-20B's MXFP4 experts on an
    A100 (no FP4 tensor cores: Marlin, W4A16) beside BF16 layers: peak(BF16) / peak(BF16) =
    312 / 312 = 1, over r = 0.6: 1 / 0.6 = 1.667 a routed FLOP; on an H100 beside FP8 layers:
    1,978 / 989 = 2, over 0.6: 3.333. Not dequantised, the rate is ignored: Qwen3-30B's BF16
    experts on the A100 (312 / 312 = 1), its FP8 experts on the H100 (1,978 / 1,978 = 1),
    GPT-OSS's MXFP4 experts on a B200, which has FP4 tensor cores (9,000 / 9,000 = 1)."""

    def slowdown(gpu_name: str, model: str, precision: Precision, rate: float) -> float:
        gpu, llm = gpu_catalog()[gpu_name], llm_catalog()[model]
        efficiency = efficiency_for(gpu, precision)
        layout = expert_layout(
            gpu, llm, precision, 1, 1, 1, llm.moe_layers, efficiency, dequant_rate=rate
        )
        assert layout.routed_cost(1000) == layout.compute_slowdown  # n_half = 0: the rate only
        return layout.compute_slowdown

    assert slowdown("a100-80gb-sxm", "gpt-oss-20b", BF16, 0.6) == pytest.approx(1 / 0.6)
    assert slowdown("a100-80gb-sxm", "gpt-oss-20b", BF16, 1.0) == 1.0
    assert slowdown("h100-sxm", "gpt-oss-20b", FP8, 0.6) == pytest.approx(2 / 0.6)
    assert slowdown("a100-80gb-sxm", "qwen3-30b-a3b", BF16, 0.6) == 1.0
    assert slowdown("h100-sxm", "qwen3-30b-a3b", FP8, 0.6) == 1.0
    assert slowdown("b200", "gpt-oss-20b", FP4, 0.6) == 1.0


def test_busiest_group_prefill_under_the_per_rank_token_cap_by_hand():
    """Qwen3-235B DEP4 on H200 with a per-group cap c = 8,192 tokens: prompts of 32,768
    ride as chunks of min(P, c) = 8,192. Q = 16,384 prompt tokens are 2 chunks on 4 groups:
    E[max] = 1 + P(same group) = 1.25 chunks, share 1.25 / 2 = 0.625, but a group holds at
    most c / Q = 0.5: the busiest share is 0.5. Q = 8,192 of 1,000-token prompts: 8.192
    prompts, whatever their spread, a group takes at most c / Q = 1 (no cap); Q = 32,768:
    the cap c / Q = 0.25 = 1/dp, the even share."""
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["qwen3-235b-a22b"]
    efficiency = efficiency_for(gpu, FP8).model_copy(update={"prefill_chunk_tokens": 8192})
    steps = step_model(gpu, llm, FP8, FP8, 1, 1, efficiency, ep=4, dp=4)
    assert steps.chunk_tokens == 4 * 8192
    long = steps.with_group_loads(32_768.0)
    assert long.prefill_group_share(16_384) == pytest.approx(0.5)
    short = steps.with_group_loads(1000.0)
    assert short.prefill_group_share(32_768) == pytest.approx(0.25)
    # Without the cap (c = 131,072 a group): the multinomial share of 2 prompts, 0.625.
    wide = efficiency.model_copy(update={"prefill_chunk_tokens": 131_072})
    roomy = step_model(gpu, llm, FP8, FP8, 1, 1, wide, ep=4, dp=4).with_group_loads(32_768.0)
    assert roomy.prefill_group_share(65_536) == pytest.approx(0.625)


def test_tokens_per_expert_on_the_busiest_rank_by_hand():
    """Mixtral-8x7B (E = 8, k = 2) at EP2, 16 tokens: 32 choices on 2 ranks, the busiest
    rank holds E[max(X, 32 - X)], X ~ Binomial(32, 1/2): 16 + E|X - 16| = 16 + 16 x
    C(32, 16) / 2^32 (de Moivre's mean deviation) = 18.2392; imbalance 18.2392 / 16;
    its 18.2392 rows fall on the 4 (1 - (3/4)^18.2392) = 3.9790 experts it touches: 4.5839
    rows each."""
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["mixtral-8x7b"]
    layout = expert_layout(gpu, llm, FP8, 1, 2, 2, llm.moe_layers, efficiency_for(gpu, FP8))
    busiest = 16 + 16 * math.comb(32, 16) / 2**32
    assert busiest == pytest.approx(18.2392, abs=1e-4)
    assert layout.imbalance(16) == pytest.approx(busiest / 16)
    touched = 4 * (1 - 0.75**busiest)
    assert touched == pytest.approx(3.9790, abs=1e-4)
    assert layout.tokens_per_expert(16) == pytest.approx(busiest / touched)
    assert busiest / touched == pytest.approx(4.5839, abs=1e-4)


def test_ep8_gather_on_nvlink_by_hand():
    """Qwen3-235B (k = 8, hidden 4,096, 94 MoE layers) DEP8 on one 8-GPU H200 server
    (450 GB/s NVLink at a 0.5 fraction, 20 us a collective): the engines all-gather every
    token to the 8 GPUs and reduce-scatter back, FP8 dispatch + BF16 combine = 3 bytes x
    4,096 each: 98,304 bytes a layer, 9.2406 MB over 94. A GPU sends 1/8 of the tokens,
    7/8 of it leaving over 225 GB/s: T x 9.2406e6 / 8 x 7/8 / 225e9 s, plus 2 x 94 x
    20 us. At T = 4,096 the routing imbalance f multiplies the volume: 188 x 20 us +
    4,096 f x 4.4920 us. An all-to-all (DEP16 over two servers) sends a token to
    16 (1 - (15/16)^8) = 6.4525 ranks instead of 16."""
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["qwen3-235b-a22b"]
    efficiency = Efficiency(scaleup_fraction=0.5)
    layout = expert_layout(gpu, llm, FP8, 1, 8, 8, 94, efficiency, 20e-6)
    per_token_s = 8 * 4096 * 3 * 94 / 8 * (7 / 8) / 225e9
    assert per_token_s == pytest.approx(4.4920e-6, rel=1e-4)
    assert layout.alltoall_s_per_token == pytest.approx(per_token_s)
    f = layout.imbalance(4096)
    assert layout.alltoall_s(4096) == pytest.approx(188 * 20e-6 + 4096 * f * per_token_s)
    wide = expert_layout(gpu, llm, FP8, 1, 16, 16, 94, efficiency, 20e-6)
    copies = 16 * (1 - (15 / 16) ** 8)
    assert copies == pytest.approx(6.4525, abs=1e-4)
    bytes_per_token = copies * 4096 * 3 * 94
    assert wide.alltoall_s_per_token * 16 == pytest.approx(
        bytes_per_token * alltoall_link_s_per_byte(gpu, efficiency, 16)
    )


@given(st.integers(1, 8), st.sampled_from([1, 2, 4, 8, 16, 32, 64]))
def test_alltoall_copies_are_bounded_and_grow_with_ep(k, ep):
    """More EP never makes the bytes a token sends negative: 0 <= copies <= min(k, ep),
    and doubling EP never sends fewer copies."""
    copies = alltoall_copies(k, ep, 1)
    assert 0 <= copies <= min(k, ep) + 1e-9
    assert alltoall_copies(k, 2 * ep, 1) >= copies - 1e-12
