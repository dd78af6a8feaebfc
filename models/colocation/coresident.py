"""Co-resident engines: several models' weights on the same replica GPUs, HBM split between
their weights and KV caches, the GPUs' time shared between their iterations.

The parts: models/colocation/shared_layout.py (the layout and the members),
models/colocation/group_memory.py (where each GPU's memory goes), models/colocation/interference.py
(the engines, their interference and the coupled batches), models/colocation/load_edge.py (what
evaluations at other loads found); this module evaluates a group at its loads and finds its
capacity. LoRA, swapping, same-model merges and the capacity unit live in their
own modules.

A group is a set of members (a workload: its model, token mix, SLO and planned requests/s
on one group replica) on one shared layout (GPU, weight and KV precision, TP x PP, the same
for every member). Each member runs its own engine (process) with its own continuous-
batching loop; `models.serving.capacity`'s single-replica model describes each engine alone.

Memory, per GPU (`models.colocation.group_memory`): every member's weights, activation workspace,
runtime reserve and KV room for its p99 concurrency must fit in HBM together.

Time: interleaved iterations. The GPU runs one engine's iteration at a time (time-sliced
contexts, no kernel overlap; that is the conservative side: overlapping a memory-bound
decode with another engine's kernels could only shorten the wait, and two bandwidth-bound
steps gain little from overlap anyway). Engines with work take turns, one iteration each,
so every iteration of engine i waits for one iteration of each other engine that has
sequences resident. Engine j has work with probability a_j = 1 - exp(-B_j) (its resident
sequences are Poisson with mean B_j), and its iteration takes t_j(B_j), its own step
alone (prefill riding along included). The interference on engine i per iteration:
    mean  X_i   = k x sum_{j != i} a_j t_j(B_j)
    p99   X99_i = k x the 0.99-quantile of sum_{j != i} I_j t_j(B99_j),  I_j ~ Bernoulli(a_j)
(exact over the 2^(n-1) activity states for up to 12 others, else every other engine
active: an upper bound), k = `interference_factor` (1: pure serialisation; > 1 models
cache thrashing and context-switch costs; tests use it to make interference large).
Each engine's iterations stretch by X: the batch follows Little's law with the mean
    lambda_i = B_i / (O_i (t_i(B_i) + X_i))        (a fixed point coupled through X)
solved by iterating B from 0 upwards (X only grows with the batches, so the iteration
rises monotonically to the least fixed point, or past an engine's batch cap: unstable).
The latencies take the p99 interference on every iteration:
    TPOT99_i = t_i(B99_i) + X99_i
    TTFT99_i = `models.serving.capacity`'s p99 TTFT with every iteration (own prefill chunks,
               lane rate, residual) lengthened by X99_i
The engine's fixed overhead per iteration (scheduling, sampling) is counted as GPU time
that blocks the others, the conservative side again.

Group capacity: along the ray of the planned loads, the largest scale s such that every
member's SLO and the memory hold at loads s x lambda_i. Latencies and KV rise with every
member's load, so the feasible set is down-closed and a replica can carry any loads at or
below s* lambda_i member by member: the program may read `GroupTemplate`'s
`capacity_requests_per_s` as per-replica capacities of a linear pool constraint.
"""

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from models.colocation.group_memory import GroupMemory, group_memory
from models.colocation.interference import (
    BISECTION_STEPS,
    GroupEngine,
    active_fraction,
    coupled_batches,
    group_engine,
    mean_interference_s,
    p99_interference_s,
)
from models.colocation.load_edge import EdgeView, LoadEdge
from models.colocation.shared_layout import Member, SharedLayout
from models.physics.efficiency import Efficiency
from models.physics.memory import layout_problem, weight_bytes_per_gpu
from models.serving.batch_model import batch_p99
from models.serving.edge_search import bisect_edge
from models.serving.replica import LatencyTargets, Limit

MAX_LOAD_SCALE = 2.0**20
"""The group-capacity search stops doubling the planned loads here."""


@dataclass(frozen=True)
class MemberOnGroup:
    """One member's operating point on a shared replica, beside its numbers alone."""

    name: str
    model: str
    requests_per_s: float
    batch: float
    """Mean sequences resident B_i."""
    active_fraction: float
    """a_i = 1 - exp(-B_i): the chance the engine has work (its duty in the rotation)."""
    step_alone_s: float
    """t_i(B_i): its own iteration without interference."""
    interference_s: float
    """X_i: the mean wait per iteration for the other engines."""
    interference_p99_s: float
    """X99_i: the p99 wait per iteration for the other engines."""
    tpot_p99_s: float
    ttft_p99_s: float
    tpot_p99_alone_s: float
    """p99 TPOT of the same load on a replica of its own (same layout)."""
    ttft_p99_alone_s: float
    targets: LatencyTargets
    problems: tuple[str, ...]
    """Each target it misses, with the numbers; empty when it meets its SLO."""

    @property
    def meets_slo(self) -> bool:
        """Whether both p99 targets hold on the shared replica."""
        return not self.problems


