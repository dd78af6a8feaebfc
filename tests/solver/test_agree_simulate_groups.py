"""simulate replays the load the plan routes: a co-located plan's shared groups keep
their share of their members' load and are named as not replayed.

Before: the replay left shared groups out without a word (a plan of groups alone replayed
nothing, printed an empty table and passed), and split a workload's load over its
dedicated pools alone, so a dedicated pool beside a group was replayed at the workload's
whole load where the plan routes it `routing_weight` of it."""

import copy

import pytest
import yaml

from models.io.loading import validate_instance
from solver.simulate.replay import GROUP_NOTE, simulate_plan
from solver.solve import solve
from tests.paths import INSTANCES

TAIL = ("support", "sales", "legal", "hr")


@pytest.fixture(scope="module")
def tail():
    """Four Llama 3.1 8B fine-tunes of zipf-20-models at 2 requests/s each in one region,
    co-location on, one replica's loss survived (a spare: some tail models keep a
    dedicated replica beside the groups they share)."""
    data = yaml.safe_load((INSTANCES / "zipf-20-models.yaml").read_text())
    workloads = [copy.deepcopy(w) for w in data["workloads"] if w["name"] in TAIL]
    for w in workloads:
        w["demand"] = {"us-east": {"peak_requests_per_s": 2.0}}
    data["workloads"] = workloads
    kept = {"llama-3.1-8b"} | {w["model"] for w in workloads}
    data["models"] = [m for m in data["models"] if m["name"] in kept]
    data["regions"][0]["supply"]["h100-sxm"]["max_gpus"] = 64
    data["policy"]["survive"] = "replica"
    data["solver"] = {"time_limit_s": 60}
    instance = validate_instance(data, "tail")
    return instance, solve(instance)


def test_dedicated_pools_are_replayed_at_the_plans_routing_weight(tail):
    instance, plan = tail
    load = {(p.workload, p.region): p.load_requests_per_s for p in plan.scenarios[0].pools}
    dedicated = [p for p in plan.replicas if not p.shared]
    groups = [p for p in plan.replicas if p.shared]
    assert dedicated and groups  # the case under test: a pool beside a group
    simulated = simulate_plan(instance, plan, duration_s=5.0)
    replayed = {(p.workload, p.region): p.load_requests_per_s for p in simulated.pools}
    for pool in dedicated:
        share = load[(pool.workload, pool.region)] * pool.routing_weight
        assert replayed[(pool.workload, pool.region)] == pytest.approx(share, rel=1e-9)


def test_every_shared_groups_row_is_named_as_not_replayed(tail):
    instance, plan = tail
    simulated = simulate_plan(instance, plan, duration_s=5.0)
    members = {(w, p.region) for p in plan.replicas if p.shared for w in p.workloads}
    named = {tuple(text.split(" ")[:2]) for text in simulated.not_simulated}
    assert named == members
    assert all(text.endswith(GROUP_NOTE) for text in simulated.not_simulated)
