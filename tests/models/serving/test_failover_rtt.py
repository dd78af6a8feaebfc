"""Rerouted users' TTFT includes the failover round trip: a region that may receive
rerouted users serves all of them, and its own, at the TTFT target less the longest such
round trip (models.operations.scenarios; the program in solver.program.families.capacity, the
verifier's max-flow in solver.verify.fleet)."""

import pytest

from models.io.loading import validate_instance
from models.operations.scenarios import (
    RegionGraph,
    Scenario,
    ScenarioKind,
    failover_targets,
    rerouted_rtt_ms,
)
from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.serving.capacity import replica_capacity
from models.serving.edge_search import EDGE_REL_TOL
from models.serving.pooling import planning_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, TrafficMix
from solver.solve import solve
from solver.verify.fleet import verify
from tests.synthetic import instance, workload

TTFT_MS, TPOT_MS = 2000.0, 60.0
RTT_MS = 500.0


def test_failover_targets_subtract_the_round_trip():
    targets = LatencyTargets(ttft_p99_s=2.0, tpot_p99_s=0.05)
    tighter = failover_targets(targets, 300.0)
    assert tighter.ttft_p99_s == pytest.approx(2.0 - 0.300)
    assert tighter.tpot_p99_s == 0.05  # tokens stream at the same pace
    assert failover_targets(targets, 0.0) == targets
    assert failover_targets(LatencyTargets(tpot_p99_s=0.05), 300.0).tpot_p99_s == 0.05
    assert failover_targets(targets, 5000.0).ttft_p99_s == pytest.approx(1e-6)


def _triangle():
    data = {
        "name": "triangle",
        "gpus": [{"name": "h100-sxm"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [{"name": r, "supply": {"h100-sxm": {"max_gpus": 8}}} for r in "abc"],
        "links": [["a", "b", 30], ["b", "c", 40], ["a", "c", 100]],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {r: {"peak_requests_per_s": 1} for r in "abc"},
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": {"ttft_p99_ms": 1000, "tpot_p99_ms": 50},
            }
        ],
        "policy": {"survive": "region"},
    }
    return RegionGraph.of(validate_instance(data, "triangle"))


def test_rerouted_rtt_is_the_longest_round_trip_into_each_region():
    """Losing a: a's users reach b at 30 ms and c at 30 + 40 = 70 ms (shorter than the
    direct 100); b's and c's users may go to each other at 40 ms. So b may receive users
    from 40 ms away at most, c from 70."""
    graph = _triangle()
    lose_a = Scenario("lose=a", ScenarioKind.REGION, "a")
    assert rerouted_rtt_ms(graph, lose_a, ["a", "b", "c"], None) == {"b": 40.0, "c": 70.0}
    # within a 50 ms bound a's users reach b only, and b <-> c stays
    assert rerouted_rtt_ms(graph, lose_a, ["a", "b", "c"], 50.0) == {"b": 40.0, "c": 40.0}
    # no failure: nobody is rerouted
    assert rerouted_rtt_ms(graph, Scenario("none", ScenarioKind.NONE), ["a", "b"], None) == {}


def _two_regions(rtt_ms: float, per_region_rps: float):
    """32K-token prompts on Llama 3.3 70B FP8 at TP8 (TTFT-bound in small pools),
    `per_region_rps` in each of two regions joined by one link, surviving a region's
    loss."""
    return instance(
        {"east": {"h100-sxm": (400, 2.5)}, "west": {"h100-sxm": (400, 2.5)}},
        [
            workload(
                "doc",
                {"east": per_region_rps, "west": per_region_rps},
                model="llama-3.3-70b",
                prompt_tokens=32000,
                output_tokens=500,
                ttft_p99_ms=TTFT_MS,
                tpot_p99_ms=TPOT_MS,
            )
        ],
        tensor_parallel=[8],
        links=[("east", "west", rtt_ms)],
        survive="region",
    )


def _per_replica(pool_replicas: int, ttft_ms: float) -> float:
    """q(n): the physics of one replica in a pool of n at a TTFT target."""
    config = ReplicaConfig(
        catalog.gpu("h100-sxm"), catalog.llm("llama-3.3-70b"), Precision.FP8, Precision.FP8, 8, 1
    )
    targets = LatencyTargets(ttft_p99_s=ttft_ms / 1e3, tpot_p99_s=TPOT_MS / 1e3)
    efficiency = efficiency_for("h100-sxm", Precision.FP8, None)
    mix = TrafficMix.fixed(32000, 500)
    return planning_capacity(replica_capacity(config, mix, targets, efficiency, pool_replicas))


