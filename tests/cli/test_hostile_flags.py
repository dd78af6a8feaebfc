"""Hostile input, round eight: option values that read as not given. An empty value is
the user's word, not the default."""

import shutil

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION


def _grid(tmp_path):
    instance = tmp_path / "inst.yaml"
    shutil.copy(ONE_MODEL_ONE_REGION, instance)
    grid = tmp_path / "grid.yaml"
    grid.write_text("instance: inst.yaml\naxes:\n  workloads[chat].slo.ttft_p99_ms: [800, 900]\n")
    return grid


@pytest.mark.parametrize("name", ["", "  "])
@pytest.mark.parametrize("command", ["solve", "explain", "sweep", "batch"])
def test_an_empty_backend_is_refused_naming_the_flag(run_cli, tmp_path, command, name):
    # before: '' read as not given: solve, explain, sweep and batch ran the instance's own
    # backend, exit 0 (compare refused it); sweep solved every point of 'gurobi' as bad input
    target = {"sweep": _grid(tmp_path), "batch": _grid(tmp_path).parent}.get(
        command, ONE_MODEL_ONE_REGION
    )
    result = run_checked(run_cli, command, target, "--backend", name)
    assert "command line: --backend:" in result.stderr
    assert "highs, cbc, scip, cpsat" in result.stderr


def test_sweep_refuses_an_unknown_backend_before_any_point(run_cli, tmp_path):
    # before: each point solved and recorded as bad_input, exit 1
    needles = ("command line: --backend: unknown solver backend 'gurobi'",)
    result = run_checked(run_cli, "sweep", _grid(tmp_path), "--backend", "gurobi", needles=needles)
    assert "points" not in result.stderr
