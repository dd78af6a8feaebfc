"""One workload at two weight precisions (issue 35): a plan that serves a workload at fp8
and fp4 at once says so in its notes (and its header), and
`policy.one_precision_per_workload` forbids it: the program then picks one precision per
workload and the verifier rejects a plan that mixes them."""

import pytest

from cli.render.plan_tables import plan_header
from solver.solve import solve
from solver.verify.fleet import verify
from tests.synthetic import instance, with_policy, workload


@pytest.fixture(scope="module")
def split_fleet():
    """70B chat in two regions, B200s (which run fp4) in east, H100s (which do not) in
    west, weights fp8 or fp4: east is cheapest at fp4, west can only run fp8."""
    return instance(
        {"east": {"b200": (64, 5.2)}, "west": {"h100-sxm": (64, 2.4)}},
        [workload("chat", {"east": 30.0, "west": 30.0}, model="llama-3.3-70b")],
        models={"llama-3.3-70b": ["fp8", "fp4"]},
        tensor_parallel=[1, 2, 4, 8],
        mip_gap=0.0,
    )


def _precisions(plan) -> dict[str, str]:
    return {pool.region: str(pool.precision) for pool in plan.replicas if pool.count}


def test_a_mixed_plan_says_so(split_fleet):
    plan = solve(split_fleet)
    assert _precisions(plan) == {"east": "fp4", "west": "fp8"}
    (note,) = plan.notes
    assert note.startswith("chat is served at fp4 and fp8 at once (fp4: east; fp8: west)")
    assert "policy.one_precision_per_workload" in note
    assert f"note: {note}" in plan_header(plan)


def test_the_policy_forbids_it_and_the_verifier_agrees(split_fleet):
    mixed = solve(split_fleet)
    one = with_policy(split_fleet, one_precision_per_workload=True)
    plan = solve(one)
    assert set(_precisions(plan).values()) == {"fp8"}  # the only one west can run
    assert plan.notes == ()
    assert plan.cost_per_month >= mixed.cost_per_month  # a tighter question
    check = verify(one, mixed)
    assert not check.ok
    assert [v.requirement for v in check.violations] == ["one_precision[chat]"]
    assert verify(split_fleet, mixed).ok
