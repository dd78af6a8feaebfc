"""Hostile input, round seven: the files a command reads besides the instance and the
plan (a Hugging Face config.json, an engine profile, benchmark results, a fleet, the
assumptions of `estimate`). Each case ran into a ZeroDivisionError, an OverflowError, a
csv.Error (exit 70) or a hang before; each now exits 2 within seconds naming the file
and the field."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked
from tests.guards import failing_after
from tests.paths import ONE_MODEL_ONE_REGION, REPO

LLAMA_CONFIG = {
    "model_type": "llama",
    "num_attention_heads": 32,
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "intermediate_size": 14336,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
}
"""Llama 3.1 8B's config.json, the fields fleetplan reads."""

QWEN3_NEXT_CONFIG = {
    "model_type": "qwen3_next",
    "num_attention_heads": 16,
    "hidden_size": 2048,
    "num_hidden_layers": 48,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "vocab_size": 151936,
    "max_position_embeddings": 262144,
    "moe_intermediate_size": 512,
    "shared_expert_intermediate_size": 512,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "full_attention_interval": 4,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_conv_kernel_dim": 4,
}
"""Qwen3-Next 80B-A3B's config.json, the fields fleetplan reads (layer types from the
interval)."""


@pytest.fixture
def hang_guard():
    """Fail instead of hanging the suite when a command runs past 20 s (a Python loop is
    interrupted; the TimeoutError surfaces as exit 70)."""
    with failing_after(20, "the command"):
        yield


def run_apart(*args, timeout_s: float = 30.0) -> subprocess.CompletedProcess:
    """`fleetplan ARGS` in its own process, killed after `timeout_s`: for input that hung
    in C code (a signal never reaches Python there)."""
    return subprocess.run(
        [sys.executable, "-m", "cli.app", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=timeout_s,
    )


# --- a Hugging Face config.json -----------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "field", "message"),
    [
        # hidden_size // num_attention_heads: ZeroDivisionError
        ({**LLAMA_CONFIG, "num_attention_heads": 0}, "num_attention_heads", "at least 1, got 0"),
        # (i + 1) % full_attention_interval: ZeroDivisionError
        ({**QWEN3_NEXT_CONFIG, "full_attention_interval": 0}, "full_attention_interval", "got 0"),
        # the state's width // (2 x kv_heads x head_dim): ZeroDivisionError
        ({**QWEN3_NEXT_CONFIG, "num_key_value_heads": 0}, "num_key_value_heads", "got 0"),
        # a set of 10^12 layer positions built before any bound was read: a hang
        (
            {**QWEN3_NEXT_CONFIG, "num_hidden_layers": 10**12},
            "num_hidden_layers",
            "at most 1,024, got 1,000,000,000,000",
        ),
    ],
)
def test_a_config_json_that_divides_by_zero_or_loops_forever_is_refused(
    run_cli, tmp_path, hang_guard, config, field, message
):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    args = ("perf", "-g", "h100-sxm", "-i", "100", "-o", "100", "--model-config", path)
    run_checked(run_cli, *args, needles=("--model-config", f"'{field}'", message))


# --- an engine profile file ------------------------------------------------------------


def _alias_bomb(levels: int) -> list[str]:
    """YAML lines anchoring `a0` .. `a{levels}`, each ten aliases of the one before: `a{n}`
    expands to 10^(n+1) values while the text stays a few hundred bytes."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for n in range(1, levels + 1):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * 10) + "]")
    return lines


def test_an_alias_bomb_in_an_engine_profile_is_refused_not_printed(tmp_path):
    # `data` is printed with str(): 10^7 values expanded to a 30 MB string (10^9 hung).
    profile = tmp_path / "bomb.yaml"
    bomb = ["  " + line for line in _alias_bomb(6)]  # under `fit`, a key a profile holds
    lines = ["kind: fleetplan-engine-profile", "fit:", *bomb, "by_key: {default: {}}"]
    profile.write_text("\n".join([*lines, "data: *a6", "profile: *a6"]) + "\n")
    args = ("perf", "-g", "h100-sxm", "-m", "llama-3.1-8b", "-i", "100", "-o", "100")
    done = run_apart(*args, "--engine", profile)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "--engine" in done.stderr and "profile is not text" in done.stderr
    assert "Traceback" not in done.stderr


# --- a running fleet (fleet-import) -----------------------------------------------------

FLEET_HEADER = "workload,region,gpu,precision,tp,pp,replicas"
POOL_ANNOTATION = (
    '{"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8", '
    '"tp": 1, "pp": 1}'
)
DEPLOYMENT = f"""kind: Deployment
metadata:
  name: chat-us-east
  annotations:
    fleetplan.io/pool: '{POOL_ANNOTATION}'
