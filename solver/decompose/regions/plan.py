"""The plan of a solve with whole servers that starts by region: the whole program
floored at the regions' own fleets, against the regions' bound
(solver.decompose.regions.join holds the regions' programs, their bound and the floored
program; this module, what a solve makes of them).

A solve with whole servers starts here (`by_region`, from
solver.decompose.by_workload): proved within the gap, the floored plan is the plan, and
the workload programs are never solved; else it is improved a few regions at a time,
the rest held (solver.decompose.regions.search: every plan it keeps is a plan of the whole),
and the whole program starts from the result. When the clock stops some region's program
before its proof (a tight time limit), the floored plan is kept all the same, its gap
stated against the regions' results as they stood (`RegionJoin.stopped`: objective x
(1 - gap) each, 0 for a region without a plan; valid, never a proof), so that the limit
returns a plan rather than none; where the clock left some region without a plan, the
whole program's cover is built first and the floored program gets the time left, the
cheaper kept (`COVERS_FIRST`). Where no row links regions and the clock left some
region no plan, the cover built without a solver (solver.decompose.cover) stands in for
its columns; with linking rows, a solve whose every stage ends without a plan takes the
cover whole (`covered`, from solver.decompose.by_workload.optimise: the workload
programs and the whole program may still find a better one after this stage), its gap
stated against the higher of the regions' stopped bound and its own.
"""

import math
import time
from collections import defaultdict
from dataclasses import replace

from models.schema.policy import BuyUnit
from solver.backends import Backend
from solver.backends.base import relative_gap
from solver.candidates.config_dominance import config_bounds
from solver.candidates.replica_dominance import Bounds
from solver.decompose.cover import Cover, covering_plan
from solver.decompose.region_bounds import region_of
from solver.decompose.regions import join as joined  # joined.COVER, read at each call
from solver.decompose.regions.join import (
    RegionJoin,
    floored,
    independent,
    keep_rows,
    region_join,
)
from solver.decompose.regions.search import region_cover, search
from solver.program.build import FleetProgram, with_bounds
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.program.optimised import Method, Optimised
from solver.program.sets import ProgramSets
from solver.settings import MIN_CALL_S, SolveSettings

REGIONS_FIRST = True
"""Whether a solve with whole servers starts with the regions' programs (`first_by_region`);
off, the bench's `before` (tests/bench/test_server_master_bench.py)."""
SEARCH = True
"""Whether a floored plan not proved within the gap is improved a few regions at a time
(solver.decompose.regions.search) before it is returned; off, the bench's `before`
(tests/bench/test_region_lns_bench.py)."""
SEARCH_MIN_REGIONS = 8
"""Regions from which the search runs. With fewer, a pair is a large share of the program,
and the whole program started from the floored plan (what follows the join) proves the
optimum itself: on the 5 x 5 x 3 bench cases the search found the optimum once in three
and added 0-8 s before the same proof."""
KEEP_STOPPED = True
"""Whether `by_region` keeps the floored plan when the clock stopped some region's program
before its proof (its gap against `RegionJoin.stopped`), the floored program started from
the regions' own plans; off, the bench's `before` (tests/bench/test_tight_limits_bench.py)."""
HELD_COVER = True
"""Whether `by_region` builds the cover held at the regions' own plans where the clock
stopped the floored program, and keeps the cheaper
(solver.decompose.regions.search.region_cover); off, the bench's `before`
(tests/bench/test_short_limits_bench.py)."""
COVERS_FIRST = True
"""Whether `by_region` builds the whole program's cover before the floored program where
the clock left some region's own program without a plan (`_unplanned`), so that the
floored program's time, not the cover's, is what the deadline cuts; off, the bench's
`before` (the covers after the floored program, as where every region has a plan)."""


def _proved(cost: float, bound: float, settings: SolveSettings) -> bool:
    """Whether a plan of `cost` is within the settings' gap of `bound`."""
    return (relative_gap(cost, bound) or 0.0) <= settings.mip_gap + 1e-9


def _left_s(deadline: float, floor_s: float = MIN_CALL_S) -> float | None:
    """Seconds to the `deadline` (at least `floor_s`), None for none."""
    left = deadline - time.monotonic()
    return None if math.isinf(left) else max(left, floor_s)


def first_by_region(sets: ProgramSets) -> bool:
    """Whether a solve starts with the regions' programs (`by_region`): whole servers
    (policy.buy_unit: node) shared by several workloads in two regions or more, and no
    co-location template or elastic demand (the join's cases: solver.decompose.join);
    never with `REGIONS_FIRST` off."""
    return (
        REGIONS_FIRST
        and sets.instance.policy.buy_unit is BuyUnit.NODE
        and len({r for r, _ in sets.offers}) > 1
        and len(sets.workloads) > 1
        and not sets.instance.policy.colocation
        and not sets.elastic
    )


