"""The instance keys of time (issue 11): each validates with a message naming its field,
and an instance without them reads exactly as before."""

import math
from pathlib import Path

import pytest
import yaml

from models.io.loading import load_instance, validate_instance
from models.operations.time_periods import aggregate_periods, demand_grid
from models.schema.errors import InputError
from models.schema.traffic import Demand
from tests.paths import DEFAULT_INSTANCE, REPO

TROUGH_AND_PEAK = [1.0] * 18 + [4.0] * 6
"""18 trough hours at 1 and 6 peak hours at 4: the mean is (18 + 24) / 24 = 1.75."""


def _reference() -> dict:
    return yaml.safe_load(DEFAULT_INSTANCE.read_text())


def _problems(data: dict) -> list[str]:
    with pytest.raises(InputError) as caught:
        validate_instance(data, "x.yaml")
    return [str(issue) for issue in caught.value.issues]


def _with_time_keys() -> dict:
    data = _reference()
    region = data["regions"][0]
    region["utc_offset_hours"] = -5
    region["failure_probability_per_year"] = 0.05
    offer = next(iter(region["supply"].values()))
    offer.update(
        reserved_price_per_gpu_hour=2.0,
        max_on_demand_gpus=8,
        spot_price_per_gpu_hour=1.5,
        spot_interruptions_per_hour=0.1,
    )
    data["gpus"][0]["replica_start_s"] = 240
    data["policy"].update(
        failover_start_s=120,
        horizon_months=12,
        monthly_growth=0.04,
        lead_time_months=2,
        replica_start_s=420,
    )
    chat = data["workloads"][0]
    first_region = next(iter(chat["demand"]))
    chat["demand"][first_region] = {
        "requests_per_day": 1_000_000,
        "hourly_profile": TROUGH_AND_PEAK,
    }
    chat["monthly_growth"] = 0.10
    return data


TIME_INSTANCES = {"diurnal-chat-batch", "growth-horizon", "procurement-3region"}
"""The instances written to use the time keys (issue 11)."""


@pytest.mark.parametrize(
    "path",
    sorted(p for p in (REPO / "instances").glob("*.yaml") if p.stem not in TIME_INSTANCES),
    ids=lambda p: p.stem,
)
def test_instances_without_the_keys_keep_one_flat_period_at_the_peak(path: Path):
    instance = load_instance(path)
    grid = demand_grid(instance)
    for workload in instance.workloads:
        for region, demand in workload.demand.items():
            assert demand.hourly_profile is None
            assert grid[workload.name, region] == (demand.peak_rps,) * 24
    periods = aggregate_periods(grid)
    assert [period.weight_hours for period in periods] == [24]
    assert instance.policy.horizon_months is None
    assert all(region.utc_offset_hours == 0 for region in instance.regions)


def test_every_time_key_validates_and_resolves():
    instance = validate_instance(_with_time_keys())
    region = instance.regions[0]
    offer = next(iter(region.supply.values()))
    assert offer.reserved_price_per_gpu_hour == 2.0 and offer.max_on_demand_gpus == 8
    assert offer.spot_interruptions_per_hour == 0.1
    assert region.utc_offset_hours == -5 and region.failure_probability_per_year == 0.05
    first_gpu, other_gpu = instance.gpus[0].name, instance.gpus[1].name
    # A gpus[] entry's own start time wins over the policy's, which wins over the catalog.
    assert instance.replica_start_s(first_gpu) == 240
    assert instance.replica_start_s(other_gpu) == 420
    assert instance.failover_start_s(other_gpu) == 120
    chat, other = instance.workloads[0].name, instance.workloads[-1].name
    assert instance.monthly_growth(chat) == 0.10
    if other != chat:
        assert instance.monthly_growth(other) == 0.04


def test_start_times_default_to_the_catalog():
    instance = load_instance(DEFAULT_INSTANCE)
    gpu = instance.gpus[0].name
    catalog_start_s = instance.gpu_specs[gpu].replica_start_s
    assert instance.replica_start_s(gpu) == catalog_start_s
    assert instance.failover_start_s(gpu) == catalog_start_s


