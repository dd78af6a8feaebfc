"""Shared groups (part of solver.verify.fleet, step 5): each group entry recomputed on its own
at its members' stated capacities, with the co-location physics, the one-engine group
(multi-LoRA or a same-model merge) or the swapped-weights group; the physics modules are
imported only when a plan holds a group. A group that holds credits each member its
stated share per group replica in the scenario checks. A co-resident or swapped group's
verdict is kept by the values of its inputs (`_verdict`): an hourly plan states the same
group at the same capacities in many hours, and a horizon's months again.
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.instance import Instance
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.replica import Role, pool_kv_precision
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.program.row_names import GroupsColumn
from solver.verify.verdict import ENGINE_TOLERANCE, Violation

if TYPE_CHECKING:
    from models.colocation.shared_layout import SharedLayout

VERDICTS_KEPT = 1024
"""Group verdicts `_verdict` keeps (the oldest dropped beyond)."""

_VERDICTS: dict[tuple[str, ...], tuple[str, ...]] = {}


def _verdict(kind: str, *inputs: object, evaluate) -> tuple[str, ...]:
    """The problems of one group evaluation, computed once for every entry, hour and month
    with the same inputs (the physics is a pure function of them). Keyed by the inputs'
    values (their reprs: the layout and members hold unhashable specs), not by names a
    plan could reuse for other values."""
    key = (kind, *map(repr, inputs))
    if key not in _VERDICTS:
        while _VERDICTS and len(_VERDICTS) >= VERDICTS_KEPT:
            del _VERDICTS[next(iter(_VERDICTS))]
        _VERDICTS[key] = tuple(evaluate(*inputs).problems)
    return _VERDICTS[key]


@dataclass
class GroupShare:
    """One member's share of a shared group entry: what the flows credit to it."""

    workload: str
    region: str
    entry: ReplicaPool
    rate: float
    """a[w] per group replica when the group holds, else 0."""
    role: Role = Role.UNIFIED
    precision: str = ""

    @property
    def entries(self) -> list[ReplicaPool]:
        """The group's entry (counted once for supply and cost)."""
        return [self.entry]

    @property
    def count(self) -> int:
        """Group replicas."""
        return self.entry.count

    @property
    def key(self) -> str:
        """`a+b@h100-sxm.bf16.tp1pp1`: the template key the program names it by."""
        e = self.entry
        engine = ".engine" if e.shared_engine else ""
        swap = ".swap" if e.swapped_weights else ""
        return f"{'+'.join(e.workloads)}@{e.gpu}.{e.precision}.tp{e.tp}pp{e.pp}{engine}{swap}"

    @property
    def label(self) -> str:
        """`shared group a+b on h100-sxm bf16 tp1xpp1`."""
        return f"shared group {'+'.join(self.entry.workloads)} on {self.entry.label}"

    def carries(self, replicas: int, rerouted_rtt_ms: float = 0.0) -> float:
        """n x a[w] (a shared group is not charged the failover round trip, as in the
        program: `rerouted_rtt_ms` is not used)."""
        del rerouted_rtt_ms
        return replicas * self.rate

    def table_capacity(self, replicas: int, rerouted_rtt_ms: float = 0.0) -> float:
        """What a scenario table states for the group's replicas: `carries` (no
        headroom is taken off a group's a[w])."""
        return self.carries(replicas, rerouted_rtt_ms)


def check_groups(instance: Instance, plan: Plan, violations: list[Violation]) -> list[GroupShare]:
    """Recompute every shared group at its members' stated capacities (solver.verify.fleet, step
    5)."""
    workloads = {w.name: w for w in instance.workloads}
    shares: list[GroupShare] = []
    for entry in plan.replicas:
        if not entry.members:
            continue
        name = GroupsColumn(GroupShare("", "", entry, 0.0).key, entry.region).name()
        problems = _group_problems(instance, entry, workloads)
        for problem in problems:
            violations.append(Violation(requirement=name, message=problem))
        for m in entry.members:
            rate = 0.0 if problems else m.requests_per_s_per_replica
            shares.append(GroupShare(m.workload, entry.region, entry, rate))
    return shares


