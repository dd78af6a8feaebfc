"""A plan's scenario table states the capacity the program credited and the verifier
checks: where a region loss reroutes users, the surviving pools carry q'(n), their
capacity at the p99 TTFT target less the round trip, not q(n).

Before: the table stated q(n) in every scenario. On this instance (a 70B model, 3,000-token
prompts, p99 TTFT 400 ms, regions 90 ms apart) it put the surviving region at 22.73
requests/s (57% used) where the program and the verifier hold it to 18.24 (71%)."""

import pytest

from models.operations.scenarios import RegionGraph, failure_scenarios, rerouted_rtt_ms
from solver.solve import solve
from solver.verify.pools import recompute_pools
from solver.verify.scenarios import region_capacity
from tests.synthetic import instance, workload

RTT_MS = 90.0


@pytest.fixture(scope="module")
def solved():
    inst = instance(
        {"east": {"h100-sxm": (128, 2.57)}, "west": {"h100-sxm": (512, 2.71)}},
        [
            workload(
                "chat",
                {"east": 6.17, "west": 6.81},
                model="llama-3.1-70b",
                prompt_tokens=3000,
                output_tokens=400,
                ttft_p99_ms=400,
                tpot_p99_ms=60,
                max_failover_rtt_ms=100,
            )
        ],
        links=[("east", "west", RTT_MS)],
        survive="region",
        tensor_parallel=[1, 2, 4, 8],
    )
    return inst, solve(inst)


def test_every_scenario_row_states_the_verifiers_capacity(solved):
    inst, plan = solved
    pools = recompute_pools(inst, plan, [], [])
    graph = RegionGraph.of(inst)
    stated = {
        (s.name, p.region): p.capacity_requests_per_s for s in plan.scenarios for p in s.pools
    }
    checked = 0
    for scenario in failure_scenarios(inst):
        rerouted = rerouted_rtt_ms(graph, scenario, ["east", "west"], 100)
        for region in ("east", "west"):
            if (scenario.name, region) not in stated:
                continue
            alive = [
                (p, scenario.surviving_replicas(region, p.count, 1))
                for p in pools
                if p.region == region
            ]
            expected = region_capacity(alive, rerouted.get(region, 0.0))
            assert stated[(scenario.name, region)] == pytest.approx(expected, rel=1e-9)
            checked += 1
    assert checked == 4  # none: east and west; each loss: the other region


def test_the_failover_target_binds_here(solved):
    """The case under test: each surviving region carries less while it serves the
    rerouted users (the TTFT-bound pools lose capacity at 400 - 90 = 310 ms)."""
    _, plan = solved
    stated = {
        (s.name, p.region): p.capacity_requests_per_s for s in plan.scenarios for p in s.pools
    }
    assert stated[("lose=east", "west")] < stated[("none", "west")]
    assert stated[("lose=west", "east")] < stated[("none", "east")]
