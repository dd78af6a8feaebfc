"""Error budget spent by a region loss with a start time, and batch work soaking the
interactive trough: hand cases, and the KV limit of long batch contexts from the
physics."""

import math

import pytest

from models.operations.batch_soak import (
    batch_capacity,
    cost_per_million_requests,
    dedicated_replicas_for,
    idle_replica_hours,
    schedule_batch,
    soak,
    soak_breakeven_price_per_gpu_hour,
    soak_requests_by_hour,
)
from models.operations.failover_budget import (
    budget_minutes_per_month,
    expected_burn_minutes_per_year,
    failures_per_year,
    losses_per_month,
    max_shortfall_rps,
    scenario_budget,
)
from models.operations.procurement import procurement_plan
from models.operations.slo import error_budget_minutes
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.policy import Policy
from models.schema.quantities import HOURS_PER_MONTH
from models.serving.replica import Limit, ReplicaConfig, TrafficMix


def test_budget_minutes_per_month_reuse_the_estimate_figure():
    # 99.9% over a 730-hour month: 0.001 x 730 x 60 = 43.8 minutes.
    assert budget_minutes_per_month(0.999, 730) == pytest.approx(0.001 * 730 * 60)
    assert budget_minutes_per_month(0.999, 720) == error_budget_minutes(0.999, 30)


def test_every_month_long_default_is_the_one_730_hour_month():
    # 8,760 hours a year / 12 months = 730 hours: the policy's default, the budget's,
    # the expected losses' and the procurement plan's.
    assert HOURS_PER_MONTH == 8760 / 12 == 730
    assert Policy().hours_per_month == HOURS_PER_MONTH
    assert budget_minutes_per_month(0.999) == pytest.approx(0.001 * 730 * 60)
    assert losses_per_month(0.5) == pytest.approx(-math.log(1 - 0.5) * 730 / 8760)
    # 2 GPUs needed every hour of the day; committing ($3) is dearer than on demand ($1):
    # 730 / 24 days x 24 hours x 2 GPUs = 2 x 730 GPU-hours on demand.
    one_month = procurement_plan([[2.0] * 24], 3.0, 1.0)
    assert one_month[0].committed_gpus == 0
    assert one_month[0].on_demand_gpu_hours == pytest.approx(2 * 730)


def test_region_loss_spends_the_shortfall_times_the_start_time():
    # Survivors must carry 100 req/s and hold 80 warm; started replicas serve after 360 s
    # and then cover everything. The workload averages 50 req/s over the month.
    loss = scenario_budget(
        "lose=eu-west",
        hour=14,
        load_rps=100,
        warm_rps=80,
        after_start_rps=120,
        failover_start_s=360,
        outage_s=4 * 3600,
        average_rps=50,
        availability=0.999,
    )
    failed = (100 - 80) * 360  # 7,200 requests
    assert loss.failed_requests == failed
    assert loss.budget_minutes_used == pytest.approx(failed / (50 * 60))  # 2.4 minutes
    assert loss.budget_fraction_used == pytest.approx(2.4 / 43.8)
    # Started capacity that cannot reach the load keeps failing for the whole outage.
    short = scenario_budget("lose=eu-west", 14, 100, 80, 90, 360, 3600, 50, 0.999)
    assert short.failed_requests == pytest.approx(20 * 360 + 10 * (3600 - 360))


def test_instant_failover_costs_only_what_cannot_be_started_and_warm_spare_costs_nothing():
    instant = scenario_budget("lose=a", 0, 100, 0, 100, 0, 3600, 50, 0.999)
    assert instant.budget_minutes_used == 0
    assert max_shortfall_rps(2.4, 50, 0) == math.inf
    static = scenario_budget("lose=a", 0, 100, 100, 100, 10**6, 3600, 50, 0.999)
    assert static.budget_minutes_used == 0
    # Inverse of the hand case above: 2.4 minutes at 50 req/s over 360 s allow 20 req/s.
    assert max_shortfall_rps(2.4, 50, 360) == pytest.approx(20)


def test_expected_burn_from_the_failure_probability():
    # p = 0.05 a year: lambda = -ln(0.95) = 0.0513 losses a year; a loss at the peak hour
    # spends 2.4 minutes and elsewhere none: mean 0.1 min, so 0.00513 min a year.
    minutes_by_hour = [0.0] * 23 + [2.4]
    assert failures_per_year(0.05) == pytest.approx(-math.log(0.95))
    assert expected_burn_minutes_per_year(0.05, minutes_by_hour) == pytest.approx(
        -math.log(0.95) * 2.4 / 24
    )


