"""Whole servers by region: a bound from the regions' own programs, and a plan from the
same programs with the routing between regions held.

Partition the program's columns by the region their index names
(solver.decompose.region_bounds.region_of). Region r's own program P_r keeps r's columns
and every row that mentions them only: r's pools, its purchases in whole servers, its
capacity in every scenario. Every other row links regions; in the fleet program those
are the demand rows of the scenarios that reroute (a lost region's users served by
others). Any plan x of the whole program, restricted to r, satisfies P_r, so

    bound = sum_r z_r  <=  the optimum,      z_r a proven bound on P_r

when every column with a cost names a region (a column of none could make the whole
cheaper than its regions). The parts' bound (solver.decompose.by_workload) buys single
GPUs, each workload alone; this one buys whole servers shared by every workload of a
region but leaves out the capacity a region keeps for others' users when their region
is lost. Neither dominates the other; the run states the higher (`JoinRun.bound`).

The plan: take a plan y of the whole (the parts' join, whose routing serves every
scenario), hold every column that a linking row mentions (and every column of no
region) at y's value, and solve each region's program P_r^y with those held: a region
carries the load y routes to it in every scenario, with its own pools and whole servers.
Every linking row then holds as it does for y, every other row is some P_r's, so the
union of the regions' solutions is a plan of the whole (checked against every row,
solver.decompose.join_values.broken_rows), an upper bound; its regions buy whole servers
together, where the join rounded each region's purchase of the parts' single GPUs.

A second plan needs no parts (`floored`): the whole program with each pool's replicas
and each region's purchases and servers at least what the regions' own programs chose.
A restriction, so its plans are plans of the whole; it only adds what the lost regions'
users need to fleets that already serve every region's own users at the regions'
bound. Without linking rows (no region loss) the regions' own solutions are a plan and
the bound is the optimum. A solve with whole servers starts with these plans
(solver.decompose.regions.plan), floored at the regions' own fleets.
"""

import math
import time
from collections import defaultdict
from dataclasses import dataclass, replace

from models.operations.site import gpus_bought, node_gpus
from solver.backends import Backend
from solver.candidates.config_dominance import config_bounds
from solver.candidates.replica_dominance import Bounds
from solver.decompose.cover import bounds_by_region
from solver.decompose.parallel import processes_for, solve_built, worth_workers
from solver.decompose.region_bounds import (
    MIN_INTEGERS,
    Rows,
    bound_of,
    region_of,
    region_programs,
)
from solver.decompose.regions.timing import bound_share, worth_starting
from solver.program.build import FleetProgram, with_bounds
from solver.program.families.servers import ServersColumn
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import Constraint, LinearProgram, SolveResult
from solver.program.row_names import ReplicasColumn, split_name
from solver.settings import MIN_CALL_S, SolveSettings

FLOORED = (ReplicasColumn.family, PurchasedColumn.family, ServersColumn.family)
"""The columns `floored` holds at least at the regions' own choice (replicas) or what it needs."""
COVER = True
"""Whether a region (or the whole) whose programs the clock stopped before a plan takes
the cover built without a solver (solver.decompose.regions.plan.covered, which reads it here,
as the regions' stopped bound does); off, the bench's `before`
(tests/bench/test_tight_limits_bench.py)."""


@dataclass(frozen=True)
class RegionJoin:
    """What the regions' programs give: the bound on the whole (None when some region's
    program proved none in time, or a column with a cost names no region), and the
    plan's values (None when some held program found no plan)."""

    bound: float | None
    values: dict[str, float] | None
    regions: int
    own: dict[str, float]
    """The regions' own programs' solutions joined (a plan of none but the regions)."""
    rows: Rows
    """Each region's cost terms and proven bound, where positive: the whole program's
    region_cost rows (solver.decompose.region_bounds), worked out once."""
    stopped: float | None = None
    """The bound of the regions' programs where the clock stopped some before their gap
    was proved (`stopped_bound_of`: valid, but it depends on the machine's load), each
    region's raised to the cover's bound on it where higher (a region without a plan
    counts that, or 0), None when neither states one or a column with a cost names no
    region; the bound a plan's gap is stated against when `bound` is None
    (solver.decompose.regions.plan), never a proof."""


def linking_columns(lp: LinearProgram) -> set[str]:
    """The columns that some row linking two regions (or a region and a column of none)
    mentions, and the columns of no region."""
    linked = {name for name in lp.variables if region_of(name) is None}
    for row in lp.constraints.values():
        if _links_regions(row):
            linked.update(row.coefficients)
    return linked


def _links_regions(row: Constraint) -> bool:
    """Whether `row` names columns of two regions, or a column of none."""
    regions = {region_of(name) for name in row.coefficients}
    return len(regions) > 1 or None in regions


