"""explain's header states a plan of months as solve's summary does: month 0's $/month
and the horizon's sum, and that the explanation reads month 0.

Before: 'growth-horizon: explanation of the optimal plan at $26,163/month' over 4 months
(months $26,163.20 + 3 x $26,747.20 = $106,404.80), above a lever table whose base is
'the horizon's mean month, $26,601/month' ($106,404.80 / 4): the one explain output read
the plan at two costs and said of neither which month it was."""

from cli.render.summary_tables import MONTH_ZERO_EXPLAINED, cost_words
from solver.plan.schema import Plan
from solver.plan.time_records import Month


def _months(*costs: float) -> Plan:
    months = tuple(Month(month=m, growth_factor=1.0, cost_per_month=c) for m, c in enumerate(costs))
    return Plan(cost_per_month=costs[0], months=months, horizon_cost=sum(costs))


def test_a_plan_of_months_is_stated_at_month_0_with_its_horizon():
    plan = _months(26_163.2, 26_747.2, 26_747.2, 26_747.2)
    # 26,163.2 + 3 x 26,747.2 = 106,404.8
    assert cost_words(plan.cost_per_month, plan) == (
        "$26,163/month (month 0); $106,405 over the 4-month horizon"
    )
    assert "month 0" in MONTH_ZERO_EXPLAINED and "levers" in MONTH_ZERO_EXPLAINED


def test_a_static_or_hourly_plan_is_stated_at_its_own_cost():
    assert cost_words(26_980.8, Plan(cost_per_month=26_980.8)) == "$26,981/month"


def test_explain_prints_the_horizon_beside_month_0():
    """The command's header lines, for a plan of months of $100 and $150."""
    from types import SimpleNamespace

    from cli.solve import explain_header

    plan = _months(100.0, 150.0).model_copy(update={"status": "optimal"})
    explained = SimpleNamespace(
        instance="two-months", status="optimal", cost_per_month=100.0, plan=plan
    )
    header = explain_header(explained)
    # 100 + 150 = 250 over the two months
    assert header[0] == (
        "two-months: explanation of the optimal plan at $100/month (month 0); $250 over the "
        "2-month horizon"
    )
    assert MONTH_ZERO_EXPLAINED in header
