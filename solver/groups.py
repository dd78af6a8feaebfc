"""Group templates: the bounded set of shared replica groups the program may choose from.

With `policy.colocation: true`, workloads of the long tail may share replica groups
(co-resident engines, `models.colocation`): several models' weights resident on one GPU,
HBM split between their weights and KV, the GPU's time shared between their iterations.
A template t = (members, layout) is one such group on one layout, with its capacity per
group replica for each member, a[w,t] requests/s, all at once (`GroupTemplate`).

Which workloads may share (the tail rule). Workload w is in the tail when it has a
unified single-GPU candidate and its peak demand in every region is below
`TAIL_REPLICAS` lone replicas of the best of them:

    max_o D[w,o]  <  TAIL_REPLICAS x max_{c unified, gpus(c) = 1} q_c

(a workload that fills whole replicas gains nothing from sharing: its pools round up
by less than one replica, and a busy engine's iterations would slow everyone's tail).

Which groups are evaluated. Groups of 2..`MAX_GROUP_SIZE` tail workloads on each GPU
type g offered, on one GPU (tp = pp = 1: the small models sharing is for), at the weight
and KV precision the members' own single-GPU candidates on g have in common (the fewest
bytes per weight: more room for KV), filtered before any latency is computed by

    memory:  sum_w (weights_w + reserve) <= HBM(g)            (cheap; the KV comes later)
    load:    sum_w D_w / q_w(g) <= 1                           (the group's peak fits in
                                                               one replica of time, alone)

with D_w = max_o D[w,o] and q_w(g) the member's lone capacity on that layout. What
passes is ranked by the GPUs it could save, (size - 1) - sum_w D_w / q_w(g), and at most
`MAX_EVALUATIONS` groups are evaluated, best first, each workload joining at most
`MAX_PER_WORKLOAD` of them (supersets of a group that cannot be shared at any load are
skipped). The program is exact over the templates kept; the
bound is on which templates exist, and `GroupTable` says how many were considered,
evaluated and kept.

Capacity of a template. The physics (`models.colocation.group_template`) finds the
largest scale s* at which every member's p99 TTFT and TPOT (with the others'
interference at their loads s* D_v) and the memory hold, along the direction of the
members' peaks D_w; a[w,t] = s* D_w. The feasible loads are down-closed (latency and KV
rise with every member's load), so a group replica carries any loads l_w <= a[w,t]
member by member: a[w,t] is safe as a per-replica coefficient in the program's linear
capacity rows. The conservative side: s* is found by `SEARCH_STEPS` halvings keeping the
feasible end, and a group replica is credited as a lone replica (no pooling gain from
its neighbours).
"""

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from models.colocation import Member, SharedLayout, group_template
from models.efficiency import efficiency_for
from models.instance import Instance
from models.memory import weight_bytes_per_gpu
from models.precision import Precision
from models.replica import LatencyTargets, Limit, Role, TrafficMix
from solver.candidates import Candidate, CandidateTable

TAIL_REPLICAS = 1.0
"""A workload shares only when its peak is below this many lone replicas' capacity."""
MAX_GROUP_SIZE = 3
"""Most workloads in one group."""
MAX_EVALUATIONS = 60
"""Most groups the physics evaluates (each ~0.15 s measured); the best-ranked go first."""
MAX_PER_WORKLOAD = 8
"""Most evaluated groups any one workload joins, so that the evaluations spread over the
whole tail instead of every triple of its smallest members."""
SEARCH_STEPS = 10
"""Halvings of the load-scale bracket: s* within 0.1% below the true one."""
INTERFERENCE_FACTOR = 1.0
"""`models.colocation`'s k: 1 is pure serialisation of the engines' iterations (tests
raise it to make interference large)."""


