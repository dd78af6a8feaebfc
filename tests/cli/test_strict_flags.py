"""Strict numbers on every numeric flag (issue 36), through the real entry point.

NaN, infinity and a value beyond the flag's bound in models/schema/limits.py or flag_limits.py
exit 2 with a message that names the flag, before any work (the flags are checked as they
are parsed, by `cli.options.within`); `--jobs` is capped at the CPU count, with a warning.
"""

import time

import pytest

from cli.app import COMMANDS, load_command
from cli.options import capped_at_cores
from models.schema import limits

NOT_BY_WITHIN = {
    ("solve", "--threads"): "checked against the CPU count with the instance's solver section",
    ("explain", "--threads"): "checked against the CPU count with the instance's solver section",
    ("voice", "--first-clause-tokens"): "an integer with typer's own range, 1 to 100,000",
}
"""Numeric flags held by something other than `within`, and by what."""


def _numeric_options() -> list[tuple[str, str, str, object]]:
    """(command, flag, "int" or "float", the option) of every numeric option."""
    found = []
    for name in COMMANDS:
        for option in load_command(name).params:
            kind = option.bare_type()
            if kind in ("int", "float") and option.opts[0].startswith("-"):
                found.append((name, max(option.opts, key=len), kind, option))
    return found


NUMERIC = _numeric_options()
FLOATS = [(command, flag) for command, flag, kind, _ in NUMERIC if kind == "float"]


def test_the_flags_found_include_the_calculators_and_the_solver():
    """The discovery sees what the issue names (a guard against finding nothing)."""
    flags = {(command, flag) for command, flag, _, _ in NUMERIC}
    assert {
        ("perf", "--rate"),
        ("estimate", "--peak-to-average"),
        ("headroom", "--servers"),
    } <= flags
    assert {("simulate", "--minutes"), ("solve", "--mip-gap"), ("sweep", "--jobs")} <= flags
    assert len(FLOATS) >= 40


@pytest.mark.parametrize(("command", "flag", "kind", "option"), NUMERIC, ids=lambda v: str(v))
def test_every_numeric_flag_has_a_bound_or_a_cap(command, flag, kind, option):
    """Each numeric flag is held to a bound of models/schema/limits.py or flag_limits.py
    (`within`), capped at the cores (`--jobs`), or named in NOT_BY_WITHIN with what holds it."""
    if (command, flag) in NOT_BY_WITHIN:
        return
    if flag == "--jobs":
        assert getattr(option.callback, "__wrapped__", None) is capped_at_cores
        return
    bound = getattr(option.callback, "bound", None)
    assert isinstance(bound, limits.Bound), f"{command} {flag} takes any {kind}"


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
@pytest.mark.parametrize(("command", "flag"), FLOATS)
def test_nan_and_infinity_exit_2_naming_the_flag(run_cli, command, flag, value):
    result = run_cli(command, f"{flag}={value}")
    assert result.exit_code == 2, result.stderr
    assert f"{flag}: must be a finite number, got {value}" in result.stderr


