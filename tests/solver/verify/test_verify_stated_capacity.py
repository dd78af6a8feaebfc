"""The capacity each scenario table row states (`pools[].capacity_requests_per_s`, the
denominator of its utilisation) is recomputed from the physics, never read back
(solver.verify.scenarios.stated_capacities for a static plan, item 6 of
solver.verify.hour_scenarios for an hour's and a month's hour's table).

Each test takes a real solved plan, replaces one row's capacity by a figure a plan could
plausibly state wrongly, keeps its utilisation = load / capacity (so the display's own
arithmetic holds), and the verifier names the row, the scenario, the region, the pools
and both numbers. Before these checks every tampered plan below verified ok: the load
stayed within the recomputed capacity, and utilisation was held only to the stated
capacity.

The wrong figures are taken from the plan itself, so no physics is repeated here:

- the normal TTFT target where users are rerouted: in a loss that reroutes users to
  region d, d's pools answer them within the target less the longest round trip, at a
  capacity q'(n) <= q(n) per replica; the `none` row of d (the same n replicas, no
  rerouted user) states n x q(n);
- another pool size than the survivors': a zone loss keeps s of n replicas, at q(s)
  each; n x q(n) x s / n = s x q(n) is s replicas at the whole pool's q;
- replica loss with no replica lost: `none` states n x q(n) where one replica less
  carries (n - 1) x q(n - 1).
"""

import copy
import json

import pytest

from models.io.loading import load_instance
from models.io.overrides import load_instance_with, parse_overrides
from models.operations.time_demand import hour_instance, warm_grid
from solver.plan.schema import Plan
from solver.solve import solve
from solver.verify.fleet import verify
from solver.verify.hours import verify_hours
from solver.verify.pools import pool_physics
from tests.paths import DEFAULT_INSTANCE, INSTANCES
from tests.solved_once import diurnal_at_a_5_percent_gap, growth_horizon_2_months


def _tampered(data: dict, table: list, s_index: int, p_index: int, capacity: float) -> dict:
    """A copy of the plan `data` with row p_index of scenario s_index of `table` (a path
    of keys into it) stating `capacity`, its utilisation load / capacity."""
    data = copy.deepcopy(data)
    scenarios = data
    for key in table:
        scenarios = scenarios[key]
    row = scenarios[s_index]["pools"][p_index]
    row["capacity_requests_per_s"] = capacity
    row["utilisation"] = row["load_requests_per_s"] / capacity
    return data


def _row(scenarios: list, name: str, region: str, phase: str) -> tuple[int, int, dict]:
    """(scenario index, row index, row) of (name, region, phase) in a table."""
    s_index = next(i for i, s in enumerate(scenarios) if s["name"] == name)
    p_index, row = next(
        (i, r)
        for i, r in enumerate(scenarios[s_index]["pools"])
        if (r["region"], r["phase"]) == (region, phase)
    )
    return s_index, p_index, row


def _static_findings(instance, data: dict) -> dict[str, str]:
    verdict = verify(instance, Plan.model_validate(data))
    return {v.requirement: v.message for v in verdict.violations}


def test_a_region_loss_row_at_the_normal_ttft_target_fails(default_plan):
    """chat-3region, lose=us-east: us-east's users are rerouted to us-west (62 ms away),
    so us-west's 14 prefill replicas carry 14 x q'(14) at the TTFT target less 62 ms.
    Stating 14 x q(14), the `none` row's figure for the same replicas, fails."""
    instance = load_instance(DEFAULT_INSTANCE)
    data = json.loads(default_plan.model_dump_json())
    assert verify(instance, default_plan).ok
    s_index, p_index, lost = _row(data["scenarios"], "lose=us-east", "us-west", "prefill-fp8")
    _, _, none = _row(data["scenarios"], "none", "us-west", "prefill-fp8")
    assert lost["pools"] == none["pools"]  # the same replicas: us-west is not lost
    (listed,) = lost["pools"]
    n = int(listed.split(" x ")[0])
    normal, rerouted = none["capacity_requests_per_s"], lost["capacity_requests_per_s"]
    assert rerouted < normal  # q'(n) < q(n): the tighter target binds
    found = _static_findings(instance, _tampered(data, ["scenarios"], s_index, p_index, normal))
    where = f"scenarios[{s_index}].pools[{p_index}].capacity_requests_per_s"
    assert found[where] == (
        f"lose=us-east: chat in us-west (prefill-fp8) states a capacity of {normal:.6g} "
        f"requests/s; its survivors carry {rerouted:.6g} at the TTFT target less 62 ms: "
        f"{n} x {rerouted / n:.6g} ({listed.split(' x ', 1)[1]}) (recomputed)"
    )
    assert list(found) == [where]  # the load is still within what the physics carries


