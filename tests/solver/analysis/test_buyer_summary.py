"""The report a buyer reads (issue 32): the one-screen summary (solver.plan.summary),
and an hourly plan's day, months per region and cost split (solver.analysis.report_time),
each worked out by hand or held to the plan's own totals."""

import pytest

from cli.render.summary_tables import summary_table
from models.io.loading import load_instance
from solver.analysis.report_time import cost_split, day_chart, months_by_region
from solver.plan.summary import buyer_summary
from solver.solve import solve
from solver.verify.fleet import verify
from solver.verify.hours import verify_hours
from tests.paths import INSTANCES
from tests.solver.time.test_months import ON_DEMAND, RESERVED, _lone_rps, _solved

HOURS_PER_MONTH = 730.0


@pytest.fixture(scope="module")
def batch():
    instance = load_instance(INSTANCES / "offline-batch.yaml")
    return instance, solve(instance)


def test_the_summary_of_a_static_plan_by_hand(batch):
    _, plan = batch
    s = plan.summary
    assert s == buyer_summary(plan)  # the pipeline attaches it
    # 10 MI300X used -> ceil(10 / 8) = 2 servers of 8 to order now
    assert (s.gpus_bought, s.gpus_used) == (2 * 8, 10)
    (order,) = s.orders
    assert (order.servers, order.gpus_per_server, order.order_month) == (2, 8, 0)
    assert s.cost_per_month == pytest.approx(2 * 8 * 2.10 * HOURS_PER_MONTH)  # $/GPU-h 2.10
    assert s.horizon_months == 0 and s.horizon_cost is None
    prices = [abs(b.shadow_price) for b in s.binding]
    assert prices == sorted(prices, reverse=True) and len(prices) <= 5
    rows = dict(summary_table(plan).rows)
    assert rows["GPUs"].startswith("16 bought, 10 used")
    assert rows["servers to order"] == "2 x 8-GPU mi300x servers for us-central, order now"


def test_the_verifier_refuses_a_summary_that_is_not_the_plan_s(batch):
    instance, plan = batch
    wrong = plan.summary.model_copy(update={"gpus_bought": 10})
    found = verify(instance, plan.model_copy(update={"summary": wrong})).violations
    assert [v.requirement for v in found] == ["summary.gpus_bought"]
    assert verify(instance, plan).ok
    # offline-batch owns no GPUs: a summary row claiming one already owned is not the plan's
    (row,) = plan.summary.bought
    assert row.existing == 0
    owned = plan.summary.model_copy(update={"bought": (row.model_copy(update={"existing": 1}),)})
    found = verify(instance, plan.model_copy(update={"summary": owned})).violations
    assert [v.requirement for v in found] == ["summary.bought[0]"]


@pytest.fixture(scope="module")
def horizon():
    """4 months at 10% growth, a 2-month lead, one region of H100 at TP 1 (test_months)."""
    return _solved(10.5 * _lone_rps(), 0.10, lead=2, horizon=4)


def test_the_months_by_region_and_the_horizon_by_hand(horizon):
    instance, plan = horizon
    # needs 11, 12, 13, 14 GPUs; committed 11, 11, 13, 14; month 1 rents 1 on demand
    hours = HOURS_PER_MONTH
    expected = [
        11 * RESERVED * hours,
        11 * RESERVED * hours + 1 * ON_DEMAND * hours,
        13 * RESERVED * hours,
        14 * RESERVED * hours,
    ]
    months = months_by_region(plan)
    assert months.regions == ["r1"]
    assert [row[0] for row in months.cost] == pytest.approx(expected)
    assert months.horizon_total == pytest.approx(sum(expected))
    assert plan.summary.horizon_cost == pytest.approx(sum(expected))
    assert plan.summary.horizon_months == 4
    # orders: 11 before the horizon (m-2), 2 in m0 (serving m2), 1 in m1 (serving m3)
    orders = [(o.order_month, o.serving_from_month, o.servers) for o in plan.summary.orders]
    assert orders == [(-2, 0, 11), (0, 2, 2), (1, 3, 1)]
    assert verify_hours(instance, plan).ok


def test_the_cost_split_adds_up_to_the_month_and_the_day_is_24_hours(horizon):
    instance, plan = horizon
    split = cost_split(instance, plan)
    total = sum(r.reserved + r.on_demand + r.spot for r in split)
    assert total == pytest.approx(plan.cost_per_month)
    (row,) = split
    assert row.reserved == pytest.approx(11 * RESERVED * HOURS_PER_MONTH)  # month 0
    day = day_chart(instance, plan)
    assert len(day.demand_rps) == len(day.warm_capacity_rps) == 24
    assert all(c >= d for c, d in zip(day.warm_capacity_rps, day.demand_rps, strict=True))
    assert day.committed_gpus == 11
    assert all(r + o >= 11 for r, o in zip(day.reserved_gpus, day.on_demand_gpus, strict=True))


def test_the_hour_verifier_counts_the_gpus_bought_as_the_summary_does(horizon):
    instance, plan = horizon
    result = verify_hours(instance, plan)
    # month 0 uses 11 H100 every hour, none existing, bought by the GPU: 11 bought, 11 used
    # (`verify` printed "11 GPUs used" alone for hourly plans, "N bought, M used" for static)
    assert (result.gpus_bought, result.total_gpus) == (11, 11)
    assert (plan.summary.gpus_bought, plan.summary.gpus_used) == (11, 11)