@pytest.mark.parametrize(("command", "flag"), FLOATS)
def test_1e308_exits_2_with_the_bound_and_its_reason(run_cli, command, flag):
    """Every bound lies far below 1e308, and the message says why it is where it is."""
    result = run_cli(command, f"{flag}=1e308")
    assert result.exit_code == 2, result.stderr
    assert f"{flag}: must be " in result.stderr and "got 1e+308 (the bound: " in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("perf", "--input-p99-tokens", "nan"),
            "--input-p99-tokens: must be a finite number, got nan",
        ),
        (
            ("estimate", "--peak-to-average", "1e308"),
            "--peak-to-average: must be at most 100, got 1e+308",
        ),
        (("simulate", "--minutes", "inf"), "--minutes: must be a finite number, got inf"),
        (("simulate", "--seed", "-1"), "--seed: must be at least 0, got -1"),
        (("perf", "--tp", "2048"), "--tp: must be at most 1,024, got 2,048"),
        (("estimate", "--zones", "100"), "--zones: must be at most 16 zones, got 100"),
        (("voice", "--ttft-share", "1"), "--ttft-share: must be below 1, got 1"),
        (("solve", "--time-limit", "0"), "--time-limit: must be at least 0.1 s, got 0"),
        (("solve", "--mip-gap", "1"), "--mip-gap: must be below 1, got 1"),
    ],
)
def test_the_issues_cases_exit_2_naming_the_flag(run_cli, args, message):
    result = run_cli(*args)
    assert result.exit_code == 2, result.stderr
    assert message in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("perf", "-g", "h100-sxm", "-m", "llama-3.1-8b", "-i", "1000", "-o", "200"),
        ("headroom", "--prefill-ms", "100", "--ttft-p99-ms", "1000"),
    ],
)
@pytest.mark.parametrize("replicas", [10_001, 10**9])
def test_a_billion_replicas_behind_one_queue_is_refused_at_once(run_cli, args, replicas):
    """`perf --pool-replicas 1e9` and `headroom --servers 1e9` hung: the M/G/c wait sums
    c terms. The bound is 10,000 replicas (flag_limits.POOL_REPLICAS); one more is refused."""
    flag = "--pool-replicas" if args[0] == "perf" else "--servers"
    started = time.process_time()  # CPU: a blow-up, not the machine's load
    result = run_cli(*args, flag, str(replicas))
    assert time.process_time() - started < 10
    assert result.exit_code == 2, result.stderr
    assert f"{flag}: must be at most 10,000 replicas, got {replicas:,}" in result.stderr


def test_perf_rate_nan_no_longer_reports_nan_requests_per_s(run_cli):
    result = run_cli(
        "perf", "-g", "h100-sxm", "-m", "llama-3.1-8b", "-i", "1000", "-o", "200", "--rate=nan"
    )
    assert result.exit_code == 2
    assert "nan requests/s" not in result.stdout
    assert "--rate: must be a finite number, got nan" in result.stderr


@pytest.mark.parametrize(
    "args",
    [("batch", "{empty}"), ("sweep", "{empty}/grid.yaml"), ("explain", "{empty}/x.yaml")],
)
def test_jobs_beyond_the_cores_are_capped_with_a_warning(run_cli, monkeypatch, tmp_path, args):
    """On a 2-CPU machine (max_threads patched), `--jobs 64` runs 2 at a time and says so;
    the command goes on (here to its own complaint about the missing input)."""
    monkeypatch.setattr(limits, "max_threads", lambda: 2)
    result = run_cli(*(arg.format(empty=tmp_path) for arg in args), "--jobs", "64")
    assert "warning: --jobs 64 is more than this machine's 2 CPUs; running 2 at a time" in (
        result.stderr
    )


def test_jobs_within_the_cores_say_nothing(run_cli, monkeypatch, tmp_path):
    monkeypatch.setattr(limits, "max_threads", lambda: 2)
    result = run_cli("batch", str(tmp_path), "--jobs", "2")
    assert "warning: --jobs" not in result.stderr


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("peak_to_average: 1e308", "peak_to_average: must be at most 100, got 1e+308"),
        ("latency_s: .inf", "latency_s: Input should be a finite number"),
        ("window_days: 1e9", "window_days: must be at most 3,660 days"),
    ],
)
def test_estimate_config_file_holds_the_same_bounds_as_the_flags(run_cli, tmp_path, line, message):
    """`estimate --config` reads the assumptions the flags give, into the same bounded
    record (EstimateAssumptions): 1e308 there exited 70 (an overflow in the GPU count)."""
    config = tmp_path / "assumptions.yaml"
    config.write_text(line + "\n")
    result = run_cli("estimate", "--config", str(config))
    assert result.exit_code == 2, result.stderr
    assert f"{config}:1: {message}" in result.stderr
