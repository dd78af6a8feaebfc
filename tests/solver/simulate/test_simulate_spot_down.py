"""`simulate` of an hourly plan whose pool runs on spot (policy.spot_confidence) replays
the pool as the planner promised it: without the spot replicas down at once at that
confidence (`Hour.spot_pools[].down_replicas`), and says so (solver.simulate.hours).

Hand case (tests/solver/time/test_spot_pools.py): one region, 600 requests/s of an 8B
chat on H100 TP1, every replica on spot, each down u = 1/25 of the time; the plan runs
n replicas with Q(n u) = D down at once, and the pool's n - D carry its load. The
replay before this rule ran all n, which checked nothing of the margin.
"""

from functools import cache

from solver.simulate.replay import simulate_plan
from solver.solve import solve
from tests.solver.time.test_spot_pools import RATE_RPS
from tests.solver.time.test_spot_pools import _instance as spot_instance


@cache
def _solved():
    instance = spot_instance(0.99)
    return instance, solve(instance)


def test_a_spot_pool_is_replayed_without_its_replicas_down_at_once():
    instance, plan = _solved()
    hour = plan.hours[0]
    (pool,) = hour.pools
    (spot,) = hour.spot_pools
    assert spot.down_replicas >= 1  # n near 20, n u near 0.8: Q at 99% is at least 1
    replayed = simulate_plan(instance, plan, duration_s=10.0, hour=0, tolerance=False)
    (row,) = replayed.pools
    # n - D replicas, at the hour's whole load (600 requests/s, the flat day's rate)
    assert row.replicas == pool.count - spot.down_replicas
    assert row.load_requests_per_s == RATE_RPS
    assert f"{spot.down_replicas} of chat r1's {spot.replicas} spot replicas down" in (
        replayed.replayed
    )


def test_without_spot_the_hour_is_replayed_whole():
    instance = spot_instance()
    plan = solve(instance)
    (pool,) = plan.hours[0].pools
    replayed = simulate_plan(instance, plan, duration_s=10.0, hour=0, tolerance=False)
    (row,) = replayed.pools
    assert row.replicas == pool.count
    assert "spot" not in replayed.replayed
