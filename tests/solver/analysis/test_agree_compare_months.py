"""compare judges two plans of months on what solve states for them: the cost over the
horizon, not month 0's alone.

Hand case (tests.solver.time.test_months): Llama 3.1 8B fp8 TP1, KV-limited, a flat
day, 10.5 q of load growing 10% a month over 4 months: ceil(10.5 x 1.1^m) = 11, 12, 13,
14 GPUs, reserved at 1.2 and on demand at 2.0 $/GPU-hour. With a two-month lead time
month 1 keeps month 0's 11 committed and rents 1 on demand; with none it commits 12.
Month 0 is the same plan (11 x 1.2 x 730 = $9,636), so compare read 'not cheaper:
$9,636 vs $9,636 per month' and rejected a candidate that saves month 1's
(11 x 1.2 + 2.0 - 12 x 1.2) x 730 = 0.8 x 730 = $584 over the horizon."""

import pytest

from models.io.loading import validate_instance
from solver.analysis.compare import compare_instances
from tests.solver.time.test_months import HOURS_PER_MONTH, ON_DEMAND, RESERVED, _data, _lone_rps


def test_a_shorter_lead_time_that_saves_over_the_horizon_is_adopted():
    q = _lone_rps()
    base = validate_instance(_data(10.5 * q, 0.10, 2, 4), "lead2.yaml")
    candidate = validate_instance(_data(10.5 * q, 0.10, 0, 4), "lead0.yaml")
    result = compare_instances(base, candidate)
    month_0 = 11 * RESERVED * HOURS_PER_MONTH
    saving = (11 * RESERVED + ON_DEMAND - 12 * RESERVED) * HOURS_PER_MONTH
    assert result.base.cost_per_month == pytest.approx(month_0)
    assert result.candidate.cost_per_month == pytest.approx(month_0)
    assert result.base.horizon_months == result.candidate.horizon_months == 4
    assert result.base.horizon_cost - result.candidate.horizon_cost == pytest.approx(saving)
    assert result.decision == "adopt", result.reasons
    assert f"${saving:,.0f} less over the 4-month horizon" in result.reasons[0]


def test_the_longer_lead_time_is_not_cheaper_over_the_horizon():
    q = _lone_rps()
    base = validate_instance(_data(10.5 * q, 0.10, 0, 4), "lead0.yaml")
    candidate = validate_instance(_data(10.5 * q, 0.10, 2, 4), "lead2.yaml")
    result = compare_instances(base, candidate)
    assert result.decision == "reject"
    assert "over the 4-month horizon" in result.reasons[0]


def test_per_million_tokens_of_a_plan_of_months_is_its_horizon_over_the_horizons_tokens():
    # The candidate is judged on its horizon cost, and the reason's $ per million tokens
    # reads the same horizon: the horizon's cost over the tokens its months serve (month
    # m at 1.1^m the load). Before, it read month 0's ($9,636 over month 0's tokens) on
    # both sides: 'cheaper at the same SLO: $0.X vs $0.X' with the same number twice.
    q = _lone_rps()
    base = validate_instance(_data(10.5 * q, 0.10, 2, 4), "lead2.yaml")
    candidate = validate_instance(_data(10.5 * q, 0.10, 0, 4), "lead0.yaml")
    result = compare_instances(base, candidate)
    million_tokens = sum(
        10.5 * q * 1.1**m * (1000 + 200) * 3600 * HOURS_PER_MONTH / 1e6 for m in range(4)
    )
    for side in (result.base, result.candidate):
        assert side.usd_per_million_tokens == pytest.approx(side.horizon_cost / million_tokens)
    assert result.candidate.usd_per_million_tokens < result.base.usd_per_million_tokens
