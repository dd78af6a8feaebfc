"""The hourly path under the pipeline's guards (issue 32): the same deadline and its
shares, the same size guard (counting every period's copy of the static program) and the
same exit codes as a peak-hour plan.

The instance: Llama 3.3 70B chat in three regions with a 24-hour profile each (their
peaks at different UTC hours, so the day splits into many periods), reserved pricing,
99.9% availability and a 300 s failover start: one periods program of ~2,800 variables
(~1,500 integer) that HiGHS proves within its 0.1% gap only after about 21 s of solving
(measured on the shared two-core machine)."""

import pytest
import yaml

from models.io.loading import validate_instance
from models.operations.time_demand import uses_time
from models.schema import limits, program_limits
from solver.candidates.size_check import measure_periods, measure_program
from solver.candidates.table import build_candidates
from solver.time.periods import build_time_program, interactive_table
from solver.time.solve import period_instances
from tests.cli.test_hostile_input import run_checked
from tests.guards import ticking_clock

PROFILE_EAST = [1, 1, 1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1]
PROFILE_WEST = [1, 1, 1, 1, 2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1]
PROFILE_EU = [2, 3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1]


def _offer(on_demand: float, max_gpus: int) -> dict:
    return {
        "max_gpus": max_gpus,
        "price_per_gpu_hour": on_demand,
        "reserved_price_per_gpu_hour": round(0.6 * on_demand, 2),
    }


DATA = {
    "name": "hourly-failover-3",
    "gpus": [{"name": "h100-sxm"}, {"name": "h200"}],
    "models": [{"name": "llama-3.3-70b", "weight_precisions": ["fp8"]}],
    "regions": [
        {"name": "us-east", "supply": {"h100-sxm": _offer(2.4, 256), "h200": _offer(3.1, 128)}},
        {"name": "us-west", "supply": {"h100-sxm": _offer(2.5, 256), "h200": _offer(3.2, 128)}},
        {"name": "eu-west", "supply": {"h100-sxm": _offer(2.9, 256)}},
    ],
    "links": [["us-east", "us-west", 60], ["us-east", "eu-west", 75], ["us-west", "eu-west", 140]],
    "workloads": [
        {
            "name": "chat",
            "model": "llama-3.3-70b",
            "demand": {
                "us-east": {"requests_per_day": 1_500_000, "hourly_profile": PROFILE_EAST},
                "us-west": {"requests_per_day": 1_000_000, "hourly_profile": PROFILE_WEST},
                "eu-west": {"requests_per_day": 800_000, "hourly_profile": PROFILE_EU},
            },
            "prompt_tokens": {"mean": 1500, "p99": 6000},
            "output_tokens": {"mean": 300, "p99": 1000},
            "slo": {
                "ttft_p99_ms": 1000,
                "tpot_p99_ms": 60,
                "availability": 0.999,
                "max_failover_rtt_ms": 150,
            },
        }
    ],
    "policy": {
        "survive": "region",
        "failover_start_s": 300,
        "tensor_parallel": [2, 4, 8],
        "pipeline_parallel": [1],
        "hours_per_month": 730,
        "scale_detection_s": 60,
    },
    "solver": {"backend": "highs", "time_limit_s": 120, "mip_gap": 0.001},
}


@pytest.fixture
def hourly_file(tmp_path):
    path = tmp_path / "hourly-failover-3.yaml"
    path.write_text(yaml.safe_dump(DATA))
    return path


def test_the_instance_plans_in_time():
    assert uses_time(validate_instance(DATA, "hourly-failover-3.yaml"))


def test_the_hourly_run_stops_at_its_limit_in_the_stage_it_reached(
    run_cli, hourly_file, monkeypatch
):
    """--time-limit 0.3 on a clock of 0.3 / 64 s a reading (tests.guards.ticking_clock):
    the limit passes at the 64th reading, in the periods program's build (candidates
    read the clock ~20 times, the build ~150), and the build's next check stops the run:
    exit 4 naming the stage, at 0.3 s, with no peak plan to fall back on. The wall's
    0.3 s and 10 s limits (a plan stopped by the limit, its gap stated) are measured in
    tests/bench/test_time_limits_wall.py."""
    ticking_clock(monkeypatch, 0.3 / 64)
    result = run_cli("solve", hourly_file, "--time-limit", "0.3")
    assert result.exit_code == 4, result.stderr
    assert "Traceback" not in result.stderr
    assert "time limit of 0.3 s reached in program build after 0.3 s" in result.stderr
    assert "the day's peak plan, its fallback, was not found in time either" in result.stderr


def test_the_hourly_size_guard_counts_every_period():
    """The guard's count of the hourly program is the sum of its periods' static copies,
    each counted as the built program holds it (pools and routes)."""
    inst = validate_instance(DATA, "hourly-failover-3.yaml")
    table = build_candidates(inst)
    program = build_time_program(inst, table)
    size = measure_periods(period_instances(inst), interactive_table(inst, table))
    assert size.complete and len(program.periods) > 1
    assert size.pools == sum(len(part.program.sets.pools) for part in program.periods)
    assert size.routes == sum(
        len(pairs) for part in program.periods for pairs in part.program.sets.routes.values()
    )
    assert size.variables <= program.lp.size()["variables"]


def test_an_hourly_program_beyond_the_time_limit_exits_4_naming_its_periods(
    run_cli, hourly_file, monkeypatch
):
    """Rate set so that 2 s allows less than the day's periods but more than one of them:
    the static count would pass, the hourly one is refused before any build."""
    inst = validate_instance(DATA, "hourly-failover-3.yaml")
    table = interactive_table(inst, build_candidates(inst))
    hours = period_instances(inst)
    whole = measure_periods(hours, table).variables
    one = max(measure_program(hour, table).variables for hour in hours)
    assert len(hours) > 2 and 2 * one < whole
    monkeypatch.setattr(program_limits, "VARIABLES_ANY_TIME_LIMIT", 1)
    monkeypatch.setattr(program_limits, "VARIABLES_PER_SOLVER_S", whole // 4)  # 2 s: whole / 2
    run_checked(
        run_cli,
        "solve",
        hourly_file,
        "--time-limit",
        "2",
        code=4,
        needles=(
            "not started: the program would hold at least",
            f"in {len(hours)} periods of the day",
            "more than a backend solves in 2 s",
        ),
    )


def test_an_hourly_program_beyond_the_build_limit_exits_2(run_cli, hourly_file, monkeypatch):
    monkeypatch.setattr(
        program_limits, "PROGRAM_VARIABLES", limits.Most(20, "program variables", "a test limit")
    )
    run_checked(
        run_cli,
        "solve",
        hourly_file,
        needles=("the program would hold at least", "at most 20 program variables"),
    )