spec:
  replicas: 3
"""
"""One pool as `deploy --target k8s` writes it (the fields fleet-import reads)."""


def _fleet_args(fleet, instance_out):
    return (
        "fleet-import",
        fleet,
        "--instance",
        ONE_MODEL_ONE_REGION,
        "--instance-out",
        instance_out,
    )


def test_a_fifo_fleet_file_is_refused_not_waited_on(run_cli, tmp_path, hang_guard):
    fleet = tmp_path / "fleet.csv"
    os.mkfifo(fleet)
    run_checked(run_cli, *_fleet_args(fleet, tmp_path / "out.yaml"), needles=("FIFO",))
    assert not (tmp_path / "out.yaml").exists()


def test_a_file_of_the_fleet_folder_is_never_replaced_by_the_instance(run_cli, tmp_path):
    folder = tmp_path / "k8s"
    folder.mkdir()
    manifest = folder / "chat-us-east.yaml"
    manifest.write_text(DEPLOYMENT)
    run_checked(run_cli, *_fleet_args(folder, manifest), needles=("is the input file",))
    assert manifest.read_text() == DEPLOYMENT


def test_the_fleet_folder_still_imports(run_cli, tmp_path):
    folder = tmp_path / "k8s"
    folder.mkdir()
    (folder / "chat-us-east.yaml").write_text(DEPLOYMENT)
    out = tmp_path / "out.yaml"
    run_checked(run_cli, *_fleet_args(folder, out), code=0)
    held = 3 * 1  # replicas x tp x pp GPUs
    assert yaml.safe_load(out.read_text())["regions"][0]["existing"] == {"h100-sxm": held}


@pytest.mark.parametrize(
    ("row", "field", "message"),
    [
        # 200,000 replicas x tp 8 = 1,600,000 GPUs, past the bound of 1,000,000
        ("chat,us-east,h100-sxm,fp8,8,1,200000", "regions[0].existing.h100-sxm", "at most"),
        # a GPU type the instance does not declare: named as the fleet spells it, before any
        # instance is written (test_hostile_round21 has the cases that named `existing`)
        (
            "chat,us-east,a100-80gb-sxm,fp8,1,1,1",
            "the fleet runs GPU types the instance does not offer: 'a100-80gb-sxm'",
            "(instance gpus: 'h100-sxm')",
        ),
    ],
)
def test_an_instance_that_would_not_load_is_not_written(run_cli, tmp_path, row, field, message):
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(f"{FLEET_HEADER}\n{row}\n")
    out = tmp_path / "out.yaml"
    run_checked(run_cli, *_fleet_args(fleet, out), needles=(str(fleet), field, message))
    assert not out.exists()


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('chat,us-east,h100-sxm,fp8,1,1,"' + "x" * 200_000 + '"', "row 2: field larger"),
        ("chat,us-east,h100-sxm,fp8,1,1,3,extra", "row 2: more values than the header"),
    ],
)
def test_a_csv_row_csv_cannot_read_names_the_row(run_cli, tmp_path, row, message):
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(f"{FLEET_HEADER}\n{row}\n")
    run_checked(run_cli, *_fleet_args(fleet, tmp_path / "out.yaml"), needles=(message,))


# --- benchmark results (calibrate) ------------------------------------------------------

RUNS_HEADER = "model,gpu,precision,tp,isl,osl,concurrency,output_tok_s"
DIGITS_400 = 10**400
"""An integer JSON reads and float() cannot hold (OverflowError)."""
VLLM_RESULT = {
    "max_concurrency": 1,
    "completed": 10,
    "total_input_tokens": 20_000,
    "total_output_tokens": 640,
    "output_throughput": 50.0,
    "mean_ttft_ms": 150.0,
    "mean_tpot_ms": 10.0,
}
"""A `vllm bench serve --save-result` JSON, the fields calibrate reads."""
RUN_FLAGS = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16", "--tp", "1")


def test_a_csv_field_past_the_csv_limit_names_the_line(run_cli, tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text(f'{RUNS_HEADER}\nllama-3.1-8b,h100-sxm,bf16,1,"{"x" * 200_000}",64,1,50\n')
    run_checked(
        run_cli, "calibrate", runs, "-o", tmp_path / "p.yaml", needles=(f"{runs}:2", "field larger")
    )


@pytest.mark.parametrize(
    ("key", "field", "message"),
    [
        ("output_throughput", "output_tok_s", "an integer of 401 digits must be below 1e12"),
        ("total_input_tokens", "isl", "inf must be a finite number"),  # total / completed
    ],
)
def test_a_number_float_cannot_hold_is_refused_naming_the_field(
    run_cli, tmp_path, key, field, message
):
    result = tmp_path / "bench.json"
    result.write_text(json.dumps({**VLLM_RESULT, key: DIGITS_400}))
    args = ("calibrate", result, "-o", tmp_path / "p.yaml", *RUN_FLAGS)
    # named by the file's key, the column beside it (tests/cli/test_hostile_round23.py)
    run_checked(run_cli, *args, needles=(f"{key}", f"({field}): {message}"))


# --- the assumptions of estimate --------------------------------------------------------


def test_an_assumption_given_in_both_spellings_is_refused_naming_both_lines(run_cli, tmp_path):
    config = tmp_path / "assumptions.yaml"
    config.write_text("requests-per-day: 1000000\nrequests_per_day: 3000000\n")
    needles = (f"{config}:2", "given twice", "'requests-per-day' (line 1)")
    run_checked(run_cli, "estimate", "--config", config, needles=needles)


# --- two outputs in one file ------------------------------------------------------------


def test_fleet_import_refuses_one_file_for_the_instance_and_the_plan(run_cli, tmp_path):
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(f"{FLEET_HEADER}\nchat,us-east,h100-sxm,fp8,1,1,3\n")
    out = tmp_path / "out.yaml"
    args = (*_fleet_args(fleet, out), "--plan-out", out)
    run_checked(run_cli, *args, needles=("is also the output",))
    assert not out.exists(), "the plan replaced the instance just written; both said wrote"


def test_calibrate_refuses_one_file_for_the_profile_and_the_json(run_cli, tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text(f"{RUNS_HEADER}\nllama-3.1-8b,h100-sxm,bf16,1,2000,64,1,50\n")
    profile = tmp_path / "mine.yaml"
    args = ("calibrate", runs, "-o", profile, "--json", profile, "--no-leave-one-out")
    run_checked(run_cli, *args, needles=("is also the output",))
    assert not profile.exists()


def test_engine_profiles_whose_fallbacks_loop_are_named_as_a_loop(run_cli, tmp_path):
    # a.yaml -> b.yaml -> a.yaml: "cannot be read (maximum recursion depth exceeded)"
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for path, fallback in ((first, second), (second, first)):
        path.write_text(
            f"kind: fleetplan-engine-profile\nby_key: {{default: {{}}}}\nfallback: {fallback}\n"
        )
    args = ("perf", "-g", "h100-sxm", "-m", "llama-3.1-8b", "-i", "100", "-o", "100")
    needles = ("--engine", f"its fallbacks loop: {first} -> {second} -> {first}")
    result = run_checked(run_cli, *args, "--engine", first, needles=needles)
    assert "recursion" not in result.stderr


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        # each was an AttributeError or TypeError: exit 70
        (("metadata:\n", "metadata: [1]\nx:\n"), "metadata is not a mapping"),
        (("spec:\n  replicas: 3\n", "spec: [3]\n"), "spec is not a mapping"),
        ((f"'{POOL_ANNOTATION}'", "5"), "is not a JSON object of the pool's layout"),
        ((f"'{POOL_ANNOTATION}'", "'[1, 2]'"), "is not a JSON object of the pool's layout"),
        # kept the second value without a word: 30 replicas imported
        (("  replicas: 3\n", "  replicas: 3\n  replicas: 30\n"), "duplicate key 'replicas'"),
    ],
)
def test_a_kubernetes_object_of_the_wrong_shape_is_refused_naming_it(
    run_cli, tmp_path, change, needle
):
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(DEPLOYMENT.replace(*change))
    assert fleet.read_text() != DEPLOYMENT, "the change applies"
    out = tmp_path / "out.yaml"
    run_checked(run_cli, *_fleet_args(fleet, out), needles=(str(fleet), needle))
    assert not out.exists()


def test_a_fleet_csv_column_given_twice_is_refused(run_cli, tmp_path):
    # the second replicas column (30) was imported without a word
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(f"{FLEET_HEADER},replicas\nchat,us-east,h100-sxm,fp8,1,1,3,30\n")
    out = tmp_path / "out.yaml"
    run_checked(run_cli, *_fleet_args(fleet, out), needles=("column replicas given twice",))
    assert not out.exists()


def test_a_measurements_csv_column_given_twice_is_refused(run_cli, tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text(f"{RUNS_HEADER},output_tok_s\nllama-3.1-8b,h100-sxm,bf16,1,2000,64,1,50,5000\n")
    args = ("calibrate", runs, "-o", tmp_path / "p.yaml")
    run_checked(run_cli, *args, needles=(f"{runs}:1: output_tok_s: column given twice",))


GPT_OSS_CONFIG = {
    "model_type": "gpt_oss",
    "num_attention_heads": 64,
    "hidden_size": 2880,
    "num_hidden_layers": 24,
    "intermediate_size": 2880,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "vocab_size": 201088,
    "max_position_embeddings": 131072,
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "sliding_window": 128,
}
"""gpt-oss-20b's config.json, the fields fleetplan reads (no layer_types: no windows)."""


