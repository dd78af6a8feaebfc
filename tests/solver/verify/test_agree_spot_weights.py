"""The hour verifier takes a pool's spot replicas down before it checks the hour; the
routing weights the plan states are shares of the capacity at full strength, so where
some of a (workload, region)'s replicas are down none of its pools' weights is checked.

Before: the reduced pool's weight and rate were dropped but its neighbours' kept, so a
pool without spot replicas down was held to carry the whole region (share 1): solve
exit 70 on a 3-region hourly plan with spot ('replicas[1].routing_weight@t00: states
0.131643 of r00's w01 traffic; its share of the capacity serving it is 1')."""

from solver.plan.schema import Plan
from solver.verify.hour_capacity import _less_spot_down
from solver.verify.totals import _routing_weights
from tests.solver.time.test_spot_pools import _instance


def test_weights_beside_a_pool_with_spot_replicas_down_are_not_held_to_the_rest():
    from solver.solve import solve

    inst = _instance(0.99)
    plan = solve(inst)
    hour = plan.hours[0]
    (pool,) = hour.pools
    (spot,) = hour.spot_pools
    assert spot.down_replicas >= 1
    # a second pool of the same workload and region, on demand: weights by capacity
    other = pool.model_copy(update={"count": 1, "gpus": pool.replica_gpus})
    key_other = other.model_copy(update={"precision": "bf16", "kv_precision": "bf16"})
    rates = [pool.count * pool.requests_per_s_per_replica, key_other.requests_per_s_per_replica]
    total = sum(rates)
    pools = (
        pool.model_copy(update={"routing_weight": rates[0] / total}),
        key_other.model_copy(update={"routing_weight": rates[1] / total}),
    )
    edited = hour.model_copy(update={"pools": pools})
    assert _routing_weights(Plan(replicas=pools)) == []  # at full strength they hold
    problems = []
    reduced = _less_spot_down(inst, edited, pools, problems)
    assert problems == []
    assert reduced[0].count == pool.count - spot.down_replicas
    assert _routing_weights(Plan(replicas=reduced)) == []