def _group_problems(instance: Instance, entry: ReplicaPool, workloads: dict) -> list[str]:
    # shared groups load their physics here: a plan without one never imports it
    from models.colocation.coresident import evaluate_group
    from models.colocation.shared_layout import Member, SharedLayout
    from models.colocation.swap_group import evaluate_swapped_group

    gpu = instance.gpu_specs.get(entry.gpu)
    unknown = [m.workload for m in entry.members if m.workload not in workloads]
    if gpu is None or unknown or entry.region not in {r.name for r in instance.regions}:
        return [f"unknown GPU, region or workloads in a shared group: {unknown or entry.gpu}"]
    if entry.role is not Role.UNIFIED:
        return ["a shared group serves unified replicas only"]
    problems = []
    members = []
    weights = Precision(entry.precision)
    kept = {}  # the KV precision each member's replica keeps (`pool_kv_precision`)
    for m in entry.members:
        workload = workloads[m.workload]
        model = instance.model_entry(workload.model)
        kept[m.workload] = pool_kv_precision(weights, entry.kv_precision, model.kv_precision)
        if entry.precision not in model.weight_precisions:
            problems.append(
                f"{m.workload}: weight precision {entry.precision} is not allowed for "
                f"{workload.model}"
            )
        members.append(
            Member(
                m.workload,
                instance.llm_specs[workload.model],
                traffic_mix(workload, instance.policy.prefix_affinity),
                latency_targets(workload.slo),
                m.requests_per_s_per_replica,
            )
        )
    expected_gpus = entry.count * entry.replica_gpus
    if entry.gpus is not None and entry.gpus != expected_gpus:
        problems.append(f"states {entry.gpus} GPUs, but {entry.count} x {entry.replica_gpus}")
    if len(set(kept.values())) > 1:  # the planner groups members of one (weights, KV) pair
        each = ", ".join(f"{w} {kv}" for w, kv in kept.items())
        problems.append(
            f"the members keep different KV precisions ({each}): state its kv_precision"
        )
        return problems
    layout = SharedLayout(gpu, weights, next(iter(kept.values())), entry.tp, entry.pp)
    efficiency = efficiency_for(gpu, entry.precision, instance.efficiency, instance.engine)
    if entry.shared_engine:
        return problems + _engine_problems(instance, entry, workloads, layout, efficiency)
    if entry.swapped_weights:
        if len(members) < 2:
            return [*problems, "a swapped group needs at least two members"]
        swapped = _verdict("swapped", layout, members, efficiency, evaluate=evaluate_swapped_group)
        return problems + list(swapped)
    return problems + list(
        _verdict("co-resident", layout, members, efficiency, evaluate=evaluate_group)
    )


def _engine_problems(
    instance: Instance, entry: ReplicaPool, workloads: dict, layout: "SharedLayout", efficiency
) -> list[str]:
    """One engine serving every member (multi-LoRA or a same-model merge): the members
    must share one base, and the engine's capacity along the stated rates, at the
    strictest SLO with the members' envelope mix, must cover their sum
    (`models.colocation.engine_group`)."""
    from models.colocation.engine_group import EngineMember, engine_group

    entries = {m.workload: instance.model_entry(workloads[m.workload].model) for m in entry.members}
    roots = {e.base if e.base else e.name for e in entries.values()}
    if len(roots) != 1:
        return [f"one engine serves one base model, but the members use {sorted(roots)}"]
    if any(e.base for e in entries.values()) and not instance.policy.multi_lora:
        return ["LoRA adapters share an engine only with policy.multi_lora"]
    root = next(iter(roots))
    llm = instance.llm_specs.get(root)
    llm = llm or instance.llm_specs[workloads[entry.members[0].workload].model]
    stated = [
        EngineMember(
            m.workload,
            workloads[m.workload].model if entries[m.workload].base else None,
            entries[m.workload].rank,
            traffic_mix(workloads[m.workload], instance.policy.prefix_affinity),
            latency_targets(workloads[m.workload].slo),
            m.requests_per_s_per_replica,
        )
        for m in entry.members
    ]
    if sum(m.requests_per_s for m in stated) <= 0:
        return ["a shared engine states no capacity"]
    found = engine_group(layout.config(llm), stated, efficiency)
    if found.problems:
        return list(found.problems)
    claimed = sum(m.requests_per_s for m in stated)
    if claimed > found.total_requests_per_s * (1 + ENGINE_TOLERANCE):
        return [
            f"the shared engine states {claimed:.3f} requests/s per replica for its members "
            f"together, but carries {found.total_requests_per_s:.3f} within the strictest SLO"
        ]
    return []
