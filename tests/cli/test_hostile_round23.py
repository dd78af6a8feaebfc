"""Hostile input, round twenty-three: the cases the input fuzz (tests/bench/fuzz_run.py,
`make bench`) found. Exit 70: `deploy -o` under a file (NotADirectoryError) and a pod's
`resources.limits` list in fleet-import (AttributeError). Read as absent, exit 0: an
engine profile's `fit` list, a genai-perf record list, a trtllm-bench section of another
shape. Named by fleetplan's field, not the file's key: config.json shapes (kv_heads for
num_key_value_heads) and JSON bench results' figures (num_requests for completed).
Python's words for what a file wrote: a sweep's null axis value shown None, a profile
named false shown False."""

import json

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.cli.test_hostile_side_files import DEPLOYMENT, _fleet_args
from tests.engine_results import GENAI_PERF, VLLM_BENCH_SERVE
from tests.paths import ONE_MODEL_ONE_REGION, REPO


@pytest.fixture(scope="module")
def one_region_plan(tmp_path_factory):
    """The one-region instance's plan as solve writes it."""
    from models.io.loading import load_instance
    from solver.solve import solve

    path = tmp_path_factory.mktemp("plan") / "plan.json"
    plan = solve(load_instance(ONE_MODEL_ONE_REGION))
    path.write_text(json.dumps(json.loads(plan.model_dump_json())))
    return path


@pytest.mark.parametrize("below", ["out", "a/b/c"], ids=["child", "grandchild"])
def test_deploy_into_a_folder_under_a_file_is_refused_naming_the_file(
    run_cli, tmp_path, one_region_plan, below
):
    notes = tmp_path / "notes.txt"
    notes.write_text("the user's own notes\n")
    out = notes / below
    args = ("deploy", one_region_plan, "--instance", ONE_MODEL_ONE_REGION, "--target", "vllm")
    needle = f"{out}: -o: cannot be made: {notes} is a file, not a folder"
    run_checked(run_cli, *args, "-o", out, needles=(needle,))
    assert notes.read_text() == "the user's own notes\n"


@pytest.mark.parametrize(
    ("value", "shown"),
    [(None, "null"), (True, "true"), (False, "false"), ({"a": None}, '{"a": null}'),
     ([1, True], "[1, true]"), (20, "20"), (2.5, "2.5"), ("us-east", "us-east")],
)  # fmt: skip
def test_a_sweep_axis_value_is_shown_as_the_grid_spells_it(value, shown):
    """A null axis value was shown `None` in the cost surface and the point's message,
    a boolean `True`: Python's words for what the grid wrote."""
    from models.schema.sweep_grid import shown_value

    assert shown_value(value) == shown


def test_a_grid_of_a_null_point_names_it_null(run_cli, tmp_path):
    """Every point bad (the demand null): exit 2, the point named as the grid wrote it."""
    grid = tmp_path / "grid.yaml"
    demand = "workloads[chat].demand.us-east.peak_requests_per_s"
    grid.write_text(f"instance: {ONE_MODEL_ONE_REGION}\naxes:\n  {demand}: [null]\n")
    result = run_checked(
        run_cli, "sweep", grid, needles=(f"no point is a valid instance; {demand}=null:",)
    )
    assert "None" not in result.stderr


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        # before: 'describes no valid model: kv_heads: Input should be greater than 0'
        ("num_key_value_heads", 0, "num_key_value_heads (kv_heads): Input should be greater"),
        ("num_hidden_layers", 0, "num_hidden_layers (layers): Value error, must be at least 1"),
        ("max_position_embeddings", 0, "max_position_embeddings (max_context_tokens): "),
        ("num_attention_heads", 10**30, "num_attention_heads (attention_heads): "),
    ],
    ids=["kv-heads", "layers", "context", "heads"],
)
def test_a_config_json_shape_the_model_refuses_is_named_by_its_key(
    run_cli, tmp_path, key, value, named
):
    """A config.json's refused shape was named by the model's field (kv_heads, layers),
    a name the file does not hold; it is named by the file's key, the field beside it."""
    config = json.loads((REPO / "tests/fixtures/hf_configs/llama-3.1-8b.json").read_text())
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**config, key: value}))
    args = ("perf", "--model-config", path, "--gpu", "h100-sxm", "-i", "100", "-o", "10")
    run_checked(run_cli, *args, needles=(f"{path}: ", named))