def test_profile_sets_the_peak_and_the_hourly_rates():
    demand = Demand(requests_per_day=1_000_000, hourly_profile=TROUGH_AND_PEAK)
    mean_weight = (18 * 1.0 + 6 * 4.0) / 24
    average_rps = 1_000_000 / 86_400
    assert demand.peak_rps == pytest.approx(average_rps * 4.0 / mean_weight)
    hourly = demand.local_hourly_rps()
    assert hourly[0] == pytest.approx(average_rps * 1.0 / mean_weight)
    assert math.fsum(hourly) * 3600 == pytest.approx(1_000_000)


def test_profile_with_a_peak_rate_scales_its_highest_hour_to_it():
    demand = Demand(peak_requests_per_s=40, hourly_profile=TROUGH_AND_PEAK)
    hourly = demand.local_hourly_rps()
    assert max(hourly) == 40 and hourly[0] == pytest.approx(40 * 1.0 / 4.0)
    assert demand.peak_rps == 40


@pytest.mark.parametrize(
    ("profile", "expected"),
    [
        ([1.0] * 23, "needs 24 values, got 23"),
        ([1.0] * 23 + [-1.0], "hourly_profile[23]: must be at least 0, got -1"),
        ([1.0] * 23 + [math.nan], "hourly_profile[23]: must be a finite number"),
        ([1.0] * 23 + [math.inf], "hourly_profile[23]: must be a finite number"),
        ([1.0] * 23 + [1e308], "hourly_profile[23]: must be at most"),  # 24 x 1e308 = inf
        ([0.0] * 24, "all zero"),
    ],
)
def test_bad_profiles_are_named(profile, expected):
    data = _reference()
    region = next(iter(data["workloads"][0]["demand"]))
    data["workloads"][0]["demand"][region] = {"requests_per_day": 1000, "hourly_profile": profile}
    problems = _problems(data)
    assert len(problems) == 1
    assert f"workloads[0].demand.{region}.hourly_profile" in problems[0] and expected in problems[0]


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d["workloads"][0]["demand"].update(
                {
                    next(iter(d["workloads"][0]["demand"])): {
                        "requests_per_day": 1000,
                        "peak_to_average": 2,
                        "hourly_profile": [1.0] * 24,
                    }
                }
            ),
            "drop peak_to_average",
        ),
        (lambda d: d["workloads"][0].update(deadline_hours=8), "has no latency SLO"),
        (
            lambda d: next(iter(d["regions"][0]["supply"].values())).update(
                spot_price_per_gpu_hour=1.0
            ),
            "go together",
        ),
        (
            lambda d: next(iter(d["regions"][0]["supply"].values())).update(
                max_on_demand_gpus=10_000
            ),
            "exceeds max_gpus",
        ),
        (lambda d: d["regions"][0].update(utc_offset_hours=15), "utc_offset_hours"),
        (lambda d: d["regions"][0].update(failure_probability_per_year=1.0), "failure_prob"),
        (lambda d: d["policy"].update(failover_start_s=-1), "failover_start_s"),
        (lambda d: d["policy"].update(horizon_months=0), "horizon_months"),
        (lambda d: d["policy"].update(monthly_growth=-1), "monthly_growth"),
        (lambda d: d["policy"].update(burst_factor=0.5), "burst_factor"),
    ],
)
def test_bad_time_keys_are_named(edit, expected):
    data = _reference()
    edit(data)
    problems = _problems(data)
    assert any(expected in problem for problem in problems), problems


def test_batch_workload_with_a_deadline_and_no_latency_slo_validates():
    data = _reference()
    chat = data["workloads"][0]
    chat["slo"] = {"availability": 0.99}
    chat["deadline_hours"] = 12
    workload = validate_instance(data).workloads[0]
    assert workload.is_batch and workload.deadline_hours == 12
