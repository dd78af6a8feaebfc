"""The engine settings trtllm-bench chooses for a throughput run that sets none: its
max_batch_size and max_num_tokens, from its own estimate of the requests the KV cache
holds. The published TensorRT-LLM MoE rows (`calibration.moe_rows`) ran at them.

Sources (NVIDIA/TensorRT-LLM): `tensorrt_llm/bench/build/tuning.py` (`calc_engine_setting`,
`finetune_setting`) and `tensorrt_llm/bench/build/dataclasses.py` (`ModelConfig`: head_dim,
else hidden / heads) at commit 04cba882084a25665e7f80f5bda71b35b9790b6f;
`tensorrt_llm/bench/benchmark/utils/general.py` (`get_settings`: chunked prefill off
unless asked, so max_num_tokens is at least the longest prompt + max_batch_size) at
0171265edef1c67ef334e0db2427148161aa2815; `throughput.py` (`--kv_cache_free_gpu_mem_fraction`
default 0.90).
"""

import math

from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.precision import Precision

RUN_REQUESTS = {
    (1024, 1024): 3000,
    (8192, 1024): 1500,
    (1024, 8192): 1500,
    (32768, 1024): 1000,
    (1024, 32768): 1000,
}
"""Requests in one published run (`--num-requests` of the dataset) by (ISL, OSL), from the
perf overview's table for the runs after v1.0 (NVIDIA/TensorRT-LLM
docs/source/developer-guide/perf-overview.md, "Preparing a Dataset"): no more sequences
than these are ever in flight, spread evenly over the attention-DP ranks."""
BENCH_KV_FRACTION = 0.90
"""trtllm-bench's `--kv_cache_free_gpu_mem_fraction` default."""
BENCH_BYTES_PER_WEIGHT = {Precision.FP4: 0.5, Precision.FP8: 1.0, Precision.BF16: 2.0}
"""Bytes per parameter the tool's sizing assumes (`tuning.py` BYTES_PER_ELEM: NVFP4 0.5,
FP8 1, unquantised 2), for every parameter alike."""


def bench_requests(
    llm: LlmSpec,
    gpu: GpuSpec,
    weight_precision: Precision,
    kv_precision: Precision,
    tp: int,
    pp: int,
    isl: float,
    osl: float,
) -> float:
    """Requests the tool estimates the KV cache holds:

        0.90 (tp x pp x memory - params x bytes) / (2 L max(tp, kv heads) d a (ISL + OSL))

    memory in GiB, every layer counted in full, a the KV bytes per element, d the
    config's head_dim, else hidden / heads (an MLA config such as DeepSeek-V3's names no
    head_dim: 7168 / 128 = 56; its latent cache is not what the tool sizes)."""
    kv_bytes = 1.0 if kv_precision is not Precision.BF16 else 2.0
    head = llm.hidden_size // llm.attention_heads if llm.attention == "mla" else llm.head_dim
    per_token_gib = 2 * llm.layers * max(tp, llm.kv_heads) * head * kv_bytes / 2**30
    weights_gib = llm.total_params() * BENCH_BYTES_PER_WEIGHT[weight_precision] / 2**30
    cache_gib = (gpu.hbm_gib * tp * pp - weights_gib) * BENCH_KV_FRACTION
    return cache_gib / (per_token_gib * (isl + osl))


def bench_caps(requests: float, isl: float, osl: float, pp: int) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) the tool sets from its request estimate:

        raw_bs  = min(requests, 4096) / pp,   raw_tok = min(raw_bs (1 + ISL / OSL), 32768)
        max_bs  = max(64, 32 ceil(raw_bs / 32)) below 256, 128 ceil(raw_bs / 128) below
                  1024, else 256 ceil(raw_bs / 256)
        max_tok = max(2048, 256 ceil(raw_tok / 256)) below 4096, 512 ceil(raw_tok / 512)
                  below 8192, else 1024 ceil(raw_tok / 1024)

    and, chunked prefill being off, max_num_tokens = max(max_tok, ISL + max_bs)."""
    raw_bs = min(requests, 4096) / pp
    raw_tokens = min(raw_bs * (1 + isl / osl), 32768)
    if raw_bs < 256:
        max_bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        max_bs = 128 * math.ceil(raw_bs / 128)
    else:
        max_bs = 256 * math.ceil(raw_bs / 256)
    if raw_tokens < 4096:
        max_tokens = max(2048, 256 * math.ceil(raw_tokens / 256))
    elif raw_tokens < 8192:
        max_tokens = 512 * math.ceil(raw_tokens / 512)
    else:
        max_tokens = 1024 * math.ceil(raw_tokens / 1024)
    return max_bs, max(max_tokens, int(isl) + max_bs)
