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
