"""One consistent command line (issue 18): --version, -h, --json [FILE] / -o FILE on every
command, --set overrides, JSON for verify, validate and an infeasible solve, the
requests_per_day warning, and a description on every field of the instance schema."""

import json
from importlib.metadata import version

import pytest

from cli.app import COMMANDS
from cli.exit_codes import ExitCode
from models.io.loading import load_instance
from models.schema.checks import input_warnings
from models.schema.schema_docs import instance_schema
from tests.paths import INSTANCES, ONE_MODEL_ONE_REGION

FIXTURE = str(ONE_MODEL_ONE_REGION)
GPU_MONTH_USD = 2.4 * 730
"""One H100 of the fixture bought for a month: $2.40/GPU-hour x 730 hours."""


def test_version_prints_the_package_metadata_version(run_cli):
    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"fleetplan {version('fleetplan')}"


@pytest.mark.parametrize("command", [[], *([name] for name in COMMANDS)])
def test_dash_h_is_help_on_the_app_and_every_command(run_cli, command):
    short, long = run_cli(*command, "-h"), run_cli(*command, "--help")
    assert short.exit_code == long.exit_code == 0
    assert short.stdout == long.stdout and "Usage" in short.stdout


@pytest.mark.parametrize(
    ("command", "shown"),
    [("validate", "workloads[chat].slo.ttft_p99_ms=1200"), ("sweep", "fleetplan[ray] extra")],
)
def test_square_brackets_in_help_are_shown_not_read_as_markup(run_cli, command, shown):
    """Help text is Rich markup: a bare `[chat]` is a style tag that vanished, and the
    --set example read `workloads.slo.ttft_p99_ms=1200`, a path that fails."""
    result = run_cli(command, "-h")
    assert shown in " ".join(result.stdout.split())


def test_a_refused_choice_reads_without_pydantic_s_prefix(run_cli):
    """It read "Invalid value for 'kind': Value error, 'foo' is not one of ..."."""
    result = run_cli("catalog", "foo")
    assert result.exit_code == ExitCode.BAD_INPUT
    text = " ".join(result.stderr.replace("│", " ").split())
    assert "Value error" not in text
    assert "Invalid value for 'kind': 'foo' is not one of 'gpus', 'models'." in text


# --- --json -----------------------------------------------------------------------------