def test_a_region_serving_rerouted_users_is_planned_at_the_target_less_the_round_trip():
    """When one region is lost the other carries both regions' load L, at a TTFT target
    of 2,000 - 500 = 1,500 ms for everyone in its queue. The program credits a pool of n
    replicas with q at the largest tabulated size at or below it (2, 4, ...: a pool of 3
    earns 3 q(2), a lower bound on 3 q(3)). L is put halfway into the window where two
    replicas carry it at 2,000 ms but not at 1,500 ms and three, credited at q(2), do:

        2 q'(2) < L <= min(2 q(2), 3 q'(2)),   q at 2,000 ms, q' at 1,500 ms,

    which is not empty because the round trip tightens a TTFT-bound pool (q'(2) < q(2)),
    so the plan needs two replicas a region without the round trip and three with it."""
    tighter_ms = TTFT_MS - RTT_MS
    q_2, q_tight_2 = _per_replica(2, TTFT_MS), _per_replica(2, tighter_ms)
    low, high = 2 * q_tight_2, min(2 * q_2, 3 * q_tight_2)
    assert low < high  # the round trip costs a TTFT-bound pool capacity
    load = (low + high) / 2
    assert _per_replica(1, TTFT_MS) < load  # one replica is never enough
    assert 2 * _per_replica(2, TTFT_MS) >= load  # enough without the round trip
    assert 2 * _per_replica(2, tighter_ms) < load  # not with it
    assert 3 * _per_replica(3, tighter_ms) >= load

    near = _two_regions(0.0, load / 2)
    far = _two_regions(RTT_MS, load / 2)
    near_plan, far_plan = solve(near), solve(far)
    assert sorted(p.count for p in near_plan.replicas) == [2, 2]
    assert sorted(p.count for p in far_plan.replicas) == [3, 3]
    assert verify(far, far_plan).ok

    # The plan made without the round trip does not serve the failover once it counts.
    report = verify(far, near_plan)
    short = [v.requirement for v in report.violations if v.requirement.startswith("demand[")]
    assert "demand[lose=east,doc,east]" in short
    assert "demand[lose=west,doc,west]" in short


def test_a_tpot_bound_pool_pays_nothing_for_the_round_trip():
    """Large pools of the same workload are TPOT-bound: the TTFT target less 500 ms
    still holds, so the plan is the same with or without the round trip."""

    def chat(rtt_ms: float):
        return instance(
            {"east": {"h100-sxm": (400, 2.5)}, "west": {"h100-sxm": (400, 2.5)}},
            [workload("chat", {"east": 20.0, "west": 20.0}, model="llama-3.1-8b")],
            links=[("east", "west", rtt_ms)],
            survive="region",
        )

    near, far = solve(chat(0.0)), solve(chat(RTT_MS))
    assert far.cost_per_month == pytest.approx(near.cost_per_month)
    assert verify(chat(RTT_MS), far).ok


@pytest.mark.parametrize("ttft_ms", [300.0, 800.0, 4000.0])
@pytest.mark.parametrize("rtt_ms", [5.0, 60.0, 250.0])
def test_the_failover_curve_equals_recomputing_every_size_at_the_tighter_target(ttft_ms, rtt_ms):
    """failover_curve reuses a size's capacity where it holds at the TTFT target less the
    round trip (not TTFT-limited, its p99 TTFT already within the tighter target); the
    curve must be what recomputing every size at the tighter target gives, to the
    capacity search's precision (`models.serving.edge_search.EDGE_REL_TOL`, 1e-12: its steps
    interpolate the p99-to-target ratios, and the TTFT's differs at the tighter target)."""
    from dataclasses import replace

    from solver.candidates.pools import PoolCurve, PoolPhysics, failover_curve

    config = ReplicaConfig(
        catalog.gpu("h100-sxm"),
        catalog.llm("llama-3.1-8b"),
        Precision.FP8,
        Precision.FP8,
        1,
        1,
    )
    mix = TrafficMix(
        prompt_mean_tokens=2000,
        prompt_p99_tokens=8000,
        prompt_cv=1.0,
        output_mean_tokens=300,
        output_p99_tokens=1000,
        output_cv=0.8,
    )
    targets = LatencyTargets(ttft_p99_s=ttft_ms / 1e3, tpot_p99_s=0.03)
    physics = PoolPhysics(config, mix, targets, efficiency_for(config.gpu, Precision.FP8))
    curve = PoolCurve(tuple((n, physics.at(n)) for n in (1, 2, 4, 8)), 0.0)
    tighter = replace(physics, targets=failover_targets(targets, rtt_ms))
    got = failover_curve(physics, curve, rtt_ms)
    for (n, capacity), (m, expected) in zip(
        got.points, ((n, tighter.at(n)) for n in (1, 2, 4, 8)), strict=True
    ):
        assert n == m
        assert planning_capacity(capacity) == pytest.approx(
            planning_capacity(expected), rel=10 * EDGE_REL_TOL
        )
        assert capacity.limit is expected.limit