def by_region(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    bounds: Bounds | None,
    deadline: float,
) -> Optimised | None:
    """The whole program's plan floored at the regions' own fleets (`floored`), against
    the regions' bound, by the `deadline`: OPTIMAL when within the requested gap of it,
    else FEASIBLE with its gap (an incumbent, the start of what comes next), against the
    bound where the clock stopped some region's program (`RegionJoin.stopped`) when they
    prove none in time (the regions with a plan floored); None when no region found a
    plan, or the floored program none in time."""
    started = time.monotonic()
    found = region_join(program, backend, settings, None, deadline, bounds)
    keep_rows(program, found)
    bound = found.bound if found.bound is not None or not KEEP_STOPPED else found.stopped
    if independent(program):  # the regions' plans joined are the whole program's
        return _joined_independent(program, backend, found, bounds, settings, started)
    if bound is None or not found.own:
        return None
    # the caller's bounds, and the pools config dominance removes (a restriction that
    # loses no optimum of the floored program either: a stand-in only adds replicas of A),
    # except in a re-solve from a start, as in solver.decompose.by_workload.optimise
    removed = config_bounds(program, bounds) if settings.start is None else {}
    held = {**removed, **(bounds or {})}
    held_covers = HELD_COVER and joined.COVER and KEEP_STOPPED

    def within() -> LinearProgram:
        return with_bounds(program.lp, held) if held else program.lp

    # where the clock left some region without a plan, the floored program must design
    # its fleet and has seldom ended in what was left: the whole program's cover comes
    # first, the floored program gets the rest (`COVERS_FIRST`); the cover held at such
    # regions' plans, cut short too, cost more than it (10 x 20 x 6 at the defaults, 10
    # and 15 s limits: $1,357,333 and $1,036,074 against $728,073)
    covers: tuple[Cover | None, ...] = ()
    if held_covers and COVERS_FIRST and _unplanned(found):
        covers = (covering_plan(within()),)
    added = None
    if time.monotonic() < deadline:
        lp = floored(program, found.own, held)
        start = found.own if backend.capabilities.warm_start and KEEP_STOPPED else None
        left = settings.limited(_left_s(deadline)).with_duals(False)
        added = backend.run(lp, left, start=start)
    # where the clock stopped the floored program (or left it no time), the cover held at
    # the regions' plans (solver.decompose.regions.search.region_cover) or the whole program's
    # cover, whichever is cheapest: the regions' own fleets are not always the better start
    # (10 x 20 x 6 at the defaults, seed 0, 20 s: $736,190 held against the whole's
    # $728,073, which a 15 s limit that stopped before the regions returned); a floored
    # program that ended by itself is as before
    if held_covers and not covers and (added is None or _stopped(added)):
        covers = (region_cover(program.lp, found.own, held), covering_plan(within()))
    values = _cheaper(program.lp, added, *covers)
    if values is None:
        return None
    if added is None or not added.termination.has_solution:
        added = SolveResult(Termination.FEASIBLE, backend.name, backend.version(), 0.0)
    searched = None
    if (
        SEARCH
        and found.regions >= SEARCH_MIN_REGIONS
        and not _proved(program.lp.objective_value(values), bound, settings)
    ):
        proved_at = bound / (1 - min(settings.mip_gap, 0.5))
        within = with_bounds(program.lp, held) if held else program.lp
        searched = search(
            within, backend, settings, values, found.rows, deadline, good_enough=proved_at
        )
        values = searched.values
    cost = program.lp.objective_value(values)
    gap = relative_gap(cost, bound) or 0.0
    proved = found.bound is not None and _proved(cost, found.bound, settings)
    result = replace(
        added,
        termination=Termination.OPTIMAL if proved else Termination.FEASIBLE,
        objective=cost,
        values=values,
        mip_gap=gap,
        runtime_s=time.monotonic() - started,  # the regions, the floored plan, the search
    )
    optimised = Optimised(
        result,
        Method.BY_REGION,
        found.regions,
        searched=0 if searched is None else searched.tried,
        search_improved=0 if searched is None else searched.improved,
        search_stopped=searched is not None and searched.stopped,
    )
    return replace(optimised, result=replace(result, message=optimised.description))


def _unplanned(found: RegionJoin) -> bool:
    """Whether the clock left some region's own program without a plan."""
    return len({region_of(name) for name in found.own} - {None}) < found.regions


def _stopped(result: SolveResult) -> bool:
    """Whether the clock (or another limit) stopped `result`'s program: no plan, or one not
    proved within its gap."""
    return not result.termination.has_solution or result.termination is not Termination.OPTIMAL


