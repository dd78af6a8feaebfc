"""The verifier's work on a large fleet grows with what differs, not with every pool x
scenario x region (verify of 10,000 pools in 100 pairwise regions x 100 workloads took
about 10-25 s: each check filtered every pool of its workload per region, recomputed the
capacity of regions no scenario touches, searched each origin's destinations twice, and
keyed each pool's physics by the reprs of its inputs). Counted here on 10 regions x 3
workloads, one pool of 2 replicas per workload and region, surviving a region loss."""

import pytest

from models.io.loading import validate_instance
from models.operations.scenarios import RegionGraph
from solver.plan.schema import Plan
from solver.verify import pools as verify_pools
from solver.verify import scenarios as verify_scenarios
from solver.verify.fleet import verify
from tests.cli.test_hostile_scale import _pairwise

REGIONS, WORKLOADS = 10, 3


@pytest.fixture
def counted(monkeypatch):
    calls = {"region_capacity": 0, "shared_physics": 0, "destinations": 0}

    def counting(name, function):
        def wrapper(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(
        verify_scenarios,
        "region_capacity",
        counting("region_capacity", verify_scenarios.region_capacity),
    )
    monkeypatch.setattr(
        verify_pools, "shared_physics", counting("shared_physics", verify_pools.shared_physics)
    )
    monkeypatch.setattr(
        RegionGraph, "destinations", counting("destinations", RegionGraph.destinations)
    )
    return calls


def test_a_pairwise_fleet_is_checked_once_per_difference(counted):
    data = _pairwise(REGIONS, WORKLOADS)
    instance = validate_instance(data, "pairwise.yaml")
    pool = {"gpu": "h100-sxm", "precision": "fp8", "tp": 1, "pp": 1, "count": 2}
    fleet = [
        {"workload": w["name"], "region": r["name"], **pool}
        for w in data["workloads"]
        for r in data["regions"]
    ]
    result = verify(instance, Plan.model_validate({"replicas": fleet}))
    scenarios = 1 + REGIONS  # none and each region lost
    assert result.ok and len(result.checks) == scenarios * WORKLOADS  # 33
    # one configuration per workload: its physics once, not once per region (30)
    assert counted["shared_physics"] == WORKLOADS
    # each origin's destinations once per scenario, shared by the workloads (was twice)
    assert counted["destinations"] == scenarios * REGIONS  # 110
    # a region's capacity once per (workload, region, round trip its rerouted users
    # travel): 0 ms in `none` and 50 ms when another region is lost (pairwise links), 2 x
    # 3 x 10 = 60, plus the lost region itself in each loss, 10 x 3 = 30: 90, not
    # 11 scenarios x 3 workloads x 10 regions = 330
    assert counted["region_capacity"] == 2 * WORKLOADS * REGIONS + REGIONS * WORKLOADS