_FACTORS = (
    "  default: {prefill_flops_fraction: 0.45, decode_flops_fraction: 0.7, hbm_fraction: 0.62,"
    " scaleup_fraction: 0.48, scaleout_fraction: 0.8, allreduce_latency_s: 1.5e-05,"
    " pp_hop_latency_s: 2.0e-05, step_overhead_s: 0.004, request_overhead_s: 0.0,"
    " sequence_overhead_s: 0.0, memory_reserve_fraction: 0.05, prefill_chunk_tokens: 8192,"
    " max_batch_sequences: 2048}\n"
)
_PERF = ("perf", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-i", "100", "-o", "10")


def _profile(tmp_path, name: str, fit: str):
    path = tmp_path / "mine.yaml"
    path.write_text(
        f"kind: fleetplan-engine-profile\nprofile: {name}\nby_key:\n{_FACTORS}fit: {fit}\n"
    )
    return path


def test_a_profile_fit_that_is_no_mapping_is_refused(run_cli, tmp_path):
    """`fit: [1, 2]` was read as no fit at all, without a word (exit 0)."""
    path = _profile(tmp_path, "mine", "[1, 2]")
    run_checked(run_cli, *_PERF, "--engine", path, needles=(f"{path}: fit is not a mapping",))


def test_a_profile_named_false_is_shown_as_written(run_cli, tmp_path):
    """`profile: false` was shown as Python's `False`."""
    path = _profile(tmp_path, "false", "{rows: 3}")
    result = run_checked(run_cli, *_PERF, "--engine", path, code=0)
    assert "false (" in result.stdout + result.stderr
    assert "False" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("resources", "field"),
    [
        ("{limits: [1]}", "resources.limits"),
        ("{requests: gpu}", "resources.requests"),
        ("[limits]", "resources"),
    ],
    ids=["limits-list", "requests-text", "resources-list"],
)
def test_a_pods_resources_of_the_wrong_shape_are_refused_naming_them(
    run_cli, tmp_path, resources, field
):
    """`resources: {limits: [1]}` ended in an internal error (exit 70, AttributeError:
    'list' object has no attribute 'get'); a resources list was skipped without a word."""
    fleet = tmp_path / "fleet.yaml"
    pod = "  template:\n    spec:\n      containers:\n      - name: engine\n"
    pod += f"        resources: {resources}\n"
    fleet.write_text(DEPLOYMENT + pod)
    out = tmp_path / "out.yaml"
    needle = f"document 0 (Deployment chat-us-east): {field} is not a mapping"
    run_checked(run_cli, *_fleet_args(fleet, out), needles=(needle,))
    assert not out.exists()


@pytest.mark.parametrize(
    ("result", "named"),
    [
        # before: 'num_requests: -1 must be a finite number above 0 (and below 1e12)'
        ({"completed": -1}, "completed (num_requests): -1 must be a finite number above 0"),
        ({"mean_ttft_ms": [95.0]}, "mean_ttft_ms (ttft_mean_ms): [95.0] is not a number"),
        # before: 'concurrency: missing' for a file that holds no concurrency key of that name
        ({"max_concurrency": None}, "max_concurrency (concurrency): missing"),
    ],
    ids=["completed", "ttft-list", "concurrency-missing"],
)
def test_a_bench_result_figure_is_named_by_the_files_key(run_cli, tmp_path, result, named):
    """A vllm bench serve result's refused figure was named by the CSV column it fills
    (num_requests, ttft_mean_ms), a key the JSON file does not hold."""
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({**VLLM_BENCH_SERVE, **result}))
    replica = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16", "--tp", "1")
    args = ("calibrate", path, *replica, "-o", tmp_path / "p.yaml")
    run_checked(run_cli, *args, needles=(f"{path}: {named}",))
    assert not (tmp_path / "p.yaml").exists()


@pytest.mark.parametrize("key", ["request_count", "input_sequence_length"])
def test_a_genai_perf_record_that_is_no_mapping_is_refused(run_cli, tmp_path, key):
    """`request_count: [80]` was read as no count (calibrate took 10 x the concurrency,
    exit 0); `input_sequence_length: [500]` was said to be missing."""
    path = tmp_path / "profile_export_genai_perf.json"
    path.write_text(json.dumps({**GENAI_PERF, key: [GENAI_PERF[key]["avg"]]}))
    replica = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16", "--tp", "1")
    args = ("calibrate", path, *replica, "-o", tmp_path / "p.yaml")
    needle = f"{path}: {key}: [{GENAI_PERF[key]['avg']}] is not a record of a unit and an avg"
    run_checked(run_cli, *args, needles=(needle,))


def test_a_trtllm_bench_section_that_is_no_mapping_is_refused(run_cli, tmp_path):
    """`world_info: map` was read as no world_info: --tp filled the run's TP (exit 0)."""
    path = tmp_path / "report.json"
    path.write_text(
        json.dumps(
            {
                "world_info": "map",
                "dataset": {"avg_isl": 128, "avg_osl": 128, "num_requests": 64},
                "performance": {"system_output_throughput_tok_s": 9000.0},
            }
        )
    )
    replica = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16", "--tp", "1")
    args = ("calibrate", path, *replica, "-o", tmp_path / "p.yaml")
    needle = f"{path}: world_info: 'map' is not a section of trtllm-bench's report"
    run_checked(run_cli, *args, needles=(needle,))


@pytest.mark.parametrize(("column", "value"), [("isl", "0.5"), ("osl", "1e-300")])
def test_a_mean_length_below_one_token_is_refused_naming_it(run_cli, tmp_path, column, value):
    """An osl of 1e-300 was read: the run was refused for its throughput (output_tok_s
    '19x above the fastest the layout can run'), not for the length."""
    header = "model,gpu,precision,tp,isl,osl,concurrency,output_tok_s"
    row = {"isl": "1000", "osl": "200", column: value}
    path = tmp_path / "runs.csv"
    path.write_text(f"{header}\nllama-3.1-8b,h100-sxm,bf16,1,{row['isl']},{row['osl']},8,900\n")
    needle = f"{path}:2: {column}: {float(value):g} tokens: a request holds at least 1 token"
    run_checked(run_cli, "calibrate", path, "-o", tmp_path / "p.yaml", needles=(needle,))
