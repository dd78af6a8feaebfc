"""deploy reads an hourly plan's normal scenario in the hour it is stated for
(`scenarios[].hour`, the busiest hour): each pool carries the share of that hour's load
its replicas there carry, and a pool that does not run in that hour has no normal
replica. Before, the load was shared over the peak fleet's counts, pools of other hours
included: diurnal-chat-batch's busiest hour (13:00 UTC) runs 8 TP2 replicas in us-east
carrying 27.3 requests/s, and deploy wrote that pool as 4 normal + 4 spare and us-east's
TP4 pool (which runs at 10:00 only) as 2 normal + 2 spare, its HPA from 4 replicas at
KV 17.4% where the plan's headroom row reads 8 at 19.6%.

Hand case: tests/solver/time/test_whole_servers.py's r1 alone at P = 11.7 q, Llama 3.1 8B
at TP1 whose KV cache stops the batch (q(n) = q for every n), no ramp (a start of 0 s):
the peak hours run 12 replicas for 11.7 q. A TP2 pool of 2 replicas is added to the
peak fleet, running in the first trough hour only."""

import pytest

from models.io.loading import validate_instance
from solver.deploy.pools import deploy_pools
from solver.solve import solve
from tests.solver.time.test_whole_servers import _data, _lone_rps


@pytest.fixture(scope="module")
def case():
    data = _data({"r1": 11.7 * _lone_rps()})
    data["policy"]["tensor_parallel"] = [1, 2]
    instance = validate_instance(data, "hours.yaml")
    plan = solve(instance)
    (tp1,) = plan.replicas
    assert tp1.tp == 1 and tp1.count == 12  # ceil(11.7 q / q)
    tp2 = tp1.model_copy(update={"tp": 2, "count": 2, "gpus": 4})
    trough = plan.hours[0]
    assert trough.hour != plan.scenarios[0].hour  # the scenarios are a peak hour's
    hours = (trough.model_copy(update={"pools": (*trough.pools, tp2)}), *plan.hours[1:])
    return instance, plan.model_copy(update={"replicas": (tp1, tp2), "hours": hours})


def test_a_pool_not_running_in_the_scenarios_hour_is_all_spare(case):
    instance, plan = case
    by_tp = {pool.tp: pool for pool in deploy_pools(instance, plan)}
    # the scenarios' hour runs 12 TP1 replicas for all 11.7 q: the least n with n q >= 11.7 q
    assert (by_tp[1].normal_replicas, by_tp[1].spare_replicas) == (12, 0)
    assert (by_tp[2].normal_replicas, by_tp[2].spare_replicas) == (0, 2)


def test_a_plan_whose_pools_all_run_in_that_hour_reads_as_before(case):
    instance, plan = case
    (tp1, _) = plan.replicas
    alone = plan.model_copy(update={"replicas": (tp1,)})
    (pool,) = deploy_pools(instance, alone)
    assert (pool.normal_replicas, pool.spare_replicas) == (12, 0)
