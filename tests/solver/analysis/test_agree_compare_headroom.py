"""compare's 'headroom to p99 (worst scenario)' states how much more load the busiest
pool phase carries before a p99 target breaks, as the plan's scenario tables state it.

Before, it read the verifier's servable / demand - 1, whose servable is the flow the
verifier routes (at most the demand): 0% for every plan the verifier accepts, whatever
the fleet (a 2-region Qwen3-30B-A3B plan at 36% peak and 55% failover utilisation read
0%, where the failover pool carries 54.28 / 29.63 - 1 = 83% more).

Hand case (tests.solver.time.test_months): Llama 3.1 8B fp8 TP1, KV-limited (q(n) =
q(1)), a flat day of 10.5 q: ceil(10.5) = 11 replicas, headroom 11 q / 10.5 q - 1 =
0.5 / 10.5 = 4.76%."""

import pytest

from models.io.loading import load_instance, validate_instance
from solver.analysis.compare import side_of
from solver.solve import solve
from tests.paths import ONE_MODEL_ONE_REGION
from tests.solver.time.test_months import _data, _lone_rps


def test_an_hourly_plans_headroom_is_its_spare_replica_share():
    q = _lone_rps()
    instance = validate_instance(_data(10.5 * q, 0.0, 0, 2), "flat.yaml")
    plan = solve(instance)
    assert sum(p.count for p in plan.replicas) == 11
    side = side_of(instance, plan, "solved")
    assert side.p99_headroom == pytest.approx(0.5 / 10.5, rel=1e-6)  # read 0 before


def test_a_static_plans_headroom_is_capacity_over_demand():
    instance = load_instance(ONE_MODEL_ONE_REGION)  # 20 requests/s in one region, no loss
    plan = solve(instance)
    capacity = sum(p.count * p.requests_per_s_per_replica for p in plan.replicas)
    side = side_of(instance, plan, "solved")
    assert side.p99_headroom == pytest.approx(capacity / 20 - 1)
    assert side.p99_headroom == pytest.approx(1 / side.utilisation_max - 1)
    assert side.p99_headroom > 0  # the plan rounds replicas up


def test_judged_over_its_horizon_a_plan_s_headroom_is_its_tightest_month_s():
    # 4.5 q growing 20% a month: 4.5, 5.4, 6.48 q on ceil = 5, 6, 7 replicas, headroom
    # 5 / 4.5 - 1 = 11.1%, 6 / 5.4 - 1 = 11.1%, 7 / 6.48 - 1 = 8.0%: month 2 is tightest.
    # Before, the horizon's side read month 0's hours alone (11.1%).
    q = _lone_rps()
    instance = validate_instance(_data(4.5 * q, 0.2, 0, 3), "growing.yaml")
    plan = solve(instance)
    assert side_of(instance, plan, "solved").p99_headroom == pytest.approx(7 / 6.48 - 1, rel=1e-6)
    month_0 = side_of(instance, plan, "solved", over_horizon=False)
    assert month_0.p99_headroom == pytest.approx(5 / 4.5 - 1, rel=1e-6)
