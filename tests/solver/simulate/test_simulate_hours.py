"""`simulate --hour/--month`: one UTC hour of an hourly plan replayed at the load the
planner planned that hour for, its pools and, in a loss, the replicas it starts
(solver.simulate.hours).

Hand case (tests/solver/time/test_hourly_explain.py): two unlinked regions, each
serving its own users, an 8B model on one H100 a replica (q_X requests/s each); the
peak load is 7.5 q_X in east and 2.5 q_X in west, and the warm rate of UTC hour h is
that peak x LEVEL_BY_HOUR[h] (0.5 in the trough, 0.75 on the shoulders 0 and 11, 1 from
12 to 23). The plan runs ceil(L / q_X) H100 replicas for a load L, so in hour 3
east replays 0.5 x 7.5 q_X = 3.75 q_X on ceil(3.75) = 4 replicas, in hour 0 5.625 q_X
on 6, and at the peak 7.5 q_X on 8.

Failover case (tests/solver/time/test_failover_start.py, start time 0): a flat day of
60 requests/s in r1 and 40 in r2, 20 ms apart; after r1 is lost, r2 serves all
60 + 40 = 100 requests/s on its warm replicas plus those it starts.
"""

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.plan.schema import Plan
from solver.plan.time_records import Hour, Month
from solver.simulate.hours import HourRefused, replayed_hour, utc
from solver.simulate.replay import simulate_plan
from solver.simulate.replay_size import surviving
from solver.solve import SolveSettings, solve
from tests.solver.time.test_failover_start import RATE_RPS
from tests.solver.time.test_failover_start import _instance as failover_instance
from tests.solver.time.test_hour_prices import _lone_rps
from tests.solver.time.test_hourly_explain import LEVEL_BY_HOUR, PEAK_IN_H100
from tests.solver.time.test_hourly_explain import _instance as hourly_instance

SECONDS = 10.0
"""Simulated seconds per replay: the loads and counts are what is checked here."""


@cache
def _hourly():
    instance = hourly_instance()
    return instance, solve(instance, SolveSettings.of(instance, mip_gap=0.0))


def _replay(instance, plan, **where):
    return simulate_plan(instance, plan, duration_s=SECONDS, **where)


