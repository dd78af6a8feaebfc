"""The time limits of the default suite's tests, on the wall: a run given --time-limit
L ends within a margin of it on this machine. Run by `make bench` only (not `make
test`): they time the run, and under load a timed assertion fails for the machine's
sake. The default suite holds the same runs on a clock of readings
(tests.guards.ticking_clock): tests/solver/time/test_time_limit.py and
tests/cli/test_outputs_and_limits.py, where these tests were until suite25."""

import json
import time

import pytest
import yaml

from tests.solver.time.test_time_limit import DATA
from tests.synthetic import generated


@pytest.fixture
def hourly_file(tmp_path):
    """tests/solver/time/test_time_limit.py's hourly instance (DATA), written."""
    path = tmp_path / "hourly-failover-3.yaml"
    path.write_text(yaml.safe_dump(DATA))
    return path


def test_time_limit_10_bounds_the_hourly_run(run_cli, hourly_file):
    """TIMING TEST (about 10 s): the solve stops at SOLVE_SHARE x 10 s = 8 s with the
    incumbent in hand, which is priced (by 9.5 s at most) and verified hour by hour; or,
    on a machine too slow to have a plan by then, exit 4 naming the stage. The margin of
    2 s over the limit is the issue's ("at most about 12 s")."""
    started = time.monotonic()
    result = run_cli("solve", hourly_file, "--time-limit", "10")
    wall_s = time.monotonic() - started
    assert wall_s <= 10 + 2, f"{wall_s:.1f} s"
    assert "Traceback" not in result.stderr
    if result.exit_code == 4:
        assert "time limit of 10 s reached in" in result.stderr
        assert any(s in result.stderr for s in ("candidates", "program build", "solve"))
    else:
        assert result.exit_code == 0, result.stderr
        header = result.stdout.splitlines()[0]
        assert "optimal" in header or "feasible" in header
        assert "gap" in result.stdout  # a plan stopped by the limit states its gap


def test_a_limit_below_the_first_incumbent_exits_4_naming_the_stage(run_cli, hourly_file):
    """With 0.3 s the solve gets 80% of it, less what candidates and the build took: no
    incumbent by then on this machine (the first comes after ~1 s), so exit 4 naming the
    stage it stopped in, promptly. A machine that finds the day's peak plan by then (a
    faster one, or a loaded one whose build the peak solve outran) answers with that
    fleet held every hour past the limit (the README's "plans after the deadline"): a
    plan, its gap stated, once it is read back and verified, so that ending is bounded
    looser (a hang, not the read-back, is what it catches)."""
    started = time.monotonic()
    result = run_cli("solve", hourly_file, "--time-limit", "0.3")
    wall_s = time.monotonic() - started
    assert "Traceback" not in result.stderr
    if result.exit_code == 4:
        assert wall_s <= 0.3 + 2, f"{wall_s:.1f} s"
        assert "time limit of 0.3 s reached in" in result.stderr
        assert any(s in result.stderr for s in ("candidates", "program build", "solve"))
    else:
        assert result.exit_code == 0, result.stderr
        assert wall_s <= 0.3 + 30, f"{wall_s:.1f} s"
        assert "gap" in result.stdout


def test_time_limit_bounds_the_whole_run(run_cli, tmp_path):
    """TIMING TEST (about 2 s): a generated instance of 10 regions x 20 workloads x 6 GPU
    types surviving any region loss, small enough to pass the program-size check, takes
    far longer than 1 s to evaluate its candidates, build and solve (about 5.5 s on two
    idle cores, 11 s of CPU); with --time-limit 1 the command must end with exit 4 naming
    the stage. Margin asserted: 1 s + 8 s (generous, so never flaky). (3 x 30 x 6, this
    test's instance before the solver got faster, now solves within 2 s.)"""
    data = json.loads(generated(10, 20, 6).model_dump_json(exclude_unset=True))
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    started = time.monotonic()
    result = run_cli("solve", path, "--time-limit", "1")
    wall_s = time.monotonic() - started
    assert result.exit_code == 4, result.stderr
    assert "time limit of 1 s reached in" in result.stderr
    assert any(stage in result.stderr for stage in ("candidates", "program build", "solve"))
    assert wall_s < 1 + 8
