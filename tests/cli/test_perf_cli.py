"""`fleetplan perf`: numbers and a limit for every catalog model on every catalog GPU that
fits, exit 3 with the memory message when a configuration does not fit, the JSON keys, the
frontier."""

import json

import pytest

from cli.exit_codes import ExitCode
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.memory import default_kv_precision
from models.physics.precision import Precision
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, Limit, ReplicaCapacity, ReplicaConfig, TrafficMix

JSON_KEYS = {
    "weight_bytes_per_gpu",
    "kv_bytes_per_token",
    "kv_capacity_tokens",
    "max_batch",
    "prefill_ms",
    "decode_step_ms",
    "output_tokens_per_s",
    "output_tokens_per_s_per_gpu",
    "requests_per_s",
    "limit",
}
BASE = ["perf", "--input-tokens", "1500", "--output-tokens", "400"]


def _smallest_fitting_layout(
    model: str, gpu: str
) -> tuple[Precision, int, int, ReplicaCapacity] | None:
    """The first (precision, TP, PP) on up to four nodes that fits a 1500/400 request,
    with the physics of that layout (no latency target, as `perf` without one)."""
    gpu_spec, llm_spec = gpu_catalog()[gpu], llm_catalog()[model]
    mix = TrafficMix.fixed(1500, 400)
    for pp in (1, 2, 4):
        for precision in (Precision.BF16, Precision.FP8, Precision.FP4):
            for tp in (1, 2, 4, 8):
                config = ReplicaConfig(
                    gpu_spec, llm_spec, precision, default_kv_precision(precision), tp, pp
                )
                efficiency = efficiency_for(gpu_spec, precision)
                capacity = replica_capacity(config, mix, LatencyTargets(), efficiency)
                if capacity.fits:
                    return precision, tp, pp, capacity
    return None


@pytest.mark.parametrize("model", sorted(llm_catalog()))
@pytest.mark.parametrize("gpu", sorted(gpu_catalog()))
def test_perf_gives_numbers_and_a_limit_for_every_model_on_every_gpu(run_cli, model, gpu):
    layout = _smallest_fitting_layout(model, gpu)
    if layout is None:
        pytest.skip(f"{model} fits on no layout of up to 4 x 8 {gpu}")
    precision, tp, pp, physics = layout
    args = [*BASE, "--model", model, "--gpu", gpu, "--precision", precision.value]
    result = run_cli(*args, "--tp", tp, "--pp", pp, "--json")
    assert result.exit_code == ExitCode.OK, result.stderr
    data = json.loads(result.stdout)
    assert data.keys() >= JSON_KEYS
    # The limit the physics names for this layout, and no latency limit without a target.
    assert data["limit"] == physics.limit.value
    assert physics.limit not in (Limit.TTFT_QUEUEING, Limit.TPOT)
    assert data["requests_per_s"] == pytest.approx(physics.requests_per_s)
    for key in JSON_KEYS - {"limit", "max_batch"}:
        assert data[key] > 0, key
    assert data["max_batch"] >= 1
    assert data["output_tokens_per_s_per_gpu"] == pytest.approx(
        data["output_tokens_per_s"] / (tp * pp)
    )
    if model in TABLE_MODEL_ON_EVERY_GPU or gpu in TABLE_GPU_FOR_EVERY_MODEL:
        table = run_cli(*args, "--tp", tp, "--pp", pp)
        assert table.exit_code == ExitCode.OK
        assert "limit" in table.stdout


TABLE_MODEL_ON_EVERY_GPU = ("llama-3.1-8b",)
TABLE_GPU_FOR_EVERY_MODEL = ("h200",)
"""The cases whose terminal table is drawn as well: a model that fits on every GPU, on
each, and every model on a GPU of 141 GiB (the table's code is the same for each pair;
the numbers it prints are the JSON's, checked for every pair; a table for all 266 pairs
was half the module's CPU)."""


def test_offline_maximum_throughput_without_slo_flags(run_cli):
    result = run_cli(
        *BASE, "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "-p", "fp8", "--tp", "4", "--json"
    )
    data = json.loads(result.stdout)
    assert result.exit_code == ExitCode.OK
    assert data["ttft_p99_target_ms"] is None and data["tpot_p99_target_ms"] is None
    assert data["batch"] > 100  # as large as memory, the engine and the token budget allow


def test_slo_flags_give_capacity_at_the_slo(run_cli):
    args = [*BASE, "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "-p", "fp8", "--tp", "4"]
    offline = json.loads(run_cli(*args, "--json").stdout)
    result = run_cli(*args, "--ttft-p99-ms", "800", "--tpot-p99-ms", "50", "--json")
    assert result.exit_code == ExitCode.OK
    data = json.loads(result.stdout)
    assert 0 < data["requests_per_s"] < offline["requests_per_s"]
    assert data["tpot_p99_ms"] <= 50 + 1e-6 and data["ttft_p99_ms"] <= 800 + 1e-6
    assert data["limit"] in {"tpot", "ttft_queueing", "interconnect"}


def test_does_not_fit_exits_3_with_the_memory_message(run_cli):
    result = run_cli(*BASE, "--model", "llama-3.1-405b", "--gpu", "h100-sxm", "--tp", "1")
    assert result.exit_code == ExitCode.INFEASIBLE
    assert "does not fit" in result.stderr
    assert "GiB of weights" in result.stderr and "but has 80.0 GiB" in result.stderr
    assert "Use TP>=" in result.stderr
    as_json = run_cli(*BASE, "--model", "llama-3.1-405b", "--gpu", "h100-sxm", "--json")
    assert as_json.exit_code == ExitCode.INFEASIBLE
    assert json.loads(as_json.stdout)["fits"] is False


def test_unreachable_slo_exits_3_with_the_best_value(run_cli):
    result = run_cli(
        *BASE, "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "-p", "fp8", "--tp", "4",
        "--tpot-p99-ms", "1",
    )  # fmt: skip
    assert result.exit_code == ExitCode.INFEASIBLE
    assert "cannot meet the SLO" in result.stderr and "TPOT" in result.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--model", "no-such-model", "--gpu", "h100-sxm"], "unknown model"),
        (["--model", "llama-3.3-70b", "--gpu", "no-such-gpu"], "unknown GPU"),
        # the one catalog name that starts with what was typed
        (["--model", "llama-3.3-70b", "--gpu", "h100"], "did you mean 'h100-sxm'?"),
        (["--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--tp", "3"], "does not divide"),
        (  # one GPU per stage, in the singular
            ["--model", "qwen3-30b-a3b", "--gpu", "h100-sxm", "--ep", "2"],
            "EP=2 does not divide the tp x dp = 1 x 1 = 1 GPU of a stage",
        ),
        (["--model", "llama-3.3-70b", "--gpu", "h100-sxm", "-p", "fp4"], "no fp4"),
        (
            ["--model", "llama-3.3-70b", "--gpu", "h100-sxm", "--tpot-p99-ms", "-5"],
            "--tpot-p99-ms: must be greater than 0 ms, got -5",
        ),
    ],
)
def test_bad_input_exits_2(run_cli, flags, message):
    result = run_cli(*BASE, *flags)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert message in result.stderr