@dataclass(frozen=True)
class GroupEvaluation:
    """A group at one set of loads: memory, every member's p99s, and what breaks."""

    layout: SharedLayout
    members: tuple[MemberOnGroup, ...]
    memory: GroupMemory
    stable: bool
    """Whether every engine keeps up (the coupled fixed point exists below its caps)."""
    problems: tuple[str, ...]
    """Every problem: layout, stability, memory, each member's missed targets."""
    limit: Limit | None
    """The bound that breaks (None when the group meets everything)."""
    limiting_member: str | None

    @property
    def meets_slo(self) -> bool:
        """Whether the group fits, keeps up and meets every member's SLO."""
        return not self.problems


@dataclass(frozen=True)
class GroupTemplate:
    """A group of workloads on one layout and its capacity along the planned loads: one
    row of the table the program chooses from.

    One replica of the template carries `capacity_requests_per_s[i]` of member i, all at
    once (and any loads below them). Zero capacity when the group cannot be shared at any
    load; `reason` says why.
    """

    members: tuple[str, ...]
    """Workload names, in the order of every per-member tuple."""
    models: tuple[str, ...]
    layout: SharedLayout
    gpus: int
    """GPUs per group replica."""
    planned_requests_per_s: tuple[float, ...]
    """The planned loads that set the direction of the capacity ray."""
    load_scale: float
    """s*: the largest multiple of the planned loads one replica carries within every SLO."""
    capacity_requests_per_s: tuple[float, ...]
    """s* x planned load, per member: each member's capacity share of one replica."""
    limit: Limit
    """What stops s* from growing: kv_memory, compute (an engine cannot keep up),
    tpot or ttft_queueing (a member's p99)."""
    limiting_member: str
    reason: str
    memory: GroupMemory
    """The memory breakdown at s*."""
    at_capacity: tuple[MemberOnGroup, ...]
    """Every member's operating point at s*."""

    @property
    def feasible(self) -> bool:
        """Whether one replica can carry some positive load of every member."""
        return self.load_scale > 0


# --- evaluation -----------------------------------------------------------------------


def _solo_p99s(engine: GroupEngine) -> tuple[float, float]:
    """(TPOT99, TTFT99) of the member on a replica of its own at the same load."""
    rate = engine.member.requests_per_s
    batch = engine.batch_at(rate, 0.0)
    if math.isinf(batch):
        return math.inf, math.inf
    model = engine.model
    tpot = model.step_s(batch_p99(batch))
    return tpot, model.ttft_p99_s(batch, model.step_s(batch), rate)


def evaluate_group(
    layout: SharedLayout,
    members: Sequence[Member],
    efficiency: Efficiency,
    interference_factor: float = 1.0,
    pool_replicas: float = 1,
) -> GroupEvaluation:
    """Every member's p99 TTFT and TPOT on one shared replica at the planned loads, the
    memory per GPU, and every problem (see the module docstring for the model).

    Never raises for a group that does not work: `problems` lists what breaks, `limit`
    and `limiting_member` name the worst breach.

    Raises:
        ValueError: no members, duplicate names, a negative load or interference factor.
    """
    check_members(members, interference_factor)
    problems = [
        f"{m.name}: {p}"
        for m in members
        if (
            p := layout_problem(
                layout.gpu,
                m.llm,
                layout.weight_precision,
                layout.kv_precision,
                layout.tp,
                layout.pp,
            )
        )
    ]
    if problems:
        empty = GroupMemory(layout.gpu.hbm_bytes, (), "")
        return GroupEvaluation(
            layout, (), empty, False, tuple(problems), Limit.KV_MEMORY, members[0].name
        )
    engines = [group_engine(layout, m, efficiency, pool_replicas) for m in members]
    batches = coupled_batches(engines, interference_factor)
    if batches is None:
        return _unstable(layout, engines, efficiency, interference_factor)
    memory = group_memory(layout, members, batches, efficiency)
    mean_x = mean_interference_s(engines, batches, interference_factor)
    p99_x = p99_interference_s(engines, batches, interference_factor)
    on_group = [
        _member_on_group(e, b, x, x99)
        for e, b, x, x99 in zip(engines, batches, mean_x, p99_x, strict=True)
    ]
    problems = [f"{m.name}: {p}" for m in on_group for p in m.problems]
    limit, limiting = _worst_breach(on_group)
    if not memory.fits:
        problems.insert(0, memory.message)
        limit, limiting = Limit.KV_MEMORY, max(memory.members, key=lambda p: p.kv_bytes).name
    return GroupEvaluation(layout, tuple(on_group), memory, True, tuple(problems), limit, limiting)