def test_bare_json_is_stdout_and_json_file_and_dash_o_write_files(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bare = run_cli("validate", FIXTURE, "--json")
    assert json.loads(bare.stdout)["ok"] is True
    dash = run_cli("validate", FIXTURE, "--json", "-")
    assert json.loads(dash.stdout) == json.loads(bare.stdout)
    assert not (tmp_path / "-").exists()  # `-` is standard output, never a file
    for flag in ("--json", "-o"):
        target = tmp_path / f"validate{flag}.json"
        assert run_cli("validate", FIXTURE, flag, target).exit_code == 0
        assert json.loads(target.read_text())["name"] == "one-model-one-region"


def test_bare_json_before_another_option_is_stdout(run_cli):
    result = run_cli("validate", FIXTURE, "--json", "--set", "policy.max_utilization=0.9")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["ok"] is True


def test_validate_json_reports_the_problems_as_data_and_exits_2(run_cli):
    result = run_cli("validate", FIXTURE, "--set", "policy.max_utilization=7", "--json")
    assert result.exit_code == ExitCode.BAD_INPUT
    data = json.loads(result.stdout)
    assert data["ok"] is False
    (problem,) = data["problems"]
    assert problem["field"] == "policy.max_utilization" and "at most 1" in problem["message"]


def test_an_infeasible_solve_writes_its_diagnosis_as_json_and_exits_3(run_cli):
    # 5 ms p99 TTFT: a 1,000-token prompt alone takes longer on any layout offered
    result = run_cli("solve", FIXTURE, "--set", "workloads[chat].slo.ttft_p99_ms=5", "--json")
    assert result.exit_code == ExitCode.INFEASIBLE
    data = json.loads(result.stdout)
    assert data["status"] == "infeasible"
    (problem,) = data["diagnosis"]["problems"]
    assert problem["requirement"] == "candidates[chat]" and "target 5 ms" in problem["message"]
    assert "infeasible" in result.stderr  # the diagnosis is still told on stderr


def test_solve_and_verify_json_round_trip(run_cli, tmp_path):
    plan = tmp_path / "plan.json"
    solved = run_cli("solve", FIXTURE, "--set", "policy.buy_unit=gpu", "-o", plan)
    assert solved.exit_code == 0, solved.stderr
    # 20 req/s on one H100 (fp8, TP1): one GPU bought at $2.40 x 730 h
    assert json.loads(plan.read_text())["cost_per_month"] == pytest.approx(GPU_MONTH_USD)
    checked = run_cli("verify", FIXTURE, plan, "--set", "policy.buy_unit=gpu", "--json")
    assert checked.exit_code == 0
    verdict = json.loads(checked.stdout)
    assert verdict["ok"] is True and verdict["cost_per_month"] == pytest.approx(GPU_MONTH_USD)


# --- --set --------------------------------------------------------------------------------


def test_validate_counts_agree_with_their_nouns(run_cli):
    """One workload, one region and one GPU type in the fixture: each noun in the singular
    (it read '1 workload(s), 1 region(s), 1 GPU type(s)')."""
    result = run_cli("validate", FIXTURE)
    assert result.exit_code == 0
    assert ": 1 workload, 1 region, 1 GPU type, 20.0 peak requests/s in all" in result.stdout


@pytest.mark.parametrize("override", ["gpus=[]", "workloads[0].demand={}"])
def test_an_empty_list_or_mapping_is_named_in_plain_words(run_cli, override):
    """It read "List should have at least 1 item after validation, not 0 (got [])"."""
    result = run_cli("validate", FIXTURE, "--set", override)
    assert result.exit_code == ExitCode.BAD_INPUT
    field = override.split("=")[0]
    assert f"{field}: is empty; give at least 1 entry (after --set {override})" in result.stderr


def test_set_changes_the_instance_before_validation(run_cli):
    result = run_cli(
        "validate",
        FIXTURE,
        "--set",
        "workloads[chat].demand.us-east.peak_requests_per_s=35",
        "--set",
        "workloads[0].slo.ttft_p99_ms=1200",
        "--json",
    )
    assert json.loads(result.stdout)["peak_requests_per_s"] == 35.0


@pytest.mark.parametrize(
    ("override", "named"),
    [
        ("workloads[batch].slo.ttft_p99_ms=1", "no element named 'batch' (chat)"),
        ("workloads[3].slo.ttft_p99_ms=1", "workloads has 1 element; index 3 is out of range"),
        ("name.first=x", "name is the value 'one-model-one-region', not a mapping"),
        ("policy.survive", "write path=value"),
    ],
)
def test_a_bad_set_path_exits_2_naming_it(run_cli, override, named):
    result = run_cli("validate", FIXTURE, "--set", override)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "--set" in result.stderr and named in result.stderr


def test_a_set_value_of_the_wrong_type_is_named_like_a_field_of_the_file(run_cli):
    result = run_cli("validate", FIXTURE, "--set", "workloads[chat].slo.ttft_p99_ms=soon")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "workloads[0].slo.ttft_p99_ms" in result.stderr
    # The file's line alone would point at the file's value: the override is named too.
    assert "(after --set workloads[chat].slo.ttft_p99_ms=soon)" in result.stderr


def test_a_set_that_breaks_a_rule_over_several_fields_names_the_set_and_the_fields(run_cli):
    """A rule of the model entry as a whole (heads a multiple of KV heads) has no one field:
    the message names the fields and the override, with no empty path (': :')."""
    result = run_cli("validate", FIXTURE, "--set", "models[0].kv_heads=7")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert ": :" not in result.stderr
    assert "must be a multiple of kv_heads (7)" in result.stderr
    assert "(after --set models[0].kv_heads=7)" in result.stderr


# --- warnings ------------------------------------------------------------------------------


def test_requests_per_day_without_a_peak_factor_warns_of_the_daily_average(run_cli):
    daily = "workloads[chat].demand.us-east={requests_per_day: 864000}"
    result = run_cli("validate", FIXTURE, "--set", daily)
    assert result.exit_code == 0
    # 864,000 requests a day / 86,400 s = 10 requests/s, every hour
    assert "warning: workloads[chat].demand.us-east: requests_per_day" in result.stderr
    assert "daily average (10 requests/s)" in result.stderr
    peaked = "workloads[chat].demand.us-east={requests_per_day: 864000, peak_to_average: 2.5}"
    assert "warning" not in run_cli("validate", FIXTURE, "--set", peaked).stderr


# --- schema ---------------------------------------------------------------------------------


def test_every_field_of_the_instance_schema_has_a_description():
    """`fleetplan schema` describes every field (the attribute docstring under it); the
    models themselves are built without reading their source (start-up)."""
    schema = instance_schema()
    models = {"Instance": schema, **schema.get("$defs", {})}
    missing = [
        f"{model}.{field}"
        for model, definition in models.items()
        for field, spec in definition.get("properties", {}).items()
        if not spec.get("description")
    ]
    assert not missing, missing


def test_the_schema_command_carries_the_attribute_docstrings(run_cli):
    schema = json.loads(run_cli("schema").stdout)
    region = schema["$defs"]["Region"]["properties"]
    assert region["name"]["description"].startswith("The region's name")
    supply = schema["$defs"]["Supply"]["properties"]["max_gpus"]["description"]
    assert "in addition to the existing fleet" in supply


# --- tables at 80 columns -------------------------------------------------------------------


def _rendered(width: int, terminal: bool) -> list[str]:
    from io import StringIO

    from rich.console import Console

    from cli.render.tables import TableSpec, print_tables

    columns = ("workload", "GPU", "precision", "TP x PP", "role", "replicas", "GPUs",
               "req/s per replica", "limit")  # fmt: skip
    row = ("chat", "h100-sxm", "fp8", "2 x 1", "prefill", "12", "24", "8.51", "ttft_queueing")
    spec = TableSpec("us-east", columns, (row, row), "a note under the table")
    buffer = StringIO()
    console = Console(file=buffer, width=width, force_terminal=terminal, soft_wrap=True)
    print_tables(["a header line " * 10], [spec], "", console)
    return buffer.getvalue().splitlines()


def test_a_wide_table_wraps_deliberately_at_80_columns():
    from rich.text import Text

    lines = [Text.from_ansi(line).plain for line in _rendered(80, terminal=True)]
    assert max(len(line) for line in lines) <= 80
    # the columns that did not fit go to a second table
    assert "us-east (continued)" in [line.strip() for line in lines]
    body = "\n".join(lines)
    for cell in ("h100-sxm", "ttft_queueing", "workload", "precision", "replicas"):
        assert cell in body  # names and numbers are never cut


def test_a_table_that_fits_is_one_table():
    lines = _rendered(160, terminal=False)
    assert not any("(continued)" in line for line in lines)


def test_batch_work_given_per_day_is_not_warned_about_its_peak():
    """A batch workload is sized by its daily volume and deadline: its requests_per_day
    without a peak factor is what the author meant (diurnal-chat-batch's `summarise`)."""
    instance = load_instance(INSTANCES / "diurnal-chat-batch.yaml")
    batch = [w.name for w in instance.workloads if w.is_batch]
    assert batch
    assert not any(name in line for line in input_warnings(instance) for name in batch)


def test_validate_states_the_demand_as_planned_under_demand_growth(run_cli):
    """The planner sizes for every rate times demand_growth (20 x 1.5 = 30 requests/s);
    validate said '20.0 peak requests/s in all' and nothing of the factor."""
    result = run_cli("validate", FIXTURE, "--set", "demand_growth=1.5")
    assert "20.0 peak requests/s in all, 30.0 as planned (x demand_growth 1.5)" in result.stdout
    record = json.loads(run_cli("validate", FIXTURE, "--set", "demand_growth=1.5", "--json").stdout)
    assert record["peak_requests_per_s"] == 20.0
    assert record["demand_growth"] == 1.5
