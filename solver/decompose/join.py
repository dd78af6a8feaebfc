"""Joining the parts of a decomposed solve (solver.decompose.by_workload), and mending a join that
asks too much of a shared row. The rounds' shared state lives in solver.decompose.join_run, the
join's values and the rows it breaks in solver.decompose.join_values.

The parts start as one workload each (or the workloads a shared group template couples).
Their solutions are joined: every part's own columns, and each region's purchases of a
GPU type rounded up on the sum (`joined_purchases`). The join is a plan of the whole
program when every row holds. A row the parts share can fail: two workloads that each
take most of a region's supply of a GPU type, apart, take more than it holds together.
Each round then mends it in these ways, in turn:

- Shares (solver.decompose.join_mend): the largest users of each overfilled supply row are
  re-solved within shares that fit beside the others' use. That is a restriction, so
  the join, once it holds, is a plan of the whole; it is the result when its cost is
  within the gap of the bound the parts gave, and kept as the incumbent otherwise.
- Local merge (solver.decompose.join_mend): where no route joins the row's region to another,
  the users of each overfilled row re-solved together with everything held at the
  join's values but in that region; a restriction too, and there the merged part's
  optimum in the region.
- Giving back (solver.decompose.join_mend): for one overfilled supply row, every user re-solved
  alone giving back the whole excess (or all it uses), and the users that do so
  cheapest per GPU taken until the excess is back; a restriction too.
- Price: each broken supply row gets a price per GPU, its users are re-solved paying it,
  and the sum of the priced parts' bounds less the rows' priced supply is a Lagrangian
  bound on the whole, higher than the parts' own; the priced users take less of the
  row, and their join, when it holds, is a plan (solver.decompose.join_price). A few prices are
  tried (`PRICE_ROUNDS`).
- Merge: the parts whose columns carry each broken row are merged into one part, solved
  again as one program (a relaxation of the whole still: its workloads alone, over the
  whole supply), and the join retried.

    round 1: P_1, ..., P_n                    (one per workload)
    round k: the parts that share a row the join of round k-1 breaks, merged

Merging only groups workloads, so it ends: at worst every workload is in one part,
which is the whole program, and the caller solves that as one (from the incumbent).
The bound stays valid round after round: the final parts partition the workloads, each
part's program is a relaxation of the whole restricted to them, so sum_parts bound(P)
<= the optimum. When no join is proved within the gap before the time is out, the
cheapest join that held is the result, FEASIBLE with its gap against the best bound
(`JoinRun.incumbent`): a plan stated as unproven rather than none. Where the clock
stopped parts (no plan in their share, or one not proved) and no join is proved, the
cover built without a solver stands in for each part whose plan is missing or dearer
(solver.decompose.join_values), so that a stopped part leaves a plan, not none.

Each round after the first solves its merged parts to the gap the settled parts leave
unused (`gap_left`): most close far inside the requested gap, and the join's gap is
what is checked in the end, against the sum of the final parts' bounds.

With whole servers (policy.buy_unit: node) the join's rounding wastes up to a server
per offer a part opens. Before any mend the regions' own programs
(solver.decompose.regions.join) give a bound (kept when above the parts') and plans: each
region's program with the join's routing between regions held, and the whole program
floored at the regions' own fleets. Where they give none, and the whole program will
not be solved after the join (too little time is left) or there are many parts, a
master over server counts picks one plan per part among the parts' plans and their
variants (solver.decompose.server_master). A plan that holds every row and is cheaper
is the join kept.

The mends come before the merge because they are cheaper: each re-solves a few parts
under a restriction, where the merge solves the merged part in full, and the whole as one
is dearer still. Tried and dropped as the only mend, each further above the bound: the
largest user re-solved within what the others leave, shares in proportion to use for
every user, and the largest users re-solved together within the row. (The figures, on
the scaling bench's 50 x 50 x 6 instance, are in the README's speed notes.)
"""

import math
import time

from solver.backends import Backend
from solver.candidates.replica_dominance import Bounds
from solver.decompose.join_mend import (
    cheapest_givers,
    fixed_outside,
    giving_back,
    reach,
    row_use,
    supply_rows,
    supply_shares,
)
from solver.decompose.join_price import first_prices, lagrangian_bound, next_prices, row_users
from solver.decompose.join_run import JoinRun, cover_reserve_s, gap_left, parts_in_time
from solver.decompose.join_values import (
    broken_rows,
    cover_join,
    joined_purchases,
    joined_values,
    merged_parts,
    per_workload,
)
from solver.decompose.regions.join import floored, keep_rows, region_join
from solver.decompose.server_master import MASTER_MIN_S, coordinate, has_servers
from solver.decompose.workload_parts import Part, PartSolves
from solver.program.build import FleetProgram
from solver.program.lp import Constraint, SolveResult, Termination
from solver.program.optimised import Optimised
from solver.program.row_names import GpuSupplyRow, split_name
from solver.settings import SolveSettings

