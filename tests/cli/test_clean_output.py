"""Clean numbers (issue 35): no negative zero in a table or a JSON document, compare's
rollout thresholds as words, and tables laid out within `COLUMNS`."""

import os
import subprocess
import sys

import pytest

from cli.compare import comparison_report, threshold_text
from cli.levers import lever_table
from cli.options import emit_json
from cli.render.console import FILE_WIDTH, output_width
from cli.render.tables import TableSpec, markdown_tables
from cli.render.zeros import json_without_negative_zero, unsigned_zero
from models.io.loading import validate_instance
from solver.analysis.compare import Comparison, Side, rollout
from solver.analysis.lever_solve import LeverResult
from solver.plan.schema import Plan
from tests import synthetic
from tests.paths import INSTANCES, REPO


@pytest.mark.parametrize(
    ("cell", "clean"),
    [
        (f"{-0.3:,.0f}", "0"),  # a cost that rounds to zero from below
        (f"${-0.004:,.2f}", "$0.00"),
        (f"-${0.0:,.0f}", "$0"),
        (f"{-0.001:.0%}", "0%"),
        ("-0 GPUs", "0 GPUs"),
        ("-0.5", "-0.5"),
        ("-0.001", "-0.001"),
        ("-10", "-10"),
        ("tp-0", "tp-0"),
        ("2026-01", "2026-01"),
        ("-", "-"),
    ],
)
def test_a_negative_zero_cell_loses_its_minus_and_nothing_else_does(cell, clean):
    assert unsigned_zero(cell) == clean


def test_no_table_prints_a_negative_zero():
    spec = TableSpec("t", ("cost", "GPUs"), ((f"{-1e-9:,.0f}", f"{-0.2:.0f}"),))
    assert spec.rows == (("0", "0"),)
    assert "-0" not in markdown_tables([], [spec])
    # a signed column says "+0" for a lever whose re-solve costs a fraction of a cent more
    lever = LeverResult(lever="x", cost_per_month=100.3, saving_per_month=-0.3, total_gpus=8)
    (row,) = lever_table((lever,)).rows
    assert row[2] == "+0"


def test_no_json_writes_a_negative_zero(tmp_path):
    assert json_without_negative_zero('{"a": -0.0, "b": [-0.0, -0.01, -0]}') == (
        '{"a": 0.0, "b": [0.0, -0.01, 0]}'
    )
    # a cost a billionth of a dollar below zero is written in cents: round(-1e-9, 2) = -0.0
    plan = Plan(cost_per_month=-1e-9, total_gpus=0)
    assert '"cost_per_month": -0.0' in plan.model_dump_json(indent=2)
    emit_json(tmp_path / "plan.json", plan)
    text = (tmp_path / "plan.json").read_text()
    assert '"cost_per_month": 0.0' in text and "-0.0" not in text


def test_rollout_thresholds_read_as_words():
    # the synthetic chat workload's targets: p99 TTFT 1,000 ms, p99 TPOT 50 ms; its
    # candidate costs $0.100 per million tokens, so rollback above 0.100 x 1.05 = $0.105
    quality = {"metric": "mmlu", "delta": -0.2, "max_regression": 1.0}
    data = synthetic.instance_data(
        {"us": {"h100-sxm": (8, 2.0)}}, [synthetic.workload("c", {"us": 1})]
    )
    candidate = validate_instance(data | {"quality": quality}, "cand")
    side = Side(instance="cand", status="solved", usd_per_million_tokens=0.100)
    plan = rollout(candidate, side, side)
    report = comparison_report(
        Comparison(decision="adopt", reasons=("r",), base=side, candidate=side, rollout=plan)
    )
    (watch,) = [t for t in report.tables if t.title.startswith("Rollout")]
    assert dict(watch.rows) == {
        "c p99 TTFT": "above 1,000 ms",
        "c p99 TPOT": "above 50 ms",
        "$ per million tokens": "above $0.105",
        "mmlu": "change below -1",
    }
    assert (
        threshold_text({"metric": "c error-budget burn rate", "threshold": 14.4}) == "above 14.4x"
    )


def test_output_width_is_columns_when_set():
    assert output_width({"COLUMNS": "70"}, is_terminal=False) == 70
    assert output_width({"COLUMNS": "70"}, is_terminal=True) == 70
    assert output_width({}, is_terminal=False) == FILE_WIDTH
    assert output_width({"COLUMNS": "wide"}, is_terminal=False) == FILE_WIDTH
    assert output_width({}, is_terminal=True) is None  # rich asks the terminal


def test_tables_fit_within_columns_in_a_file():
    env = os.environ | {"COLUMNS": "70", "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "cli.app", "solve", str(INSTANCES / "region-loss-3-baseline.yaml")],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=120, check=True,
    )  # fmt: skip
    drawn = [line for line in done.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert drawn, done.stdout
    assert max(len(line) for line in drawn) <= 70
