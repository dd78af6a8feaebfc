"""The routed experts' kernels between their GEMMs (permute, gated activation, combine):
their bytes by hand, where the first GEMM fuses the activation, and their time adding to
the grouped GEMM's instead of hiding under its compute."""

import pytest

from models.physics.catalog import gpu, llm
from models.physics.efficiency import Efficiency
from models.physics.moe import expert_kernel_row_bytes, expert_row_bytes, fuses_gated_activation
from models.physics.precision import Precision
from models.physics.step_time import step_model

BF16, FP8 = Precision.BF16, Precision.FP8
EFF = Efficiency(
    prefill_flops_fraction=0.5,
    decode_flops_fraction=0.5,
    hbm_fraction=0.8,
    scaleup_fraction=0.7,
    scaleout_fraction=0.8,
    allreduce_latency_s=0.0,
    pp_hop_latency_s=0.0,
    step_overhead_s=0.0,
)


def test_only_a_16_bit_grouped_gemm_without_fp8_tensor_cores_fuses_the_activation():
    """TensorRT-LLM's `isFusedGatedActivation`: not FP8 and not the TMA grouped GEMM, so
    A100 BF16 fuses it; H100 (TMA kernel) does not, at BF16 or FP8."""
    assert fuses_gated_activation(gpu("a100-80gb-sxm"), BF16)
    assert not fuses_gated_activation(gpu("h100-sxm"), BF16)
    assert not fuses_gated_activation(gpu("h100-sxm"), FP8)


def test_mixtral_row_bytes_by_hand():
    """Mixtral: hidden 4,096, inter 14,336, k = 2.
    FP8 rows (a = 1), unfused: GEMMs 4,096 x (1 + 2) + 14,336 x (1 + 4) = 83,968;
    kernels: permute 4,096 x 3 + combine 4,096 x (2 + 2/2) + activation 14,336 x 5 = 96,256.
    BF16 rows (a = 2), fused: GEMMs 4,096 x 4 + 14,336 x (2 + 2) = 73,728; kernels
    4,096 x (4 + 2 + 1) = 28,672 (no activation kernel)."""
    mixtral = llm("mixtral-8x7b")
    assert expert_row_bytes(mixtral, FP8, 1, fused_activation=False) == 83_968
    assert expert_kernel_row_bytes(mixtral, FP8, 1, fused_activation=False) == 96_256
    assert expert_row_bytes(mixtral, BF16, 1, fused_activation=True) == 73_728
    assert expert_kernel_row_bytes(mixtral, BF16, 1, fused_activation=True) == 28_672


def test_the_kernels_between_the_gemms_add_to_a_compute_bound_prefill():
    """An 8,192-token Mixtral FP8 prefill chunk on one H100 is compute-bound in its grouped
    GEMM, so the rows the GEMMs stream hide under their FLOPs, but the permute, activation
    and combine kernels do not: 8,192 tokens x 2 rows x 96,256 bytes x 32 layers over
    3.35 TB/s x 0.8 add 18.8 ms to the pass."""
    steps = step_model(gpu("h100-sxm"), llm("mixtral-8x7b"), FP8, FP8, 1, 1, EFF)
    parts = steps.pass_parts(0.0, 0.0, 8192, 8192 * 4096)
    assert parts.expert_compute_s > parts.expert_read_s
    kernels_s = 8192 * 2 * 96_256 * 32 / (3.35e12 * 0.8)
    assert kernels_s == pytest.approx(18.83e-3, rel=1e-3)
    assert parts.expert_kernels_s == pytest.approx(kernels_s)
    without = parts.total_s - parts.expert_kernels_s
    assert parts.total_s == pytest.approx(without + kernels_s)
    assert parts.memory_s >= kernels_s


def test_the_mxfp4_triton_kernel_gathers_and_activates_inside_its_matmuls():
    """GPT-OSS-120B (hidden 2,880, inter 2,880, k = 4) on H100 runs its MXFP4 experts
    through the dequantising Triton kernel: BF16 rows (a = 2), gather and SwiGLU inside
    the first matmul, so its GEMMs stream 2,880 x (2 + 2) + 2,880 x 2 + 2,880 x 2 = 23,040
    bytes a row a layer and only the combine runs beside them, 2,880 x (2 + 2/4) = 7,200.
    On B200 (FP4 tensor cores) the grouped GEMM takes FP4-dispatched rows (a = 1) and runs
    permute, activation and combine: 2,880 x (3 + 5 + 2.5) = 30,240."""
    oss = llm("gpt-oss-120b")
    h100_steps = step_model(gpu("h100-sxm"), oss, FP8, FP8, 1, 1, EFF)
    layers = oss.moe_layers
    assert h100_steps.experts_layout.row_bytes == 23_040 * layers
    assert h100_steps.experts_layout.kernel_row_bytes == 7_200 * layers
    b200_steps = step_model(gpu("b200"), oss, Precision.FP4, FP8, 1, 1, EFF)
    assert b200_steps.experts_layout.kernel_row_bytes == 30_240 * layers
    assert expert_row_bytes(oss, Precision.FP4, 1, fused_activation=False) == 23_040
