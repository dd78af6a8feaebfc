"""compare's '$/million tokens at the SLO' counts the tokens a month serves at the
average rate, as the plan's cost attribution does (for an hourly plan: over the day's
tokens, solver.analysis.hour_attribution).

Before, a demand given as `peak_requests_per_s` with an `hourly_profile` was read at its
peak every hour (cost_attribution.average_to_peak returned 1 without requests_per_day):
rl2h (60 requests/s peak in two regions on the profile 1 x 6, 2, 3, 4 x 9, 3, 3, 2, 2,
2, 1, 1: mean 61 / 24) read $0.049 where its cost attribution's tokens give $0.074."""

import pytest

from models.io.loading import validate_instance
from solver.analysis.compare import same_demand, tokens_per_s
from tests.solver.time.test_months import _data

PROFILE = [1] * 6 + [2, 3] + [4] * 9 + [3, 3, 2, 2, 2, 1, 1]


def test_a_peak_rate_with_a_profile_serves_its_mean_hour():
    data = _data(60.0, 0.0, 0, 1)
    data["workloads"][0]["demand"]["r1"]["hourly_profile"] = PROFILE
    instance = validate_instance(data, "profile.yaml")
    # the peak hour (weight 4) runs at 60 requests/s; the mean hour at 60 x (61 / 24) / 4
    assert sum(PROFILE) == 61
    mean_rps = 60.0 * (61 / 24) / 4
    assert tokens_per_s(instance) == pytest.approx(mean_rps * (1000 + 200))  # read 60 x 1,200


def test_a_daily_volume_and_a_flat_peak_keep_their_averages():
    data = _data(60.0, 0.0, 0, 1)
    data["workloads"][0]["demand"]["r1"] = {"requests_per_day": 864_000, "peak_to_average": 4}
    instance = validate_instance(data, "volume.yaml")
    assert tokens_per_s(instance) == pytest.approx(864_000 / 86_400 * 1200)  # 10 requests/s
    data["workloads"][0]["demand"]["r1"] = {"peak_requests_per_s": 60.0}
    instance = validate_instance(data, "flat.yaml")
    assert tokens_per_s(instance) == pytest.approx(60.0 * 1200)  # every hour at the peak


def test_a_peak_rate_and_the_same_rate_on_a_flat_profile_are_the_same_demand():
    # every hour at 60 requests/s either way (a peak rate alone is every hour at the
    # peak), so compare may judge the two; before: 'workload chat has other demand or
    # token lengths' and no plan solved
    data = _data(60.0, 0.0, 0, 1)
    flat = validate_instance(data, "flat.yaml")
    data["workloads"][0]["demand"]["r1"]["hourly_profile"] = [2] * 24  # normalised: 1s
    profiled = validate_instance(data, "profiled.yaml")
    assert same_demand(flat, profiled) == []
    data["workloads"][0]["demand"]["r1"]["hourly_profile"] = PROFILE  # another day
    assert same_demand(flat, validate_instance(data, "diurnal.yaml")) != []
    data["workloads"][0]["demand"]["r1"] = {"requests_per_day": 60 * 86_400}
    # every hour at 60 requests/s too (no peak factor: the average is the peak)
    assert same_demand(flat, validate_instance(data, "volume.yaml")) == []
    data["workloads"][0]["demand"]["r1"] = {"requests_per_day": 15 * 86_400, "peak_to_average": 4}
    # sized for a 60 requests/s peak, serving 15 on average: other tokens
    assert same_demand(flat, validate_instance(data, "peaked.yaml")) != []
