"""Group templates: the bounded set of shared replica groups the program may choose from.

With `policy.colocation: true`, workloads of the long tail may share replica groups
(co-resident engines, `models.colocation.coresident`): several models' weights resident on one GPU,
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

with D_w = max_o D[w,o] and q_w(g) the member's lone capacity on that layout. Which of
those the physics evaluates is decided by column generation (`solver.colocation.group_search`):
each group is priced against the LP of the tail's packing at peak, and only groups that
would lower it are evaluated, the most negative first, until none is left (or
`MAX_EVALUATIONS`, a safety budget); a group alike but for its members' names to one
checked already (`_kind`, `_edge`) is answered by it without the physics. The search
settles groups by this build's own checks (a period's search takes the path of a build of
its own); what earlier builds found answers the physics of a check alone. Every group
the packing uses is a template; the program is exact over the templates kept, and the
search reports the packing's LP bound and its gap.

Capacity of a template. The physics (`models.colocation.coresident.group_template`) finds the
largest scale s* at which every member's p99 TTFT and TPOT (with the others'
interference at their loads s* D_v) and the memory hold, along the direction of the
members' peaks D_w; a[w,t] = s* D_w. The feasible loads are down-closed (latency and KV
rise with every member's load), so a group replica carries any loads l_w <= a[w,t]
member by member: a[w,t] is safe as a per-replica coefficient in the program's linear
capacity rows. The conservative side: s* is found by `SEARCH_STEPS` halvings keeping the
feasible end, and a group replica is credited as a lone replica (no pooling gain from
its neighbours). The s* of those halvings is found with fewer runs of the physics
(`solver.colocation.capacity_search`: the same grid point, probed where the evaluations'
distance from the bound predicts the edge).
"""

import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from models.physics.efficiency import efficiency_for
from models.physics.memory import weight_bytes_per_gpu
from models.physics.precision import Precision
from models.schema.instance import Instance
from models.schema.quantities import counted
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.replica import Limit, Role
from solver.candidates.table import Candidate, CandidateTable
from solver.colocation.group_search import Packing, SearchResult, generate
from solver.decompose.linked import linked_groups
from solver.settings import SolveSettings

if TYPE_CHECKING:  # the co-location physics loads when a group is evaluated (issue 19)
    from models.colocation.coresident import GroupEvaluation
    from models.colocation.load_edge import EdgeView, LoadEdge
    from models.colocation.shared_layout import SharedLayout

Edges = dict[tuple, "LoadEdge"]
"""What is known of each group's feasible loads, by (its members' kinds and their counts,
GPU, weight and KV precision): `models.colocation.load_edge`; every group alike but for its
members' names shares one (`_edge`)."""

TAIL_REPLICAS = 1.0
"""A workload shares only when its peak is below this many lone replicas' capacity."""
MAX_GROUP_SIZE = 3
"""Most workloads in one group."""
MAX_EVALUATIONS = 400
"""Most groups column generation checks at their peaks with the physics (one evaluation
each, ~0.05-0.15 s measured; the groups earlier checks answer are not counted); a safety
budget, not a cap on the templates."""
PER_ROUND = 16
"""Groups evaluated per pricing round (the most negative reduced costs first)."""
SEARCH_STEPS = 10
"""Halvings of the load-scale bracket: s* within 0.1% below the true one."""
INTERFERENCE_FACTOR = 1.0
"""`models.colocation.coresident`'s k: 1 is pure serialisation of the engines' iterations (tests
raise it to make interference large)."""
TEMPLATES_STAGE = "co-location templates"
"""The stage a run stops in when its deadline passes while templates are built."""


def check_deadline(settings: SolveSettings | None) -> None:
    """Stop the template build once the run's deadline has passed: called before each
    group a builder considers (n tail workloads give C(n,2) + C(n,3) of them, 1.3 million
    at n = 200), so a run ends within its limit plus one group's work.

    Raises:
        TimeLimitReached: the deadline has passed, naming TEMPLATES_STAGE.
    """
    if settings is not None and settings.deadline is not None:
        settings.deadline.check(TEMPLATES_STAGE)  # no progress line: once per group