MEND_ROUNDS = 3
"""Rounds of re-solving parts within supply shares before the join's parts are merged."""
COORDINATE_SHARE = 0.5
"""Share of the time left that the master over server counts takes, with whole servers
and at least `COORDINATE_MIN_PARTS` parts, before the whole program is solved from the
cheaper of its plan and the rounded join (when time is left for it)."""
COORDINATE_MIN_PARTS = 10
"""Parts from which the master runs first. With few parts the whole program, solved from
the rounded join, found the optimum sooner than from the master's plan (the master's time
added, the whole's no shorter); with 20 the master's plan was cheaper than what the whole
reached in the rest of the limit (the commit messages give the runs)."""
WHOLE_SKIPPED_SHARE = 0.25
"""Share of the time limit below which the whole program is not solved after a join
that is not proved (solver.decompose.by_workload.WHOLE_AFTER_JOIN_SHARE): then the
master takes the time left, and its plan, not the rounded join, is the plan."""
REGION_SHARE = 0.5
"""Share of the time left that the regions' programs take, with whole servers, before
the master (solver.decompose.regions.join); 0 skips them (the bench's `before`)."""
PRICE_ROUNDS = 6
"""Prices tried on the broken supply rows before the parts are merged (`_price`)."""
COVER_STOPPED = True
"""Whether parts the clock stopped (without a plan, or at one dearer than the cover's
columns, where no join is proved) take the cover's columns (`_covered`,
solver.decompose.join_values); off, a part without a plan leaves no join (the whole program
follows), the bench's `before` (tests/bench/test_tight_cuts_bench.py)."""


def solve_by_workload(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    bounds: Bounds | None = None,
    started: PartSolves | None = None,
) -> Optimised | None:
    """Solve each part's program apart (within the caller's `bounds`, each reduced to
    the pools and sizes an optimal plan of it needs: solver.candidates.swap_dominance) and join the
    solutions, mending a join that breaks a supply row (the module docstring); with
    `started`, the first round's results come from the workers already solving.

    Returns the joined result when it is feasible for the whole program and within the
    requested gap; the cheapest join that held, FEASIBLE with its gap against the best
    bound, when none was proved within the gap (the time ran out, or the merge ended in
    one part); a result with termination INFEASIBLE when some part alone has no plan
    (then neither has the whole); None when no join held (one part, a join nothing
    mends, a part without a plan in time): the whole must be solved as one. Under a time
    limit the parts and mends stop the cover's time before the solve's deadline
    (solver.decompose.join_run.cover_reserve_s), so that a cover after stopped parts ends
    by it.
    """
    bounds = bounds or {}
    left_s = settings.remaining_s()
    deadline = time.monotonic() + (left_s or float("inf"))
    if COVER_STOPPED:  # the run's deadline keeps back the cover's time (after stopped parts)
        deadline -= cover_reserve_s(program, settings)
    run = JoinRun(program, backend, settings, bounds, deadline)
    parts: list[Part] = list(program.groups.components(program.sets.workloads))
    if len(parts) < 2:
        return None
    run.coupled = {part for part in parts if len(part) > 1}  # by shared group templates
    if started is None and COVER_STOPPED and (settings.spent() or not parts_in_time(run, parts)):
        # no time left, or too little for each part to find a plan: each would be built
        # (seconds of Python on a large program) to stop at once without one; the cover
        return _covered(run, parts, {})
    if started is not None and sorted(started.parts) == sorted(parts):
        backend.prepare(program.lp)  # while the workers solve (the pricing LP is the whole)
        order = started.parts
        found = (
            (order[index], result) for index, result in started.started.results(stop=run.infeasible)
        )
        run.processes = started.processes
    else:
        found = run.solve(parts)
    results = run.collect(found, partial=COVER_STOPPED)
    if not isinstance(results, dict):
        return results
    if len(results) < len(parts):  # the clock stopped some part before a plan
        return _covered(run, parts, results)
    values, owner = joined_values(program, parts, results)
    broken = broken_rows(program.lp, values, bounds, owner)
    if broken is None:
        return None
    if has_servers(program) and not run.coupled:
        found = _coordinate(run, parts, results, values)
        if found is not None:
            return found
    found = _mend_or_merge(run, parts, results, values, owner, broken)
    if found is None and COVER_STOPPED and _stopped(results):
        return _covered(run, parts, results)
    return found if found is not None else run.incumbent()


