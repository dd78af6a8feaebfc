"""A sweep over an hourly instance (solver.studies.sweep): each point's plan is checked
against every point by the hour verifier on its hours, so a plan serves at least its own
point, and the larger fleet serves the smaller point too.

The flat-day case of test_months: Llama 3.1 8B fp8 at TP 1, KV-limited, so a rate of
k x q(1) needs ceil(k) GPUs in every hour."""

import pytest

from models.io.loading import validate_instance
from solver.studies.sweep import check_plans, robust_choice, solve_point
from tests.solver.time.test_months import _data, _lone_rps


def test_each_hourly_plan_serves_its_own_point_and_the_larger_serves_both():
    q = _lone_rps()
    points = {
        index: validate_instance(_data(k * q, 0.0, 0, 1), f"point{index}.yaml")
        for index, k in enumerate((5.5, 10.5))  # ceil: 6 and 11 GPUs
    }
    records = {index: solve_point(instance) for index, instance in points.items()}
    assert [records[i]["total_gpus"] for i in (0, 1)] == [6, 11]
    checks = {c.chosen_at: c for c in check_plans(records, points)}
    # before: the peak pools alone went to the hour verifier ("needs UTC hours 0-23"),
    # so no plan served even its own point
    assert checks[(0,)].serves == (0,) and checks[(0,)].fails == (1,)
    assert checks[(1,)].serves == (0, 1)
    assert robust_choice(checks.values()) == checks[(1,)]


def _priced(rate_rps: float, reserved: float, horizon: int):
    data = _data(rate_rps, 0.0, 0, horizon)
    data["regions"][0]["supply"]["h100-sxm"]["reserved_price_per_gpu_hour"] = reserved
    return validate_instance(data, f"reserved-{reserved}.yaml")


def test_an_hourly_plan_serves_a_point_that_only_prices_it_differently():
    # A price is no requirement: a static plan's stated costs are dropped before it is
    # checked at another point (STATED_FIGURES), and an hourly plan's hours, commitments
    # and months are restated at that point's prices. Before, a reserved-price axis left
    # an hourly sweep without a robust choice: plan 0 failed point 1 on
    # 'cost@t00: states $7.2000/hour; recomputed $6.0000/hour'.
    q = _lone_rps()
    for horizon in (1, 2):  # a day; a horizon of two flat months
        points = {0: _priced(5.5 * q, 1.2, horizon), 1: _priced(5.5 * q, 1.0, horizon)}
        records = {index: solve_point(instance) for index, instance in points.items()}
        # 5.5 q needs ceil(5.5) = 6 GPUs all day, committed at either reserved price
        # (24 x 1.2 < 24 x 2.0 on demand): 6 x 1.2 x 730 = 5,256 and 6 x 1.0 x 730 = 4,380
        assert [records[i]["total_gpus"] for i in (0, 1)] == [6, 6]
        for check in check_plans(records, points):
            assert check.serves == (0, 1), check.failure
            assert check.cost_per_month[0] == pytest.approx(6 * 1.2 * 730)
            assert check.cost_per_month[1] == pytest.approx(6 * 1.0 * 730)
        assert robust_choice(check_plans(records, points)).worst_cost_per_month == pytest.approx(
            6 * 1.2 * 730
        )


def test_plans_of_months_are_judged_over_the_horizon():
    # A plan of months is judged on its horizon cost, as solve states it and compare
    # judges it: each plan's cost over the horizon at each point's prices, and the robust
    # choice the smallest worst case of it. Before, only month 0's $/month was checked
    # (the months after it, where growth and lead time cost, were left out).
    q = _lone_rps()
    points = {}
    for index, reserved in enumerate((1.2, 1.0)):
        data = _data(10.5 * q, 0.10, 0, 2)  # 10.5 and 11.55 q: 11 and 12 GPUs all day
        data["regions"][0]["supply"]["h100-sxm"]["reserved_price_per_gpu_hour"] = reserved
        points[index] = validate_instance(data, f"months-{reserved}.yaml")
    records = {index: solve_point(instance) for index, instance in points.items()}
    checks = check_plans(records, points)
    for check in checks:
        assert check.serves == (0, 1), check.failure
        # (11 + 12) GPUs committed all day at 1.2 and at 1.0 $/GPU-hour, 730 h a month
        assert check.horizon_cost[0] == pytest.approx((11 + 12) * 1.2 * 730)
        assert check.horizon_cost[1] == pytest.approx((11 + 12) * 1.0 * 730)
        assert check.worst_horizon_cost == pytest.approx((11 + 12) * 1.2 * 730)
    assert robust_choice(checks).worst_horizon_cost == pytest.approx(23 * 1.2 * 730)


def test_an_hourly_plan_serves_a_point_that_only_changes_the_on_demand_price():
    # Each hour's pools state their GPUs at the on-demand price for a month (the verifier
    # checks count x GPUs x price x 730), so they are restated at the point's price too.
    # Before, an on-demand price axis (2.0 and 2.5 $/GPU-hour) left no robust choice:
    # plan 0 failed point 1 on 'replicas[0].cost_per_month@t00: ... states $8,760.00/month;
    # 6 GPUs x $2.5/GPU-hour x 730 h = $10,950.00'.
    q = _lone_rps()
    points = {}
    for index, on_demand in enumerate((2.0, 2.5)):
        data = _data(5.5 * q, 0.0, 0, 2)
        data["regions"][0]["supply"]["h100-sxm"]["price_per_gpu_hour"] = on_demand
        points[index] = validate_instance(data, f"on-demand-{on_demand}.yaml")
    records = {index: solve_point(instance) for index, instance in points.items()}
    for check in check_plans(records, points):
        assert check.serves == (0, 1), check.failure
        # 6 GPUs committed all day at 1.2 $/GPU-hour whatever the on-demand price
        for index in (0, 1):
            assert check.cost_per_month[index] == pytest.approx(6 * 1.2 * 730)
