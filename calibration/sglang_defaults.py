"""The memory and token budget an SGLang server gives itself by device, at its defaults.

`python -m sglang.launch_server` without `--mem-fraction-static` or `--chunked-prefill-size`
picks both from the device's memory (sgl-project/sglang `python/sglang/srt/server_args.py`
`ServerArgs._handle_gpu_memory_settings`: the heuristic of sgl-project/sglang PR #10975,
"General heuristics for --mem-fraction-static", in the 0.5 releases): a prefill chunk
and a CUDA-graph batch by memory bucket, then

    reserved MiB = 512 (metadata) + 1.5 x max(chunk, 2048) (prefill activations)
                   + 2 x graph batch (CUDA graphs) + TP x PP / 8 x 1024,
    at least 10 GiB on a device of over 60 GiB;
    mem_fraction_static = (device MiB - reserved) / device MiB,

and weights plus KV cache get `mem_fraction_static` of the device. So the KV cache loses
the reserve: 13,440 MiB on an 80 GiB H100 at TP1 (0.164 of it; servers log
`mem_fraction_static=0.835` against the 81,559 MiB an H100 reports), 16% where
TensorRT-LLM keeps 5% and vLLM 10%. Served at those defaults, Qwen3-32B BF16 (61 GiB of
weights) on one H100 keeps ~6 GiB of KV cache, not the ~15 GiB a 5% reserve leaves.

Written into the SGLang profiles as `settings_by_gpu` (`calibration.engines`), for
every catalog GPU at TP1 (`launch_server`'s default): at TP 4 or more the server reserves
more (a CUDA-graph batch of 512 below 160 GiB, and 128 MiB per rank: 14,848 MiB on an
H100 at TP8, 0.181 of it, where the setting holds 0.164), which a per-device setting
cannot follow; the model is that much optimistic on KV memory there.
"""

MIB_PER_GIB = 1024
FLOOR_ABOVE_MIB = 60 * 1024
"""Devices of more memory than this reserve at least `FLOOR_MIB`."""
FLOOR_MIB = 10 * 1024
BUCKETS = (
    (20 * 1024, 2048, 8, 8),  # T4, RTX 4080
    (35 * 1024, 2048, 24, 80),  # A10, RTX 4090/5090
    (60 * 1024, 4096, 32, 160),  # A100 40GB, L40/L40S
    (90 * 1024, 8192, 256, 512),  # H100, A100 80GB
    (160 * 1024, 8192, 256, 512),  # H20, H200
)
"""(below MiB, chunked_prefill_size, cuda_graph_max_bs at TP < 4 and at TP >= 4): SGLang's
memory buckets; a larger device (B200, MI300X) gets `LARGE`."""
LARGE = (16384, 512, 512)


def sglang_defaults(hbm_gib: float, tp: int = 1) -> dict[str, float]:
    """SGLang's prefill chunk (tokens) and memory reserve (a fraction of the device) for a
    device of `hbm_gib` GiB at tensor parallel `tp` (module docstring)."""
    device_mib = hbm_gib * MIB_PER_GIB
    chunk, small_tp_graphs, large_tp_graphs = next(
        (bucket[1:] for bucket in BUCKETS if device_mib < bucket[0]), LARGE
    )
    graph_batch = small_tp_graphs if tp < 4 else large_tp_graphs
    reserved = 512 + 1.5 * max(chunk, 2048) + 2 * graph_batch + tp / 8 * 1024
    if device_mib > FLOOR_ABOVE_MIB:
        reserved = max(reserved, FLOOR_MIB)
    return {
        "prefill_chunk_tokens": chunk,
        "memory_reserve_fraction": round(reserved / device_mib, 4),
    }
