"""The verifier trusts nothing a plan states (issue 16): doctored totals, non-finite numbers
and absurd replica counts in a solved plan are violations naming the field (exit 1), an
unreadable plan file is bad input (exit 2), and a fleet written by hand without totals is
still verified on its replicas alone."""

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.io.loading import load_instance
from solver.plan.schema import Plan
from solver.verify.fleet import verify
from tests.cli.test_hostile_input import run_checked
from tests.cli.test_hostile_properties import _emit, _mutated, _paths
from tests.guards import failing_after
from tests.paths import DEFAULT_INSTANCE


@pytest.fixture(scope="module")
def instance():
    return load_instance(DEFAULT_INSTANCE)


@pytest.fixture(scope="module")
def plan_data(default_plan):
    """The reference instance's solved plan, as `solve --json` writes it."""
    return json.loads(default_plan.model_dump_json())


@pytest.fixture
def hang_guard():
    """Fail instead of hanging the suite when a verify runs past 20 s (no timing
    assertion: a slow machine passes, a loop over 10^12 replicas does not)."""
    with failing_after(20, "verify"):
        yield


def _write(tmp_path, data, name="plan.json"):
    path = tmp_path / name
    path.write_text(_emit(data, "json"))
    return path


def _verify_cli(run_cli, plan_file, code, *needles):
    return run_checked(run_cli, "verify", DEFAULT_INSTANCE, plan_file, code=code, needles=needles)


def _gpus_used(data, region, gpu):
    """GPUs the plan's replicas use in (region, gpu): sum of count x tp x pp x dp."""
    return sum(
        e["count"] * e["tp"] * e["pp"] * e["dp"]
        for e in data["replicas"]
        if (e["region"], e["gpu"]) == (region, gpu)
    )


def test_the_solved_plan_itself_passes(run_cli, tmp_path, plan_data):
    _verify_cli(run_cli, _write(tmp_path, plan_data), 0)


# --- doctored totals --------------------------------------------------------------------