def test_a_zone_loss_row_at_the_whole_pools_size_fails():
    """region-loss-3 with zones (3 in us-east): losing one of us-east's zones keeps
    s = n - ceil(n / 3) of its n replicas, at q(s) each. Stating s x q(n) (the `none`
    row's n x q(n) x s / n) fails, the survivors' size named."""
    overrides = ["policy.survive=zone", "regions[0].zones=3"]
    overrides += ["regions[1].zones=2", "regions[2].zones=2"]
    instance = load_instance_with(INSTANCES / "region-loss-3.yaml", parse_overrides(overrides))
    plan = solve(instance)  # verified inside
    data = json.loads(plan.model_dump_json())
    s_index, p_index, lost = _row(data["scenarios"], "lose=us-east/zone", "us-east", "unified")
    _, _, none = _row(data["scenarios"], "none", "us-east", "unified")
    (whole,), (kept,) = none["pools"], lost["pools"]
    n, s = int(whole.split(" x ")[0]), int(kept.split(" x ")[0])
    assert s == n - -(-n // 3) and s < n
    at_whole_size = none["capacity_requests_per_s"] * s / n
    assert at_whole_size != pytest.approx(lost["capacity_requests_per_s"], rel=1e-6)
    tampered = _tampered(data, ["scenarios"], s_index, p_index, at_whole_size)
    found = _static_findings(instance, tampered)
    message = found[f"scenarios[{s_index}].pools[{p_index}].capacity_requests_per_s"]
    assert message.startswith(
        f"lose=us-east/zone: chat in us-east (unified) states a capacity of "
        f"{at_whole_size:.6g} requests/s; its survivors carry "
        f"{lost['capacity_requests_per_s']:.6g} at the TTFT target"
    )
    assert f": {s} x " in message  # the survivors, not the whole pool


def test_a_replica_loss_row_with_no_replica_lost_fails():
    """seed-chat-sizing survives one replica's loss: its lose=replica row states the
    least over the pools of one replica lost. Stating the `none` row's capacity (every
    replica alive) fails, and the message says a replica is subtracted."""
    instance = load_instance(INSTANCES / "seed-chat-sizing.yaml")
    plan = solve(instance)  # verified inside
    data = json.loads(plan.model_dump_json())
    none = data["scenarios"][0]
    s_index = next(i for i, s in enumerate(data["scenarios"]) if s["name"] == "lose=replica")
    row = data["scenarios"][s_index]["pools"][0]
    alive = next(
        r for r in none["pools"] if (r["region"], r["phase"]) == (row["region"], row["phase"])
    )
    assert row["capacity_requests_per_s"] < alive["capacity_requests_per_s"]
    tampered = _tampered(data, ["scenarios"], s_index, 0, alive["capacity_requests_per_s"])
    found = _static_findings(instance, tampered)
    message = found[f"scenarios[{s_index}].pools[0].capacity_requests_per_s"]
    assert message.startswith(
        f"lose=replica: {row['workload']} in {row['region']} ({row['phase']}) states a "
        f"capacity of {alive['capacity_requests_per_s']:.6g} requests/s; its survivors "
        f"carry {row['capacity_requests_per_s']:.6g} at the TTFT target, the least with "
        "one replica of one pool lost: "
    )


def test_a_shared_groups_row_with_no_group_replica_lost_fails():
    """zipf-20-models surviving one replica's loss: a workload served by a shared group
    of 2 replicas alone (a[w] each, the group's own physics checked at it) carries
    (2 - 1) x a[w] with one of them lost, half its `none` row's 2 x a[w]. Its
    lose=replica row stating the `none` figure fails: a group counts as a pool of its own
    and loses a replica too."""
    instance = load_instance_with(
        INSTANCES / "zipf-20-models.yaml", parse_overrides(["policy.survive=replica"])
    )
    data = json.loads(solve(instance).model_dump_json())  # verified inside
    s_index = next(i for i, s in enumerate(data["scenarios"]) if s["name"] == "lose=replica")
    p_index, row = next(
        (i, r)
        for i, r in enumerate(data["scenarios"][s_index]["pools"])
        if r["pools"] == ["2 x shared group"]
    )
    none = next(
        r
        for r in data["scenarios"][0]["pools"]
        if (r["workload"], r["region"]) == (row["workload"], row["region"])
    )
    a = none["capacity_requests_per_s"] / 2
    assert row["capacity_requests_per_s"] == pytest.approx((2 - 1) * a, rel=1e-9)
    tampered = _tampered(data, ["scenarios"], s_index, p_index, 2 * a)
    found = _static_findings(instance, tampered)
    message = found[f"scenarios[{s_index}].pools[{p_index}].capacity_requests_per_s"]
    assert message.startswith(
        f"lose=replica: {row['workload']} in {row['region']} (unified) states a capacity of "
        f"{2 * a:.6g} requests/s; its survivors carry {a:.6g} at the TTFT target, the least "
        f"with one replica of one pool lost: 2 x {a:.6g} (shared group "
    )


def _rerouted_row(scenarios: list) -> tuple[int, int, dict, float]:
    """(scenario index, row index, row, the warm part at the normal target) of the first
    row of an hour's table whose warm replicas carry less at the rerouted target than
    the `none` row of the same region states for them."""
    none = {(r["workload"], r["region"]): r for r in scenarios[0]["pools"]}
    assert scenarios[0]["name"] == "none"
    for s_index, scenario in enumerate(scenarios[1:], start=1):
        for p_index, row in enumerate(scenario["pools"]):
            alive = none.get((row["workload"], row["region"]))
            warm = row["capacity_requests_per_s"] - row["started_requests_per_s"]
            same = alive and alive["pools"] == [p for p in row["pools"] if "(started)" not in p]
            if same and alive["capacity_requests_per_s"] > warm * (1 + 1e-6):
                return s_index, p_index, row, alive["capacity_requests_per_s"]
    raise AssertionError("no rerouted row binds at the tighter target")


def _hour_findings(instance, data: dict) -> dict[str, str]:
    verdict = verify_hours(instance, Plan.model_validate(data))
    return {v.requirement: v.message for v in verdict.violations}


@pytest.fixture(scope="module")
def diurnal(tmp_path_factory):
    return diurnal_at_a_5_percent_gap(tmp_path_factory)


@pytest.fixture(scope="module")
def two_months(tmp_path_factory):
    return growth_horizon_2_months(tmp_path_factory)


def test_an_hours_warm_replicas_at_the_normal_target_fail(diurnal):
    """diurnal-chat-batch: in a loss of one region the other's warm replicas serve the
    rerouted users too, at the TTFT target less 75 ms, beside the replicas started
    there. A row whose warm part is the `none` row's n x q(n), the started replicas'
    credit kept, fails; the message splits the stated figure into warm and started."""
    instance, plan = diurnal
    for index, hour in enumerate(plan["hours"]):  # noqa: B007 (read after the loop)
        try:
            s_index, p_index, row, normal = _rerouted_row(hour["scenarios"])
        except AssertionError:
            continue
        break
    else:
        raise AssertionError("no hour's warm replicas bind at the tighter target")
    started = row["started_requests_per_s"]
    table = ["hours", index, "scenarios"]
    found = _hour_findings(instance, _tampered(plan, table, s_index, p_index, normal + started))
    where = f"hours[{index}].scenarios[{s_index}].pools[{p_index}].capacity_requests_per_s"
    name = hour["scenarios"][s_index]["name"]
    assert found[where].startswith(
        f"UTC hour {hour['hour']}, {name}: chat in {row['region']} (unified) states a "
        f"capacity of {normal + started:.6g} requests/s ({normal:.6g} warm + "
        f"{started:.6g} started); its survivors carry {row['capacity_requests_per_s']:.6g} "
        "at the TTFT target less 75 ms: "
    )


def test_a_months_hour_row_at_the_normal_target_fails_naming_the_month(two_months):
    """growth-horizon over 2 months: month 1's hours state their own tables, checked by
    the same verifier at month 1's demand; the same tampering fails there, named for the
    month, and month 0's hours are untouched."""
    instance, plan = two_months
    month = plan["months"][1]
    for index, hour in enumerate(month["hours"]):  # noqa: B007 (read after the loop)
        try:
            s_index, p_index, row, normal = _rerouted_row(hour["scenarios"])
        except AssertionError:
            continue
        break
    else:
        raise AssertionError("no hour of month 1 binds at the tighter target")
    started = row["started_requests_per_s"]
    table = ["months", 1, "hours", index, "scenarios"]
    found = _hour_findings(instance, _tampered(plan, table, s_index, p_index, normal + started))
    where = f"month[1].hours[{index}].scenarios[{s_index}].pools[{p_index}].capacity_requests_per_s"
    assert f"states a capacity of {normal + started:.6g} requests/s" in found[where]
    assert found[where].startswith(f"month 1: UTC hour {hour['hour']}, ")
    assert not any(name.startswith("hours[") for name in found)


def test_an_hours_warm_replicas_at_the_started_pools_size_fail(two_months):
    """growth-horizon, month 0: an hour that starts k replicas beside n warm ones of the
    same configuration. The hour's capacity check pools them (n + k behind one router),
    but the program credits the warm n at q'(n) and each started one alone; a row whose
    warm part is n x q(n + k) (more, as q grows with the pool) carries the load within
    what the pooled check allows, and fails here."""
    instance, data = two_months
    plan = Plan.model_validate(data)
    found_at = [
        (index, s_index, p_index, row, start, entry)
        for index, hour in enumerate(plan.hours)
        for s_index, scenario in enumerate(hour.scenarios)
        for p_index, row in enumerate(scenario.pools)
        for start in scenario.started_replicas
        for entry in hour.pools
        if (start.workload, start.region) == (row.workload, row.region)
        and (entry.workload, entry.region, entry.label) == (row.workload, row.region, start.label)
    ]
    assert found_at, "no hour starts replicas beside a warm pool of their configuration"
    index, s_index, p_index, row, start, entry = found_at[0]
    hour = plan.hours[index].hour
    rates = {k: series[hour] for k, series in warm_grid(instance).items()}
    (pool,) = pool_physics(hour_instance(instance, rates), (entry,), {})
    n, k = entry.count, start.count
    pooled = n * pool.requests_per_s(n + k)
    started = row.started_requests_per_s
    assert pooled > row.capacity_requests_per_s - started
    table = ["hours", index, "scenarios"]
    found = _hour_findings(instance, _tampered(data, table, s_index, p_index, pooled + started))
    where = f"hours[{index}].scenarios[{s_index}].pools[{p_index}].capacity_requests_per_s"
    assert f"states a capacity of {pooled + started:.6g} requests/s" in found[where]
    assert f"{k} x {start.requests_per_s_per_replica:.6g} ({start.label}, started)" in found[where]


def _roomy_loss_row(scenarios: list):
    """(scenario index, row index, row) of each row of a loss (not `none`, whose
    utilisation the idle share is read from) used under 85%."""
    return (
        (s_index, p_index, row)
        for s_index, scenario in enumerate(scenarios)
        if scenario["name"] != "none"
        for p_index, row in enumerate(scenario["pools"])
        if 0 < row["utilisation"] < 0.85
    )


def test_a_row_stating_less_than_its_survivors_carry_is_a_warning(default_plan):
    """A row may state less than its survivors carry (a plan solved at a tighter TTFT
    target, checked at a looser one: tests/solver/test_monotone_properties.py): the
    display shows less room than there is, which breaks no requirement. A chat-3region
    loss row stated at 90% of its capacity: verified ok, with a warning naming the row
    and both numbers."""
    instance = load_instance(DEFAULT_INSTANCE)
    data = json.loads(default_plan.model_dump_json())
    s_index, p_index, row = next(_roomy_loss_row(data["scenarios"]))
    capacity = row["capacity_requests_per_s"]
    tampered = _tampered(data, ["scenarios"], s_index, p_index, 0.9 * capacity)
    verdict = verify(instance, Plan.model_validate(tampered))
    assert verdict.ok, verdict.violations
    where = f"scenarios[{s_index}].pools[{p_index}].capacity_requests_per_s"
    (warning,) = [w for w in verdict.warnings if w.requirement == where]
    name = data["scenarios"][s_index]["name"]
    assert warning.message.startswith(
        f"{name}: chat in {row['region']} ({row['phase']}) states a capacity of "
        f"{0.9 * capacity:.6g} requests/s; its survivors carry {capacity:.6g} at the TTFT "
    )


def test_an_hours_row_stating_less_is_a_warning_named_for_its_hour(diurnal):
    """The same in an hour's table: verified ok, the warning named by the hour's field
    path and UTC hour."""
    instance, plan = diurnal
    (index, (s_index, p_index, row)), *_ = [
        (index, found)
        for index, hour in enumerate(plan["hours"])
        for found in [next(_roomy_loss_row(hour["scenarios"]), None)]
        if found is not None
    ]
    hour = plan["hours"][index]
    capacity = row["capacity_requests_per_s"]
    table = ["hours", index, "scenarios"]
    tampered = _tampered(plan, table, s_index, p_index, 0.9 * capacity)
    verdict = verify_hours(instance, Plan.model_validate(tampered))
    assert verdict.ok, verdict.violations
    where = f"hours[{index}].scenarios[{s_index}].pools[{p_index}].capacity_requests_per_s"
    (warning,) = [w for w in verdict.warnings if w.requirement == where]
    name = hour["scenarios"][s_index]["name"]
    assert warning.message.startswith(
        f"UTC hour {hour['hour']}, {name}: chat in {row['region']} (unified) states a "
        f"capacity of {0.9 * capacity:.6g} requests/s"
    )
