"""`report` and `simulate` against hostile plans and names (issue 36): a plan the verifier
rejects is not drawn (a count of 10^12 replicas hung `report --plan`), a name holding
`$...$` is text, not matplotlib math (exit 70), the same plan gives the same file byte for
byte (the SVGs carried their date), and a FIFO as the plan is refused, not waited on."""

import json
import os

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked
from tests.guards import failing_after
from tests.paths import INSTANCES, ONE_MODEL_ONE_REGION


@pytest.fixture
def hang_guard():
    """Fail instead of hanging the suite when a command runs past 60 s."""
    with failing_after(60, "the command"):
        yield


@pytest.fixture
def solved(run_cli, tmp_path):
    """An instance named with matplotlib math that does not parse, and its plan."""
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    data["name"] = "cost in $x^$ per month"  # "$x^$" is a mathtext syntax error
    source = tmp_path / "dollars.yaml"
    source.write_text(yaml.safe_dump(data), encoding="utf-8")
    plan = tmp_path / "plan.json"
    assert run_cli("solve", source, "--json", plan).exit_code == 0
    return source, plan


def test_a_name_with_dollars_is_drawn_as_written_and_the_file_is_reproducible(
    run_cli, tmp_path, solved
):
    source, plan = solved
    first, second = tmp_path / "a.html", tmp_path / "b.html"
    run_checked(run_cli, "report", source, "--plan", plan, "-o", first, code=0)
    run_checked(run_cli, "report", source, "--plan", plan, "-o", second, code=0)
    text = first.read_text(encoding="utf-8")
    assert "cost in $x^$ per month" in text
    assert "<dc:date>" not in text  # no timestamp in the charts' metadata
    assert first.read_bytes() == second.read_bytes()


@pytest.mark.parametrize(
    ("field", "value"), [("count", 10**12), ("cost_per_month", float("nan"))], ids=str
)
def test_a_plan_the_verifier_rejects_is_not_drawn(
    run_cli, tmp_path, solved, hang_guard, field, value
):
    source, plan = solved
    data = json.loads(plan.read_text(encoding="utf-8"))
    if field == "count":
        data["replicas"][0]["count"] = value
    else:
        data[field] = value
    plan.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "report.html"
    result = run_checked(run_cli, "report", source, "--plan", plan, "-o", out, code=1)
    assert "report refused" in result.stderr and not out.exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_plan_is_refused_by_simulate(run_cli, tmp_path, hang_guard):
    fifo = tmp_path / "plan.json"
    os.mkfifo(fifo)  # nothing ever writes to it
    run_checked(run_cli, "simulate", ONE_MODEL_ONE_REGION, fifo, needles=("FIFO",))


@pytest.mark.parametrize("tamper", ["no replicas", "a pool on mars", "another instance's plan"])
def test_simulate_replays_only_a_plan_the_verifier_accepts(run_cli, tmp_path, solved, tamper):
    """It replayed the counts in the scenario text: all three reported ok (exit 0)."""
    source, plan = solved
    if tamper == "another instance's plan":
        run_checked(run_cli, "solve", INSTANCES / "unified.yaml", "--json", str(plan), code=0)
    else:
        data = json.loads(plan.read_text(encoding="utf-8"))
        for entry in data["replicas"]:
            if tamper == "no replicas":
                entry["count"], entry["gpus"] = 0, 0
            else:
                entry["region"] = "mars"
        plan.write_text(json.dumps(data), encoding="utf-8")
    quick = ("--minutes", "0.05", "--no-tolerance")
    result = run_checked(run_cli, "simulate", source, plan, *quick, code=1)
    assert "simulate refused" in result.stderr
