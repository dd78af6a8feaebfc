"""One result file of each engine benchmark tool that `fleetplan calibrate` reads, as the
tool writes it: the base that the reader's tests, the hostile-input tests and the input
fuzz (tests/bench/fuzz_targets.py) change one figure of. Copy before changing
(`{**GENAI_PERF, key: value}`): the dicts are shared.

Per request in `VLLM_BENCH_SERVE`: 64,000 / 100 = 640 prompt tokens, 12,800 / 100 = 128
output tokens, at 32 concurrent requests."""

VLLM_BENCH_SERVE = {
    "max_concurrency": 32,
    "completed": 100,
    "total_input_tokens": 64_000,
    "total_output_tokens": 12_800,
    "output_throughput": 2_100.0,
    "mean_ttft_ms": 95.0,
    "mean_tpot_ms": 13.0,
}
"""`vllm bench serve --save-result`'s JSON (the keys the reader reads)."""

GENAI_PERF = {
    "time_to_first_token": {"unit": "ms", "avg": 85.0},
    "inter_token_latency": {"unit": "ms", "avg": 12.5},
    "output_token_throughput": {"unit": "tokens/sec", "avg": 900.0},
    "input_sequence_length": {"avg": 500},
    "output_sequence_length": {"avg": 100},
    "request_count": {"avg": 80},
    "input_config": {"perf_analyzer": {"stimulus": {"concurrency": 8}}},
}
"""genai-perf's profile_export_genai_perf.json: each metric a record of a unit and an avg,
the concurrency in its input_config."""