def _member_on_group(
    engine: GroupEngine, batch: float, extra_s: float, extra_p99_s: float
) -> MemberOnGroup:
    member = engine.member
    rate = member.requests_per_s
    model = engine.with_interference(extra_p99_s)
    tpot = model.step_s(batch_p99(batch))
    ttft = model.ttft_p99_s(batch, model.step_s(batch), rate)
    tpot_alone, ttft_alone = _solo_p99s(engine)
    targets = member.targets
    problems = []
    if targets.tpot_p99_s is not None and tpot > targets.tpot_p99_s:
        problems.append(
            f"p99 TPOT {tpot * 1e3:.1f} ms > {targets.tpot_p99_s * 1e3:g} ms target on the shared "
            f"replica ({tpot_alone * 1e3:.1f} ms alone; the others add {extra_p99_s * 1e3:.1f} ms "
            f"per iteration at p99)"
        )
    if targets.ttft_p99_s is not None and ttft > targets.ttft_p99_s:
        problems.append(
            f"p99 TTFT {ttft * 1e3:.0f} ms > {targets.ttft_p99_s * 1e3:g} ms target on the shared "
            f"replica ({ttft_alone * 1e3:.0f} ms alone) at {rate:,.3g} requests/s"
        )
    return MemberOnGroup(
        name=member.name,
        model=member.llm.name,
        requests_per_s=rate,
        batch=batch,
        active_fraction=active_fraction(batch),
        step_alone_s=engine.model.step_s(batch),
        interference_s=extra_s,
        interference_p99_s=extra_p99_s,
        tpot_p99_s=tpot,
        ttft_p99_s=ttft,
        tpot_p99_alone_s=tpot_alone,
        ttft_p99_alone_s=ttft_alone,
        targets=targets,
        problems=tuple(problems),
    )


def _worst_breach(members: Sequence[MemberOnGroup]) -> tuple[Limit | None, str | None]:
    """The member and target with the largest relative excess over its target."""
    worst: tuple[float, Limit | None, str | None] = (1.0, None, None)
    for m in members:
        for value, target, limit in (
            (m.tpot_p99_s, m.targets.tpot_p99_s, Limit.TPOT),
            (m.ttft_p99_s, m.targets.ttft_p99_s, Limit.TTFT_QUEUEING),
        ):
            if target is not None and value / target > worst[0]:
                worst = (value / target, limit, m.name)
    return worst[1], worst[2]


def _unstable(
    layout: SharedLayout, engines: Sequence[GroupEngine], efficiency: Efficiency, factor: float
) -> GroupEvaluation:
    """A group in which some engine cannot keep up with its load: name the first one that
    cannot keep up even alone, else the group as a whole."""
    for engine in engines:
        if math.isinf(engine.batch_at(engine.member.requests_per_s, 0.0)):
            m = engine.member
            problem = (
                f"{m.name}: {m.requests_per_s:,.3g} requests/s exceed what its engine can run "
                f"even alone on {layout.label} (token budget or batch cap)"
            )
            break
    else:
        names = ", ".join(e.member.name for e in engines)
        problem = (
            f"engines [{names}] cannot keep up together on {layout.label}: the iterations of "
            f"all of them (interference factor {factor:g}) exceed the GPU's time"
        )
        m = max((e.member for e in engines), key=lambda member: member.requests_per_s)
    memory = GroupMemory(layout.gpu.hbm_bytes, (), "")
    return GroupEvaluation(layout, (), memory, False, (problem,), Limit.COMPUTE, m.name)


def check_members(members: Sequence[Member], interference_factor: float) -> None:
    """Refuse a group no search may start from: no members, names twice, a load not finite
    and >= 0, a negative interference factor (`group_capacity`'s and
    solver.colocation.capacity_search's)."""
    if not members:
        raise ValueError("a group needs at least one member")
    names = [m.name for m in members]
    if len(set(names)) != len(names):
        raise ValueError(f"member names must be distinct, got {names}")
    for m in members:
        if m.requests_per_s < 0 or not math.isfinite(m.requests_per_s):
            raise ValueError(f"{m.name}: requests_per_s must be finite and >= 0")
    if interference_factor < 0:
        raise ValueError(f"interference_factor must be >= 0, got {interference_factor}")


