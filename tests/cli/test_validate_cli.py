"""`fleetplan validate`, `catalog` and `schema` from the command line: exit codes and
messages that name the file, the line and the field, never a traceback."""

import json

import pytest

from tests.paths import DEFAULT_INSTANCE

GOOD = DEFAULT_INSTANCE.read_text()


def _write(tmp_path, text: str, name: str = "instance.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_reference_instance_validates(run_cli):
    result = run_cli("validate", DEFAULT_INSTANCE)
    assert result.exit_code == 0, result.stderr
    assert "ok" in result.stdout


@pytest.mark.parametrize(
    ("old", "new", "needle"),
    [
        ("    prefix_cache_hit_rate: 0.0", "    prefix_cache_hit: 0.0", "unknown key"),
        ("    model: llama-3.3-70b", "    model: llama-3.3-80b", "unknown model"),
        ("  - [us-east, eu-west, 75]", "  - [us-east, eu-wst, 75]", "unknown region"),
        ("us-west: {requests_per_day: 800000", "us-west: {requests_per_day: -8", "greater than 0"),
        ("prompt_tokens: {mean: 1500, p99: 6000}", "prompt_tokens: {mean: 1500, p99: 9}", "p99"),
        ("      b200:     {max_gpus: 64,", "      b300:     {max_gpus: 64,", "unknown GPU"),
    ],
)
def test_bad_input_exits_2_naming_line_and_field(run_cli, tmp_path, old, new, needle):
    assert old in GOOD
    text = GOOD.replace(old, new)
    line = 1 + next(i for i, row in enumerate(text.splitlines()) if new in row)
    path = _write(tmp_path, text)
    result = run_cli("validate", path)
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr
    assert needle in result.stderr
    assert f"{path}:{line}:" in result.stderr


def test_yaml_syntax_error_names_a_line(run_cli, tmp_path):
    # An unclosed flow mapping on line 22: the parser notices on the next token.
    text = GOOD.replace(
        "h200:     {max_gpus: 256, price_per_gpu_hour: 3.10}", "h200: {max_gpus: 256"
    )
    path = _write(tmp_path, text)
    result = run_cli("validate", path)
    assert result.exit_code == 2
    assert f"{path}:2" in result.stderr and "YAML syntax" in result.stderr
    assert "Traceback" not in result.stderr


def test_empty_workloads_exit_2(run_cli, tmp_path):
    head = GOOD.split("workloads:")[0]
    tail = "policy:" + GOOD.split("policy:")[1]
    path = _write(tmp_path, head + "workloads: []\n\n" + tail)
    result = run_cli("validate", path)
    assert result.exit_code == 2
    assert "workloads" in result.stderr


@pytest.mark.parametrize(
    ("text", "name", "needle"),
    [
        ("", "empty.yaml", "empty"),
        ("- just\n- a list\n", "list.yaml", "mapping"),
        ("{}", "instance.txt", "unknown file type"),
        ('{"name": ', "broken.json", "JSON syntax"),
    ],
)
def test_unusable_files_exit_2(run_cli, tmp_path, text, name, needle):
    result = run_cli("validate", _write(tmp_path, text, name))
    assert result.exit_code == 2
    assert needle in result.stderr


def test_missing_file_exit_2(run_cli, tmp_path):
    result = run_cli("validate", tmp_path / "nowhere.yaml")
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_catalog_models_json_lists_every_model_with_its_source(run_cli):
    result = run_cli("catalog", "models", "--json")
    assert result.exit_code == 0
    models = {entry["name"]: entry for entry in json.loads(result.stdout)}
    for name in ("llama-2-70b", "llama-3.1-405b", "deepseek-v3", "qwen2.5-72b", "mixtral-8x7b"):
        assert models[name]["sources"]["architecture"]


def test_catalog_gpus_table(run_cli):
    result = run_cli("catalog", "gpus")
    assert result.exit_code == 0
    assert "b200" in result.stdout and "mi300x" in result.stdout


def test_schema_is_json_schema(run_cli):
    result = run_cli("schema")
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert {"gpus", "models", "regions", "workloads", "policy"} <= set(schema["properties"])


def test_a_folder_given_as_an_instance_points_to_batch(run_cli, tmp_path):
    result = run_cli("solve", tmp_path)
    assert result.exit_code == 2
    assert f"{tmp_path}: is a folder, not an instance file" in result.stderr
    assert "fleetplan batch" in result.stderr
