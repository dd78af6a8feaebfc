"""The hour verifier's idle range where a shared group and a workload's own pool serve
the same workload in one region: the split of that load is the program's choice, so the
pool's GPUs are busy anywhere between none and all of them (as a group's are).

Before: the verifier held the dedicated pools to carry the workload's whole load
(u = D / C of its own pools), so an hourly co-located plan stating the planner's idle
share (the pool at the utilisation of its row, group included) fell outside the range:
`solve` of an hourly instance with chat on one fp8 replica beside a chat+reason group,
prefix-cache hit 0.1, exit 70 ('idle_fraction: states 94.4839% idle over the GPUs paid;
the hours' busy and paid GPU-hours give between 69.3695% and 94.3695%'); so did the
explain lever 'prefix-cache hit +10 points' on it."""

import pytest

from solver.verify.hour_idle import idle_range
from tests.solved_once import hourly_groups_plan


def test_a_pool_beside_a_group_of_its_workload_may_be_idle(tmp_path_factory):
    inst, plan = hourly_groups_plan(tmp_path_factory)  # _hourly's plan, solved once a run
    (group,) = [p for p in plan.replicas if p.members]
    assert "support" in group.workloads
    # support's own pool beside the group in every hour: one bf16 replica, no GPU paid
    # for it (the paid side is the hours' GPUs, unchanged), so the range moves by the
    # busy side alone
    beside = group.model_copy(
        update={"workload": "support", "workloads": ("support",), "members": (), "count": 1}
    )
    hours = tuple(h.model_copy(update={"pools": (*h.pools, beside)}) for h in plan.hours)
    edited = plan.model_copy(update={"hours": hours})
    low, high = idle_range(inst, plan)
    low_beside, high_beside = idle_range(inst, edited)
    # the group may carry all of support's load and the new pool none: the most idle
    # share is the plan's own; or the pool may be busy: the least idle share falls
    assert high_beside == pytest.approx(high, abs=1e-12)
    assert low_beside <= low