# --- the group's capacity -------------------------------------------------------------


def group_template(
    layout: SharedLayout,
    members: Sequence[Member],
    efficiency: Efficiency,
    interference_factor: float = 1.0,
    pool_replicas: float = 1,
    bisection_steps: int = BISECTION_STEPS,
) -> GroupTemplate:
    """The group's capacity along its planned loads: the largest s with every member's SLO
    and the memory holding at loads s x lambda_i (bisection; feasibility is monotone in s).

    Members with zero planned load ride along at zero (their weights and one request's KV
    still count). `bisection_steps` halvings of the bracket [s, 2s] give s* within a
    relative 2^-steps below the true one (the feasible end is kept: the conservative side).
    """
    scale, beyond, at = _edge_search(
        layout, members, efficiency, interference_factor, pool_replicas, bisection_steps, None
    )
    return _template(layout, members, scale, at(scale), at(beyond))


@dataclass(frozen=True)
class GroupCapacity:
    """`group_template`'s capacity and limit alone (no record of the group at s*)."""

    members: tuple[str, ...]
    load_scale: float
    capacity_requests_per_s: tuple[float, ...]
    limit: Limit
    limiting_member: str

    @property
    def feasible(self) -> bool:
        """Whether one replica can carry some positive load of every member."""
        return self.load_scale > 0


def group_capacity(
    layout: SharedLayout,
    members: Sequence[Member],
    efficiency: Efficiency,
    interference_factor: float = 1.0,
    bisection_steps: int = BISECTION_STEPS,
    known: LoadEdge | EdgeView | None = None,
) -> GroupCapacity:
    """`group_template`'s s*, capacities and limit (the same search, the same numbers),
    without the evaluation at s* that only its record reads. `known`, what evaluations
    of the same group (or of one alike but for its members' names) at other loads found
    (`models.colocation.load_edge`), answers the search's points it decides and learns
    the ones evaluated: the search visits the same points and ends at the same s*, the
    physics run only where nothing known decides."""
    scale, beyond, at = _edge_search(
        layout, members, efficiency, interference_factor, 1, bisection_steps, known
    )
    return capacity_of(members, scale, at(beyond))


def capacity_of(members: Sequence[Member], scale: float, beyond: GroupEvaluation) -> GroupCapacity:
    """`group_capacity`'s record: s*, the capacities along the ray, and what stops s* and
    whose (`limit_of` the evaluation `beyond` it); solver.colocation.capacity_search's too."""
    limit, limiting = limit_of(beyond, members)
    return GroupCapacity(
        tuple(m.name for m in members),
        scale,
        tuple(scale * m.requests_per_s for m in members),
        limit,
        limiting,
    )


def _edge_search(
    layout: SharedLayout,
    members: Sequence[Member],
    efficiency: Efficiency,
    interference_factor: float,
    pool_replicas: float,
    bisection_steps: int,
    known: LoadEdge | EdgeView | None,
) -> tuple[float, float, Callable[[float], GroupEvaluation]]:
    """(s*, the scale of the evaluation that bounds it, the group's evaluation by scale):
    s* = 0 bounded by itself where no load can be shared, MAX_LOAD_SCALE by itself where
    nothing bounds it, else the bracket's two ends. Each scale is evaluated once; with
    `known`, only where it does not decide."""
    check_members(members, interference_factor)
    evaluated: dict[float, GroupEvaluation] = {}

    def at(scale: float) -> GroupEvaluation:
        if scale not in evaluated:
            found = evaluate_group(
                layout,
                [m.scaled(scale) for m in members],
                efficiency,
                interference_factor,
                pool_replicas,
            )
            if known is not None:
                known.record(scaled_loads(members, scale), found.meets_slo)
            evaluated[scale] = found
        return evaluated[scale]

    def meets(scale: float) -> bool:
        answer = None if known is None else known.known(scaled_loads(members, scale))
        return at(scale).meets_slo if answer is None else answer

    if not meets(0.0):
        return 0.0, 0.0, at
    if all(m.requests_per_s == 0 for m in members):
        raise ValueError("a group template needs a positive planned load on some member")
    low, high = 0.0, 1.0
    while meets(high):
        if high >= MAX_LOAD_SCALE:
            return high, high, at
        low, high = high, high * 2
    low, high = bisect_edge(meets, low, high, bisection_steps)
    return low, high, at


