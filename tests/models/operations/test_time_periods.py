"""UTC hours, periods and ramps of the representative day, and the autoscaling headroom
built on them: hand cases and properties."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.operations.autoscaling import (
    GPU_UTILISATION_NOTE,
    headroom_rps,
    lag_s,
    pool_headroom,
    scaling_thresholds,
)
from models.operations.time_periods import (
    aggregate_periods,
    largest_rise_rps,
    peak_hour,
    rate_at,
    steepest_ramp,
    utc_hourly_rps,
)
from models.schema.traffic import normalised_profile
from models.serving.queueing import mg1_mean_wait_s

weights = st.lists(
    st.floats(min_value=0, max_value=1e3, allow_nan=False), min_size=24, max_size=24
).filter(lambda values: max(values) >= 1e-6)  # a weight, not a subnormal
rates = st.lists(st.floats(min_value=0, max_value=1e3, allow_nan=False), min_size=24, max_size=24)


def _step_day(trough_rps: float, rise_rps: float, from_hour: int) -> list[float]:
    """The trough until `from_hour`, then `rise_rps` higher for the rest of the day."""
    return [trough_rps + rise_rps * (hour >= from_hour) for hour in range(24)]


@given(weights, st.floats(min_value=1e-3, max_value=1e3))
def test_normalisation_has_mean_one_and_ignores_scale(values, scale):
    profile = normalised_profile(values)
    assert math.fsum(profile) / 24 == pytest.approx(1.0)
    scaled = normalised_profile([value * scale for value in values])
    assert scaled == pytest.approx(profile)
    assert profile[peak_hour(values)] == max(profile)  # scaling keeps the peak hour


@given(rates, st.integers(min_value=-12, max_value=14), st.sampled_from([0.0, 0.25, 0.5, 0.75]))
def test_utc_shift_keeps_the_day_volume_and_the_peak_bound(day, whole, fraction):
    shifted = utc_hourly_rps(day, whole + fraction)
    assert math.fsum(shifted) == pytest.approx(math.fsum(day), abs=1e-6)
    assert max(shifted) <= max(day) + 1e-9


def test_utc_shift_by_hand():
    local = [float(hour) for hour in range(24)]
    # New York at UTC-5: UTC hour 0 is local 19:00.
    assert utc_hourly_rps(local, -5)[0] == 19.0
    # India at UTC+5.5: UTC hour 0 covers local 05:30-06:30, half of hour 5 and of hour 6.
    assert utc_hourly_rps(local, 5.5)[0] == pytest.approx(0.5 * 5 + 0.5 * 6)


def test_hours_with_equal_vectors_merge_into_weighted_periods():
    east = _step_day(10.0, 30.0, 18)  # 18 hours at 10, 6 at 40
    west = [10.0] * 12 + [20.0] * 12
    periods = aggregate_periods({"east": east, "west": west})
    assert [p.hours for p in periods] == [
        tuple(range(12)),
        tuple(range(12, 18)),
        tuple(range(18, 24)),
    ]
    assert [p.weight_hours for p in periods] == [12, 6, 6]
    assert periods[2].values == {"east": 40.0, "west": 20.0}


def test_steepest_ramp_and_largest_rise_by_hand():
    # 10 req/s until 08:00 UTC, 130 from then: +120 req/s over the hour between centres
    # 07:30 and 08:30, i.e. 2 req/s per minute.
    day = _step_day(10.0, 120.0, 8)
    ramp = steepest_ramp(day)
    assert (ramp.from_hour, ramp.to_hour) == (7, 8)
    assert ramp.rps_per_minute == pytest.approx(120 / 60)
    assert largest_rise_rps(day, 240) == pytest.approx(120 / 3600 * 240)
    # A window longer than the ramp sees the whole step, never more.
    assert largest_rise_rps(day, 2 * 3600) == pytest.approx(120)
    assert rate_at(day, 8.0) == pytest.approx(70.0)


def test_headroom_by_hand_for_a_ramp_of_two_per_minute_and_a_240_s_start():
    ramp_rps_per_minute = 2.0
    start_s, capacity_rps = 240.0, 1.5
    day = _step_day(10.0, ramp_rps_per_minute * 60, 8)
    expected_rps = ramp_rps_per_minute / 60 * start_s  # 8 req/s
    pool = pool_headroom(day, capacity_rps, start_s, detection_s=0.0)
    assert pool.headroom_rps == pytest.approx(expected_rps)
    assert pool.headroom_replicas == math.ceil(8 / 1.5) == 6
    # With a minute to detect and a 1.5x burst on the ramp: 2/60 x (240 + 60) x 1.5 = 15.
    burst = pool_headroom(day, capacity_rps, start_s, detection_s=60.0, burst_factor=1.5)
    assert burst.headroom_rps == pytest.approx(2 / 60 * 300 * 1.5)
    assert burst.headroom_replicas == 10
    assert headroom_rps(2 / 60, lag_s(240, 60), 1.5) == pytest.approx(15.0)
    # Off the peak the pool runs what it saw plus the headroom; never above the peak.
    assert pool.warm_rps_by_hour[3] == pytest.approx(10 + 8)
    assert max(pool.warm_rps_by_hour) == 130
    assert pool.warm_replicas_by_hour[3] == math.ceil(18 / 1.5)


def test_a_lag_of_a_day_holds_the_whole_rise_and_runs_the_peak_all_day():
    """The step day of 10 -> 130 requests/s at 08:00 with a replica start of 24 h (the
    bound of policy.replica_start_s): the largest rise within any window up to a day is
    the whole step, 130 - 10 = 120, so every hour runs min(d + 120, 130) = 130, the
    peak. d(t) - d(t - 24 h) alone is 0 on the cyclic day (H = 0, each hour at its own
    rate: $10,877/month for an hourly instance where a 2 h start costs $12,045)."""
    day = _step_day(10.0, 120.0, 8)
    assert largest_rise_rps(day, 86_400) == pytest.approx(120)
    pool = pool_headroom(day, 1.0, 86_400, detection_s=60.0)
    assert pool.headroom_rps == pytest.approx(120)
    assert pool.warm_rps_by_hour == (130.0,) * 24


@given(rates, st.floats(min_value=0, max_value=172_800), st.floats(min_value=0, max_value=172_800))
def test_a_slower_start_never_needs_less_headroom(day, one_s, other_s):
    """H(L) is the largest rise within any window up to L: non-decreasing in L, up to
    the day's whole rise (max - min) at a lag of 23 h and more."""
    short, long = sorted((one_s, other_s))
    assert largest_rise_rps(day, long) >= largest_rise_rps(day, short) - 1e-9
    assert largest_rise_rps(day, 23 * 3600) == pytest.approx(max(day) - min(day), abs=1e-9)


