"""The verifier's physics shared between its checks (solver.verify.pools.shared_physics):
a configuration's capacity at a pool size is computed once for every pool, hour and
month with the same inputs, and computed again for any input that differs."""

import math

from solver.plan.schema import Plan
from solver.verify import pools
from solver.verify.fleet import verify
from tests.solver.verify.test_verify import DEMAND, capacity_rps, one_region, pool


def _counting(monkeypatch) -> list:
    calls = []
    physics = pools.replica_capacity

    def counted(*args):
        calls.append(args[-1])
        return physics(*args)

    monkeypatch.setattr(pools, "replica_capacity", counted)
    monkeypatch.setattr(pools, "_PHYSICS", {})
    return calls


def test_the_same_pool_checked_twice_computes_its_physics_once(monkeypatch):
    """One pool of n replicas: the lone replica (size 1) and the pool's size are computed
    on the first check; the second check, with the same inputs, computes nothing and
    reaches the same verdict."""
    inst = one_region()
    needed = math.ceil(DEMAND / capacity_rps(inst))
    plan = Plan(replicas=(pool("east", needed),))
    calls = _counting(monkeypatch)
    first = verify(inst, plan)
    assert sorted(set(calls)) == sorted({1, needed})
    computed = len(calls)
    second = verify(inst, plan)
    assert len(calls) == computed
    assert first.ok and second.ok and first.cost_per_month == second.cost_per_month


def test_another_input_is_computed_again(monkeypatch):
    """A tighter TTFT target is another input: its physics is its own, never the first's."""
    inst = one_region()
    needed = math.ceil(DEMAND / capacity_rps(inst))
    plan = Plan(replicas=(pool("east", needed),))
    calls = _counting(monkeypatch)
    verify(inst, plan)
    computed = len(calls)
    workload = inst.workloads[0]
    tighter = workload.model_copy(
        update={
            "slo": workload.slo.model_copy(update={"ttft_p99_ms": workload.slo.ttft_p99_ms / 2})
        }
    )
    verify(inst.model_copy(update={"workloads": [tighter]}), plan)
    assert len(calls) > computed


def test_the_physics_kept_is_bounded(monkeypatch):
    monkeypatch.setattr(pools, "_PHYSICS", {})
    monkeypatch.setattr(pools, "PHYSICS_KEPT", 2)
    inst = one_region()
    needed = math.ceil(DEMAND / capacity_rps(inst))
    for tp in (1, 2, 4):
        verify(inst, Plan(replicas=(pool("east", needed, tp=tp),)))
    assert len(pools._PHYSICS) == 2