def scaled_loads(members: Sequence[Member], scale: float) -> tuple[float, ...]:
    """The members' loads at `scale`, as `Member.scaled` has them."""
    return tuple(m.scaled(scale).requests_per_s for m in members)


def limit_of(beyond: GroupEvaluation, members: Sequence[Member]) -> tuple[Limit, str]:
    """What stops s* and whose: the first breach past it (compute and the first member
    where none is named)."""
    return beyond.limit or Limit.COMPUTE, beyond.limiting_member or members[0].name


def _template(
    layout: SharedLayout,
    members: Sequence[Member],
    scale: float,
    inside: GroupEvaluation,
    beyond: GroupEvaluation,
) -> GroupTemplate:
    """The template record: capacity at `inside`, the limit from the first breach `beyond`."""
    limit, limiting = limit_of(beyond, members)
    reason = beyond.problems[0] if beyond.problems else "no bound reached"
    if scale == 0:
        reason = "cannot share at any load: " + "; ".join(beyond.problems)
    return GroupTemplate(
        members=tuple(m.name for m in members),
        models=tuple(m.llm.name for m in members),
        layout=layout,
        gpus=layout.gpus,
        planned_requests_per_s=tuple(m.requests_per_s for m in members),
        load_scale=scale,
        capacity_requests_per_s=tuple(scale * m.requests_per_s for m in members),
        limit=limit,
        limiting_member=limiting,
        reason=reason,
        memory=inside.memory,
        at_capacity=inside.members,
    )


@dataclass(frozen=True)
class SharingVerdict:
    """A shared group against dedicated replicas for the same planned loads."""

    shared_replicas: int
    shared_gpus: int
    dedicated_replicas: dict[str, int]
    dedicated_gpus: int
    shares: bool
    """Whether the shared group needs fewer GPUs (and can carry the loads at all)."""


def sharing_verdict(
    template: GroupTemplate,
    dedicated_requests_per_s: dict[str, float],
    dedicated_gpus_per_replica: dict[str, int],
    spare_replicas: int = 0,
) -> SharingVerdict:
    """GPUs to carry the template's planned loads shared (ceil(1 / s*) replicas) against
    dedicated pools (ceil(lambda_i / capacity_i) replicas each), each pool with
    `spare_replicas` more (N+1: 1)."""
    dedicated = {
        name: math.ceil(rate / dedicated_requests_per_s[name] - 1e-9) + spare_replicas
        for name, rate in zip(template.members, template.planned_requests_per_s, strict=True)
    }
    dedicated_gpus = sum(n * dedicated_gpus_per_replica[name] for name, n in dedicated.items())
    if not template.feasible:
        return SharingVerdict(0, 0, dedicated, dedicated_gpus, False)
    shared = math.ceil(1 / template.load_scale - 1e-9) + spare_replicas
    shared_gpus = shared * template.gpus
    return SharingVerdict(
        shared, shared_gpus, dedicated, dedicated_gpus, shared_gpus < dedicated_gpus
    )


def candidate_groups(
    layout: SharedLayout,
    members: Sequence[Member],
    efficiency: Efficiency,
    max_size: int = 3,
    interference_factor: float = 1.0,
) -> list[GroupTemplate]:
    """Every feasible group template of 2..`max_size` members on `layout`: the bounded
    set of templates the program chooses among (dedicated pools are its size-one
    templates). Groups whose weights alone do not fit are skipped before any latency is
    computed, and so is every superset of a group that cannot be shared at any load."""
    hbm = layout.gpu.hbm_bytes
    reserve = hbm * efficiency.memory_reserve_fraction
    fixed = {
        m.name: weight_bytes_per_gpu(m.llm, layout.weight_precision, layout.tp, layout.pp) + reserve
        for m in members
        if layout_problem(
            layout.gpu, m.llm, layout.weight_precision, layout.kv_precision, layout.tp, layout.pp
        )
        is None
    }
    usable = [m for m in members if m.name in fixed]
    dead: list[frozenset[str]] = []
    templates = []
    for size in range(2, max_size + 1):
        for group in itertools.combinations(usable, size):
            names = frozenset(m.name for m in group)
            if sum(fixed[name] for name in names) > hbm or any(d <= names for d in dead):
                continue
            template = group_template(layout, group, efficiency, interference_factor)
            if template.feasible:
                templates.append(template)
            else:
                dead.append(names)
    return templates
