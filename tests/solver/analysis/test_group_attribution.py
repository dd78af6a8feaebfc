"""A shared group's share of the bill goes to its members, so the rows add up to the
plan's cost with groups too (before: zipf-20-models' rows read $29,433.60 of $42,048, the
6 groups' $12,614.40 on no row, 15 of its 20 workloads without one).

The rule (solver.analysis.cost_attribution): member w pays the share load_w / a[w,t] of
its group, normalised over the members; the phases split evenly.

Hand case: two 8B fine-tunes with one tenth of a dedicated replica's rate each share one
H100 at $2.00 (test_colocation_program's case): 1 x 2.00 x 730 = $1,460 a month. Same
shapes and loads, so the same load over capacity: $730 each."""

import pytest

from models.physics.precision import Precision
from solver.analysis.cost_attribution import member_weights
from solver.plan.records import GroupMember, ReplicaPool
from solver.plan.schema import Plan
from solver.solve import solve
from solver.verify.fleet import verify
from tests.models.colocation.test_colocation import _dedicated_rps
from tests.solver.colocation.test_colocation_program import HOURS, PRICE, _instance


def _group(*members: tuple[str, float, float]) -> ReplicaPool:
    return ReplicaPool(
        workload="+".join(w for w, _, _ in members),
        workloads=tuple(w for w, _, _ in members),
        members=tuple(
            GroupMember(workload=w, requests_per_s_per_replica=a, load_requests_per_s=load)
            for w, a, load in members
        ),
        region="east",
        gpu="h100-sxm",
        precision=Precision.BF16,
        tp=1,
        pp=1,
        count=2,
    )


def test_member_weights_by_hand():
    # a = 4 and 2 requests/s per replica, loads 2 and 3: 2/4 = 0.5 and 3/2 = 1.5 of a
    # replica's capacity, 0.5 / 2.0 = 1/4 and 1.5 / 2.0 = 3/4 of the group
    assert member_weights(_group(("chat", 4.0, 2.0), ("code", 2.0, 3.0))) == pytest.approx(
        {"chat": 0.25, "code": 0.75}
    )
    # no load on either member: equal shares
    assert member_weights(_group(("chat", 4.0, 0.0), ("code", 2.0, 0.0))) == {
        "chat": 0.5,
        "code": 0.5,
    }


@pytest.fixture(scope="module")
def solved():
    tenth = _dedicated_rps() / 10
    instance = _instance({"chat": tenth, "code": tenth})
    return instance, solve(instance)


def test_two_members_pay_their_group(solved):
    _, plan = solved
    (group,) = [p for p in plan.replicas if p.shared]
    assert group.count * group.replica_gpus == 1
    bill = 1 * PRICE * HOURS  # $1,460
    assert plan.cost_per_month == pytest.approx(bill)
    rows = {row.workload: row for row in plan.cost_attribution}
    assert {w: r.cost_per_month for w, r in rows.items()} == pytest.approx(
        {"chat": bill / 2, "code": bill / 2}  # $730 each
    )
    for row in rows.values():
        assert row.prefill_share == pytest.approx(0.5)
        assert row.prefill_gpu_hours_per_month + row.decode_gpu_hours_per_month == pytest.approx(
            1 * HOURS / 2  # half of one GPU's 730 hours
        )


def test_the_verifier_recomputes_a_group_members_row(solved):
    instance, plan = solved
    assert verify(instance, plan).ok
    data = plan.model_dump(mode="json")
    rows = data["cost_attribution"]
    rows[0]["cost_per_month"] += 100.0  # $830 and $630: the total still $1,460
    rows[1]["cost_per_month"] -= 100.0
    found = verify(instance, Plan.model_validate(data)).violations
    assert {v.requirement for v in found} == {
        "cost_attribution[0].cost_per_month",
        "cost_attribution[1].cost_per_month",
    }
    del data["cost_attribution"][1]  # one member's row gone: $830 of $1,460
    found = verify(instance, Plan.model_validate(data)).violations
    assert "cost_attribution" in {v.requirement for v in found}


def test_an_hourly_plans_group_is_paid_by_its_members(tmp_path_factory):
    from tests.solved_once import hourly_groups_plan

    _, plan = hourly_groups_plan(tmp_path_factory)
    # two GPUs committed all day at $1.50: chat's, and the support+sales group's
    # 1 x 1.5 x 730 = $1,095 each
    cost = {row.workload: row.cost_per_month for row in plan.cost_attribution}
    assert set(cost) == {"chat", "support", "sales"}
    assert cost["chat"] == pytest.approx(1.5 * HOURS)
    assert cost["support"] + cost["sales"] == pytest.approx(1.5 * HOURS)
    assert sum(cost.values()) == pytest.approx(plan.cost_per_month, abs=0.01)
