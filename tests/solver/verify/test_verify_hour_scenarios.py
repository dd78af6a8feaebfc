"""Each hour's scenario table (what `fleetplan simulate --hour` replays) is held to the
hour's pools and demand (solver.verify.hour_scenarios): hand-made tamperings of one
hour's table, of the plan's peak table and of a month's hour fail, naming the hour,
the scenario, the workload, the region and both numbers.

Plans: instances/diurnal-chat-batch.yaml (two regions, region loss with replicas started
after it) and a 2-month instances/growth-horizon.yaml, solved once per module. In
both, UTC hour 3 is plan.hours[3] and its table is `none`, `lose=us-east`,
`lose=eu-west`."""

import copy
import json

import pytest
import yaml

from models.io.loading import validate_instance
from solver.plan.schema import Plan
from solver.solve import solve
from solver.verify.hours import verify_hours
from tests.paths import INSTANCES
from tests.solved_once import diurnal_at_a_5_percent_gap, growth_horizon_2_months

HOUR = 3


@pytest.fixture(scope="module")
def diurnal(tmp_path_factory):
    """(instance, plan as JSON data) of diurnal-chat-batch at a 5% gap, solved once a run
    for this module and test_verify_hours_hostile.py."""
    return diurnal_at_a_5_percent_gap(tmp_path_factory)


@pytest.fixture(scope="module")
def two_months(tmp_path_factory):
    """(instance, plan as JSON data) of growth-horizon over 2 months, solved once a run
    (tests.solved_once: tests/cli/test_report_html.py draws the same plan)."""
    return growth_horizon_2_months(tmp_path_factory)


def _violations(instance, data) -> dict[str, str]:
    """requirement -> message of every violation of the plan `data`."""
    verdict = verify_hours(instance, Plan.model_validate(data))
    return {v.requirement: v.message for v in verdict.violations}


def _table(data, name):
    """(index, scenario record) of `name` in hour HOUR's table of `data` (a plan or month)."""
    hour = data["hours"][HOUR]
    assert hour["hour"] == HOUR
    return next((i, s) for i, s in enumerate(hour["scenarios"]) if s["name"] == name)


def test_the_solved_tables_pass_and_show_every_scenario(diurnal, two_months):
    for instance, data in (diurnal, two_months):
        assert verify_hours(instance, Plan.model_validate(data)).ok
        for hour in data["hours"]:
            assert [s["name"] for s in hour["scenarios"]] == [
                "none",
                "lose=us-east",
                "lose=eu-west",
            ]
    month = two_months[1]["months"][1]
    assert month["hours"][HOUR]["scenarios"]  # a month's hours state their tables too


def test_a_load_past_the_recomputed_capacity_fails(diurnal):
    """Ten times the load of us-east's row in `none`, its stated capacity scaled alike (its
    utilisation and the display's reading unchanged): the load is past the capacity the
    verifier recomputes for the hour's replicas, which in `none` (no rerouted round
    trip) is the capacity the plan states for them, n x q(n)."""
    instance, plan = diurnal
    data = copy.deepcopy(plan)
    s_index, none = _table(data, "none")
    p_index, row = next((i, r) for i, r in enumerate(none["pools"]) if r["region"] == "us-east")
    capacity, load = row["capacity_requests_per_s"], row["load_requests_per_s"]
    (listed,) = row["pools"]
    assert listed.endswith(" x h100-sxm fp8 tp2xpp1 unified") and load <= capacity
    row["load_requests_per_s"], row["capacity_requests_per_s"] = 10 * load, 10 * capacity
    found = _violations(instance, data)
    where = f"hours[{HOUR}].scenarios[{s_index}].pools[{p_index}].load_requests_per_s"
    assert found[where] == (
        f"UTC hour {HOUR}, none: chat in us-east (unified): loaded with {10 * load:.6g} "
        f"requests/s; its pools carry {capacity:.6g} (recomputed)"
    )
    assert f"the routing sends {load:.6g}" in found[f"hours[{HOUR}].scenarios[{s_index}].pools"]