def test_sweep_prints_the_frontier(run_cli):
    args = [*BASE, "--model", "llama-3.3-70b", "--gpu", "h100-sxm", "-p", "fp8", "--tp", "4"]
    result = run_cli(*args, "--ttft-p99-ms", "800", "--tpot-p99-ms", "50", "--sweep", "--json")
    assert result.exit_code == ExitCode.OK
    frontier = json.loads(result.stdout)["frontier"]
    assert len(frontier) >= 5
    per_user = [point["tokens_per_s_per_user"] for point in frontier]
    per_gpu = [point["output_tokens_per_s_per_gpu"] for point in frontier]
    assert per_user == sorted(per_user, reverse=True)
    assert per_gpu == sorted(per_gpu)
    assert frontier[0]["meets_slo"] and not frontier[-1]["meets_slo"]
    table = run_cli(*args, "--tpot-p99-ms", "50", "--sweep")
    assert "tok/s/user" in table.stdout and "misses" in table.stdout


def test_variable_lengths_and_prefix_cache_flags(run_cli):
    result = run_cli(
        *BASE, "--model", "llama-3.1-8b", "--gpu", "l40s", "-p", "fp8",
        "--input-p99-tokens", "6000", "--output-p99-tokens", "1500",
        "--prefix-cache-hit-rate", "0.5", "--role", "decode", "--json",
    )  # fmt: skip
    assert result.exit_code == ExitCode.OK, result.stderr
    data = json.loads(result.stdout)
    assert data["role"] == "decode" and data["kv_transfer_bytes_per_request"] > 0


LONG_PROMPTS = [
    "perf",
    "--model",
    "llama-3.3-70b",
    "--gpu",
    "h200",
    "--precision",
    "fp8",
    "--tp",
    "8",
    "--input-tokens",
    "32000",
    "--output-tokens",
    "500",
    "--ttft-p99-ms",
    "2000",
    "--tpot-p99-ms",
    "60",
]


def test_pool_replicas_share_one_queue_and_lift_the_capacity_per_replica(run_cli):
    lone = json.loads(run_cli(*LONG_PROMPTS, "--json").stdout)
    pool = json.loads(run_cli(*LONG_PROMPTS, "--pool-replicas", "10", "--json").stdout)
    assert (lone["pool_replicas"], pool["pool_replicas"]) == (1, 10)
    # A 1.4 s prefill against a 2 s target: ~0.02 requests/s alone, >10x that in a pool.
    assert lone["prefill_ms"] == pytest.approx(1375, rel=0.05)
    assert lone["requests_per_s"] == pytest.approx(0.018, abs=0.002)
    assert lone["limit"] == "ttft_queueing"
    assert pool["requests_per_s"] > 10 * lone["requests_per_s"]
    assert pool["pool_requests_per_s"] == pytest.approx(10 * pool["requests_per_s"])
    table = run_cli(*LONG_PROMPTS, "--pool-replicas", "10")
    assert table.exit_code == ExitCode.OK
    assert "one of 10 replicas behind one queue" in table.stdout
    assert "requests/s of the pool" in table.stdout
    assert run_cli(*LONG_PROMPTS, "--pool-replicas", "0").exit_code == ExitCode.BAD_INPUT


def test_a_layout_the_engine_starts_as_another_is_refused_naming_the_rule(run_cli):
    """vLLM's expert parallelism is EP 1 or every GPU of the stage (TP8 x DP1: EP8), so
    `perf --tp 8 --ep 4 --engine vllm-0.11` would time a layout vLLM never runs: exit 2
    naming the flags and the rule; SGLang runs it (--ep-size 4: moe_tp 8 / 4 = 2)."""
    args = ("perf", "--model", "qwen3-235b-a22b", "--gpu", "h200", "--precision", "fp8")
    args += ("--tp", "8", "--ep", "4", "-i", "2000", "-o", "400")
    refused = run_cli(*args, "--engine", "vllm-0.11")
    assert refused.exit_code == 2, refused.stdout + refused.stderr
    assert "--tp/--ep/--dp/--engine" in refused.stderr and "EP4 would run as EP8" in refused.stderr
    assert "Traceback" not in refused.stderr
    timed = run_cli(*args, "--engine", "sglang-0.5")
    assert timed.exit_code == 0, timed.stderr
    assert "tp8xpp1 ep4" in timed.stdout
