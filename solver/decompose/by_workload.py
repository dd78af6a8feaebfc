"""Solving the fleet program workload by workload, when the workloads do not compete.

Workloads share nothing but the GPUs of each region: `gpu_supply[r,g]` and
`purchase[r,g]` are the only rows that mention more than one workload. Drop the sharing
and the program falls apart into one small program per workload w, each seeing the
whole supply and the whole existing fleet:

    P_w:  minimise cost_w  subject to w's rows, gpu_supply and purchase of w alone

Each P_w is a relaxation of the joint program restricted to w, so

    LB = sum_w bound(P_w)  <=  optimum of the joint program

(with a shared existing fleet E, sum_w max(0, u_w - E) <= max(0, sum_w u_w - E)). The
union of the P_w solutions is a joint solution once the supply rows hold for it; its
joint cost UB is then an upper bound, and when (UB - LB) / UB is within the requested
gap the union is a plan as good as the joint solve would return. Where workloads
compete for a GPU type in some region (the union breaks its supply row), its largest
users are re-solved within shares of it that fit (a plan: solver.decompose.join_mend), then its
users paying a price on it (a higher, Lagrangian bound, and a plan where their union
fits: solver.decompose.join_price), and when no plan is proved within the gap the workloads that
use it are solved together as one part and the union retried (solver.decompose.join), until
it holds or one part is left. A
union still outside the gap (an existing fleet shared unevenly, say) has the joint
program solved as one, from the cheapest union that held; when less than a quarter of
the time limit is left, that union is the plan, `feasible` with its gap stated.

Whole servers (policy.buy_unit: node) and site power are shared between workloads
too: each P_w buys single GPUs against the whole power of each site (a relaxation
still), the join rounds each (r, g) purchase up to whole servers, and the joined plan
must then hold every row of the whole program, power included, and be within the gap;
otherwise the whole is solved as one. With whole servers in two regions or more the
solve starts by region instead (solver.decompose.regions.plan.by_region): each region's
own program buys whole servers for all its workloads, the sum of their bounds bounds
the whole, and the whole program floored at their fleets is a plan; within the gap it
is the result and no P_w is solved, else the whole is solved as one from it.

Why: failover couples every region of a workload, and each (workload, region, phase)
rounds its replicas up on its own, so the joint branch and bound has to close hundreds
of independent roundings at once; a 0.1% gap on a large fleet is less than one
GPU-month. Apart, each program closes its own gap in well under a second, and the
parts together reach a tighter gap in seconds than the joint search in minutes (the
README's speed notes).

With co-location (solver.colocation.groups) a shared group template couples its members: they
share rows (its groups[t,r] column sits in each member's capacity rows), so the parts
are the connected groups of workloads coupled by some template, each solved jointly
(a workload in no template is a part of its own). The bound argument above holds part
by part.

The parts' programs (solver.decompose.workload_parts) start in the worker processes as soon as the
candidates are known, while this process builds the whole program the union is checked
against; each is reduced first to the pools and sizes an optimal plan of it needs
(solver.candidates.swap_dominance).
"""

import math
import time
from dataclasses import dataclass, field, replace

from solver.backends import Backend
from solver.candidates.replica_dominance import Bounds, sizes_start, with_sizes
from solver.candidates.swap_dominance import optimal_reduction
from solver.decompose.join import solve_by_workload
from solver.decompose.join_values import with_parts_bound
from solver.decompose.region_bounds import (
    narrower,
    rows_tried,
    start_region_rows,
    with_region_rows,
)
from solver.decompose.regions.join import independent
from solver.decompose.regions.plan import by_region, covered, first_by_region
from solver.decompose.warm_start import warm_start
from solver.decompose.workload_parts import PartSolves
from solver.program.build import FleetProgram, with_bounds
from solver.program.cost_levels import own_result, with_cost_levels
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.program.optimised import Method, Optimised
from solver.settings import SolveSettings