@dataclass(frozen=True)
class Template:
    """One group template: its members on one layout and their capacity per replica."""

    members: tuple[str, ...]
    gpu: str
    precision: Precision
    kv_precision: Precision
    layout: SharedLayout
    capacity_requests_per_s: tuple[float, ...]
    """a[w,t] for each member, in `members` order."""
    load_scale: float
    limit: Limit
    limiting_member: str

    @property
    def key(self) -> str:
        """Name-safe identifier, e.g. `chat+code@h100-sxm.bf16.tp1pp1`."""
        return (
            f"{'+'.join(self.members)}@{self.gpu}.{self.precision}."
            f"tp{self.layout.tp}pp{self.layout.pp}"
        )

    @property
    def gpus(self) -> int:
        """GPUs per group replica."""
        return self.layout.gpus

    def capacity_of(self, workload: str) -> float:
        """a[w,t]: requests/s of `workload` one group replica carries."""
        return self.capacity_requests_per_s[self.members.index(workload)]


@dataclass(frozen=True)
class GroupTable:
    """The templates the program chooses among, and how they were found."""

    templates: tuple[Template, ...] = ()
    tail: tuple[str, ...] = ()
    """Workloads the tail rule lets share."""
    considered: int = 0
    """Groups that passed the memory and load pre-filters."""
    evaluated: int = 0
    """Of those, the ones the physics evaluated (at most MAX_EVALUATIONS)."""
    enumeration_s: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)

    def of(self, workload: str) -> tuple[Template, ...]:
        """The templates `workload` is a member of."""
        return tuple(t for t in self.templates if workload in t.members)

    def restricted(self, workloads: Sequence[str]) -> "GroupTable":
        """The templates whose members all lie in `workloads`."""
        keep = set(workloads)
        return GroupTable(
            tuple(t for t in self.templates if set(t.members) <= keep),
            tuple(w for w in self.tail if w in keep),
            self.considered,
            self.evaluated,
            self.enumeration_s,
            self.notes,
        )

    def components(self, workloads: Sequence[str]) -> list[tuple[str, ...]]:
        """Workloads coupled by some template, as connected groups (in `workloads`
        order); an uncoupled workload is a group of its own."""
        parent = {w: w for w in workloads}

        def root(w: str) -> str:
            while parent[w] != w:
                parent[w] = parent[parent[w]]
                w = parent[w]
            return w

        for t in self.templates:
            first = root(t.members[0])
            for other in t.members[1:]:
                parent[root(other)] = first
        grouped: dict[str, list[str]] = {}
        for w in workloads:
            grouped.setdefault(root(w), []).append(w)
        return [tuple(ws) for ws in grouped.values()]


@dataclass(frozen=True)
class _Option:
    """A tail workload on one GPU type: its lone single-GPU candidate of that type."""

    workload: str
    candidate: Candidate
    peak_requests_per_s: float

    @property
    def fraction(self) -> float:
        """D_w / q_w(g): the share of a lone replica the workload's peak takes."""
        return self.peak_requests_per_s / self.candidate.requests_per_s


