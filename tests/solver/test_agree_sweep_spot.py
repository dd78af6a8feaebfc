"""A sweep checks each plan at every point with the spot terms of that point: a plan of a
stricter spot confidence serves a looser one (its fleet carries the load with the
replicas down at 0.99, so it does with those down at 0.9).

Before, the sweep restated an hourly plan's dollars at each point but not what its spot
pools state at their own point's confidence, Q(n u, a), so the verifier held the plan to
its own digits: 8B chat on a 1-to-4 day, spot at $0.9 against $2.0 on demand, swept over
spot_confidence 0.9 / 0.99, read 'no plan of the sweep serves all 2 solved points', the
0.99 plan failing the 0.9 point on 'hours[8].spot_pools[0].down_replicas: states 1; the
Poisson quantile Q(n u, a) is 0'.

By hand: lambda = 0.1 interruptions an hour, T = 300 s start + 60 s scale detection =
0.1 h, so u = lambda T / (1 + lambda T) = 0.01 / 1.01. Q(m, a) = 0 while
P(Poisson(m) = 0) = e^-m >= a: at a = 0.9 for m <= ln(1 / 0.9) = 0.105 (n <= 10 spot
replicas), at a = 0.99 for m <= ln(1 / 0.99) = 0.01005 (n = 1 only)."""

import math
from functools import cache

from models.io.loading import validate_instance
from solver.studies.sweep import check_plans, solve_point
from tests.synthetic import instance_data, workload

DAY = [1.0] * 8 + [2.0] * 8 + [4.0] * 8
U = 0.01 / 1.01


def _instance(confidence: float):
    chat = workload("chat", {"east": 100.0}, ttft_p99_ms=800.0, tpot_p99_ms=40.0)
    chat["demand"]["east"]["hourly_profile"] = DAY
    data = instance_data(
        {"east": {"h100-sxm": (64, 2.0)}},
        [chat],
        policy={"spot_confidence": confidence, "replica_start_s": 300, "scale_detection_s": 60},
    )
    offer = data["regions"][0]["supply"]["h100-sxm"]
    offer.update(spot_price_per_gpu_hour=0.9, spot_interruptions_per_hour=0.1)
    return validate_instance(data, f"spot-{confidence}.yaml")


@cache
def _solved(confidence: float) -> dict:
    return solve_point(_instance(confidence))


def _q_by_hand(spot_replicas: int, confidence: float) -> int:
    """Q(n u, a) where it is 0 or 1 (n u < 0.2): 0 when e^-(n u) >= a."""
    assert spot_replicas * U < 0.2
    return 0 if math.exp(-spot_replicas * U) >= confidence else 1


def test_a_plan_of_a_stricter_spot_confidence_serves_the_looser_point():
    instances = {0: _instance(0.9), 1: _instance(0.99)}
    records = {0: _solved(0.9), 1: _solved(0.99)}
    strict = records[1]
    spot = [s for hour in strict["hours"] for s in hour["spot_pools"]]
    assert spot, "the 0.99 plan runs spot replicas (else the case tests nothing)"
    for entry in spot:  # the plan states Q at its own 0.99
        assert entry["down_replicas"] == _q_by_hand(entry["replicas"], 0.99)
    checks = check_plans(records, instances)
    of_strict = next(c for c in checks if 1 in c.chosen_at)
    assert 0 in of_strict.serves, of_strict.failure


def test_the_spot_pools_are_restated_at_the_point_confidence():
    from solver.plan.schema import Plan
    from solver.time.reprice import at_prices

    strict = _solved(0.99)
    plan = Plan.model_validate({k: strict[k] for k in ("hours", "committed", "cost_per_month")})
    restated = at_prices(_instance(0.9), plan)
    for hour in restated.hours:
        for entry in hour.spot_pools:
            assert math.isclose(entry.down_fraction, U, rel_tol=1e-12)
            assert entry.down_replicas == _q_by_hand(entry.replicas, 0.9)
