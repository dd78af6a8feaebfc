"""SLO arithmetic against hand calculations."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.operations.slo import (
    budget_consumed,
    burn_rate,
    burn_rate_threshold,
    burn_scenario,
    error_budget_fraction,
    error_budget_minutes,
    error_budget_requests,
    gpus_to_survive_zone_loss,
    multiwindow_burn_alerts,
    sli,
    time_to_exhaustion_h,
    zone_loss_overprovision_factor,
)

MINUTES_IN_30_DAYS = 30 * 24 * 60
HOURS_IN_30_DAYS = 30 * 24


def test_sli():
    assert sli(999, 1000) == pytest.approx(999 / 1000)
    assert sli(0, 0) == 1.0
    with pytest.raises(ValueError):
        sli(5, 4)


def test_error_budget_fraction_and_minutes():
    assert error_budget_fraction(0.999) == pytest.approx(1 - 0.999)
    assert error_budget_minutes(0.999, 30) == pytest.approx(0.001 * MINUTES_IN_30_DAYS)
    assert round(error_budget_minutes(0.999, 30), 1) == 43.2
    # the usual availability table over 30 days
    assert error_budget_minutes(0.99, 30) == pytest.approx(0.01 * MINUTES_IN_30_DAYS)  # 432
    assert error_budget_minutes(0.9999, 30) == pytest.approx(0.0001 * MINUTES_IN_30_DAYS)  # 4.32
    assert error_budget_minutes(0.99999, 30) == pytest.approx(0.00001 * MINUTES_IN_30_DAYS)


def test_error_budget_requests():
    requests_in_window = 2_000_000 * 30
    assert error_budget_requests(0.999, requests_in_window) == pytest.approx(
        0.001 * requests_in_window
    )
    assert round(error_budget_requests(0.999, requests_in_window)) == 60_000


def test_burn_rate_and_budget_consumed():
    assert burn_rate(0.0144, 0.999) == pytest.approx(0.0144 / 0.001)  # 14.4x
    # 14.4x for 1 h of 720 h: 2% of the budget
    assert budget_consumed(0.0144, 1, 0.999, 30) == pytest.approx(14.4 * 1 / HOURS_IN_30_DAYS)
    assert budget_consumed(0.0144, 1, 0.999, 30) == pytest.approx(0.02)
    # 6x for 6 h: 5%
    assert budget_consumed(0.006, 6, 0.999, 30) == pytest.approx(6 * 6 / HOURS_IN_30_DAYS)
    # 5% errors for 20 minutes: 50x x (1/3 h) / 720 h = 2.3%
    assert budget_consumed(0.05, 1 / 3, 0.999, 30) == pytest.approx(50 * (1 / 3) / 720)
    # on budget for the whole window spends all of it
    assert budget_consumed(0.001, HOURS_IN_30_DAYS, 0.999, 30) == pytest.approx(1.0)


def test_time_to_exhaustion():
    assert time_to_exhaustion_h(14.4, 30) == pytest.approx(HOURS_IN_30_DAYS / 14.4)  # 50 h
    assert time_to_exhaustion_h(50, 30) == pytest.approx(HOURS_IN_30_DAYS / 50)  # 14.4 h
    assert time_to_exhaustion_h(2, 30, budget_remaining_fraction=0.5) == pytest.approx(
        0.5 * HOURS_IN_30_DAYS / 2
    )
    assert time_to_exhaustion_h(0, 30) == math.inf


def test_burn_scenario_of_the_seed_lines():
    fast = burn_scenario(0.0144, 1, 0.999, 30)
    assert round(fast.burn_rate, 1) == 14.4
    assert round(fast.budget_consumed * 100, 1) == 2.0
    assert round(fast.hours_to_exhaustion, 1) == 50.0
    incident = burn_scenario(0.05, 0.33, 0.999, 30)
    assert round(incident.burn_rate, 1) == 50.0
    assert round(incident.budget_consumed * 100, 1) == 2.3
    assert round(incident.hours_to_exhaustion, 1) == 14.4


def test_multiwindow_alert_thresholds():
    # 2% in 1 h, 5% in 6 h, 10% in 3 days of a 30-day budget
    assert burn_rate_threshold(0.02, 1, 30) == pytest.approx(0.02 * HOURS_IN_30_DAYS / 1)
    alerts = multiwindow_burn_alerts(0.999, 30)
    assert [round(alert.burn_rate, 1) for alert in alerts] == [14.4, 6.0, 1.0]
    assert alerts[0].error_rate == pytest.approx(14.4 * 0.001)
    assert alerts[0].policy.short_window_h == pytest.approx(5 / 60)
    # a 7-day window scales the thresholds by 7/30
    week = multiwindow_burn_alerts(0.999, 7)
    assert week[0].burn_rate == pytest.approx(0.02 * 7 * 24 / 1)


def test_zone_loss_factor():
    assert zone_loss_overprovision_factor(3) == pytest.approx(3 / 2)
    assert zone_loss_overprovision_factor(2) == pytest.approx(2 / 1)
    assert zone_loss_overprovision_factor(4) == pytest.approx(4 / 3)
    assert zone_loss_overprovision_factor(5, zones_lost=2) == pytest.approx(5 / 3)
    with pytest.raises(ValueError, match="zone"):
        zone_loss_overprovision_factor(1)


def test_gpus_to_survive_zone_loss_by_hand():
    # 31 GPUs needed over 3 zones: 31 x 3/2 = 46.5 -> 47 = 16 + 16 + 15
    layout = gpus_to_survive_zone_loss(30.9, 3)
    assert layout.gpus_needed == 31
    assert layout.total_gpus == math.ceil(31 * 3 / 2)
    assert sorted(layout.gpus_per_zone, reverse=True) == [16, 16, 15]
    assert layout.gpus_after_worst_loss == 31
    # two zones: each carries everything
    assert gpus_to_survive_zone_loss(31, 2).total_gpus == 31 * 2


@given(need=st.integers(0, 5000), zones=st.integers(2, 12))
def test_zone_layout_survives_and_is_smallest(need, zones):
    layout = gpus_to_survive_zone_loss(need, zones)
    assert layout.gpus_after_worst_loss >= need
    assert max(layout.gpus_per_zone) - min(layout.gpus_per_zone) <= 1
    # one GPU fewer, however spread, loses a zone of at least ceil(T / N) and falls short
    fewer = layout.total_gpus - 1
    if need > 0:
        assert fewer - math.ceil(fewer / zones) < need


def test_bad_inputs():
    with pytest.raises(ValueError, match="slo"):
        error_budget_fraction(1.0)
    with pytest.raises(ValueError, match="window_days"):
        error_budget_minutes(0.999, 0)
    with pytest.raises(ValueError, match="error_rate"):
        burn_rate(1.5, 0.999)
