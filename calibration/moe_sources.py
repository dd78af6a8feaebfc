"""MoE kernel constants read from published kernel benchmarks, not fitted: written into
`moe_efficiency.yaml` beside the fitted ones (`calibration.moe.render_moe_yaml`), for
generations whose kernel no TensorRT-LLM row measures.

Ampere, `dequant_gemm_rate` = 0.60. On an A100 vLLM runs GPT-OSS's MXFP4 experts with its
Marlin MoE kernel (`get_mxfp4_backend`: SM90 and SM100 take Triton or FlashInfer, other CUDA
GPUs Marlin; vllm-project/vllm `vllm/model_executor/layers/quantization/mxfp4.py`), built on
the Marlin W4A16 GEMM (vllm-project/vllm pull request #14447, 'moe wna16 marlin kernel':
"based on vllm's gptq_marlin implementation"). Marlin's own benchmark on an A100
(IST-DASLab/marlin `bench.py`, as run in vllm-project/vllm pull request #2497, comment of
2024-01-24) levels off at 141 TFLOP/s from 64 rows up, and at 1,024 to 4,000 rows runs at
0.66, 0.60 and 0.61 of PyTorch's FP16 GEMM ('speedup' at batch 1,024, 2,048 and 4,000); the
kernel's author: beyond 64 rows "it will just run the batch 64 kernel repeatedly"
(IST-DASLab/marlin issue #2). 0.60 is the ratio at 2,048 rows, vLLM's token budget per
iteration on an A100 (`max_num_batched_tokens`). TensorRT-LLM runs no GPT-OSS on Ampere,
so no fitted row moves.
"""

SOURCED_CONSTANTS: dict[str, dict[str, float]] = {"ampere": {"dequant_gemm_rate": 0.60}}
"""Per key of `moe_efficiency.yaml` (a generation), the constants the module docstring
sources."""


def sourced_yaml_lines() -> list[str]:
    """The `by_key` entries of `SOURCED_CONSTANTS`, as `render_moe_yaml` writes them."""
    lines = []
    for key, constants in SOURCED_CONSTANTS.items():
        lines.append(f"  {key}:  # from kernel benchmarks, not fitted (calibration/moe_sources.py)")
        lines += [f"    {name}: {value:g}" for name, value in constants.items()]
    return lines