def _cheaper(
    lp: LinearProgram, added: SolveResult | None, *covers: Cover | None
) -> dict[str, float] | None:
    """The floored program's plan (`added`, its columns of `lp`) or the cheapest of
    `covers` (the cover held at the regions' plans, the whole program's), whichever costs
    less (the floored one on a tie, then the earlier cover); None with none."""
    values = None
    if added is not None and added.termination.has_solution and added.objective is not None:
        values = {name: value for name, value in added.values.items() if name in lp.variables}
    for cover in covers:
        if cover is None:
            continue
        if values is None or cover.cost < lp.objective_value(values) - 1e-6:
            values = {name: cover.values[name] for name in lp.variables}
    return values


def covered(
    program: FleetProgram,
    backend: Backend,
    bounds: Bounds | None,
    settings: SolveSettings,
    started: float,
) -> Optimised | None:
    """The cover built without a solver (solver.decompose.cover.covering_plan, within
    the caller's `bounds`) as the plan where the clock stopped the solves before one:
    FEASIBLE with its gap to the higher of its own bound and the regions' stopped bound
    where their programs ran on this program (`RegionJoin.stopped`), OPTIMAL only when
    that is within the requested gap; None when `COVER` (solver.decompose.regions.join) is
    off or the cover finds no plan (a pool no configuration fits)."""
    if not joined.COVER:
        return None
    known = program.region_costs.get("own")
    bound = known[5] if known is not None and known[0] is program.lp else None
    lp = with_bounds(program.lp, bounds) if bounds else program.lp
    cover = covering_plan(lp)
    if cover is None:
        return None
    lower = max((b for b in (bound, cover.bound) if b is not None), default=None)
    proved = lower is not None and _proved(cover.cost, lower, settings)
    result = SolveResult(
        termination=Termination.OPTIMAL if proved else Termination.FEASIBLE,
        solver=backend.name,
        solver_version=backend.version(),
        objective=cover.cost,
        values={name: cover.values[name] for name in program.lp.variables},
        mip_gap=relative_gap(cover.cost, lower),
        runtime_s=time.monotonic() - started,
    )
    optimised = Optimised(result, Method.COVERED)
    return replace(optimised, result=replace(result, message=optimised.description))


def _joined_independent(
    program: FleetProgram,
    backend: Backend,
    found: RegionJoin,
    bounds: Bounds | None,
    settings: SolveSettings,
    started: float,
) -> Optimised | None:
    """`by_region` where no row links two regions (`independent`): each region's program
    is its part of the whole, so the regions' plans joined (`RegionJoin.own`) are a plan
    of the whole, proved when every region's program was (`RegionJoin.bound`), else
    FEASIBLE against the bound where the clock stopped some. A region whose program found
    no plan in time, or whose plan costs more than the cover's (a program the clock
    stopped), takes the cover's columns (solver.decompose.cover.covering_plan: a plan
    of the whole, so of each region) and the gap is stated against the higher of the
    stopped bound and the cover's; None when neither has a plan for some region. No
    floored program and no search: either would solve the regions' programs again, on
    less time than they had."""
    lp = program.lp
    columns: dict[str | None, list[str]] = defaultdict(list)
    for name in lp.variables:
        columns[region_of(name)].append(name)
    lacking = {region for region, names in columns.items() if not set(names) <= set(found.own)}
    cover = None
    if joined.COVER and (lacking or found.bound is None):
        cover = covering_plan(with_bounds(lp, bounds) if bounds else lp)
    if lacking and cover is None:
        return None  # some region's program found no plan in time, nor the cover
    values: dict[str, float] = {}
    taken = 0
    for region, names in columns.items():
        take = cover is not None and (
            region in lacking or _cost(lp, cover.values, names) < _cost(lp, found.own, names)
        )
        source = cover.values if cover is not None and take else found.own
        values.update((name, source[name]) for name in names)
        taken += take
    cost = lp.objective_value(values)
    bound = found.bound
    if bound is None:
        stated = (found.stopped, None if cover is None else cover.bound)
        bound = max((b for b in stated if b is not None), default=None)
    proved = found.bound is not None and _proved(cost, found.bound, settings)
    result = SolveResult(
        termination=Termination.OPTIMAL if proved else Termination.FEASIBLE,
        solver=backend.name,
        solver_version=backend.version(),
        objective=cost,
        values=values,
        mip_gap=relative_gap(cost, bound),
        runtime_s=time.monotonic() - started,
    )
    optimised = Optimised(result, Method.BY_REGION, found.regions, independent=True, covered=taken)
    return replace(optimised, result=replace(result, message=optimised.description))


def _cost(lp: LinearProgram, values: dict[str, float], names: list[str]) -> float:
    """The objective's terms on `names` at `values`."""
    return sum(lp.objective.get(name, 0.0) * values.get(name, 0.0) for name in names)