REGION_FIRST_SHARE = 0.75
"""Share of the time left that the regions' programs and the plan floored at their fleets
take (solver.decompose.regions.plan.by_region) before the whole program is solved from it."""
MIN_TIME_LIMIT_S = 1.0
"""Time the whole program still gets when the decomposition used up the limit."""
WHOLE_AFTER_JOIN_SHARE = 0.25
"""A join that holds but is not proved within the gap is the plan when less than this
share of the time limit is left; with more, the whole program is solved from it."""
FULL_SHARE_WHEN_LITTLE_AFTER = True
"""Whether the regions' stage takes all the time left where the whole program would not
be solved after its share anyway (`_little_after`); off, the bench's `before`."""
START_BESIDE_REGION_ROWS = False
"""Whether a solve with region rows and cost levels (no start given) also solves the
restricted program for a start (solver.decompose.warm_start). Off: with the rows and the
levels the start no longer shortens the whole program's search, and it takes a core from
the region programs. chat-3region's whole program, HiGHS 1.16, one thread, seeds 0-2:
2.66, 2.22, 2.65 s of CPU from the start against 2.17, 2.57, 2.82 s without (424, 379,
461 against 346, 805, 411 nodes), the same optimum and plan; the restricted solve itself
costs about 1 s of CPU. On, the bench's `before`."""
COST_LEVELS = True
"""Whether the whole program is solved with each region's cost level beside its region rows
(solver.program.cost_levels); a switch for the side-by-side bench."""