@dataclass(frozen=True)
class Template:
    """One group template: its members on one layout and their capacity per replica."""

    members: tuple[str, ...]
    gpu: str
    precision: Precision
    kv_precision: Precision
    layout: "SharedLayout"
    capacity_requests_per_s: tuple[float, ...]
    """a[w,t] for each member, in `members` order."""
    load_scale: float
    limit: Limit
    limiting_member: str
    engine: bool = False
    """One engine serves every member (multi-LoRA or a same-model merge,
    `solver.colocation.engine_templates`); False: co-resident engines, one per member."""
    swapped: bool = False
    """One weight slot, the members paged in from host memory on demand
    (`models.colocation.swap_group`, `solver.colocation.swap_templates`)."""

    @property
    def key(self) -> str:
        """Name-safe identifier, e.g. `chat+code@h100-sxm.bf16.tp1pp1` (`.engine` added
        for one shared engine, `.swap` for a swapped group)."""
        return (
            f"{'+'.join(self.members)}@{self.gpu}.{self.precision}."
            f"tp{self.layout.tp}pp{self.layout.pp}"
            + (".engine" if self.engine else "")
            + (".swap" if self.swapped else "")
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
    """Of those, the ones column generation checked at their peaks (one by one, or answered
    by alike groups checked before: `search.called` says how many one by one)."""
    enumeration_s: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    search: SearchResult | None = None
    """What column generation did (rounds, the packing's LP bound and integer cost)."""

    def of(self, workload: str) -> tuple[Template, ...]:
        """The templates `workload` is a member of."""
        return tuple(t for t in self.templates if workload in t.members)

    def extended(self, templates: Sequence[Template]) -> "GroupTable":
        """The table with more templates (one-engine templates,
        `solver.colocation.engine_templates`)."""
        if not templates:
            return self
        return replace(self, templates=(*self.templates, *templates))

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
            self.search,
        )

    def components(self, workloads: Sequence[str]) -> list[tuple[str, ...]]:
        """Workloads coupled by some template, as connected groups (in `workloads`
        order); an uncoupled workload is a group of its own."""
        links = (t.members for t in self.templates)
        return [tuple(group) for group in linked_groups(workloads, links)]


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
    instance: Instance,
    table: CandidateTable,
    interference_factor: float | None = None,
    settings: SolveSettings | None = None,
    edges: "Edges | None" = None,
) -> GroupTable:
    """The group templates of an instance (empty unless `policy.colocation`), generated
    by pricing the pre-filtered groups against the tail's packing master
    (`solver.colocation.group_search`); `settings`' deadline stops the search early.
    `edges`, what evaluations of the same groups at other loads found (instances that
    differ in demand alone, `solver.colocation.templates.TemplateMemo`), answers the
    physics where it can and learns from this build (the templates are the same)."""
    if not instance.policy.colocation:
        return GroupTable()
    edges = {} if edges is None else edges
    started = time.monotonic()
    factor = INTERFERENCE_FACTOR if interference_factor is None else interference_factor
    peaks = dict(tail_peaks(instance, table))
    tail = tuple(peaks)
    lone = {w: _lone(table, w) for w in tail}
    gpus = sorted({c.gpu for w in tail for c in lone[w]})
    month = {g: _gpu_month(instance, g) for g in gpus}
    groups: dict[Packing, tuple[_Option, ...]] = {}
    singletons = [
        Packing(frozenset({w}), g, month[g])
        for w in tail
        for g in gpus
        if any(c.gpu == g for c in lone[w]) and math.isfinite(month[g])
    ]
    for gpu in gpus:
        options = {w: [_Option(w, c, peaks[w]) for c in lone[w] if c.gpu == gpu] for w in tail}
        usable = [w for w in tail if options[w]]
        needs: dict[tuple[str, Precision], float] = {}
        for size in range(2, MAX_GROUP_SIZE + 1):
            for names in itertools.combinations(usable, size):
                check_deadline(settings)
                group = _common_layout([options[w] for w in names])
                if group is None or not _fits(instance, group, needs):
                    continue
                if math.fsum(o.fraction for o in group) <= 1.0 and math.isfinite(month[gpu]):
                    groups[Packing(frozenset(names), gpu, month[gpu])] = group

    kinds = {w: _kind(instance, lone[w][0]) for w in tail}
    checked: Edges = {}  # this build's checks alone: the search's path is its own
    at_peaks: dict[tuple[str, ...], GroupEvaluation] = {}  # the physics' runs at the peaks
    views: dict[Packing, EdgeView] = {}

    def checks(packing: Packing) -> "EdgeView":
        if packing not in views:
            views[packing] = _edge(kinds, checked, groups[packing])
        return views[packing]

    def evaluate(packing: Packing) -> float | None:
        # one check at the peaks (s* >= 1 or not): the bisection only for the support
        group = groups[packing]
        meets = _meets_at_peak(instance, group, factor, edges, kinds, at_peaks)
        checks(packing).record(_peaks(group), meets)
        return 1.0 if meets else None

    def known(packing: Packing) -> bool | None:
        return checks(packing).known(_peaks(groups[packing]))

    def time_left_s() -> float | None:
        if settings is None or settings.deadline is None:
            return None
        return settings.deadline.remaining_s(0.0)

    search = generate(
        tail, singletons, list(groups), evaluate, MAX_EVALUATIONS, PER_ROUND, time_left_s, known
    )
    templates: list[Template] = []
    for packing in search.support:
        check_deadline(settings)
        template = _evaluate(instance, groups[packing], factor, edges, kinds, at_peaks)
        if template is not None:
            templates.append(template)
    kept = tuple(templates)
    elapsed = time.monotonic() - started
    notes = (
        f"co-location: {counted(len(tail), 'tail workload')} (peak below {TAIL_REPLICAS:g} lone "
        f"replica); {counted(len(groups), 'group')} passed the memory and load pre-filters; "
        "column "
        f"generation checked {search.evaluated} in {counted(search.rounds, 'round')} "
        f"({'converged' if search.converged else 'stopped early'}; {search.called} one by "
        "one, the others settled at once by what alike groups' checks found), "
        f"{counted(len(kept), 'template')} "
        f"(the packings it uses) in {elapsed:.1f} s; the program is exact over the templates "
        "kept, a heuristic over all groups, with the LP bound of the tail's packing",
    )
    return GroupTable(kept, tail, len(groups), search.evaluated, elapsed, notes, search)


