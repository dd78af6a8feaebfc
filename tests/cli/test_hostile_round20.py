"""Hostile input, round twenty: the solver figures a plan states (gaps, times, counts) and
its status hold what a solve can write, in every horizon; a fleet that runs no replica is
refused as an empty one is."""

import json

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

_POOL = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8",
         "tp": 1, "pp": 1, "role": "unified", "count": 3}  # fmt: skip
_RUN = {"name": "highs", "version": "1.16.0", "termination": "feasible", "runtime_s": 1.8,
        "mip_gap": 0.4137, "requested_gap": 0.001, "time_limit_s": 120.0, "threads": 1,
        "variables": 3090, "integer_variables": 2051, "constraints": 4841,
        "candidates": 11}  # fmt: skip
"""procurement-3region's solver record as `solve --json` wrote it (its gap rounded)."""


def _month(month: int, status: str, gap: float | None) -> dict:
    return {"month": month, "growth_factor": 1.05**month, "cost_per_month": 1000.0,
            "status": status, "mip_gap": gap}  # fmt: skip


def _plan(tmp_path, **fields) -> str:
    plan = {"status": "feasible (gap 41.37%)", "replicas": [_POOL], "solver": _RUN, **fields}
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan, indent=1), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        # the leftover: months[1].mip_gap -1 verified (solver figures held finite only)
        (
            {"months": [_month(0, "optimal", 0.0), _month(1, "optimal", -1)]},
            "months[1].mip_gap: Input should be greater than or equal to 0 (got -1)",
        ),
        ({"solver": {**_RUN, "mip_gap": -0.5}}, "solver.mip_gap"),
        ({"solver": {**_RUN, "runtime_s": -3}}, "solver.runtime_s"),
        ({"solver": {**_RUN, "time_limit_s": 0}}, "solver.time_limit_s"),
        ({"solver": {**_RUN, "requested_gap": -0.001}}, "solver.requested_gap"),
        ({"solver": {**_RUN, "threads": 0}}, "solver.threads"),
        ({"solver": {**_RUN, "variables": -1}}, "solver.variables"),
        ({"solver": {**_RUN, "constraints": -4841}}, "solver.constraints"),
        ({"solver": {**_RUN, "candidates": -11}}, "solver.candidates"),
        ({"colocation": {"lp_bound": -5.0}}, "colocation.lp_bound"),
        ({"colocation": {"gap": -0.1}}, "colocation.gap"),
        (
            {"tiering": {"workloads": [], "idle_fraction": 0.1, "enumeration_s": -2}},
            "tiering.enumeration_s",
        ),
    ],
    ids=lambda value: next(iter(value)) if isinstance(value, dict) else value,
)
def test_a_negative_solver_figure_is_refused(run_cli, tmp_path, edit, needle):
    """A gap, a time or a count is >= 0 (a time limit and the threads > 0); the plan
    reader refuses each below, naming its field, before any instance work (exit 2)."""
    plan = _plan(tmp_path, **edit)
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, needles=(needle,))


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        # 41.37% is 41.365 .. 41.375% at two decimals; 0.5 is 50%
        (
            {"months": [_month(0, "optimal", 0.0), _month(1, "feasible (gap 41.37%)", 0.5)]},
            "months[1]: status 'feasible (gap 41.37%)' beside mip_gap 0.5 (50%)",
        ),
        # optimal only within OPTIMAL_GAP_CEILING (1%): 0.4137 is 41%
        ({"status": "optimal"}, "status 'optimal' beside solver.mip_gap 0.4137"),
        ({"status": "feasible (gap unknown)"}, "beside solver.mip_gap 0.4137"),
        ({"months": [_month(0, "optimal", 0.02)]}, "months[0]: status 'optimal'"),
    ],
    ids=["month-gap", "optimal", "unknown", "month-optimal"],
)
def test_a_status_its_gap_contradicts_is_refused(run_cli, tmp_path, edit, needle):
    """A status is written from the gap beside it (solver.plan.schema.plan_status); an
    edited gap or status that no solve writes together is refused naming the record."""
    plan = _plan(tmp_path, **edit)
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, needles=(needle,))


def test_the_status_its_gap_writes_is_read(run_cli, tmp_path):
    """The statuses a solve writes beside their gaps are kept: 41.37% for 0.4137 (it
    reads 41.37 at two decimals), 'optimal' for 1.5e-7 (within 1%), a month without a
    gap. The verdict is the verifier's (3 replicas of 1 GPU for 20 requests/s)."""
    months = [_month(0, "optimal", 1.5e-7), _month(1, "feasible (gap 41.37%)", 0.41369),
              _month(2, "optimal", None)]  # fmt: skip
    plan = _plan(tmp_path, months=months)
    result = run_cli("verify", ONE_MODEL_ONE_REGION, plan)
    assert "status" not in result.stderr and "mip_gap" not in result.stderr, result.stderr
    assert result.exit_code in (0, 1), result.stderr


FLEET_HEADER = "workload,region,gpu,precision,tp,pp,replicas\n"


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        ("", "holds no pool"),  # an empty CSV, refused before
        ("chat,us-east,h100-sxm,fp8,1,1,0\n", "runs no replica: 1 pool (chat in us-east"),
        (
            "chat,us-east,h100-sxm,fp8,1,1,0\nchat,us-east,h100-sxm,fp8,2,1,0\n",
            "runs no replica: 2 pools",
        ),
    ],
    ids=["empty", "one-zero-row", "two-zero-rows"],
)
def test_a_fleet_that_runs_nothing_is_refused(run_cli, tmp_path, rows, needle):
    """A CSV whose only row has 0 replicas wrote the instance unchanged and a plan of no
    replicas (exit 0) where an empty CSV exited 2: both hold no GPU to import, and an
    export that came out empty is more likely the wrong export than a fleet of nothing.
    Now both exit 2 and nothing is written."""
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(FLEET_HEADER + rows, encoding="utf-8")
    out, plan = tmp_path / "prod.yaml", tmp_path / "fleet-plan.json"
    run_checked(
        run_cli, "fleet-import", fleet, "--instance", ONE_MODEL_ONE_REGION,
        "--instance-out", out, "--plan-out", plan, needles=(needle,),
    )  # fmt: skip
    assert not out.exists() and not plan.exists()