def optimise(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    bounds: Bounds | None = None,
    parts: PartSolves | None = None,
) -> Optimised:
    """Solve the program (with some variables' bounds replaced): workload by workload
    when the workloads do not compete for supply (`solve_by_workload`; from `parts` when
    they were started already), else as one, in what is left of the time limit,
    starting from the settings' start where given (`SolveSettings.start`: a lever's base
    plan), else from the plan of a restriction of it (solver.decompose.warm_start) when the
    program is large enough, or from the decomposition's join when one held but was not
    proved within the gap (that join is the plan when the time is nearly out, or when the
    whole finds nothing cheaper). Each program solved
    is first bounded to the pools and sizes an optimal plan needs
    (solver.candidates.swap_dominance, solver.candidates.replica_dominance), except where
    `bounds` name the candidates involved, and the whole program is given each region's
    proven cost (solver.decompose.region_bounds); the result holds the program's columns
    only. The cheapest plan a stage reached is kept to the end (the whole program's is
    taken only when no dearer); when the time limit stopped every stage without one, the
    plan is the cover built without a solver (solver.decompose.regions.plan.covered, its
    gap stated), and where even that finds none the result's message says how long each
    stage ran and what limit to try (`Stages`)."""
    started = time.monotonic()
    stages = Stages(settings)
    joined = None
    if first_by_region(program.sets) and not settings.spent():  # else built to stop at once
        left = settings.remaining_s()
        whole_after = not _little_after(settings, left, REGION_FIRST_SHARE)
        share = REGION_FIRST_SHARE if whole_after and not independent(program) else 1.0
        deadline = started + (math.inf if left is None else share * left)
        joined = by_region(program, backend, settings, bounds, deadline)
        stages.ended("the regions' programs and the plan floored at their fleets", joined)
        if joined is not None and (
            joined.result.termination is not Termination.FEASIBLE or _little_left(settings)
        ):
            return joined  # proved within the gap by the regions' bound, or no time left
    if joined is None and len(program.sets.workloads) > 1:
        joined = solve_by_workload(program, backend, settings, bounds, parts)
        stages.ended("the workload programs and their join", joined)
        if joined is not None and joined.result.termination is not Termination.FEASIBLE:
            return joined
        if joined is not None and _little_left(settings):
            return joined  # a join that holds, not proved within the gap
    # A re-solve from a start (a lever's base plan) keeps every pool config dominance
    # would remove unless it asks for the reduction (`dominated_with_start`: the levers
    # of a large static program and their groups, solver.analysis.levers.DOMINATED;
    # chat-3region's `allow gh200` from the base plan 8,713 nodes whole, 2,355 reduced).
    configs = settings.start is None or settings.dominated_with_start
    reduction = optimal_reduction(program, bounds, configs=configs)
    bounds = {**reduction.bounds, **(bounds or {})} or None
    lp = with_bounds(program.lp, bounds) if bounds else program.lp
    first = settings.limited(_left_s(settings, started)).with_duals(False)
    rows_ready = None  # the region programs, beside the warm start where it runs
    rowed_only = False  # the region rows and cost levels in place of the warm start
    if (
        backend.capabilities.warm_start
        and narrower(lp, program.lp)
        and _rows_wanted(program, settings)
    ):
        rowed_only = not _started(settings) and rows_tried(program.lp)
        rows_ready = start_region_rows(
            program.lp, backend, first, program.region_costs, beside_start=not rowed_only
        )
    given = _given_start(program.lp, settings, bounds) if backend.capabilities.warm_start else None
    if joined is not None:  # the join that held starts the search
        start = dict(joined.result.values) if backend.capabilities.warm_start else None
    elif given is not None:
        start = given
    elif rowed_only:
        start = None
    else:
        start = warm_start(program, backend, first, bounds)
    if start is not None:
        start |= sizes_start(reduction.sizes, start)
    one = settings.limited(_left_s(settings, started)).with_duals(False)  # the start's time out
    solved = with_sizes(lp, reduction.sizes)
    levelled = None
    if rows_ready is not None:  # a backend whose gap bounds its optimum (HiGHS)
        rows_ready()
        rowed = with_region_rows(solved, backend, one, program.lp, program.region_costs)
        if COST_LEVELS and rowed is not solved:  # where the region rows are, the levels too
            levelled, start = with_cost_levels(rowed, start)
        solved = rowed if levelled is None else levelled
    result = backend.run(solved, one, start=start)
    if levelled is not None and levelled is not rowed:  # the levels' columns and objective
        result = own_result(result, program.lp)
    if joined is not None and not _better(result, joined.result):
        return joined
    if joined is None and result.termination is Termination.TIME_LIMIT:
        # the clock stopped every stage before a plan: the cover, where it finds one
        cover = covered(program, backend, bounds, settings, started)
        if cover is not None:
            return cover
    stages.ended("the whole program", result)
    if result.termination is Termination.TIME_LIMIT and not result.termination.has_solution:
        result = replace(result, message=stages.stopped())
    own = {name: value for name, value in result.values.items() if name in program.lp.variables}
    join_gap = None if joined is None else joined.result.mip_gap
    result = result if joined is None else with_parts_bound(result, joined.result)
    from_regions = joined is not None and joined.method is Method.BY_REGION
    searched = (joined.searched, joined.search_improved) if from_regions else (0, 0)
    return Optimised(
        replace(result, values=own),
        join_gap=join_gap,
        from_regions=from_regions,
        searched=searched[0],
        search_improved=searched[1],
        search_stopped=from_regions and joined.search_stopped,
    )


def _started(settings: SolveSettings) -> bool:
    """Whether a solve with region rows also looks for a start in the restricted program
    (solver.decompose.warm_start) where no join or given start is at hand: where
    `START_BESIDE_REGION_ROWS` asks for it, or in a re-solve from a start (a lever's,
    whose base plan breaks this program's bounds), as before. The region programs then
    run on every core but the warm start's (solver.decompose.region_bounds.side_threads),
    else on every core."""
    return START_BESIDE_REGION_ROWS or settings.start is not None


def _rows_wanted(program: FleetProgram, settings: SolveSettings) -> bool:
    """Whether the whole program is solved with its region_cost rows: always where it holds
    them already, else unless a search from a start asks for none
    (`SolveSettings.region_rows_with_start`)."""
    if program.region_costs.get("lp") is program.lp:
        return True
    return settings.start is None or settings.region_rows_with_start