def tail_peaks(instance: Instance, table: CandidateTable) -> tuple[tuple[str, float], ...]:
    """(workload, peak requests/s) of every workload the tail rule lets share, in the
    instance's order: all the demand the co-resident and swapped templates read."""
    found = []
    for w in instance.workloads:
        peak = max((level.peak_rps for level in w.demand.values()), default=0.0)
        lone = _lone(table, w.name)
        if lone and 0 < peak < TAIL_REPLICAS * max(c.requests_per_s for c in lone):
            found.append((w.name, peak))
    return tuple(found)


def _lone(table: CandidateTable, workload: str) -> list[Candidate]:
    """The workload's unified single-GPU candidates."""
    return [c for c in table.of(workload) if c.role is Role.UNIFIED and c.gpus == 1]


def _gpu_month(instance: Instance, gpu: str) -> float:
    """$/month of one GPU of type `gpu` in the cheapest region offering it (inf: none)."""
    prices = [instance.price_per_gpu_hour(r.name, gpu) for r in instance.regions if gpu in r.supply]
    return min(prices, default=math.inf) * instance.policy.hours_per_month


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


def _fits(
    instance: Instance, group: Sequence[_Option], needs: dict[tuple[str, Precision], float]
) -> bool:
    """sum_w (weights_w + reserve) <= HBM: the cheap memory pre-filter. `needs`: each
    member's weights + reserve on the group's GPU type by (workload, weight precision),
    kept across the groups of one GPU type (C(n, 2) + C(n, 3) groups, n workloads)."""
    config = group[0].candidate.config
    precision = config.weight_precision
    for o in group:
        if (o.workload, precision) not in needs:
            efficiency = efficiency_for(config.gpu, precision, instance.efficiency, instance.engine)
            reserve = config.gpu.hbm_bytes * efficiency.memory_reserve_fraction
            weights = weight_bytes_per_gpu(o.candidate.config.llm, precision, 1, 1)
            needs[(o.workload, precision)] = weights + reserve
    return math.fsum(needs[(o.workload, precision)] for o in group) <= config.gpu.hbm_bytes


