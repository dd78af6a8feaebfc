"""A run stopped without a plan (exit 4) answers `--json` with its status, as an
infeasible one does: `solve ... --json -` in a CI pipeline printed nothing on stdout, and
the reader after it failed on empty input instead of reading why."""

import json

import pytest

from tests.paths import INSTANCES

SMALL = INSTANCES / "region-loss-3.yaml"


@pytest.fixture
def spent(monkeypatch):
    """A deadline spent as soon as it starts: the run stops at its first check, the
    candidates, as a time limit too short for them would (the flag's floor, 0.1 s, solves
    region-loss-3 whole)."""
    from solver.settings import Deadline

    monkeypatch.setattr(Deadline, "expired", lambda self: self.limit_s is not None)


@pytest.mark.parametrize("command", ["solve", "explain"])
def test_a_time_limit_without_a_plan_writes_its_status_as_json(run_cli, spent, command):
    result = run_cli(command, SMALL, "--time-limit", "0.1", "--json", "-")
    assert result.exit_code == 4, result.stderr
    data = json.loads(result.stdout)
    assert data["instance"] == "region-loss-3"
    assert data["status"] == "no_solution" and data["termination"] == "time_limit"
    assert data["stage"] == "candidates"  # the first check
    assert "time limit of 0.1 s reached in candidates" in data["message"]


def test_the_json_file_is_written_too(run_cli, spent, tmp_path):
    out = tmp_path / "plan.json"
    result = run_cli("solve", SMALL, "--time-limit", "0.1", "--json", out)
    assert result.exit_code == 4
    assert json.loads(out.read_text())["status"] == "no_solution"
