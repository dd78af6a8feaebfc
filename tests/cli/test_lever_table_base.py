"""The lever table names the base its savings are taken from where it is not the
explanation's $/month (cli.levers.lever_table)."""

from cli.levers import lever_table
from solver.plan.schema import Plan
from solver.plan.time_records import Month


def _month(month: int, cost: float) -> Month:
    return Month(month=month, growth_factor=1.0, cost_per_month=cost, status="optimal", mip_gap=0.0)


def test_a_horizons_lever_table_names_its_mean_month():
    """Months of $2,700, $2,850 and $3,000: the levers are ranked against their mean,
    (2,700 + 2,850 + 3,000) / 3 = $2,850/month, not month 0's $2,700 the header states."""
    months = (_month(0, 2700.0), _month(1, 2850.0), _month(2, 3000.0))
    plan = Plan(cost_per_month=2700.0, months=months, horizon_cost=8550.0)
    title = lever_table((), plan).title
    expected = "(saving against the horizon's mean month, $2,850/month)"
    assert title == f"Levers ranked by dollars {expected}"


def test_a_plan_without_months_keeps_the_plain_title():
    assert lever_table((), Plan(cost_per_month=2700.0)).title == "Levers ranked by dollars"
    assert lever_table(()).title == "Levers ranked by dollars"