@given(rates, st.floats(min_value=0, max_value=7200), st.floats(min_value=1, max_value=3))
def test_warm_rate_covers_every_moment_and_the_flat_day_is_today(day, start_s, burst):
    if max(day) <= 0:
        return
    pool = pool_headroom(day, 1.0, start_s, detection_s=0.0, burst_factor=burst)
    for hour in range(24):
        for quarter in range(4):
            assert pool.warm_rps_by_hour[hour] >= rate_at(day, hour + quarter / 4) - 1e-6
    flat = pool_headroom([max(day)] * 24, 1.0, start_s, detection_s=0.0, burst_factor=burst)
    assert flat.headroom_rps == 0 and flat.warm_rps_by_hour == (max(day),) * 24
    # Flattening the whole day at its peak never lowers any hour's warm rate...
    pairs = zip(flat.warm_rps_by_hour, pool.warm_rps_by_hour, strict=True)
    assert all(f >= w - 1e-9 for f, w in pairs)
    # ...nor the peak need.
    assert max(flat.warm_rps_by_hour) >= max(pool.warm_rps_by_hour) - 1e-9


@given(rates, st.sets(st.integers(min_value=0, max_value=23)))
def test_raising_hours_toward_the_peak_never_lowers_the_peak_need(day, hours):
    top = max(day)
    flattened = [top if hour in hours else rate for hour, rate in enumerate(day)]
    assert max(flattened) >= max(day)
    if top > 0:
        before = pool_headroom(day, 1.0, 300, detection_s=0.0)
        after = pool_headroom(flattened, 1.0, 300, detection_s=0.0)
        assert max(after.warm_rps_by_hour) >= max(before.warm_rps_by_hour) - 1e-9


def test_raising_a_trough_between_two_peaks_can_lower_off_peak_warm_capacity():
    # Stated limit of the property above: only the peak need is monotone. Hours 9-12 are
    # 90, 100, 0, 100; filling hour 11 removes the 0 -> 100 ramp, H falls from
    # 100/3600 x 300 to 10/3600 x 300 ... and the quiet hours need less.
    day = [0.0] * 24
    day[9:13] = [90.0, 100.0, 0.0, 100.0]
    filled = list(day)
    filled[11] = 100.0
    before = pool_headroom(day, 1.0, 300, detection_s=0.0)
    after = pool_headroom(filled, 1.0, 300, detection_s=0.0)
    assert after.headroom_rps < before.headroom_rps
    assert after.warm_rps_by_hour[3] < before.warm_rps_by_hour[3]


def test_scaling_thresholds_by_hand():
    capacity_rps, headroom, peak_replicas = 2.0, 4.0, 10
    target = 1 - 4.0 / (10 * 2.0)  # 0.8 of SLO capacity
    thresholds = scaling_thresholds(
        capacity_rps_per_replica=capacity_rps,
        headroom_rps=headroom,
        peak_replicas=peak_replicas,
        mean_batch=60,
        max_batch=80,
        prefill_s=0.1,
        prompt_cv=1.0,
        ttft_p99_s=0.8,
    )
    assert thresholds.target_utilization == pytest.approx(target)
    assert thresholds.kv_usage_scale_out == pytest.approx(target * 60 / 80)
    rate = target * capacity_rps  # 1.6 prompts/s on a 0.1 s prefill lane: rho = 0.16
    assert thresholds.queue_depth_scale_out == pytest.approx(
        rate * 0.16 * 0.1 * (1 + 1.0) / (2 * (1 - 0.16))
    )
    assert thresholds.queue_depth_scale_out == pytest.approx(rate * mg1_mean_wait_s(rate, 0.1, 1.0))
    assert thresholds.queue_depth_slo_edge == pytest.approx(0.8 / 0.1 - 1)
    assert "continuous batching" in thresholds.note and thresholds.note == GPU_UTILISATION_NOTE