def test_gpus_table_saying_nothing_was_bought_for_free_fails(run_cli, tmp_path, plan_data):
    row = plan_data["gpus"][0]
    used = _gpus_used(plan_data, row["region"], row["gpu"])
    bought = -(-(used - row["existing"]) // 8) * 8  # whole 8-GPU servers (buy_unit: node)
    assert bought > 0  # the reference plan buys GPUs in its first region
    doctored = _mutated(plan_data, ("gpus", 0, "purchased"), 0)
    doctored = _mutated(doctored, ("gpus", 0, "cost_per_month"), 0.0)
    cost = bought * row["price_per_gpu_hour"] * 730  # hours_per_month of chat-3region
    _verify_cli(
        run_cli,
        _write(tmp_path, doctored),
        1,
        f"gpus[0].purchased: {row['region']} {row['gpu']}: states 0; used less existing, "
        f"in whole units, needs {bought}",
        f"gpus[0].cost_per_month: {row['region']} {row['gpu']}: states $0.00/month; "
        f"{bought} bought x ${row['price_per_gpu_hour']:g}/GPU-hour x 730 h = ${cost:,.2f}",
    )


def test_changed_used_count_fails_with_both_counts(run_cli, tmp_path, plan_data):
    row = plan_data["gpus"][1]
    used = _gpus_used(plan_data, row["region"], row["gpu"])
    doctored = _mutated(plan_data, ("gpus", 1, "used"), used - 1)
    _verify_cli(
        run_cli,
        _write(tmp_path, doctored),
        1,
        f"gpus[1].used: {row['region']} {row['gpu']}: states {used - 1}; the replicas use {used}",
    )


def test_replica_cost_of_one_dollar_fails(run_cli, tmp_path, plan_data):
    entry = plan_data["replicas"][0]
    gpus = entry["count"] * entry["tp"] * entry["pp"] * entry["dp"]
    price = next(
        r["price_per_gpu_hour"]
        for r in plan_data["gpus"]
        if (r["region"], r["gpu"]) == (entry["region"], entry["gpu"])
    )
    doctored = _mutated(plan_data, ("replicas", 0, "cost_per_month"), 1.0)
    _verify_cli(
        run_cli,
        _write(tmp_path, doctored),
        1,
        "replicas[0].cost_per_month:",
        f"states $1.00/month; {gpus} GPUs x ${price:g}/GPU-hour x 730 h = "
        f"${gpus * price * 730:,.2f}",
    )


def test_stated_limit_other_than_the_physics_is_a_warning(instance, plan_data):
    """A limiting factor is an explanation, not a requirement: the plan still holds."""
    stated = plan_data["replicas"][0]["limit"]
    other = "kv_memory" if stated != "kv_memory" else "compute"
    doctored = _mutated(plan_data, ("replicas", 0, "limit"), other)
    result = verify(instance, Plan.model_validate(doctored))
    assert result.ok
    (warning,) = result.warnings
    assert warning.message.startswith(f"states limit {other}; the physics says {stated}")


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_total_cost_fails_naming_the_field(run_cli, tmp_path, plan_data, value):
    doctored = _mutated(plan_data, ("cost_per_month",), value)
    _verify_cli(run_cli, _write(tmp_path, doctored), 1, f"cost_per_month: is {value}")


def test_non_finite_numbers_deep_in_the_plan_are_named(instance, plan_data):
    doctored = _mutated(plan_data, ("scenarios", 0, "routing", 0, "requests_per_s"), math.nan)
    doctored = _mutated(doctored, ("replicas", 1, "requests_per_s_per_replica"), math.inf)
    # inf: a NaN runtime is refused by the plan reader (>= 0), as a NaN pool capacity is
    doctored = _mutated(doctored, ("solver", "runtime_s"), math.inf)
    names = {v.requirement for v in verify(instance, Plan.model_validate(doctored)).violations}
    assert {
        "scenarios[0].routing[0].requests_per_s",
        "replicas[1].requests_per_s_per_replica",
        "solver.runtime_s",
    } <= names


def test_cent_off_cost_fails_and_float_noise_passes(instance, plan_data):
    cost = plan_data["cost_per_month"]
    noisy = _mutated(plan_data, ("cost_per_month",), cost * (1 + 1e-15))
    assert verify(instance, Plan.model_validate(noisy)).ok
    off = _mutated(plan_data, ("cost_per_month",), cost + 0.02)
    assert {v.requirement for v in verify(instance, Plan.model_validate(off)).violations} == {
        "cost"
    }


def test_routes_beyond_demand_or_reach_fail(instance, plan_data):
    none = plan_data["scenarios"][0]
    assert none["name"] == "none"
    route = none["routing"][0]
    doubled = _mutated(
        plan_data, ("scenarios", 0, "routing", 0, "requests_per_s"), 2 * route["requests_per_s"]
    )
    (violation,) = verify(instance, Plan.model_validate(doubled)).violations
    assert violation.requirement == "scenarios[0].routing"
    demand = route["requests_per_s"]  # in `none` each origin is served at home, all of it
    assert f"add up to {2 * demand:.6g} requests/s; their demand is {demand:.6g}" in (
        violation.message
    )
    other = next(r for r in (x.name for x in instance.regions) if r != route["origin"])
    away = _mutated(plan_data, ("scenarios", 0, "routing", 0, "destination"), other)
    names = {v.requirement for v in verify(instance, Plan.model_validate(away)).violations}
    assert "scenarios[0].routing[0]" in names  # `none` serves users only at home


def test_hand_written_fleet_without_totals_still_verifies(instance, plan_data):
    """Totals absent are recomputed, not required (README: a fleet you own today)."""
    keep = ("workload", "region", "gpu", "precision", "tp", "pp", "role", "count")
    bare = {"replicas": [{k: e[k] for k in keep} for e in plan_data["replicas"]]}
    result = verify(instance, Plan.model_validate(bare))
    assert result.ok, result.violations
    assert result.total_gpus == plan_data["total_gpus"]
    assert result.cost_per_month == pytest.approx(plan_data["cost_per_month"], abs=0.01)


# --- absurd counts ----------------------------------------------------------------------


@pytest.mark.parametrize("count", [10**12, 1e12, 10**30])  # 10^400: bad input
def test_absurd_replica_counts_are_refused_before_any_physics(
    run_cli, tmp_path, plan_data, hang_guard, count
):
    entry = plan_data["replicas"][0]
    region, gpu = entry["region"], entry["gpu"]
    doctored = _mutated(plan_data, ("replicas", 0, "count"), count)
    used = int(count) * entry["tp"] * entry["pp"] * entry["dp"] + (
        _gpus_used(plan_data, region, gpu) - entry["gpus"]
    )
    result = _verify_cli(
        run_cli,
        _write(tmp_path, doctored),
        1,
        f"gpu_supply[{region},{gpu}]: uses {used:,} {gpu} in {region}",
        "the physics and scenario checks run once the fleet fits the supply",
        "replicas[0].cost_per_month:",  # beyond any float the cost is infinite, still wrong
        "cost: states $",
    )
    assert "0 scenario checks" in result.stderr


def test_float_count_beyond_any_integer_type_is_bad_input(run_cli, tmp_path, plan_data):
    doctored = _mutated(plan_data, ("replicas", 0, "count"), 1e30)
    needle = "replicas[0].count: integer too large to represent, got 1e+30"
    _verify_cli(run_cli, _write(tmp_path, doctored), 2, needle)


def test_absurd_layout_is_refused_before_any_physics(instance, plan_data, hang_guard):
    doctored = _mutated(plan_data, ("replicas", 0, "count"), 0)
    doctored = _mutated(doctored, ("replicas", 0, "tp"), 10**30)
    result = verify(instance, Plan.model_validate(doctored))
    assert "replicas[0].tp" in {v.requirement for v in result.violations}
    assert result.checks == ()


# --- unreadable plan files --------------------------------------------------------------


def test_binary_and_latin1_plans_are_bad_input(run_cli, tmp_path, plan_data):
    binary = tmp_path / "binary.json"
    binary.write_bytes(b"\x00" + json.dumps(plan_data).encode())
    _verify_cli(run_cli, binary, 2, "is a binary file (NUL byte at offset 0)")
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes(json.dumps({"instance": "caf\u00e9"}, ensure_ascii=False).encode("latin-1"))
    _verify_cli(run_cli, latin1, 2, "is not UTF-8 text: byte 0xe9")


# --- properties -------------------------------------------------------------------------

CHECKED_FIGURES = ("cost_per_month", "total_gpus", "gpus", "replicas", "routing")
"""Plan fields (or fields under them) the verifier recomputes: changing one must fail."""


def _number_paths(data):
    return [
        p
        for p in _paths(data)
        if isinstance(_at(data, p), (int, float)) and not isinstance(_at(data, p), bool)
    ]


def _at(data, path):
    for key in path:
        data = data[key]
    return data


PROPERTY = settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=30
)