def build_groups(
    instance: Instance, table: CandidateTable, interference_factor: float | None = None
) -> GroupTable:
    """The group templates of an instance (empty unless `policy.colocation`)."""
    if not instance.policy.colocation:
        return GroupTable()
    started = time.monotonic()
    factor = INTERFERENCE_FACTOR if interference_factor is None else interference_factor
    workloads = {w.name: w for w in instance.workloads}
    peaks = {
        w.name: max((level.peak_rps for level in w.demand.values()), default=0.0)
        for w in instance.workloads
    }
    lone = {
        w: [c for c in table.of(w) if c.role is Role.UNIFIED and c.gpus == 1] for w in workloads
    }
    tail = tuple(
        w
        for w in workloads
        if lone[w]
        and peaks[w] > 0
        and peaks[w] < TAIL_REPLICAS * max(c.requests_per_s for c in lone[w])
    )
    ranked: list[tuple[float, tuple[_Option, ...]]] = []
    for gpu in sorted({c.gpu for w in tail for c in lone[w]}):
        options = {w: [_Option(w, c, peaks[w]) for c in lone[w] if c.gpu == gpu] for w in tail}
        usable = [w for w in tail if options[w]]
        for size in range(2, MAX_GROUP_SIZE + 1):
            for names in itertools.combinations(usable, size):
                group = _common_layout([options[w] for w in names])
                if group is None or not _fits(instance, group):
                    continue
                load = math.fsum(o.fraction for o in group)
                if load <= 1.0:
                    ranked.append(((size - 1) - load, group))
    ranked.sort(key=lambda item: -item[0])
    templates: list[Template] = []
    dead: list[tuple[str, frozenset[str]]] = []
    evaluated = 0
    joined: dict[str, int] = dict.fromkeys(tail, 0)
    for _, group in ranked:
        if evaluated >= MAX_EVALUATIONS:
            break
        gpu = group[0].candidate.gpu
        names = frozenset(o.workload for o in group)
        if any(g == gpu and d <= names for g, d in dead):
            continue
        if any(joined[w] >= MAX_PER_WORKLOAD for w in names):
            continue
        evaluated += 1
        for w in names:
            joined[w] += 1
        template = _evaluate(instance, workloads, group, factor)
        if template is None:
            dead.append((gpu, names))
        else:
            templates.append(template)
    notes = (
        f"co-location: {len(tail)} tail workloads (peak below {TAIL_REPLICAS:g} lone "
        f"replica); {len(ranked)} groups passed the memory and load pre-filters, "
        f"{evaluated} evaluated (at most {MAX_EVALUATIONS}), {len(templates)} templates kept "
        f"in {time.monotonic() - started:.1f} s; the program is exact over the templates kept",
    )
    return GroupTable(
        tuple(templates), tail, len(ranked), evaluated, time.monotonic() - started, notes
    )


def _common_layout(options: Sequence[Sequence[_Option]]) -> tuple[_Option, ...] | None:
    """One single-GPU candidate per member at a (weight, KV) precision all share (the
    fewest bytes per weight), or None when they share none."""
    pairs = [
        {(o.candidate.precision, o.candidate.kv_precision): o for o in opts} for opts in options
    ]
    common = set(pairs[0]).intersection(*pairs[1:])
    if not common:
        return None
    best = min(common, key=lambda p: (p[0].bytes_per_element, p[1].bytes_per_element, p))
    return tuple(p[best] for p in pairs)


def _fits(instance: Instance, group: Sequence[_Option]) -> bool:
    """sum_w (weights_w + reserve) <= HBM: the cheap memory pre-filter."""
    config = group[0].candidate.config
    efficiency = efficiency_for(
        config.gpu, config.weight_precision, instance.efficiency, instance.engine
    )
    reserve = config.gpu.hbm_bytes * efficiency.memory_reserve_fraction
    weights = math.fsum(
        weight_bytes_per_gpu(o.candidate.config.llm, config.weight_precision, 1, 1) + reserve
        for o in group
    )
    return weights <= config.gpu.hbm_bytes


def _evaluate(instance: Instance, workloads: dict, group: Sequence[_Option], factor: float):
    """The template of `group` at its members' peaks, or None when it cannot be shared."""
    config = group[0].candidate.config
    layout = SharedLayout(config.gpu, config.weight_precision, config.kv_precision, 1, 1)
    efficiency = efficiency_for(
        config.gpu, config.weight_precision, instance.efficiency, instance.engine
    )
    members = [
        Member(
            o.workload,
            o.candidate.config.llm,
            TrafficMix.of(workloads[o.workload], instance.policy.prefix_affinity),
            LatencyTargets.of(workloads[o.workload].slo),
            o.peak_requests_per_s,
        )
        for o in group
    ]
    found = group_template(layout, members, efficiency, factor, bisection_steps=SEARCH_STEPS)
    if not found.feasible:
        return None
    return Template(
        members=found.members,
        gpu=config.gpu.name,
        precision=config.weight_precision,
        kv_precision=config.kv_precision,
        layout=layout,
        capacity_requests_per_s=found.capacity_requests_per_s,
        load_scale=found.load_scale,
        limit=found.limit,
        limiting_member=found.limiting_member,
    )