@pytest.mark.parametrize(
    ("config", "field", "message"),
    [
        # each was iterated as a list: TypeError, exit 70
        ({**GPT_OSS_CONFIG, "layer_types": 5}, "layer_types", "must be a list"),
        (
            {**QWEN3_NEXT_CONFIG, "full_attention_interval": None, "layer_types": [{"a": 1}]},
            "layer_types",
            "must be a list of numbers or names",
        ),
        (
            {
                **LLAMA_CONFIG,
                "model_type": "qwen3_moe",
                "mlp_only_layers": 5,
                "num_experts": 8,
                "num_experts_per_tok": 2,
                "moe_intermediate_size": 768,
            },
            "mlp_only_layers",
            "must be a list",
        ),
        # 12 layer types for 48 layers: 10 linear layers were planned, not 36
        (
            {
                **QWEN3_NEXT_CONFIG,
                "full_attention_interval": None,
                "layer_types": ["linear_attention"] * 10 + ["full_attention"] * 2,
            },
            "layer_types",
            "has 12 entries, one per layer; num_hidden_layers is 48",
        ),
        (
            {**GPT_OSS_CONFIG, "layer_types": ["sliding_attention"] * 200},
            "layer_types",
            "has 200 entries, one per layer; num_hidden_layers is 24",
        ),
    ],
)
def test_a_config_json_list_of_the_wrong_shape_is_refused(
    run_cli, tmp_path, config, field, message
):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in config.items() if v is not None}))
    args = ("perf", "-g", "h100-sxm", "-i", "100", "-o", "100", "-p", "fp8", "--tp", "8")
    run_checked(run_cli, *args, "--model-config", path, needles=(f"'{field}'", message))