def test_a_pool_at_zero_beside_a_running_one_is_kept(run_cli, tmp_path):
    """A pool scaled to zero beside a running pool is a fleet's real state: imported,
    existing = the running pool's 2 replicas x tp 2 = 4 H100s."""
    fleet = tmp_path / "fleet.csv"
    rows = "chat,us-east,h100-sxm,fp8,1,1,0\nchat,us-east,h100-sxm,fp8,2,1,2\n"
    fleet.write_text(FLEET_HEADER + rows, encoding="utf-8")
    out = tmp_path / "prod.yaml"
    result = run_cli(
        "fleet-import", fleet, "--instance", ONE_MODEL_ONE_REGION, "--instance-out", out
    )
    assert result.exit_code == 0, result.stderr
    assert "existing:\n    h100-sxm: 4\n" in out.read_text(encoding="utf-8")


def test_a_nan_below_a_bound_is_said_to_be_a_nan(run_cli, tmp_path):
    """A NaN fails every bound: pydantic's words read 'Input should be greater than or
    equal to 0 (got nan)', as if a number too small; it is said to be no finite number."""
    plan = _plan(tmp_path, solver={**_RUN, "runtime_s": float("nan")})
    result = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan)
    assert "solver.runtime_s: must be a finite number, got nan" in result.stderr
    assert "greater than" not in result.stderr


def test_a_nan_where_text_belongs_is_said_to_need_text(run_cli, tmp_path):
    """Only a number's bound reads a NaN as 'no finite number'; a pool's region given
    NaN still says text belongs there."""
    plan = _plan(tmp_path, replicas=[{**_POOL, "region": float("nan")}])
    result = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan)
    assert "replicas[0].region: must be text, got nan" in result.stderr, result.stderr


_ROW = {"name": "capacity[none,chat,us-east,unified]", "family": "capacity", "slack": 0.0,
        "shadow_price": 1.0}  # fmt: skip
"""A static plan's binding row: no @tHH mark, no month."""


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (
            {"period": 123456789},
            "binding[0].period: capacity[none,chat,us-east,unified] "
            "states period 123456789; its name says no period, and the plan has no hours",
        ),
        (
            {"month": 0},
            "binding[0].month: capacity[none,chat,us-east,unified] states month 0; "
            "it is a row of the plan",
        ),
    ],
    ids=["period", "month"],
)
def test_a_static_plans_row_in_time_fails(run_cli, tmp_path, edit, needle):
    """The static verifier read no binding row's period or month: a static plan (no
    hours, no months) with a row at period 123456789 verified ok. verify now holds it to
    the hour verifier's rule (solver.verify.hour_rows): no hours, no period; no months,
    no month."""
    plan = _plan(tmp_path, binding=[{**_ROW, **edit}])
    result = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, code=1)
    assert needle in result.stderr, result.stderr


def test_a_static_plans_row_without_time_passes(run_cli, tmp_path):
    """The same row with no period and no month is no violation of its time."""
    plan = _plan(tmp_path, binding=[_ROW])
    result = run_cli("verify", ONE_MODEL_ONE_REGION, plan)
    assert "binding[0]" not in result.stderr, result.stderr


RUNS_HEADER = "model,gpu,precision,tp,pp,isl,osl,concurrency,output_tok_s\n"


@pytest.mark.parametrize(
    ("tp", "pp", "needle"),
    [
        ("99999999999", "1", "runs.csv:2: tp: must be at most 1,024, got 99,999,999,999"),
        ("1", "2048", "runs.csv:2: pp: must be at most 1,024, got 2,048"),
    ],
    ids=["tp", "pp"],
)
def test_a_measured_layout_past_the_bound_is_refused(run_cli, tmp_path, tp, pp, needle):
    """calibrate held a row's tp to 'above 0 and below 1e12': tp 99999999999 was warned
    of, left out of the fit and the profile written from the other rows (exit 0, two
    minutes here), where `--tp 99999999999` and an instance's tensor_parallel refuse
    past 1,024 (limits.PARALLEL_DEGREE). The row is refused as the flag is."""
    runs = tmp_path / "runs.csv"
    runs.write_text(RUNS_HEADER + f"llama-3.1-8b,h100-sxm,bf16,{tp},{pp},2000,64,1,81.6\n")
    profile = tmp_path / "p.yaml"
    run_checked(run_cli, "calibrate", runs, "-o", profile, needles=(needle,))
    assert not profile.exists()


def test_a_huge_negative_integer_keeps_its_sign(run_cli, tmp_path):
    """A count below its floor by 2^63 read 'got an integer of about 10^19', as if far
    above: solver.variables -2^63 (fuzzed into a golden's cost_rel_tolerance) now reads
    -10^19 (64 bits x log10(2) = 19.3)."""
    plan = _plan(tmp_path, solver={**_RUN, "variables": -(2**63)})
    result = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan)
    assert "solver.variables: " in result.stderr
    assert "(got an integer of about -10^19)" in result.stderr, result.stderr
