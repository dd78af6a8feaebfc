"""Spot replicas in interactive pools (issue 11, policy.spot_confidence): the pool holds
its SLO with the expected loss plus a Poisson margin of replicas down over the restart
window. Every plan here has passed the hour-by-hour verifier inside `solve`."""

import math

import pytest

from models.io.loading import validate_instance
from models.operations.pricing_tiers import poisson_quantile
from solver.solve import solve
from solver.verify.hours import verify_hours

RESERVED, SPOT, ON_DEMAND = 1.2, 0.8, 2.0
INTERRUPTIONS_PER_HOUR = 0.5
START_S, DETECTION_S = 240.0, 60.0
RATE_RPS = 600.0
HOURS_PER_MONTH = 730.0


def _instance(confidence=None):
    offer = {
        "max_gpus": 64,
        "price_per_gpu_hour": ON_DEMAND,
        "reserved_price_per_gpu_hour": RESERVED,
        "spot_price_per_gpu_hour": SPOT,
        "spot_interruptions_per_hour": INTERRUPTIONS_PER_HOUR,
    }
    policy = {
        "buy_unit": "gpu",  # the rules here are per GPU (whole servers: test_whole_servers.py)
        "tensor_parallel": [1],
        "replica_start_s": START_S,
        "scale_detection_s": DETECTION_S,
        "hours_per_month": HOURS_PER_MONTH,
    }
    if confidence is not None:
        policy["spot_confidence"] = confidence
    data = {
        "name": "spot-by-hand",
        "gpus": [{"name": "h100-sxm"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [{"name": "r1", "supply": {"h100-sxm": offer}}],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {"r1": {"peak_requests_per_s": RATE_RPS}},
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": {"ttft_p99_ms": 1000, "tpot_p99_ms": 50},
            }
        ],
        "policy": policy,
    }
    return validate_instance(data, "spot-by-hand.yaml")


def test_without_a_confidence_interactive_pools_stay_off_spot():
    plan = solve(_instance())
    assert all(hour.spot_pools == () for hour in plan.hours)
    assert all(row.spot == 0 for hour in plan.hours for row in hour.gpus)


def test_a_spot_pool_carries_its_load_less_the_poisson_quantile_of_replicas_down():
    confidence = 0.99
    plan = solve(_instance(confidence))
    hour = plan.hours[0]
    (pool,) = hour.pools
    (spot,) = hour.spot_pools
    # u = lambda T / (1 + lambda T), T = (240 + 60) s = 1/12 h: 0.5 / 12 = 1/24, so
    # u = (1/24) / (25/24) = 1/25.
    u = (INTERRUPTIONS_PER_HOUR * (START_S + DETECTION_S) / 3600) / (
        1 + INTERRUPTIONS_PER_HOUR * (START_S + DETECTION_S) / 3600
    )
    assert u == pytest.approx(0.04)
    assert spot.down_fraction == pytest.approx(u)
    # Replicas down at once with 99% confidence: the smallest k with
    # P(Poisson(n u) <= k) >= 0.99, summed by hand.
    mean = spot.replicas * u
    cumulative, term, k = math.exp(-mean), math.exp(-mean), 0
    while cumulative < confidence:
        k += 1
        term *= mean / k
        cumulative += term
    assert spot.down_replicas == k == poisson_quantile(mean, confidence)
    # The survivors carry the load (tp 1: the capacity per replica is flat in the pool).
    assert (pool.count - spot.down_replicas) * pool.requests_per_s_per_replica >= RATE_RPS
    # The hour pays spot for the spot replicas and reserved for the rest.
    (gpus,) = hour.gpus
    assert gpus.spot == spot.replicas
    assert gpus.reserved == pool.count - spot.replicas
    days = HOURS_PER_MONTH / 24
    expected = days * 24 * (SPOT * spot.replicas + RESERVED * (pool.count - spot.replicas))
    assert plan.cost_per_month == pytest.approx(expected, rel=1e-9)
    assert plan.cost_per_month < solve(_instance()).cost_per_month


def test_the_hour_verifier_refuses_a_spot_pool_short_after_its_margin():
    instance = _instance(0.99)
    plan = solve(instance)
    assert verify_hours(instance, plan).ok
    # 600 / 41.1 requests/s needs 15; 16 replicas all on spot lose Q(16 x 0.04) = 3: 13.
    hours = []
    for hour in plan.hours:
        (pool,) = hour.pools
        (spot,) = hour.spot_pools
        smaller = pool.model_copy(update={"count": 16, "gpus": 16})
        hours.append(
            hour.model_copy(
                update={
                    "pools": (smaller,),
                    "spot_pools": (spot.model_copy(update={"replicas": 16}),),
                }
            )
        )
    assert 13 * hours[0].pools[0].requests_per_s_per_replica < RATE_RPS
    found = verify_hours(instance, plan.model_copy(update={"hours": tuple(hours)})).violations
    assert any(v.requirement.startswith("demand[none,chat,r1]") for v in found)
