"""compare reads demand_growth as the planner does: every demand times the factor
(models.operations.site.demand_factor), in its same-demand gate and in its tokens.

Before, both ignored it: region-loss-2 (60 requests/s in each region) against a copy
with demand_growth 0.5 and buy_unit gpu passed 'the same demand' and was ADOPTED,
'cheaper at the same SLO: $0.053 vs $0.085 per million tokens' (a fleet of 10 GPUs for
half the traffic against 16), and a plan grown 1.5x read $0.171 where its tokens are
1.5x too ($0.114)."""

import pytest

from models.io.loading import validate_instance
from solver.analysis.compare import same_demand, tokens_per_s
from tests.solver.time.test_months import _data


def _instance(rate_rps: float, growth: float | None):
    data = _data(rate_rps, 0.0, 0, 1)
    if growth is not None:
        data["demand_growth"] = growth
    return validate_instance(data, "grown.yaml")


def test_tokens_count_the_grown_demand():
    # a flat day at 60 requests/s x 1.5 = 90 requests/s, 1,000 + 200 tokens each
    assert tokens_per_s(_instance(60.0, 1.5)) == pytest.approx(60.0 * 1.5 * 1200)


def test_a_grown_demand_is_not_the_demand_it_grew_from():
    assert same_demand(_instance(60.0, None), _instance(60.0, 0.5)) != []
    assert same_demand(_instance(60.0, 1.0), _instance(60.0, None)) == []


def test_the_same_rate_spelt_with_a_growth_is_the_same_demand():
    # 40 requests/s x 1.5 and 60 requests/s: every hour at 60 either way
    assert same_demand(_instance(60.0, None), _instance(40.0, 1.5)) == []


def test_another_monthly_growth_is_another_demand_over_a_shared_horizon():
    # Over 3 months month m asks 60 x (1 + g)^m requests/s: 60, 72, 86.4 at g = 20%
    # against 60 every month at g = 0, so the candidate plans less from month 1 on.
    grows = validate_instance(_data(60.0, 0.2, 0, 3), "grows.yaml")
    flat = validate_instance(_data(60.0, 0.0, 0, 3), "flat.yaml")
    (problem,) = same_demand(grows, flat)
    assert "0.0% a month in the candidate, 20.0% in the base" in problem
    # judged per month (month 0's fleet) where the horizons differ: month 0 is the same
    assert same_demand(grows, validate_instance(_data(60.0, 0.0, 0, 1), "one.yaml")) == []