def _given_start(
    lp: LinearProgram, settings: SolveSettings, bounds: Bounds | None
) -> dict[str, float] | None:
    """The settings' start (`SolveSettings.start`: a plan of a program like this one,
    e.g. a lever's base plan), or None when there is none or it gives a column a value
    outside the bounds of this solve (a pool fixed at 0 by dominance or by the caller)."""
    if settings.start is None:
        return None
    start = {name: value for name, value in settings.start.items() if name in lp.variables}
    for name, (lower, upper) in (bounds or {}).items():
        value = start.get(name, 0.0)
        if value < lower - 1e-9 or (upper is not None and value > upper + 1e-9):
            return None
    return start


def _better(result: SolveResult, than: SolveResult) -> bool:
    """Whether `result` has a plan no dearer than `than`'s (the whole program's result
    also bounds its own gap)."""
    if not result.termination.has_solution or result.objective is None:
        return False
    return than.objective is None or result.objective <= than.objective * (1 + 1e-9)


def _little_left(settings: SolveSettings) -> bool:
    """Whether less than `WHOLE_AFTER_JOIN_SHARE` of the time limit is left."""
    left_s = settings.remaining_s()
    limit_s = settings.time_limit_s
    return left_s is not None and limit_s is not None and left_s < WHOLE_AFTER_JOIN_SHARE * limit_s


def _little_after(settings: SolveSettings, left_s: float | None, share: float) -> bool:
    """Whether a stage given `share` of the `left_s` seconds left would leave the whole
    program less than `WHOLE_AFTER_JOIN_SHARE` of the time limit (`_little_left`): then
    the whole is not solved after it, and the stage may take all of it. With
    `REGION_FIRST_SHARE` on a 30 s limit the regions' stage ended at 18.7 s and the rest
    of the solve's 24 s went unused (10 x 20 x 6 region loss at the defaults); off
    (`FULL_SHARE_WHEN_LITTLE_AFTER`), the bench's `before`."""
    limit_s = settings.time_limit_s
    if not FULL_SHARE_WHEN_LITTLE_AFTER or left_s is None or limit_s is None:
        return False
    return (1.0 - share) * left_s < WHOLE_AFTER_JOIN_SHARE * limit_s


def _left_s(settings: SolveSettings, started: float) -> float | None:
    """What is left of the settings' time limit since `started` (at least
    `MIN_TIME_LIMIT_S`), None without a limit."""
    if settings.time_limit_s is None:
        return None
    return max(settings.time_limit_s - (time.monotonic() - started), MIN_TIME_LIMIT_S)


@dataclass
class Stages:
    """How long each stage of `optimise` ran, and whether it ended with a plan: what the
    message says when the time limit stopped every stage without one (`stopped`)."""

    settings: SolveSettings
    started: float = field(default_factory=time.monotonic)
    spent: list[tuple[str, float, bool]] = field(default_factory=list)

    def ended(self, what: str, found: Optimised | SolveResult | None) -> None:
        """Record the stage `what` as ended now, with `found` (None: no plan)."""
        since = self.started + sum(seconds for _, seconds, _ in self.spent)
        result = found.result if isinstance(found, Optimised) else found
        planned = result is not None and result.termination.has_solution
        self.spent.append((what, time.monotonic() - since, planned))

    def stopped(self) -> str:
        """Which stages the limit stopped, how long each took after the b seconds spent
        before them (candidates, build), and a limit that gives them more than twice the
        time: with S = SOLVE_SHARE x L - b for them, 2 S needs L' = 2 L - b / SOLVE_SHARE,
        so twice the limit L, rounded up to 10 s (to 1 s below 10 s)."""
        took = ", ".join(
            f"{what} {seconds:.1f} s ({'a plan' if planned else 'no plan'})"
            for what, seconds, planned in self.spent
        )
        deadline = self.settings.deadline
        limit_s = self.settings.time_limit_s
        if deadline is None or not limit_s:
            return f"no plan by the limit: {took}"
        before_s = max(deadline.elapsed_s() - sum(s for _, s, _ in self.spent), 0.0)
        step_s = 10 if 2 * limit_s > 10 else 1
        needed_s = step_s * math.ceil(2 * limit_s / step_s)
        return (
            f"no plan by the limit: {before_s:.1f} s before the solve, then {took}; "
            f"try --time-limit {needed_s:g}"
        )
