"""simulate judges a pool that serves rerouted users at the target the plan sized it for.

In a region loss the surviving region's pools serve their own users and the rerouted
ones from one queue, and a rerouted user's first token crosses the round trip once more:
the planner credits those pools at the p99 TTFT target less the round trip and the
verifier checks them there. Before, the replay judged them at the full target."""

import pytest

from solver.simulate.replay import simulate_plan
from solver.solve import solve
from tests.synthetic import TTFT_P99_MS, two_workloads

RTT_MS = 50.0
"""The east-west link of `two_workloads` (users may fail over within 80 ms)."""


@pytest.fixture(scope="module")
def solved():
    instance = two_workloads()
    return instance, solve(instance)


def test_rerouted_pools_are_judged_at_the_target_less_the_round_trip(solved):
    instance, plan = solved
    # chat's east users fail over to west: west's chat pools at 1000 - 50 = 950 ms
    lost_east = simulate_plan(instance, plan, "lose=east", duration_s=5.0, tolerance=False)
    chat_west = [p for p in lost_east.pools if (p.workload, p.region) == ("chat", "west")]
    assert chat_west
    assert all(p.ttft_p99_target_ms == TTFT_P99_MS - RTT_MS for p in chat_west)
    # code has users in west only: nobody is rerouted to it when east is lost
    code_west = [p for p in lost_east.pools if p.workload == "code"]
    assert all(p.ttft_p99_target_ms == TTFT_P99_MS for p in code_west)


def test_without_a_loss_every_pool_is_judged_at_its_target(solved):
    instance, plan = solved
    normal = simulate_plan(instance, plan, "none", duration_s=5.0)
    assert normal.pools
    assert all(p.ttft_p99_target_ms == TTFT_P99_MS for p in normal.pools)
