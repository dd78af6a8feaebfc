"""The hour verifier trusts nothing an hourly plan states (issue 36): a solved hourly plan
of instances/diurnal-chat-batch.yaml (two regions, reserved, on-demand and spot prices, a
batch soaking the trough, an error budget per region loss), tampered in any one numeric
figure, fails `fleetplan verify` (exit 1 naming it, or 2 where the plan schema refuses the
value), through the command line.

Figures the instance cannot recompute are held finite only (solver.verify.hour_figures):
tampering them with NaN or an infinity fails, any finite value passes."""

import json
import math
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.test_hostile_input import run_checked
from tests.cli.test_hostile_properties import _emit, _mutated, _paths
from tests.paths import INSTANCES
from tests.solved_once import diurnal_at_a_5_percent_gap

DIURNAL = INSTANCES / "diurnal-chat-batch.yaml"

HELD_FINITE_ONLY = {
    r"solver\..*": "the solver's own run (time, sizes, gap)",
    r"binding\[\]\.(slack|shadow_price)": "the program's rows and duals: the verifier "
    "reads no program (as for a static plan)",
    r"power_kw\[\]\.shadow_price_per_kw": "a dual of the pricing LP",
    r"headroom\[\]\.(target_utilization|kv_usage_scale_out|queue_depth_scale_out"
    r"|queue_depth_slo_edge)": "scale-out thresholds: the lone replica's batch and prefill "
    "time are the candidate table's",
    r"batch\[\]\.breakeven_price_per_gpu_hour": "the program's choice among configurations",
    r"hours\[\]\.failover_starts\[\]\.pool\.requests_per_s_per_replica": "a stated "
    "capacity that differs from the physics is a warning (solver.verify.fleet step 1)",
    r"hours\[\]\.scenarios\[\]\.pools\[\]\.capacity_requests_per_s": "the program's "
    "capacity of a phase: a row's load is judged on the recomputed one (and its utilisation "
    "on the stated one), so only a row with no load leaves it unread",
    r"(replicas|hours\[\]\.pools)\[\]\.capacity_band\..*": "the model error band describes "
    "the capacity: one other than the calibration's is a warning (solver.verify.pools)",
    r"(demand_growth|max_utilization)": "left at their defaults by the hourly planner",
    r"cost_attribution\[\]\.usd_per_million_(input|output)_tokens": "tokens served need the "
    "periods' routing (solver.verify.attribution: held finite and >= 0)",
}
"""Field patterns (list indices as []) whose finite values the verifier cannot recompute."""


@pytest.fixture(scope="module")
def plan_data(tmp_path_factory):
    """A solved hourly plan of DIURNAL as `solve --json` writes it (a 5% gap: any plan the
    solver returns has passed the verifier, and a looser gap solves in a few seconds),
    solved once a run for this module and test_verify_hour_scenarios.py."""
    return diurnal_at_a_5_percent_gap(tmp_path_factory)[1]


@pytest.fixture(scope="module")
def figures(plan_data):
    """(path, pattern) of every number in the plan."""

    def is_number(path):
        value = plan_data
        for key in path:
            value = value[key]
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    found = []
    for path in _paths(plan_data):
        if path[0] == "hours" and path[2:3] == ("scenarios",) and path[1] != 0:
            continue  # held finite only: hour 0's table stands for the 24 (a third of the plan)
        if is_number(path):
            pattern = ".".join("[]" if isinstance(key, int) else key for key in path)
            found.append((path, pattern.replace(".[]", "[]")))
    return found


def _value(data, path):
    for key in path:
        data = data[key]
    return data


def _verify(run_cli, tmp_path, data, code):
    plan = tmp_path / "plan.json"
    plan.write_text(_emit(data, "json"), encoding="utf-8")
    return run_checked(run_cli, "verify", DIURNAL, plan, code=code)


def test_the_solved_hourly_plan_passes_and_covers_the_hour_figures(run_cli, tmp_path, plan_data):
    assert plan_data["hours"] and plan_data["batch"] and plan_data["error_budget_minutes_used"]
    assert any(h["failover_starts"] for h in plan_data["hours"])
    _verify(run_cli, tmp_path, plan_data, 0)


@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_non_finite_month_cost_fails_naming_it(run_cli, tmp_path, plan_data, value):
    result = _verify(run_cli, tmp_path, _mutated(plan_data, ("cost_per_month",), value), 1)
    assert f"cost_per_month: is {value}" in result.stdout + result.stderr
    # stopped before its arithmetic: no "$0/month recomputed, 0 scenario checks" header
    assert "nothing recomputed: a number in the plan is not finite" in result.stderr
    assert "recomputed," not in result.stderr


