"""The verifier's shared group keeps the KV precision its members' replicas keep
(models.serving.replica.pool_kv_precision: the group's own `kv_precision`, else each
member's model entry's, else the weights' rule), as the planner's group templates do
(solver.colocation.groups._common_layout: one (weights, KV) pair of the members'
candidates). A group entry without kv_precision was checked with a cache at the weights'
precision: bf16 weights under entries pinning an fp8 cache read 32 layers x 8 KV heads x
128 x 2 (K and V) x 2 B = 131,072 B per Llama 3.1 8B token where the plan holds 65,536."""

import pytest

from models.io.loading import validate_instance
from models.physics.precision import Precision
from solver.plan.records import GroupMember, ReplicaPool
from solver.plan.schema import Plan
from solver.verify import groups
from solver.verify.groups import check_groups
from tests.synthetic import instance_data, workload


def _instance(pins: dict[str, str | None]):
    """One workload per model, each entry pinning `pins[model]` (None: no pin)."""
    data = instance_data(
        {"east": {"h100-sxm": (8, 2.0)}},
        [workload(f"w{i}", {"east": 1.0}, model=m) for i, m in enumerate(pins)],
        models={m: ["bf16"] for m in pins},
        policy={"colocation": True},
    )
    for entry in data["models"]:
        if pins[entry["name"]] is not None:
            entry["kv_precision"] = pins[entry["name"]]
    return validate_instance(data, data["name"])


def _group(instance, kv: Precision | None) -> ReplicaPool:
    names = tuple(w.name for w in instance.workloads)
    return ReplicaPool(
        workload="+".join(names), workloads=names,
        members=tuple(GroupMember(workload=w, requests_per_s_per_replica=0.1) for w in names),
        region="east", gpu="h100-sxm", precision=Precision.BF16, kv_precision=kv,
        tp=1, pp=1, count=1,
    )  # fmt: skip


def _layouts(monkeypatch, instance, entry) -> tuple[list, list[str]]:
    """The layouts the group's physics is asked about, and the problems found."""
    seen = []

    def verdict(kind, layout, members, efficiency, evaluate):
        seen.append(layout)
        return ()

    monkeypatch.setattr(groups, "_verdict", verdict)
    violations = []
    check_groups(instance, Plan(replicas=(entry,)), violations)
    return seen, [v.message for v in violations]


@pytest.mark.parametrize(
    ("pins", "stated", "kept"),
    [
        ({"llama-3.1-8b": "fp8", "qwen3-32b": "fp8"}, None, Precision.FP8),  # the entries'
        ({"llama-3.1-8b": None, "qwen3-32b": None}, None, Precision.BF16),  # bf16 keeps bf16
        ({"llama-3.1-8b": "fp8", "qwen3-32b": "fp8"}, Precision.BF16, Precision.BF16),  # stated
    ],
)
def test_the_groups_kv_is_its_members_rule(monkeypatch, pins, stated, kept):
    instance = _instance(pins)
    (layout,), problems = _layouts(monkeypatch, instance, _group(instance, stated))
    assert problems == []
    assert layout.kv_precision is kept


def test_members_of_different_kv_rules_need_the_group_to_state_one(monkeypatch):
    instance = _instance({"llama-3.1-8b": "fp8", "qwen3-32b": None})
    seen, problems = _layouts(monkeypatch, instance, _group(instance, None))
    assert seen == []
    assert problems == [
        "the members keep different KV precisions (w0 fp8, w1 bf16): state its kv_precision"
    ]
    seen, problems = _layouts(monkeypatch, instance, _group(instance, Precision.FP8))
    assert problems == [] and seen[0].kv_precision is Precision.FP8
