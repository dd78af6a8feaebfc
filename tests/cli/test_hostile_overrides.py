"""Hostile input, round seven: `--set` and sweep grids. Numbers Python refuses to read
(an index or a value of 5,000 digits) and YAML values JSON cannot hold (a date, bytes, a
set) exited 70 as a bug in fleetplan; each now exits 2 naming the override or the axis."""

import shutil

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

DIGITS_5000 = "9" * 5000
"""Past Python's 4,300-digit limit on reading an integer (sys.get_int_max_str_digits)."""


def test_a_list_index_of_5000_digits_is_refused_naming_the_override(run_cli):
    override = f"workloads[{DIGITS_5000}].name=x"
    result = run_checked(
        run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", override, needles=("--set",)
    )
    assert "more than 18 digits" in result.stderr
    assert DIGITS_5000 not in result.stderr, "the message is cut, not 5,000 digits long"


def test_a_value_of_5000_digits_is_refused_naming_the_override(run_cli):
    result = run_checked(
        run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", f"policy.pue={DIGITS_5000}"
    )
    assert "policy.pue" in result.stderr and "more than 4,300 digits" in result.stderr
    assert DIGITS_5000 not in result.stderr


def test_an_index_of_18_digits_is_still_read_and_out_of_range(run_cli):
    index = "9" * 18
    result = run_checked(
        run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", f"workloads[{index}].name=x"
    )
    assert f"index {index} is out of range" in result.stderr


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("!!timestamp 2025-01-01", "(a date)"),  # unquoted, a date is text (round 18)
        ("!!binary aGVsbG8=", "(a bytes)"),
        ("{a: !!set {x}}", "(a set)"),
    ],
)
def test_a_grid_value_json_cannot_hold_is_refused_naming_the_axis(run_cli, tmp_path, value, kind):
    shutil.copy(ONE_MODEL_ONE_REGION, tmp_path / "base.yaml")
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"instance: base.yaml\naxes:\n  description: [ok, {value}]\n")
    result = run_checked(run_cli, "sweep", grid, needles=("axes.description[1]", kind))
    assert "JSON" in result.stderr


def _grid(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"instance: {ONE_MODEL_ONE_REGION}\naxes:\n  demand_growth: [1.0]\n")
    return grid


@pytest.mark.parametrize(
    "content",
    [
        '{\n  "instance": "a plan",\n  "replicas": []\n}\n',  # plan.json given as --out
        "name: an instance\n",
        "workload,region,gpu\nchat,us-east,h100-sxm\n",
    ],
)
def test_sweep_never_appends_to_a_file_that_is_not_its_results(run_cli, tmp_path, content):
    other = tmp_path / "mine.json"
    other.write_text(content)
    needles = ("--out", "is not a sweep results file")
    run_checked(run_cli, "sweep", _grid(tmp_path), "--out", other, needles=needles)
    assert other.read_text() == content


@pytest.mark.parametrize(
    "content", ["", '{"poi'], ids=["empty", "a first record cut by a killed run"]
)
def test_sweep_still_appends_to_its_own_results(run_cli, tmp_path, content):
    results = tmp_path / "results.jsonl"
    results.write_text(content)
    run_checked(run_cli, "sweep", _grid(tmp_path), "--out", str(results), code=0)
    assert results.read_text().splitlines()[-1].startswith('{"point": 0')


def test_a_key_into_a_list_says_how_to_select_an_element(run_cli):
    args = ("validate", ONE_MODEL_ONE_REGION, "--set", "regions.us-east.zones=2")
    needles = ("regions is a list, not a mapping", "regions[us-east] or regions[0]")
    run_checked(run_cli, *args, needles=needles)


def test_a_value_nested_past_libyaml_s_limit_names_the_override(run_cli):
    # 5,000 brackets: libyaml refused them, the check let its error pass, and the
    # recursive parser after it ran out of stack: "too large or too deeply nested" with
    # no word of --set
    value = "[" * 5000 + "]" * 5000
    args = ("validate", ONE_MODEL_ONE_REGION, "--set", f"description={value}")
    run_checked(run_cli, *args, needles=("--set: description: nesting deeper than",))
