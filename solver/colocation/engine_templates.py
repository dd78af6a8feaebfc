"""Group templates served by one engine: multi-LoRA adapters and same-model merges.

With `policy.colocation`, workloads of the same model may share one pool at the
strictest SLO among them (a same-model merge); with `policy.multi_lora` too, workloads
whose models are LoRA adapters (`base:`) of one base, and the base's own workloads, may
share one replica of the base: weights once, each adapter's bytes resident, the
multi-LoRA step cost in every iteration (`models.colocation.engine_group`).

Which templates. A family is the workloads of one model (merges) or of one base and its
adapters (multi-LoRA). For each family of two or more workloads and each GPU type, the
layout is the unified candidate of the family's strictest member (smallest p99 TTFT
target, then TPOT) with the lowest $/month per request/s; the templates are the whole
family and its tail (the members whose peak is below one lone replica, when they are
two or more and not the whole family). Each is evaluated once at its members' peaks:
a[w,t] = C x D_w / sum D (C the engine's combined capacity, `engine_group`); it is a
template when C > 0, whatever C / sum D: the program buys as many replicas of it as the
members' loads need. Few templates per family, and each costs one capacity search, so
they need no column generation.
"""

import math
from dataclasses import replace

from models.colocation.engine_group import EngineMember, engine_group
from models.colocation.shared_layout import SharedLayout
from models.physics.efficiency import efficiency_for
from models.schema.instance import Instance
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.replica import Role
from solver.candidates.table import Candidate, CandidateTable
from solver.colocation.groups import TAIL_REPLICAS, Template, check_deadline
from solver.settings import SolveSettings


def families(instance: Instance) -> list[tuple[str, tuple[str, ...]]]:
    """(base or model, its workloads) for every family of two or more workloads."""
    grouped: dict[str, list[str]] = {}
    for w in instance.workloads:
        entry = instance.model_entry(w.model)
        root = entry.base if instance.policy.multi_lora and entry.base else w.model
        grouped.setdefault(root, []).append(w.name)
    return [(root, tuple(ws)) for root, ws in grouped.items() if len(ws) > 1]


def engine_templates(
    instance: Instance, table: CandidateTable, settings: SolveSettings | None = None
) -> list[Template]:
    """The one-engine templates of an instance (see the module docstring); past
    `settings`' deadline, TimeLimitReached (checked before each template)."""
    if not instance.policy.colocation:
        return []
    peaks = {
        w.name: max((level.peak_rps for level in w.demand.values()), default=0.0)
        for w in instance.workloads
    }
    templates = []
    for root, names in families(instance):
        names = tuple(w for w in names if peaks[w] > 0)
        if len(names) < 2:
            continue
        strictest = min(names, key=lambda w: _strictness(instance.workload(w)))
        unified = [
            c
            for c in table.of(strictest)
            if c.role is Role.UNIFIED and c.config.dp == 1 and c.config.ep == 1
        ]
        for gpu in sorted({c.gpu for c in unified}):
            layout = min(
                (c for c in unified if c.gpu == gpu),
                key=lambda c: (_dollars_per_request(instance, c), c.key),
            )
            allowed = _allowed(instance, names, layout.config.weight_precision)
            tail = tuple(w for w in allowed if _in_tail(table, w, peaks[w]))
            subsets = {allowed} if len(allowed) >= 2 else set()
            if len(tail) >= 2:
                subsets.add(tail)
            for members in sorted(subsets):
                check_deadline(settings)
                template = _evaluate(instance, root, layout, members, peaks)
                if template is not None:
                    templates.append(template)
    return templates


def _allowed(instance: Instance, names: tuple[str, ...], precision) -> tuple[str, ...]:
    """The members whose model entry allows the engine's weight precision (its
    `weight_precisions`), as each member's own candidates do and the verifier checks
    (solver.verify.groups): an adapter entry that lists none has the default, bf16,
    whatever its base's."""
    return tuple(
        w
        for w in names
        if precision in instance.model_entry(instance.workload(w).model).weight_precisions
    )


def _strictness(workload) -> tuple[float, float]:
    targets = latency_targets(workload.slo)
    return (targets.ttft_p99_s or math.inf, targets.tpot_p99_s or math.inf)


def _dollars_per_request(instance: Instance, c: Candidate) -> float:
    prices = [
        instance.price_per_gpu_hour(r.name, c.gpu) for r in instance.regions if c.gpu in r.supply
    ]
    if not prices or c.requests_per_s <= 0:
        return math.inf
    return min(prices) * c.gpus / c.requests_per_s


def _in_tail(table: CandidateTable, w: str, peak: float) -> bool:
    lone = [c.requests_per_s for c in table.of(w) if c.role is Role.UNIFIED and c.gpus == 1]
    return bool(lone) and peak < TAIL_REPLICAS * max(lone)


def _evaluate(instance, root, layout: Candidate, members, peaks) -> Template | None:
    """The template of one engine of `layout` serving `members` at their peaks."""
    config = layout.config
    if root in instance.llm_specs:
        config = replace(config, llm=instance.llm_specs[root])
    efficiency = efficiency_for(
        config.gpu, config.weight_precision, instance.efficiency, instance.engine
    )
    engine_members = []
    for w in members:
        workload = instance.workload(w)
        entry = instance.model_entry(workload.model)
        engine_members.append(
            EngineMember(
                w,
                workload.model if entry.base else None,
                entry.rank,
                traffic_mix(workload, instance.policy.prefix_affinity),
                latency_targets(workload.slo),
                peaks[w],
            )
        )
    found = engine_group(config, engine_members, efficiency)
    if not found.feasible:
        return None
    return Template(
        members=found.members,
        gpu=config.gpu.name,
        precision=config.weight_precision,
        kv_precision=config.kv_precision,
        layout=SharedLayout(
            config.gpu, config.weight_precision, config.kv_precision, config.tp, config.pp
        ),
        capacity_requests_per_s=found.capacity_requests_per_s,
        load_scale=found.load_scale,
        limit=found.limit,
        limiting_member=found.members[0],
        engine=True,
    )
