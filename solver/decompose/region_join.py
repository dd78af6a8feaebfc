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
"""

import math
import time
from dataclasses import dataclass, replace

from solver.backends import Backend
from solver.candidates.replica_dominance import Bounds
from solver.decompose.parallel import processes_for, solve_built, worth_workers
from solver.decompose.region_bounds import MIN_INTEGERS, Rows, region_of, region_programs
from solver.program.build import FleetProgram, with_bounds
from solver.program.families.servers import ServersColumn
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.program.row_names import ReplicasColumn, split_name
from solver.settings import MIN_CALL_S, SolveSettings

FLOORED = (ReplicasColumn.family, PurchasedColumn.family, ServersColumn.family)
"""The columns `floored` holds at least at the regions' own choice."""
BOUND_SHARE = 0.5
"""Share of the time up to the deadline the regions' own programs (the bound) may take."""


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


def linking_columns(lp: LinearProgram) -> set[str]:
    """The columns that some row linking two regions (or a region and a column of none)
    mentions, and the columns of no region."""
    linked = {name for name in lp.variables if region_of(name) is None}
    for row in lp.constraints.values():
        regions = {region_of(name) for name in row.coefficients}
        if len(regions) > 1 or None in regions:
            linked.update(row.coefficients)
    return linked


def region_join(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    held: dict[str, float],
    deadline: float,
    bounds: Bounds | None = None,
) -> RegionJoin:
    """The regions' bound and the plan with the linking columns held at `held`'s values
    (a plan of the whole: the module docstring), each region's program within `bounds`
    (the caller's), solved in worker processes when worth it, until the `deadline` (a
    time.monotonic() reading)."""
    lp = program.lp
    programs = region_programs(lp)
    regions = sorted(programs)
    costed = all(region_of(name) is not None for name, cost in lp.objective.items() if cost)
    linked = linking_columns(lp)
    bound_deadline = time.monotonic() + BOUND_SHARE * max(deadline - time.monotonic(), 0.0)
    own = [programs[r] for r in regions]
    found = _solved(backend, settings, own, bound_deadline)
    proven = {regions[i]: proven_bound_of(result) for i, result in found.items()}
    rows = {
        r: (own[i].objective, b) for i, r in enumerate(regions) if (b := proven.get(r)) and b > 0
    }
    bound = None
    if costed and len(proven) == len(own) and all(b is not None for b in proven.values()):
        bound = lp.objective_constant + sum(b for b in proven.values() if b is not None)
    joined_own = {n: v for result in found.values() for n, v in result.values.items()}
    restricted = []
    for region in regions:
        alone = programs[region]
        fixed = {n: (held.get(n, 0.0),) * 2 for n in alone.variables if n in linked}
        fixed |= {n: b for n, b in (bounds or {}).items() if n in alone.variables}
        restricted.append(with_bounds(alone, fixed))
    solved = _solved(backend, settings, restricted, deadline)
    if len(solved) < len(restricted):
        return RegionJoin(bound, None, len(regions), joined_own, rows)
    values = {name: held.get(name, 0.0) for name in linked}
    for result in solved.values():
        values.update((n, v) for n, v in result.values.items() if n not in linked)
    return RegionJoin(bound, values, len(regions), joined_own, rows)


def floored(program: FleetProgram, own: dict[str, float], bounds: Bounds | None) -> LinearProgram:
    """The whole program (within `bounds`) with each pool's replicas and each region's
    purchases and servers at least what the regions' own programs chose (`own`): a
    restriction, so its plans are plans of the whole; it adds to the regions' fleets
    what the lost regions' users need."""
    floors = dict(bounds or {})
    for name, var in program.lp.variables.items():
        if split_name(name)[0] in FLOORED and own.get(name, 0.0) > 0.5 and name not in floors:
            floors[name] = (max(var.lower, float(round(own[name]))), var.upper)
    return with_bounds(program.lp, floors)


def rows_apply(lp: LinearProgram, regions: int) -> bool:
    """Whether the whole program gets region_cost rows at all
    (solver.decompose.region_bounds.region_rows: `MIN_INTEGERS`, two regions or more)."""
    return regions >= 2 and sum(var.integer for var in lp.variables.values()) >= MIN_INTEGERS


def proven_bound_of(result: SolveResult) -> float | None:
    """A proven lower bound from a region program's result (its objective less the gap
    reached), None unless it was proved within its gap: a bound from a solve the clock
    stopped is valid too, but would make the plan depend on the machine's load
    (solver.decompose.region_bounds.proven_bound)."""
    if result.termination is not Termination.OPTIMAL or result.objective is None:
        return None
    return result.objective - (result.mip_gap or 0.0) * abs(result.objective)


def _solved(
    backend: Backend, settings: SolveSettings, lps: list[LinearProgram], deadline: float
) -> dict[int, SolveResult]:
    """The programs with a solution by the `deadline`, by index (each in what is left)."""

    def build(index: int):
        return lps[index], backend

    def job_settings(_index: int) -> SolveSettings:
        left = deadline - time.monotonic()
        limit = None if math.isinf(left) else max(left, MIN_CALL_S)
        return replace(settings.limited(limit).with_duals(False), threads=1)

    integers = sum(var.integer for lp in lps for var in lp.variables.values())
    processes = processes_for(len(lps)) if worth_workers(len(lps), integers) else 1
    found = {}
    for index, result in solve_built(build, range(len(lps)), job_settings, processes):
        if result.termination.has_solution:
            found[index] = result
    return found