def independent(program: FleetProgram) -> bool:
    """Whether no row links two regions and every column is some region's (no failover
    scenario, no supply or choice shared between regions: survive none, say), i.e. no
    `linking_columns`: then the regions' own programs are the whole program, and their
    plans joined its plan. Read once per program (kept in its `region_costs`): the solve
    asks three times, and on a 40,000-row program each reading took ~1 s; a program with
    a linking row stops at the first."""
    lp = program.lp
    known = program.region_costs.get("independent")
    if known is None or known[0] is not lp:
        alone = all(region_of(name) is not None for name in lp.variables) and not any(
            _links_regions(row) for row in lp.constraints.values()
        )
        known = program.region_costs["independent"] = (lp, alone)
    return known[1]


def region_join(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    held: dict[str, float] | None,
    deadline: float,
    bounds: Bounds | None = None,
) -> RegionJoin:
    """The regions' bound and the plan with the linking columns held at `held`'s values
    (a plan of the whole: the module docstring; none without `held`), each region's
    program within `bounds` (the caller's), solved in worker processes when worth it,
    until the `deadline` (a time.monotonic() reading). The regions' own programs are
    solved once per program (kept in its `region_costs`)."""
    lp = program.lp
    known = program.region_costs.get("own")
    if known is not None and known[0] is lp:
        bound, joined_own, rows, regions, stopped = known[1:]
    else:
        bound, joined_own, rows, regions, stopped = _own(program, backend, settings, deadline)
        program.region_costs["own"] = (lp, bound, joined_own, rows, regions, stopped)
    if held is None:
        return RegionJoin(bound, None, len(regions), joined_own, rows, stopped)
    programs = region_programs(lp)
    linked = linking_columns(lp)
    restricted = []
    for region in regions:
        alone = programs[region]
        fixed = {n: (held.get(n, 0.0),) * 2 for n in alone.variables if n in linked}
        fixed |= {n: b for n, b in (bounds or {}).items() if n in alone.variables}
        restricted.append(with_bounds(alone, fixed))
    solved = _solved(backend, settings, restricted, deadline)
    if len(solved) < len(restricted):
        return RegionJoin(bound, None, len(regions), joined_own, rows, stopped)
    values = {name: held.get(name, 0.0) for name in linked}
    for result in solved.values():
        values.update((n, v) for n, v in result.values.items() if n not in linked)
    return RegionJoin(bound, values, len(regions), joined_own, rows, stopped)


def _own(program: FleetProgram, backend: Backend, settings: SolveSettings, deadline: float):
    """(bound, their solutions joined, region_cost rows, regions, the bound where the
    clock stopped some: `RegionJoin.stopped`, each region's the higher of its program's
    and the cover's, solver.decompose.cover.bounds_by_region) of the regions' own
    programs, in their share of the time to the `deadline` (solver.decompose.regions.timing:
    all of it where no row links regions, nothing follows them), none solved where that
    share is too short for them to find plans (`worth_starting`)."""
    lp = program.lp
    linked = not independent(program)
    if linked and not _in_time(program, deadline):  # no plan: the parts and their covers
        return None, {}, {}, list(program.sets.regions), None
    programs = region_programs(lp)
    regions = sorted(programs)
    costed = all(region_of(name) is not None for name, cost in lp.objective.items() if cost)
    # pools another layout stands in for (solver.candidates.config_dominance): the
    # argument holds for a region's own program too (its rows are some of the whole's)
    removed = config_bounds(program)
    for r in regions:
        alone = {name: b for name, b in removed.items() if name in programs[r].variables}
        programs[r] = with_bounds(programs[r], alone) if alone else programs[r]
    own = [programs[r] for r in regions]
    processes = _processes(len(own), _integers(own))
    share = bound_share(len(own), processes) if linked else 1.0
    bound_deadline = time.monotonic() + share * max(deadline - time.monotonic(), 0.0)
    found = _solved(backend, settings, own, bound_deadline, processes)
    proven = {regions[i]: bound_of(result, own[i], settings) for i, result in found.items()}
    rows = {
        r: (own[i].objective, b) for i, r in enumerate(regions) if (b := proven.get(r)) and b > 0
    }
    bound = None
    if costed and len(proven) == len(own) and all(b is not None for b in proven.values()):
        bound = lp.objective_constant + sum(b for b in proven.values() if b is not None)
    stopped = None
    covering = bounds_by_region(lp) if COVER and costed and bound is None else None
    if costed and (found or covering):  # a region without a plan bounds its cost by 0
        stopped = lp.objective_constant + sum(
            max(
                stopped_bound_of(found[i]) if i in found else 0.0,
                (covering or {}).get(region, 0.0),
            )
            for i, region in enumerate(regions)
        )
    joined_own = {n: v for result in found.values() for n, v in result.values.items()}
    return bound, joined_own, rows, regions, stopped


