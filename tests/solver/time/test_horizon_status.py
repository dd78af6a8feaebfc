"""A procurement horizon states each month's own plan and is optimal only where every
month is (solver.time.months.horizon_status, with_months)."""

import pytest

from solver.plan.time_records import Month
from solver.time.months import horizon_status


def _month(month: int, cost: float, status: str, gap: float | None) -> Month:
    return Month(month=month, growth_factor=1.0, cost_per_month=cost, status=status, mip_gap=gap)


def test_every_month_optimal_is_an_optimal_horizon():
    months = [_month(0, 100.0, "optimal", 0.0005), _month(1, 300.0, "optimal", 0.0)]
    status, gap = horizon_status(months, 0.001)
    assert status == "optimal"
    # (100 x 0.0005 + 300 x 0) / 400 = 0.000125
    assert gap == pytest.approx(0.000125)


def test_one_month_short_of_its_bound_makes_the_horizon_feasible_at_the_cost_weighted_gap():
    """Month 0 costs 100 at 0.05% and month 1 300 at 10%: the horizon's bound is
    100 x 0.9995 + 300 x 0.9 = 369.95 against 400, a gap of 30.05 / 400 = 7.5125%."""
    months = [_month(0, 100.0, "optimal", 0.0005), _month(1, 300.0, "feasible (gap 10.00%)", 0.1)]
    status, gap = horizon_status(months, 0.001)
    assert gap == pytest.approx(30.05 / 400)
    assert status == "feasible (gap 7.51%)"


def test_a_month_without_a_bound_of_its_own_is_bounded_by_month_0s():
    """Month 1 was cut by the clock (held and grown: no bound of its own) at 300; its
    demand is at least month 0's, so month 0's bound of 100 bounds it: 100 + 100 = 200
    against 400, a gap of 50%. Where its demand is below month 0's for some workload
    nothing bounds it, and the horizon's gap is unknown."""
    months = [_month(0, 100.0, "optimal", 0.0), _month(1, 300.0, "feasible (gap unknown)", None)]
    status, gap = horizon_status(months, 0.001)
    assert gap == pytest.approx(200 / 400)
    assert status == "feasible (gap 50.00%)"
    assert horizon_status(months, 0.001, [True, False]) == ("feasible (gap unknown)", None)


def test_a_horizon_proven_within_the_requested_gap_is_optimal_whatever_one_month_says():
    """Month 0 costs 900 at 0% and month 1 100 at 0.5% (feasible at a 0.1% request): the
    horizon's gap is 100 x 0.005 / 1000 = 0.05%, within the 0.1% asked, so the horizon
    is proven optimal; asked for 0.01% it is feasible at 0.05%."""
    months = [_month(0, 900.0, "optimal", 0.0), _month(1, 100.0, "feasible (gap 0.50%)", 0.005)]
    assert horizon_status(months, 0.001) == ("optimal", pytest.approx(0.0005))
    assert horizon_status(months, 0.0001)[0] == "feasible (gap 0.05%)"


def test_after_a_month_not_proven_later_months_are_bounded_by_month_0s_bound():
    """Month 0 stopped by the clock at 100 with a 50% gap (bound 50) commits a dear fleet
    that months 1 and 2 inherit: each is optimal at 100 given it, but their own bounds
    (100 each) bound nothing the horizon could cost. Bounded by month 0's bound instead
    (their demand is at least month 0's), the horizon's bound is 50 x 3 = 150 against
    300: a gap of 50%, not the 100 x 0.5 / 300 = 16.7% the months' own bounds give."""
    months = [
        _month(0, 100.0, "feasible (gap 50.00%)", 0.5),
        _month(1, 100.0, "optimal", 0.0),
        _month(2, 100.0, "optimal", 0.0),
    ]
    status, gap = horizon_status(months, 0.001)
    assert gap == pytest.approx(0.5)
    assert status == "feasible (gap 50.00%)"


def test_a_month_not_proven_keeps_its_own_bound_and_the_months_before_it_theirs():
    """Months 0 and 1 are proven (bounds 100 and 200), month 2 stops at 300 with a 10% gap
    (bound 270, given the proven months' commitments), month 3 inherits it and is bounded
    by month 0's 100: (100 + 200 + 270 + 100) = 670 against 100 + 200 + 300 + 400 = 1000,
    a gap of 33%."""
    months = [
        _month(0, 100.0, "optimal", 0.0),
        _month(1, 200.0, "optimal", 0.0),
        _month(2, 300.0, "feasible (gap 10.00%)", 0.1),
        _month(3, 400.0, "optimal", 0.0),
    ]
    _, gap = horizon_status(months, 0.001)
    assert gap == pytest.approx(330 / 1000)


def test_a_shrinking_month_after_a_month_not_proven_has_no_bound():
    """Month 2's demand is below month 0's for some workload (negative growth): month 0's
    bound does not bound it, and its own is conditional on month 1's unproven fleet."""
    months = [
        _month(0, 100.0, "optimal", 0.0),
        _month(1, 100.0, "feasible (gap 5.00%)", 0.05),
        _month(2, 90.0, "optimal", 0.0),
    ]
    assert horizon_status(months, 0.001, [True, True, False]) == ("feasible (gap unknown)", None)