def _physics(instance: Instance, group: Sequence[_Option]):
    """(layout, members at their peaks, efficiency) of `group`."""
    from models.colocation.shared_layout import Member, SharedLayout

    config = group[0].candidate.config
    layout = SharedLayout(config.gpu, config.weight_precision, config.kv_precision, 1, 1)
    efficiency = efficiency_for(
        config.gpu, config.weight_precision, instance.efficiency, instance.engine
    )
    members = [
        Member(
            o.workload,
            o.candidate.config.llm,
            traffic_mix(instance.workload(o.workload), instance.policy.prefix_affinity),
            latency_targets(instance.workload(o.workload).slo),
            o.peak_requests_per_s,
        )
        for o in group
    ]
    return layout, members, efficiency


def _kind(instance: Instance, candidate: Candidate) -> str:
    """What the physics reads of a workload as a member beside its load, written out: its
    model's architecture (not its names), token mix and SLO. Members of one kind are
    interchangeable (a model's spec holds a mapping: its text, not the spec, is hashed)."""
    workload = instance.workload(candidate.workload)
    llm = candidate.config.llm.model_copy(update={"name": "", "display_name": ""})
    mix = traffic_mix(workload, instance.policy.prefix_affinity)
    return repr((llm, mix, latency_targets(workload.slo)))


def _edge(kinds: dict[str, str], edges: "Edges", group: Sequence[_Option]) -> "EdgeView":
    """What is known of `group`'s feasible loads, kept in `edges` under its layout and its
    members' kinds (`kinds`, by workload: `_kind`): shared by every group alike but for its
    members' names (`models.colocation.load_edge.EdgeView`)."""
    from models.colocation.load_edge import EdgeView, LoadEdge

    config = group[0].candidate.config
    of = [kinds[o.workload] for o in group]
    order = sorted(set(of))
    classes = tuple(tuple(i for i, k in enumerate(of) if k == kind) for kind in order)
    key = (
        tuple((kind, len(part)) for kind, part in zip(order, classes, strict=True)),
        config.gpu.name,
        config.weight_precision,
        config.kv_precision,
    )
    return EdgeView(edges.setdefault(key, LoadEdge()), classes)


def _peaks(group: Sequence[_Option]) -> tuple[float, ...]:
    """The members' peaks, in the group's order."""
    return tuple(o.peak_requests_per_s for o in group)


def _meets_at_peak(
    instance: Instance,
    group: Sequence[_Option],
    factor: float,
    edges: "Edges",
    kinds: dict[str, str],
    at_peaks: "dict[tuple[str, ...], GroupEvaluation] | None" = None,
) -> bool:
    """Whether one group replica carries every member's peak within its SLO (s* >= 1);
    where the physics ran, its evaluation is kept in `at_peaks` under the members'
    names (the template's capacity search starts from it: `_evaluate`)."""
    from models.colocation.coresident import evaluate_group

    edge = _edge(kinds, edges, group)
    loads = _peaks(group)
    known = edge.known(loads)
    if known is not None:
        return known
    layout, members, efficiency = _physics(instance, group)
    found = evaluate_group(layout, members, efficiency, factor)
    edge.record(loads, found.meets_slo)
    if at_peaks is not None:
        at_peaks[tuple(o.workload for o in group)] = found
    return found.meets_slo


def _evaluate(
    instance: Instance,
    group: Sequence[_Option],
    factor: float,
    edges: "Edges",
    kinds: dict[str, str],
    at_peaks: "dict[tuple[str, ...], GroupEvaluation] | None" = None,
):
    """The template of `group` at its members' peaks, or None when it cannot be shared:
    `models.colocation.coresident.group_capacity`'s s* and limit, found with fewer runs of
    the physics (`solver.colocation.capacity_search`), from the evaluation at the peaks
    where column generation ran one (`at_peaks`)."""
    from solver.colocation.capacity_search import guided_capacity

    layout, members, efficiency = _physics(instance, group)
    config = group[0].candidate.config
    peak = (at_peaks or {}).get(tuple(o.workload for o in group))
    found = guided_capacity(
        layout,
        members,
        efficiency,
        factor,
        SEARCH_STEPS,
        _edge(kinds, edges, group),
        {} if peak is None else {1.0: peak},
    )
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