@PROPERTY
@given(st.data())
def test_mutated_numbers_exit_0_1_or_2_never_a_traceback(
    run_cli, tmp_path, plan_data, hang_guard, data
):
    path = data.draw(st.sampled_from(_number_paths(plan_data)))
    mutation = data.draw(
        st.sampled_from([math.nan, math.inf, -math.inf, 1e308, 10**37, -1, 0, 1e-300, "drop"])
    )
    file = _write(tmp_path, _mutated(plan_data, path, mutation))
    result = _verify_cli(run_cli, file, None)
    assert result.exit_code in {0, 1, 2}, result.stderr
    if isinstance(mutation, float) and not math.isfinite(mutation):
        assert result.exit_code in {1, 2}, (path, result.stdout)


@PROPERTY
@given(st.data())
def test_any_change_to_a_recomputed_figure_fails(instance, plan_data, data):
    """Counts, GPU totals, prices, costs and routed rates: every change is caught, by the
    schema or by the verifier (stated per-replica capacity, limits and model error bands
    aside: they are judged by the requirements they affect,
    tests/solver/verify/test_verify_drift.py, and a band differing from the calibration's
    is a warning; the plan's only other numbers are the solver's own report)."""
    paths = [
        p
        for p in _number_paths(plan_data)
        if p[0] in CHECKED_FIGURES[:4] or "routing" in p
        if p[-1] not in ("limit", "requests_per_s_per_replica") and "capacity_band" not in p
    ]
    path = data.draw(st.sampled_from(paths))
    old = _at(plan_data, path)
    new = data.draw(
        st.sampled_from([math.nan, -1, old + 1, old * 2 + 1, old * 1.01 + 0.05, 10**37])
    )
    try:
        plan = Plan.model_validate(_mutated(plan_data, path, new))
    except ValueError:
        return  # refused by the schema: exit 2
    assert not verify(instance, plan).ok, (path, old, new)


def test_cost_attribution_is_recomputed_from_the_pools(instance, plan_data):
    """Each row's cost is its pools' GPUs x the instance's price x hours_per_month
    (solver.verify.attribution): a row moved by $10, a prefill share past 1 or GPU-hours
    doubled fail, naming the row."""
    rows = plan_data["cost_attribution"]
    assert rows
    assert verify(instance, Plan.model_validate(plan_data)).ok
    first = rows[0]
    for field, value in (
        ("cost_per_month", first["cost_per_month"] + 10),
        ("prefill_share", 1.2),
        ("prefill_gpu_hours_per_month", 2 * first["prefill_gpu_hours_per_month"]),
    ):
        tampered = _mutated(plan_data, ("cost_attribution", 0, field), value)
        found = {v.requirement for v in verify(instance, Plan.model_validate(tampered)).violations}
        assert any(name.startswith("cost_attribution[0]") for name in found), (field, found)


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("workload", "nan", "unknown workload 'nan'"),
        ("region", "mars", "unknown region 'mars'"),
    ],
)
def test_a_scenario_row_of_no_workload_or_region_fails(instance, plan_data, field, value, needle):
    """The static plan's scenario table names the instance's workloads and regions: a row
    edited to another passed, held to utilisation = load / capacity alone (fuzzed)."""
    last = len(plan_data["scenarios"]) - 1
    doctored = _mutated(plan_data, ("scenarios", last, "pools", 0, field), value)
    violations = verify(instance, Plan.model_validate(doctored)).violations
    assert [v.requirement for v in violations] == [f"scenarios[{last}].pools[0].{field}"]
    assert needle in violations[0].message


def test_a_scenario_the_policy_does_not_name_fails(instance, plan_data):
    """chat-3region's policy survives a region loss: none and lose=each region. A table
    renamed 'lose=mars' passed where it had no move from the lost region."""
    doctored = _mutated(plan_data, ("scenarios", 0, "name"), "lose=mars")
    violations = verify(instance, Plan.model_validate(doctored)).violations
    names = [v for v in violations if v.requirement == "scenarios[0].name"]
    assert len(names) == 1 and "names scenario 'lose=mars'; the policy names none" in (
        names[0].message
    )
