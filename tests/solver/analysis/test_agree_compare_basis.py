"""compare's '$/million tokens' is read on the basis the two plans are judged on
(`judged_costs`): over the horizon where both plan the same months, else month 0's cost
over month 0's tokens on both sides. Before, a plan of months always read its horizon's
figure, so against a plan without months (judged per month) the ledger and the reason
set a horizon's $/Mtok beside a month's: hr against mo-cheap (3 months at +20%) read
'cheaper at the same SLO: $0.047 vs $0.051 per million tokens ($140/month less)', the
$0.047 over the horizon where month 0's is $0.0498.

Hand case: one region, a flat day at 5.5 q(1) (KV-bound 8B fp8, TP 1): 6 GPUs committed
all day at $1.2 in month 0; at +20% a month, 6.6 q and 7.92 q need 7 and 8."""

import pytest

from models.io.loading import validate_instance
from solver.analysis.compare import compare_instances
from tests.solver.time.test_months import _data, _lone_rps

HOURS = 730.0
TOKENS = 1000 + 200


def test_against_a_plan_without_months_a_plan_of_months_reads_month_0():
    rate = 5.5 * _lone_rps()
    one_day = _data(rate, 0.0, 0, 1)
    del one_day["policy"]["horizon_months"]
    base = validate_instance(one_day, "day.yaml")
    months = validate_instance(_data(rate, 0.2, 0, 3), "months.yaml")
    comparison = compare_instances(base, months)
    month_tokens = rate * TOKENS * 3600 * HOURS
    month_0 = 6 * 1.2 * HOURS / (month_tokens / 1e6)
    assert comparison.candidate.usd_per_million_tokens == pytest.approx(month_0)
    assert comparison.base.usd_per_million_tokens == pytest.approx(month_0)
    # the horizon's figure, (6 + 7 + 8) GPUs over (1 + 1.2 + 1.44) months of tokens, differs
    horizon = (6 + 7 + 8) * 1.2 * HOURS / (month_tokens * (1 + 1.2 + 1.44) / 1e6)
    assert horizon != pytest.approx(month_0)


def test_plans_of_different_horizons_say_they_compare_month_0():
    """A 3-month and a 6-month plan of one instance (no growth): the comparison reads month
    0 on both sides, as above, and said 'not cheaper: $5,256 vs $5,256 per month on the
    same demand' as if the plans agreed on everything; it now names the horizons and what
    is compared, in the reason and in the JSON's basis. Month 0: 6 GPUs committed at $1.2
    all month, 6 x 1.2 x 730 = $5,256 on each side."""
    rate = 5.5 * _lone_rps()
    three = validate_instance(_data(rate, 0.0, 0, 3), "three.yaml")
    six = validate_instance(_data(rate, 0.0, 0, 6), "six.yaml")
    comparison = compare_instances(three, six)
    month_0 = 6 * 1.2 * HOURS
    assert comparison.base.cost_per_month == pytest.approx(month_0)
    assert comparison.candidate.cost_per_month == pytest.approx(month_0)
    assert comparison.decision == "reject"
    said = "month 0 alone: the horizons differ (the base plans 3 months, the candidate 6 months)"
    assert said in comparison.basis
    assert any(said in reason for reason in comparison.reasons), comparison.reasons
    assert "basis" in comparison.model_dump(mode="json")


def test_plans_of_one_horizon_are_judged_over_it():
    """The same months on both sides: the basis is the horizon, nothing said of month 0."""
    rate = 5.5 * _lone_rps()
    three = validate_instance(_data(rate, 0.0, 0, 3), "three.yaml")
    comparison = compare_instances(three, three)
    assert comparison.basis == "over the 3-month horizon"