def test_ten_times_the_replicas_and_a_zeroed_gpu_table_fail(run_cli, tmp_path, plan_data):
    data = json.loads(json.dumps(plan_data))
    for entry in data["replicas"]:
        entry["count"] *= 10
    for row in data["gpus"]:
        for name in ("used", "existing", "purchased", "available", "cost_per_month"):
            row[name] = 0
    result = _verify(run_cli, tmp_path, data, 1)
    text = result.stdout + result.stderr
    assert "replicas[0].count" in text and "gpus[0].used" in text
    assert "gpus[0].cost_per_month" in text and "total_gpus" not in text  # left as solved


def test_the_cost_attribution_adds_up_to_the_bill(run_cli, tmp_path, plan_data):
    """Each hour's bill is shared out among its pools (solver.analysis.hour_attribution):
    the rows add up to the plan's cost; one row doubled fails."""
    rows = plan_data["cost_attribution"]
    assert {row["workload"] for row in rows} >= {"chat"}
    assert math.fsum(row["cost_per_month"] for row in rows) == pytest.approx(
        plan_data["cost_per_month"], abs=0.01
    )
    doubled = _mutated(
        plan_data, ("cost_attribution", 0, "cost_per_month"), 2 * rows[0]["cost_per_month"]
    )
    result = _verify(run_cli, tmp_path, doubled, 1)
    assert "cost_attribution: its rows add up to" in result.stdout + result.stderr


def test_a_shifted_idle_share_fails_naming_it(run_cli, tmp_path, plan_data):
    """idle_fraction is recomputed from the hours (solver.verify.hour_idle): moved by
    5 points either way, it fails."""
    stated = plan_data["idle_fraction"]
    assert 0.05 < stated < 0.95  # diurnal pays for idle trough hours, and serves some
    for shifted in (stated - 0.05, stated + 0.05):
        data = _mutated(plan_data, ("idle_fraction",), shifted)
        result = _verify(run_cli, tmp_path, data, 1)
        assert "idle_fraction: states" in result.stdout + result.stderr


def test_a_binding_row_moved_to_another_period_fails(run_cli, tmp_path, plan_data):
    """A row's period is its name's and one of the hours' periods (solver.verify.hour_rows)."""
    index, row = next((i, b) for i, b in enumerate(plan_data["binding"]) if b["period"])
    data = _mutated(plan_data, ("binding", index, "period"), 0 if row["period"] else 1)
    result = _verify(run_cli, tmp_path, data, 1)
    assert f"binding[{index}].period" in result.stdout + result.stderr


@settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=10
)
@given(data=st.data())
def test_any_tampered_figure_fails(run_cli, tmp_path, plan_data, figures, data):
    """10 tampered figures a run, new ones every run: each is a whole `fleetplan verify`
    of the 24 hours (~0.15 s of CPU; 30 were 5 s, the module's most). The hand-made
    tamperings above pin the figures whose checks are their own."""
    path, pattern = data.draw(st.sampled_from(figures), label="figure")
    value = _value(plan_data, path)
    finite_only = any(re.fullmatch(p, pattern) for p in HELD_FINITE_ONLY)
    tampers = [math.nan, math.inf] if finite_only else [math.nan, math.inf, value * 10 + 1]
    if not finite_only and value != 0:
        tampers.append(0)
    tampered = data.draw(st.sampled_from(tampers), label="tampered")
    if isinstance(value, int) and not isinstance(tampered, float):
        tampered = int(tampered)
    result = _verify(run_cli, tmp_path, _mutated(plan_data, path, tampered), None)
    assert result.exit_code in (1, 2), (pattern, value, tampered)


TABLES_OF_ONE_ROW_EACH = ("servers", "power_kw", "committed", "cost_attribution", "headroom",
                          "error_budget_minutes_used", "batch")  # fmt: skip


def test_a_row_given_twice_fails_naming_both(run_cli, tmp_path, plan_data):
    """Each table's check read its rows one by one (or by key, keeping the last): a
    second `servers` row of one region and GPU (a buyer orders twice), a second `power_kw`,
    `headroom`, `error_budget_minutes_used` or `batch` row verified ok; `committed` and
    `cost_attribution` failed only on a sum their copy moved. Every table's first row
    given again, in one plan: each copy is named with the row it repeats."""
    doctored = dict(plan_data)
    for table in TABLES_OF_ONE_ROW_EACH:
        assert plan_data[table]  # the diurnal plan states every one of these tables
        doctored[table] = [*plan_data[table], plan_data[table][0]]
    result = _verify(run_cli, tmp_path, doctored, 1)
    for table in TABLES_OF_ONE_ROW_EACH:
        copy = len(plan_data[table])
        assert f"{table}[{copy}]: " in result.stderr, table
        assert f"is {table}[0] again: each once" in result.stderr, table