def floored(program: FleetProgram, own: dict[str, float], bounds: Bounds | None) -> LinearProgram:
    """The whole program (within `bounds`) with each pool's replicas at least what the
    regions' own programs chose (`own`), and each region's purchases and servers at least
    what those replicas need (max(0, used - existing) in whole servers, as the read-back
    buys): a restriction, so its plans are plans of the whole; it adds to the regions'
    fleets what the lost regions' users need. Not at `own`'s purchases: a region program
    the clock stopped may hold servers no pool uses, which every later plan would pay for
    (a 30 x 30 x 6 region-loss run at 60 s ended on an objective 5 times its pools'
    cost)."""
    floors = dict(bounds or {})
    sets = program.sets
    used: dict[tuple[str, str], int] = defaultdict(int)
    for pool in sets.pools:
        count = own.get(ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name(), 0)
        used[(pool.region, pool.candidate.gpu)] += round(count) * pool.candidate.gpus
    need: dict[str, float] = {}
    for (region, gpu), gpus in used.items():
        node = node_gpus(sets.instance, gpu)
        bought = gpus_bought(gpus, sets.offers[(region, gpu)].existing, node)
        need[PurchasedColumn(region, gpu).name()] = bought
        need[ServersColumn(region, gpu).name()] = bought / node
    for name, var in program.lp.variables.items():
        family = split_name(name)[0]
        least = own.get(name, 0.0) if family == ReplicasColumn.family else need.get(name, 0.0)
        if family in FLOORED and least > 0.5 and name not in floors:
            floors[name] = (max(var.lower, float(round(least))), var.upper)
    return with_bounds(program.lp, floors)


def keep_rows(program: FleetProgram, found: RegionJoin) -> None:
    """Keep the regions' bounds as the whole program's region_cost rows, where it gets
    them at all (solver.decompose.region_bounds.region_rows: `MIN_INTEGERS`, two regions
    or more), so that they are not worked out again (its `region_costs`)."""
    lp = program.lp
    integers = sum(var.integer for var in lp.variables.values())
    if program.region_costs.get("lp") is lp or not found.rows:
        return
    if found.regions >= 2 and integers >= MIN_INTEGERS:
        program.region_costs.update(lp=lp, rows=found.rows)


def stopped_bound_of(result: SolveResult) -> float:
    """The lower bound any region program's result with a plan gives, proved or stopped
    by the clock: objective x (1 - gap), 0 when the backend states no gap (a region's
    cost is never negative)."""
    objective = result.objective or 0.0
    if result.mip_gap is None:
        return 0.0
    return max(objective - min(max(result.mip_gap, 0.0), 1.0) * abs(objective), 0.0)


def _in_time(program: FleetProgram, deadline: float) -> bool:
    """Whether the regions' own programs would get `worth_starting` time each by the
    `deadline`, told before they are built (0.3-0.5 s on 10 x 20 x 6): by the program's
    regions and integer columns (at least the regions' programs')."""
    regions = len(program.sets.regions)
    processes = _processes(regions, _integers([program.lp]))
    share_s = bound_share(regions, processes) * max(deadline - time.monotonic(), 0.0)
    return worth_starting(regions, processes, share_s)


def _integers(lps: list[LinearProgram]) -> int:
    """The integer columns of the programs `lps`."""
    return sum(var.integer for lp in lps for var in lp.variables.values())


def _processes(programs: int, integers: int) -> int:
    """The processes `_solved` solves `programs` programs of `integers` integer columns in."""
    return processes_for(programs) if worth_workers(programs, integers) else 1


def _solved(
    backend: Backend,
    settings: SolveSettings,
    lps: list[LinearProgram],
    deadline: float,
    processes: int | None = None,
) -> dict[int, SolveResult]:
    """The programs with a solution by the `deadline`, by index: each gets an equal share
    of what is left when it starts (per process), so that a slow one leaves the others time;
    in `processes` processes where the caller worked them out (`_processes`)."""
    if processes is None:
        processes = _processes(len(lps), _integers(lps))
    started = [0]

    def build(index: int):
        return lps[index], backend

    def job_settings(_index: int) -> SolveSettings:
        left = deadline - time.monotonic()
        waiting = max(len(lps) - started[0], 1)
        started[0] += 1
        share = left * min(processes, waiting) / waiting
        limit = None if math.isinf(left) else max(share, MIN_CALL_S)
        return replace(settings.limited(limit).with_duals(False), threads=1)

    found = {}
    for index, result in solve_built(build, range(len(lps)), job_settings, processes):
        if result.termination.has_solution:
            found[index] = result
    return found