def _stopped(results: dict[Part, SolveResult]) -> bool:
    """Whether the clock stopped some part's program before its gap was proved."""
    return any(result.termination is not Termination.OPTIMAL for result in results.values())


def _covered(run: JoinRun, parts: list[Part], results: dict[Part, SolveResult]) -> Optimised | None:
    """Where the clock stopped parts: the cover with each part's plan taken where it is
    cheaper (solver.decompose.join_values), as the result within the gap of the best bound
    (the parts', a part without a plan counting 0, or the cover's), else the cheapest
    join that held (`JoinRun.incumbent`); None when neither the mix nor an earlier join
    is a plan."""
    mixed = cover_join(run.program, run.bounds, parts, results)
    if mixed is None:
        return run.incumbent()
    if mixed.bound is not None:
        run.bound = max(run.bound, mixed.bound)
    unplanned = SolveResult(
        Termination.FEASIBLE, run.backend.name, "", 0.0, objective=0.0, mip_gap=1.0
    )
    every = {part: results.get(part, unplanned) for part in parts}
    found = run.joined(parts, every, mixed.values, covered=mixed.covered)
    return found if found is not None else run.incumbent()


def _mend_or_merge(
    run: JoinRun,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> Optimised | None:
    """The join as the result, mending it where it breaks rows: each round first
    re-solves the largest users of the broken supply rows within shares that fit
    (`_mend`), then the users together around the rows' regions (`_local_merge`), then
    each user giving the excess back (`_mend_each`; all three restrictions: plans, not
    bounds), then prices the broken supply rows (`_price`: a
    higher bound, and a plan where the priced join holds), and when none is proved merges the
    parts that carry each broken row and solves the merged ones
    (`_merge_round`, a relaxation: a tighter bound), until a join holds within the gap.
    An INFEASIBLE result when a merged part has no plan; None when no join is proved
    within the gap in time (the run keeps the cheapest that held: `JoinRun.incumbent`)."""
    while broken:
        for mend in (_mend, _local_merge, _mend_each):  # shares first: quick, and a plan to keep
            mended = mend(run, parts, results, values, owner, broken)
            if mended is not None:
                found = run.joined(parts, results, *mended)
                if found is not None:
                    return found
        if run.out_of_time():
            return None
        found = _price(run, parts, results, values, owner, broken)
        if found is not None:
            return found
        if run.out_of_time():
            return None
        merged = _merge_round(run, parts, results, values, owner, broken)
        if not isinstance(merged, tuple):
            return merged
        parts, results, values, owner, broken = merged
        if broken is None:
            return None
    return run.joined(parts, results, values)


def _coordinate(
    run: JoinRun, parts: list[Part], results: dict[Part, SolveResult], values: dict[str, float]
) -> Optimised | None:
    """Whole servers: first the regions' own programs (solver.decompose.regions.join),
    whose bound joins the parts' and whose plan, with the join's routing between regions
    held, buys each region's servers for all its workloads; then, where that gave no plan,
    the master over server counts (solver.decompose.server_master), until
    `_master_deadline`. A plan that holds every row of the whole is the result if within
    the gap of the best bound, else kept as the incumbent (`JoinRun.best`, the plan when
    the whole program is not solved, and its start when it is); None then, and when
    neither finds a plan."""
    if REGION_SHARE > 0:
        found = _by_region(run, parts, results, values)
        if found is not None or run.best is not None:
            return found
    deadline = _master_deadline(run, len(parts))
    if deadline is None:
        return None
    choice = coordinate(run.program, run.backend, run.settings, results, deadline)
    if choice is None or broken_rows(run.program.lp, choice.values, run.bounds, {}) != []:
        return None
    return run.joined(parts, results, choice.values, coordinated=choice.plans)


def _by_region(
    run: JoinRun, parts: list[Part], results: dict[Part, SolveResult], values: dict[str, float]
) -> Optimised | None:
    """The regions' programs (solver.decompose.regions.join) with the join's `values` on
    the columns that link regions, in `REGION_SHARE` of the time left: their bound raises
    the run's, their rows are kept for the whole program (solver.decompose.region_bounds,
    the program's `region_costs`), and their plan, when it holds every row, is the
    result within the gap or the incumbent; None when it is not proved."""
    deadline = _region_deadline(run)
    program = run.program
    joined = region_join(program, run.backend, run.settings, values, deadline, run.bounds)
    if joined.bound is not None:
        run.bound = max(run.bound, joined.bound)
    keep_rows(program, joined)
    if joined.values is not None and broken_rows(program.lp, joined.values, run.bounds, {}) == []:
        found = run.joined(parts, results, joined.values, by_region=joined.regions)
        if found is not None:
            return found
    if not joined.own or run.out_of_time():
        return None
    start = run.best.values if run.best is not None else None
    left = _region_deadline(run) - time.monotonic()
    left = None if math.isinf(left) else max(left, MASTER_MIN_S)
    lp = floored(program, joined.own, run.bounds)
    added = run.backend.run(lp, run.settings.limited(left).with_duals(False), start=start)
    run.runtime_s += added.runtime_s
    if not added.termination.has_solution:
        return None
    own = {name: value for name, value in added.values.items() if name in program.lp.variables}
    return run.joined(parts, results, own, by_region=joined.regions)


def _region_deadline(run: JoinRun) -> float:
    """Until when a step of the regions' programs runs: `REGION_SHARE` of the time left,
    or all of it when less than `WHOLE_SKIPPED_SHARE` of the limit is left (the whole
    program will not be solved after)."""
    now = time.monotonic()
    left = max(run.deadline - now, 0.0)
    limit = run.settings.time_limit_s
    if limit is not None and left < WHOLE_SKIPPED_SHARE * limit:
        return run.deadline
    return now + REGION_SHARE * left


def _master_deadline(run: JoinRun, parts: int) -> float | None:
    """Until when the master runs: the time left but `MASTER_MIN_S` (its last program's
    floor) when less than `WHOLE_SKIPPED_SHARE` of the time limit is left, so that the
    whole program will not be solved and the join is the plan; else, with at least
    `COORDINATE_MIN_PARTS` parts, `COORDINATE_SHARE` of the time left; None for no time
    (or fewer parts)."""
    now = time.monotonic()
    left = run.deadline - now
    limit = run.settings.time_limit_s
    if limit is not None and left < WHOLE_SKIPPED_SHARE * limit:
        return run.deadline - MASTER_MIN_S if left > 2 * MASTER_MIN_S else None
    return now + COORDINATE_SHARE * left if parts >= COORDINATE_MIN_PARTS else None


def _local_merge(
    run: JoinRun,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> tuple[dict[str, float], int] | None:
    """A join that holds every row, reached by re-solving the parts that share each
    broken supply row together with every column held at the join's value except in the
    row's region (solver.decompose.join_mend.fixed_outside: a restriction, so a plan), and how
    many workloads were; None when a broken row is not a supply row, a route joins its
    region to another (solver.decompose.join_mend.reach), a merged part finds no plan, or the join
    still breaks a row."""
    merged = merged_parts(parts, broken, owner, values)
    if merged is None or run.out_of_time():
        return None
    regions: set[str] = set()
    for row in broken:
        if split_name(row.name)[0] != GpuSupplyRow.family:
            return None
        region = GpuSupplyRow.parse(row.name).region
        if reach(run.program.sets.routes, region) != {region}:
            return None  # failover joins it to other regions: the local program is large
        regions.add(region)
    groups = [group for group in merged if group not in results]

    def fixed(alone: FleetProgram) -> Bounds:
        return fixed_outside(alone.lp.variables, values, regions)

    joined = {name: value for name, value in values.items() if per_workload(name)}
    found = run.restricted(run.solve(groups, fixed=fixed))
    if found is None:
        return None
    for result in found.values():
        joined.update((n, v) for n, v in result.values.items() if per_workload(n))
    joined.update(joined_purchases(run.program, joined))
    if broken_rows(run.program.lp, joined, run.bounds, owner) != []:
        return None
    return joined, sum(len(group) for group in groups)


def _mend(
    run: JoinRun,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> tuple[dict[str, float], int] | None:
    """A join that holds every row, reached by re-solving parts within supply shares
    (solver.decompose.join_mend), and how many parts were; None when the broken rows are not
    all supply rows, a part finds no plan within its shares, or `MEND_ROUNDS` rounds
    leave rows broken (a mended part moved onto another overfilled row)."""
    current = dict(results)
    shares: dict[Part, dict[str, float]] = {}
    for _ in range(MEND_ROUNDS):
        new = supply_shares(broken, values, owner)
        if new is None or run.out_of_time():
            return None
        for part, rows in new.items():
            shares[part] = {**shares.get(part, {}), **rows}
        found = run.restricted(run.solve(list(new), supply=shares))
        if found is None:
            return None
        current.update(found)
        values, owner = joined_values(run.program, parts, current)
        broken = broken_rows(run.program.lp, values, run.bounds, owner)
        if broken is None:
            return None
        if not broken:
            return values, len(shares)
    return None


def _mend_each(
    run: JoinRun,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> tuple[dict[str, float], int] | None:
    """A join that holds every row, reached by the users of the one broken supply row
    that give its excess back cheapest (solver.decompose.join_mend.giving_back: each re-solved
    alone giving back as much of it as it uses; `cheapest_givers`), and how many were
    taken; None when more than one row is broken or it is not a supply row, a user finds
    no plan, all together do not give the excess back, or the join still breaks a row."""
    rows = supply_rows(broken)
    if rows is None or len(rows) != 1 or run.out_of_time():
        return None
    row = rows[0]
    excess, shares = giving_back(row, values, owner)
    users = sorted(shares, key=lambda part: (-shares[part][row.name], part))
    found = run.restricted(run.solve(users, supply=shares))
    if found is None:
        return None
    used = row_use(row, values, owner)
    offers = {}
    for part, result in found.items():
        still = row.activity(result.values)  # a part's result holds its own columns only
        extra = (result.objective or 0.0) - (results[part].objective or 0.0)
        offers[part] = (extra, used[part] - still)
    taken = cheapest_givers(offers, excess)
    if taken is None:
        return None
    joined, joined_owner = joined_values(
        run.program, parts, {**results, **{p: found[p] for p in taken}}
    )
    if broken_rows(run.program.lp, joined, run.bounds, joined_owner) != []:
        return None
    return joined, len(taken)


def _price(
    run: JoinRun,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> Optimised | None:
    """The cheapest join that held, proved within the gap by the Lagrangian bound of
    prices on the broken supply rows (solver.decompose.join_price), the priced users' join among
    the joins when it holds; None when the rows are not all supply rows, the mend gave
    no first price, no price within `PRICE_ROUNDS` proves one, or the time is out."""
    rows = supply_rows(broken)
    if rows is None or run.best is None:
        return None
    order = {part: i for i, part in enumerate(parts)}
    users = sorted(row_users(rows, values, owner), key=order.__getitem__)
    extra = run.best.cost - run.program.lp.objective_value(values)
    prices = first_prices(rows, values, extra)
    whole = {part: {row.name: row.rhs for row in rows} for part in users}  # regions priced
    below: dict[str, float] = {}
    for _ in range(PRICE_ROUNDS):
        if prices is None or run.out_of_time():
            return None
        priced = run.restricted(run.solve(users, supply=whole, prices=prices))
        if priced is None:
            return None
        gap = run.settings.mip_gap
        run.bound = max(run.bound, lagrangian_bound(parts, results, priced, rows, prices, gap))
        trial, trial_owner = joined_values(run.program, parts, {**results, **priced})
        held = broken_rows(run.program.lp, trial, run.bounds, trial_owner) == []
        best = run.best
        if held:
            found = run.joined(parts, results, trial, len(users))
        else:
            found = run.joined(parts, results, best.values, best.mended)
        if found is not None:
            return found
        prices, below = next_prices(prices, rows, trial, below)
    return None


def _merge_round(
    run: JoinRun,
    parts: list[Part],
    results: dict[Part, SolveResult],
    values: dict[str, float],
    owner: dict[str, Part],
    broken: list[Constraint],
) -> tuple | Optimised | None:
    """Merge the parts that carry each broken row and solve the merged ones: the new
    parts, results, join values, owners and broken rows (None: no merge mends them);
    an INFEASIBLE result when a merged part has no plan (a relaxation of the whole:
    neither has the whole); None when a broken row has one part or none, every
    workload ends in one part, or a merged part found no plan in time."""
    merged = merged_parts(parts, broken, owner, values)
    if merged is None or len(merged) < 2:
        return None
    pending = [part for part in merged if part not in results]
    run.competing = sum(1 for p in merged if len(p) > 1 and p not in run.coupled)
    gap = gap_left(run.settings.mip_gap, merged, pending, results)
    found = run.collect(run.solve(pending, gap=gap))
    if not isinstance(found, dict):
        return found
    results = {**results, **found}
    results = {part: results[part] for part in merged}
    values, owner = joined_values(run.program, merged, results)
    return merged, results, values, owner, broken_rows(run.program.lp, values, run.bounds, owner)
