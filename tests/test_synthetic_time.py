"""The generated instances over time (tests.synthetic_time): valid instance files whose
hourly twin keeps the peak-hour instance's peak rates, and whose horizon and features
land on the schema's keys."""

import pytest

from models.io.loading import validate_instance
from tests.synthetic import generated_data
from tests.synthetic_time import (
    day_profile,
    hourly_data,
    months_data,
    requests_per_day,
    with_features,
)


def test_a_profiled_day_peaks_at_the_given_rate():
    # weights 1 x 12 and 3 x 12: sum 48, max 3; mean-1 peak weight 3 x 24 / 48 = 1.5;
    # a 10 req/s peak is a day of 10 x 86,400 / 1.5 = 576,000 requests
    assert requests_per_day(10.0, [1.0] * 12 + [3.0] * 12) == 576_000.0


@pytest.mark.parametrize("seed", [0, 1])
def test_the_hourly_twin_keeps_every_peak_rate(seed):
    peak = validate_instance(generated_data(3, 4, 2, "region", seed), "peak")
    hourly = validate_instance(hourly_data(3, 4, 2, "region", seed), "hourly")
    assert hourly.asks_for_hours() and not peak.asks_for_hours()
    for twin in peak.workloads:
        for region, demand in twin.demand.items():
            rate = hourly.workload(twin.name).demand[region].peak_rps
            assert rate == pytest.approx(demand.peak_rps, abs=0.1 / 86_400 * 4)
    (batch,) = [w for w in hourly.workloads if w.deadline_hours is not None]
    assert batch.deadline_hours == 12 and batch.model == hourly.workloads[0].model


def test_a_day_profile_runs_from_its_trough_to_one():
    import random

    profile = day_profile(random.Random(5))
    assert len(profile) == 24 and max(profile) == 1.0
    assert 0.15 <= min(profile) <= 0.6


def test_the_horizon_and_the_features_land_on_the_schemas_keys():
    data = with_features(
        months_data(3, 2, 2, "none", 0, horizon_months=7, monthly_growth=0.04),
        power_kw=60.0,
        colocation=True,
        disaggregation=True,
        kv_tiers=True,
    )
    months = validate_instance(data, data["name"])
    assert months.policy.horizon_months == 7 and months.policy.monthly_growth == 0.04
    assert months.policy.colocation and months.policy.disaggregation
    assert {region.power_kw for region in months.regions} == {60.0}
    assert all(entry.host_memory_gib_per_gpu == 256 for entry in months.gpus)
    # a system prompt of 0.2 x the mean prompt on every request, 20 documents of 0.6 x
    # it on 2.5% each: 0.2 + 20 x 0.025 x 0.6 = 0.5 of the mean prompt is shared prefix
    for item in months.workloads:
        shared = sum(p.tokens * p.share * p.count for p in item.prefixes)
        assert shared == pytest.approx(0.5 * item.prompt_tokens.mean_tokens, rel=0.01)