@pytest.mark.parametrize("hour", [3, 0, 14])
def test_an_hour_replays_its_own_pools_at_its_own_load_by_hand(hour):
    instance, plan = _hourly()
    q_x = _lone_rps("h100-sxm")
    replayed = _replay(instance, plan, hour=hour)
    assert (replayed.hour, replayed.month, replayed.replayed) == (hour, None, utc(hour))
    rows = {row.region: row for row in replayed.pools}
    assert set(rows) == set(PEAK_IN_H100)
    for region, peak in PEAK_IN_H100.items():
        load_in_h100 = peak * LEVEL_BY_HOUR[hour]  # e.g. east at 03:00: 7.5 x 0.5 = 3.75
        assert rows[region].gpu == "h100-sxm"
        assert rows[region].load_requests_per_s == pytest.approx(load_in_h100 * q_x, rel=1e-9)
        assert rows[region].replicas == -(-load_in_h100 // 1)  # ceil(3.75) = 4
        # the analytic column is the hour's promise: within the SLO at the hour's load
        assert rows[region].analytic.ttft_p99_ms <= rows[region].ttft_p99_target_ms
    by_hour = {h.hour: h for h in plan.hours}
    counts = {(p.region, p.count) for p in by_hour[hour].pools}
    assert {(row.region, row.replicas) for row in replayed.pools} == counts


def test_the_default_replays_the_peak_hour_and_says_so():
    instance, plan = _hourly()
    peak = plan.scenarios[0].hour
    assert peak is not None and LEVEL_BY_HOUR[peak] == 1.0
    default = _replay(instance, plan)
    assert default.replayed == f"the peak hour, {utc(peak)}"
    assert default.pools == _replay(instance, plan, hour=peak).pools  # same seed, same rows


@settings(max_examples=24, deadline=None)
@given(st.integers(0, 23))
def test_every_hour_replays_what_the_hour_states(hour):
    """Property: the replay of hour h reads hour h's scenario rows and no other, and its
    pools with no failure are the hour's pools, whose loads add up to the day's demand
    at that hour (each region serves its own users here)."""
    _, plan = _hourly()
    q_x = _lone_rps("h100-sxm")
    view = replayed_hour(plan, hour)
    stated = next(h for h in plan.hours if h.hour == hour)
    assert view.plan.scenarios == stated.scenarios
    entries = surviving(view.plan, "none")
    assert {(region, count) for _, region, _, _, c in entries for count in c.values()} == {
        (p.region, p.count) for p in stated.pools
    }
    total = sum(load for *_, load, _ in entries)
    assert total == pytest.approx(sum(PEAK_IN_H100.values()) * LEVEL_BY_HOUR[hour] * q_x)


def test_a_loss_replays_the_survivors_with_the_replicas_they_start():
    instance = failover_instance(start_s=0)
    plan = solve(instance)
    hour = plan.hours[5]
    warm = {p.region: p.count for p in hour.pools}
    started = sum(
        s.pool.count
        for s in hour.failover_starts
        if (s.scenario, s.pool.region) == ("lose=r1", "r2")
    )
    assert started >= 1  # T_s = 0: the spare is started, not kept warm
    replayed = _replay(instance, plan, hour=5, scenario="lose=r1")
    (row,) = replayed.pools
    assert row.region == "r2"
    assert row.replicas == warm["r2"] + started
    assert row.load_requests_per_s == pytest.approx(RATE_RPS["r1"] + RATE_RPS["r2"])  # 100


def _months_plan() -> Plan:
    """A plan with months 0 and 1: month 1's hours are month 0's with one replica more."""
    _, plan = _hourly()
    later = tuple(
        h.model_copy(
            update={"pools": tuple(p.model_copy(update={"count": p.count + 1}) for p in h.pools)}
        )
        for h in plan.hours
    )
    months = (
        Month(month=0, growth_factor=1.0, cost_per_month=1.0),
        Month(month=1, growth_factor=1.0, cost_per_month=1.0, hours=later),
    )
    return plan.model_copy(update={"months": months})


def test_a_month_replays_its_own_hours():
    plan = _months_plan()
    assert replayed_hour(plan, 3, 1).plan.replicas == plan.months[1].hours[3].pools
    assert replayed_hour(plan, 3, 1).words == "month 1, 03:00 UTC"
    assert replayed_hour(plan, 3, 0).plan.replicas == plan.hours[3].pools
    assert replayed_hour(plan, 3).words == "month 0, 03:00 UTC"
    peak = plan.scenarios[0].hour
    assert replayed_hour(plan, None, 0).words == f"the peak hour, month 0, {utc(peak)}"
    busiest = replayed_hour(plan, None, 1)  # the most GPUs, then the most load: a peak hour
    assert LEVEL_BY_HOUR[busiest.hour] == 1.0
    assert busiest.words == f"the busiest hour of month 1, {utc(busiest.hour)}"


@pytest.mark.parametrize(
    ("hour", "month", "option", "words"),
    [
        (24, None, "--hour", "0 to 23, got 24"),
        (-1, None, "--hour", "0 to 23, got -1"),
        (None, 2, "--month", "the plan has months 0 to 1, got 2"),
    ],
)
def test_an_hour_or_month_the_plan_lacks_is_refused_naming_the_option(hour, month, option, words):
    with pytest.raises(HourRefused) as refused:
        replayed_hour(_months_plan(), hour, month)
    assert refused.value.option == option and words in str(refused.value)


def test_a_static_plan_has_no_hour_and_no_month():
    static = Plan(replicas=())
    assert replayed_hour(static).words == ""
    with pytest.raises(HourRefused, match="static") as refused:
        replayed_hour(static, 3)
    assert refused.value.option == "--hour"
    with pytest.raises(HourRefused, match="no months") as refused:
        replayed_hour(static, None, 0)
    assert refused.value.option == "--month"


def test_a_plan_written_before_hours_kept_their_loads_is_refused():
    _, plan = _hourly()
    bare = tuple(h.model_copy(update={"scenarios": ()}) for h in plan.hours)
    with pytest.raises(HourRefused, match="solve it again"):
        replayed_hour(plan.model_copy(update={"hours": bare}), 3)
    assert isinstance(bare[0], Hour)


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (["--hour", "24"], "--hour"),
        (["--hour", "3"], "--hour"),
        (["--month", "0"], "--month"),
    ],
)
def test_the_command_exits_2_naming_the_option(run_cli, default_plan, tmp_path, args, flag):
    """A static plan (the default instance's): --hour and --month are refused, exit 2."""
    from tests.paths import DEFAULT_INSTANCE

    plan_file = tmp_path / "plan.json"
    plan_file.write_text(default_plan.model_dump_json())
    result = run_cli("simulate", DEFAULT_INSTANCE, plan_file, "--no-tolerance", *args)
    assert result.exit_code == 2, result.stderr
    assert f"{flag}:" in result.stderr and "Traceback" not in result.stderr