def test_a_dropped_route_fails_naming_the_demand_left_unserved(diurnal):
    """In lose=eu-west, eu-west's users all go to us-east (one route): without it their
    routes add up to 0 of the demand that route carried, and us-east's row carries more
    than the routing sends it."""
    instance, plan = diurnal
    data = copy.deepcopy(plan)
    s_index, lost = _table(data, "lose=eu-west")
    (r_index,) = [i for i, r in enumerate(lost["routing"]) if r["origin"] == "eu-west"]
    demand = lost["routing"].pop(r_index)["requests_per_s"]
    found = _violations(instance, data)
    assert found[f"hours[{HOUR}].scenarios[{s_index}].routing"] == (
        f"UTC hour {HOUR}, lose=eu-west: the routes of eu-west users of chat add up to 0 "
        f"requests/s; their demand is {demand:.6g}"
    )
    (row,) = lost["pools"]
    rows = found[f"hours[{HOUR}].scenarios[{s_index}].pools"]
    sent = row["load_requests_per_s"] - demand
    assert (
        f"carry {row['load_requests_per_s']:.6g} requests/s; the routing sends {sent:.6g}" in rows
    )


def test_a_route_into_the_lost_region_fails(diurnal):
    instance, plan = diurnal
    data = copy.deepcopy(plan)
    s_index, lost = _table(data, "lose=us-east")
    r_index = next(i for i, r in enumerate(lost["routing"]) if r["origin"] == "us-east")
    lost["routing"][r_index].update(destination="us-east", rtt_ms=0.0)
    found = _violations(instance, data)
    message = found[f"hours[{HOUR}].scenarios[{s_index}].routing[{r_index}]"]
    assert message.startswith(f"UTC hour {HOUR}, serves us-east users of chat in us-east")
    assert "(allowed: eu-west)" in message


def test_a_row_in_the_lost_region_fails(diurnal):
    instance, plan = diurnal
    data = copy.deepcopy(plan)
    s_index, lost = _table(data, "lose=us-east")
    _, none = _table(data, "none")
    east = next(r for r in none["pools"] if r["region"] == "us-east")
    lost["pools"].append({**east, "load_requests_per_s": 0.0, "utilisation": 0.0})
    found = _violations(instance, data)
    where = f"hours[{HOUR}].scenarios[{s_index}].pools[{len(lost['pools']) - 1}]"
    assert found[where] == (
        f"UTC hour {HOUR}, lose=us-east: chat shows a row in us-east, which is lost"
    )


def test_a_changed_count_fails_naming_both(diurnal):
    """us-east runs n replicas in hour 3: a row listing n + 1 fails."""
    instance, plan = diurnal
    data = copy.deepcopy(plan)
    s_index, none = _table(data, "none")
    p_index, row = next((i, r) for i, r in enumerate(none["pools"]) if r["region"] == "us-east")
    (listed,) = row["pools"]
    n = int(listed.split(" x ")[0])
    row["pools"] = [f"{n + 1} x h100-sxm fp8 tp2xpp1 unified"]
    found = _violations(instance, data)
    assert found[f"hours[{HOUR}].scenarios[{s_index}].pools[{p_index}].pools"] == (
        f"UTC hour {HOUR}, none: chat in us-east (unified): lists "
        f"['{n + 1} x h100-sxm fp8 tp2xpp1 unified']; the hour runs "
        f"['{n} x h100-sxm fp8 tp2xpp1 unified']"
    )


