"""The issue-34 catalog entries through the CLI: `catalog` lists them, and `perf` runs them
on a layout that fits with physically sane numbers (memory within HBM, a decode step no
faster than streaming the weights it reads from HBM)."""

import json

import pytest

from cli.exit_codes import ExitCode
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.flop_counts import expected_experts_touched

NEW_MODELS = {"kimi-k2.5", "minimax-m2.5", "qwen3.5-397b-a17b"}
LAYOUTS = [
    ("kimi-k2.5", "h200", "fp8", 8, 2),  # 1026B at 1 byte: 16 x 141 GB
    ("qwen3.5-397b-a17b", "h200", "fp8", 8, 1),
    ("minimax-m2.5", "h200", "fp8", 4, 1),
    ("kimi-k2.5", "gb300", "fp4", 8, 1),
    ("qwen3.5-397b-a17b", "gb300", "fp8", 4, 1),
]


def test_catalog_lists_the_new_models_and_gpu(run_cli):
    models = {row["name"] for row in json.loads(run_cli("catalog", "models", "--json").stdout)}
    gpus = {row["name"] for row in json.loads(run_cli("catalog", "gpus", "--json").stdout)}
    assert models >= NEW_MODELS
    assert "gb300" in gpus
    table = run_cli("catalog", "models")
    assert table.exit_code == ExitCode.OK
    for name in NEW_MODELS:
        assert name in table.stdout


@pytest.mark.parametrize(("model", "gpu", "precision", "tp", "pp"), LAYOUTS)
def test_perf_runs_a_fitting_layout_with_sane_numbers(run_cli, model, gpu, precision, tp, pp):
    args = ["perf", "-i", "1000", "-o", "1000", "--model", model, "--gpu", gpu]
    result = run_cli(*args, "-p", precision, "--tp", tp, "--pp", pp, "--json")
    assert result.exit_code == ExitCode.OK, result.stderr
    data = json.loads(result.stdout)
    assert data["fits"] is True
    gpu_spec, llm_spec = gpu_catalog()[gpu], llm_catalog()[model]
    gpus = tp * pp
    # memory: weights plus the KV cache at capacity, averaged over the replica's GPUs
    kv_per_gpu = data["kv_capacity_tokens"] * data["kv_bytes_per_token"] / gpus
    assert data["weight_bytes_per_gpu"] + kv_per_gpu <= gpu_spec.hbm_bytes
    # the operating batch touches (almost) every routed expert, so one decode step reads
    # nearly all of each GPU's weights: the step cannot beat that read at peak bandwidth
    touched = (
        expected_experts_touched(llm_spec.experts, llm_spec.experts_per_token, data["batch"])
        / llm_spec.experts
    )
    assert touched > 0.999
    weights_read_ms = 0.999 * data["weight_bytes_per_gpu"] / gpu_spec.hbm_bytes_per_s * 1e3
    assert data["decode_step_ms"] > weights_read_ms
    # and the output rate is the batch over the step (inter-token time) at most
    assert data["output_tokens_per_s"] <= data["batch"] / (data["decode_step_ms"] / 1e3) * 1.0001


def test_perf_on_gb300_says_its_efficiency_is_borrowed(run_cli):
    result = run_cli(
        "perf", "-i", "1000", "-o", "1000", "--model", "minimax-m2.5", "--gpu", "gb300",
        "-p", "fp8", "--tp", "2", "--json",
    )  # fmt: skip
    assert result.exit_code == ExitCode.OK, result.stderr
    assert json.loads(result.stdout)["borrowed_efficiency"] is True
    table = run_cli(
        "perf", "-i", "1000", "-o", "1000", "--model", "minimax-m2.5", "--gpu", "gb300",
        "-p", "fp8", "--tp", "2",
    )  # fmt: skip
    assert "gb300 on b200's" in table.stdout
