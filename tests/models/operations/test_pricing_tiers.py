"""Reserved / on-demand / spot arithmetic and procurement over months: hand cases and
properties."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.operations.pricing_tiers import (
    committed_base,
    daily_cost,
    poisson_quantile,
    spot_batch_goodput,
    spot_down_fraction,
    spot_replicas_for,
)
from models.operations.procurement import growth_factors, procurement_plan

ON_DEMAND = 4.0
RESERVED = 0.6 * ON_DEMAND  # reserved at 60% of on-demand


def _day(peak_hours: int, peak_gpus: float = 40, trough_gpus: float = 10) -> list[float]:
    """A 4x peak (40 GPUs) for `peak_hours` over a flat trough (10 GPUs)."""
    return [peak_gpus] * peak_hours + [trough_gpus] * (24 - peak_hours)


def test_reserved_base_for_a_short_4x_peak_commits_the_trough():
    # Break-even: a committed GPU pays off if it would run on demand more than
    # 24 h x 0.6 = 14.4 h a day. A 6-hour peak runs 6 h above the trough: commit the trough.
    commitment = committed_base(_day(6), RESERVED, ON_DEMAND)
    assert commitment.breakeven_hours == pytest.approx(24 * 0.6)
    assert commitment.committed_gpus == 10
    assert commitment.hours_above == 6
    # 10 committed x 24 h x 2.40 + 30 on demand x 6 h x 4.00 = 576 + 720 = 1,296 USD/day.
    assert commitment.cost_per_day == pytest.approx(10 * 24 * RESERVED + 30 * 6 * ON_DEMAND)
    assert commitment.peak_reserved_cost_per_day == pytest.approx(40 * 24 * RESERVED)  # 2,304
    assert commitment.all_on_demand_cost_per_day == pytest.approx(
        (40 * 6 + 10 * 18) * ON_DEMAND
    )  # 1,680
    saving = 1 - commitment.cost_per_day / commitment.peak_reserved_cost_per_day
    assert saving == pytest.approx(1 - 1296 / 2304)  # 43.75% below peak-sized reserved


def test_reserved_base_for_a_long_4x_peak_commits_the_peak():
    # A 16-hour peak runs above the trough 16 h > 14.4 h: every peak GPU is worth committing.
    commitment = committed_base(_day(16), RESERVED, ON_DEMAND)
    assert commitment.committed_gpus == 40
    assert commitment.cost_per_day == pytest.approx(40 * 24 * RESERVED)


def test_reserved_dearer_than_on_demand_commits_nothing_and_a_cap_forces_a_base():
    assert committed_base(_day(6), ON_DEMAND * 1.1, ON_DEMAND).committed_gpus == 0
    capped = committed_base(_day(6), RESERVED, ON_DEMAND, max_on_demand_gpus=20)
    assert capped.committed_gpus == 40 - 20


@given(
    st.lists(st.integers(min_value=0, max_value=200), min_size=1, max_size=24),
    st.floats(min_value=0.05, max_value=2.0),
)
def test_committed_base_is_the_cheapest_level(needs, reserved_share):
    reserved = reserved_share * ON_DEMAND
    best = committed_base(needs, reserved, ON_DEMAND)
    for level in range(0, max(needs) + 2):
        assert best.cost_per_day <= daily_cost(level, needs, reserved, ON_DEMAND) + 1e-6
    # Adding reserved pricing never raises the cost: committing nothing is on-demand only.
    assert best.cost_per_day <= best.all_on_demand_cost_per_day + 1e-6


def test_weighted_periods_give_the_same_base_as_their_hours():
    periods, weights = [40.0, 10.0], [6.0, 18.0]
    assert committed_base(periods, RESERVED, ON_DEMAND, weights) == committed_base(
        _day(6), RESERVED, ON_DEMAND
    )


def test_spot_margin_by_hand():
    # 0.5 interruptions/h, 360 s to replace: lambda T = 0.05, u = 0.05 / 1.05.
    down = spot_down_fraction(0.5, 360)
    assert down == pytest.approx(0.05 / 1.05)
    margin = spot_replicas_for(20, 0.5, 360, confidence=0.99)
    n = margin.spot_replicas
    # The smallest n with P(Poisson(n u) <= n - 20) >= 0.99.
    assert n - poisson_quantile(n * down, 0.99) >= 20
    assert (n - 1) - poisson_quantile((n - 1) * down, 0.99) < 20
    # Poisson(22 x 0.0476 = 1.048): P(X <= 2) = e^-m (1 + m + m^2/2) = 0.910 < 0.99,
    # P(X <= 3) = 0.978, P(X <= 4) = 0.995; so 22 - 4 < 20, and 24 = 20 + 4 holds.
    m = 24 * down
    assert math.exp(-m) * (1 + m + m**2 / 2 + m**3 / 6 + m**4 / 24) >= 0.99
    assert n == 24 and margin.margin_replicas == 4


def test_spot_batch_goodput_by_hand():
    # u = 0.05 / 1.05; a 10-minute request loses half its work per interruption:
    # 0.5/h x (600 / 3600 h) / 2 = 1/24.
    assert spot_batch_goodput(0.5, 360, 600) == pytest.approx((1 - 0.05 / 1.05) * (1 - 1 / 24))


def test_procurement_with_growth_and_a_lead_time_by_hand():
    factors = growth_factors(0.5, 3)
    assert factors == (1.0, 1.5, 2.25)
    needs = [[20 * f] * 24 for f in (1.0, 1.5, 2.0)]  # 20, 30, 40 GPUs all day
    plan = procurement_plan(needs, RESERVED, ON_DEMAND, lead_time_months=1)
    # Month 0 cannot be committed in time: all on demand. A flat all-day need is above any
    # base 24 h > 14.4 h, so months 1 and 2 commit their whole need, ordered a month ahead.
    assert [m.committed_gpus for m in plan] == [0, 30, 40]
    assert [m.ordered_gpus for m in plan] == [30, 10, 0]
    assert plan[0].cost == pytest.approx(20 * ON_DEMAND * 730)
    assert plan[2].cost == pytest.approx(40 * RESERVED * 730)


def test_shrinking_demand_pools_months_into_one_commitment():
    # Months of 30 and 10 GPUs all day: alone they would commit 30 then 10, but a
    # commitment cannot fall. Together: 48 h, break-even 48 x 0.6 = 28.8 h, and 30 GPUs
    # are needed only 24 h: commit 10 in both months (768 vs 864 x the on-demand price).
    plan = procurement_plan([[30.0] * 24, [10.0] * 24], RESERVED, ON_DEMAND)
    assert [m.committed_gpus for m in plan] == [10, 10]
    pooled = daily_cost(10, [30.0] * 24 + [10.0] * 24, RESERVED, ON_DEMAND)
    assert pooled == pytest.approx(10 * 48 * RESERVED + 20 * 24 * ON_DEMAND)
    assert pooled < daily_cost(30, [30.0] * 24 + [10.0] * 24, RESERVED, ON_DEMAND)


@given(
    st.lists(
        st.lists(st.integers(min_value=0, max_value=50), min_size=4, max_size=4),
        min_size=1,
        max_size=4,
    ),
    st.integers(min_value=0, max_value=2),
)
def test_procurement_commitments_never_fall_and_beat_every_constant_level(needs, lead):
    plan = procurement_plan(needs, RESERVED, ON_DEMAND, lead_time_months=lead)
    committed = [m.committed_gpus for m in plan]
    assert committed == sorted(committed)
    assert math.fsum(m.ordered_gpus for m in plan) == pytest.approx(committed[-1])
    total = math.fsum(m.cost for m in plan)
    for level in range(0, 52):
        constant = [0.0] * min(lead, len(needs)) + [level] * max(len(needs) - lead, 0)
        other = math.fsum(
            730 / 24 * daily_cost(c, day, RESERVED, ON_DEMAND)
            for c, day in zip(constant, needs, strict=True)
        )
        assert total <= other + 1e-6