def test_more_started_replicas_than_the_hour_starts_fail(diurnal):
    """The hour starts k replicas in eu-west after losing us-east: a table that shows
    k + 1 (its row and its record alike) fails."""
    instance, plan = diurnal
    data = copy.deepcopy(plan)
    s_index, lost = _table(data, "lose=us-east")
    (started,) = lost["started_replicas"]
    k = started["count"]
    assert k >= 1
    started["count"] = k + 1
    (row,) = lost["pools"]
    row["pools"] = [
        p.replace(f"{k} x", f"{k + 1} x") if p.endswith("(started)") else p for p in row["pools"]
    ]
    found = _violations(instance, data)
    layout = f"h100-sxm fp8 tp{started['tp']}xpp{started['pp']} unified in eu-west"
    assert found[f"hours[{HOUR}].scenarios[{s_index}].started_replicas"] == (
        f"UTC hour {HOUR}, lose=us-east: states {k + 1} x {layout} started; the hour "
        f"starts {k} x {layout}"
    )
    assert f"hours[{HOUR}].scenarios[{s_index}].pools[0].pools" in found


def test_the_peak_table_is_one_hours_table(diurnal):
    """`scenarios` is the table of the hour it names: a route doubled there alone fails."""
    instance, plan = diurnal
    data = copy.deepcopy(plan)
    data["scenarios"][0]["routing"][0]["requests_per_s"] *= 2
    peak = data["scenarios"][0]["hour"]
    found = _violations(instance, data)
    assert found["scenarios"] == (
        f"the busiest period's table names UTC hours [{peak}]; it must be one hour's "
        "`scenarios`, record for record"
    )


def test_a_tampered_table_in_a_months_hour_fails_naming_the_month(two_months):
    """Month 1's hour 3, checked by the same verifier at month 1's demand: a count
    raised by one and a load past capacity (utilisation kept) both fail, named for the
    month."""
    instance, plan = two_months
    data = copy.deepcopy(plan)
    month = data["months"][1]
    s_index, none = _table(month, "none")
    row = none["pools"][0]
    count, label = row["pools"][0].split(" x ", 1)
    row["pools"] = [f"{int(count) + 1} x {label}"]
    row["load_requests_per_s"] *= 10
    row["capacity_requests_per_s"] *= 10
    found = _violations(instance, data)
    where = f"month[1].hours[{HOUR}].scenarios[{s_index}].pools[0]"
    assert found[f"{where}.pools"].startswith(
        f"month 1: UTC hour {HOUR}, none: chat in {row['region']} (unified): lists "
        f"['{int(count) + 1} x {label}']; the hour runs ['{count} x {label}']"
    )
    assert found[f"{where}.load_requests_per_s"].startswith(
        f"month 1: UTC hour {HOUR}, none: chat in {row['region']} (unified): loaded with "
        f"{row['load_requests_per_s']:.6g} requests/s; its pools carry "
    )
    assert not any(name.startswith("hours[") for name in found)  # month 0 untouched


def test_a_region_that_only_takes_in_the_lost_regions_users_needs_no_row_when_none_is_lost():
    """diurnal-chat-batch without chat users in eu-west, replicas started 30 min after a
    loss: eu-west holds chat pools warm in the busy hours, for us-east's users when
    us-east is lost, but with no region lost nothing is routed
    there, so the hour's "none" table lists no chat row in eu-west (the read-back lists a
    pair only where it may receive load) and the plan passes the verifier."""
    data = yaml.safe_load((INSTANCES / "diurnal-chat-batch.yaml").read_text())
    chat = next(w for w in data["workloads"] if w["name"] == "chat")
    del chat["demand"]["eu-west"]
    data["solver"] = {**data.get("solver", {}), "mip_gap": 0.05}
    data["policy"]["failover_start_s"] = 1800.0  # too slow to start them after the loss
    instance = validate_instance(data, "diurnal-east-only.yaml")
    plan = json.loads(solve(instance).model_dump_json())  # verified inside
    holding = [
        h
        for h in plan["hours"]
        if any(p["workload"] == "chat" and p["region"] == "eu-west" for p in h["pools"])
    ]
    assert holding, "eu-west holds chat replicas for the loss of us-east in some hour"
    for hour in holding:
        none = next(s for s in hour["scenarios"] if s["name"] == "none")
        rows = [r for r in none["pools"] if r["workload"] == "chat" and r["region"] == "eu-west"]
        assert rows == []
    assert _violations(instance, plan) == {}