# Batch soak: 10 replicas all day; 4 of them idle in the 12 trough hours (interactive
# load 12 req/s at 2 req/s each needs 6), none idle at the peak (20 req/s needs 10).
WARM = [10.0] * 24
INTERACTIVE_RPS = [12.0] * 12 + [20.0] * 12
INTERACTIVE_CAPACITY_RPS = 2.0
BATCH_CAPACITY_RPS = 0.5
TROUGH_ROOM = 12 * 4 * BATCH_CAPACITY_RPS * 3600  # 48 idle replica-hours: 86,400 requests


def _arrivals(per_day: float) -> list[float]:
    return [per_day / 24] * 24


def test_idle_hours_and_the_soak_room_by_hand():
    idle = idle_replica_hours(WARM, INTERACTIVE_RPS, INTERACTIVE_CAPACITY_RPS)
    assert idle == (4.0,) * 12 + (0.0,) * 12
    room = soak_requests_by_hour(idle, BATCH_CAPACITY_RPS)
    assert math.fsum(room) == TROUGH_ROOM


def test_batch_that_fits_the_trough_adds_nothing_and_twice_as_much_adds_the_shortfall():
    fits = soak(WARM, INTERACTIVE_RPS, INTERACTIVE_CAPACITY_RPS, _arrivals(TROUGH_ROOM), 0.5, 24)
    assert fits.shortfall_requests == pytest.approx(0, abs=1e-6)
    assert fits.dedicated_replicas == 0
    assert fits.idle_replica_hours_before == 48
    assert fits.idle_replica_hours_after == pytest.approx(0)
    double = soak(
        WARM, INTERACTIVE_RPS, INTERACTIVE_CAPACITY_RPS, _arrivals(2 * TROUGH_ROOM), 0.5, 24
    )
    assert double.shortfall_requests == pytest.approx(TROUGH_ROOM)
    # A dedicated replica of the same configuration serves 0.5 x 86,400 = 43,200 a day.
    assert double.dedicated_replicas == math.ceil(TROUGH_ROOM / (0.5 * 86_400)) == 2


def test_a_short_deadline_misses_what_arrives_too_far_from_the_trough():
    # Room in hours 0-11 only and a 6-hour window: arrivals in hours 12-18 must be served
    # by hour 17-23 and find no room; from hour 19 the window (19..24) reaches the next
    # day's hour 0. So 7 hours' arrivals miss.
    room = [2000.0] * 12 + [0.0] * 12
    schedule = schedule_batch([1000.0] * 24, room, deadline_hours=6.5)
    assert schedule.window_hours == 6
    assert schedule.shortfall_requests == pytest.approx(7 * 1000)
    assert math.fsum(schedule.served_by_hour) == pytest.approx(24_000 - 7_000)
    # A dedicated replica adds 3,600 x C_d an hour everywhere: with C_d = 1000 / 3600 the
    # peak hours serve their own arrivals and nothing misses.
    assert dedicated_replicas_for([1000.0] * 24, room, 1000 / 3600, 6.5) == 1


def test_long_batch_contexts_hit_the_kv_limit_on_the_interactive_configuration():
    gpu, llm = gpu_catalog()["h100-sxm"], llm_catalog()["llama-3.1-8b"]
    config = ReplicaConfig(gpu, llm, Precision.BF16, Precision.BF16, tp=1, pp=1)
    efficiency = efficiency_for(gpu, Precision.BF16)
    prompt, output = 32_000, 1_000
    capacity = batch_capacity(config, TrafficMix.fixed(prompt, output), efficiency)
    assert capacity.limit is Limit.KV_MEMORY
    # With no latency target the batch is what the KV cache holds at the full context.
    assert capacity.batch == pytest.approx(capacity.kv_capacity_tokens / (prompt + output))
    short = batch_capacity(config, TrafficMix.fixed(1_000, 200), efficiency)
    assert short.requests_per_s > 10 * capacity.requests_per_s


def test_soak_breakeven_price_by_hand():
    # Soaked replicas cost 2 GPUs x 3 USD/h on demand and serve 0.5 req/s of batch; a
    # dedicated 1-GPU replica serves 0.4 req/s. Per request: soak 6 / 1,800 USD; dedicated
    # p / 1,440; equal at p = 6 x 0.4 / 0.5 = 4.8 USD per GPU-hour.
    breakeven = soak_breakeven_price_per_gpu_hour(6.0, 0.5, 0.4, 1)
    assert breakeven == pytest.approx(4.8)
    assert cost_per_million_requests(6.0, 0.5) == pytest.approx(
        cost_per_million_requests(breakeven * 1, 0.4)
    )
    assert soak_breakeven_price_per_gpu_hour(0.0, 0.5, 0.4, 1) == 0.0
