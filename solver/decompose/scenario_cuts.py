"""Failover scenarios by cuts: the program without the rerouting scenarios' routing, and
the Hall rows their transport problems need, added as solutions break them.

With `scenario_rows: cuts` (ProgramSets.scenario_rows) region and zone loss have no
served, mode_split, demand or capacity rows: each (scenario f, workload w) is a transport
problem whose capacities are linear in the program's columns, feasible iff every Hall
row holds (solver.program.families.hall). The program with some of them is a relaxation
of the routing program; the loop

    1. add the seed rows (solver.program.families.hall.seed_cuts: every row of a workload
       with at most 6 origins; else every origin together and the lost region's users)
    2. solve the LP relaxation; for every (f, w) find a minimum cut of the transport
       problem at its solution (solver.program.transport); add each broken row; repeat
       until none is broken
    3. solve the integer program (solver.decompose.by_workload.optimise: workload by
       workload where they do not compete, each part with its workloads' Hall rows);
       the same separation; repeat until none is broken

ends with an integer solution that breaks no Hall row, so its fleet serves every
scenario: it is feasible for the routing program, and optimal for it (within the gap
reached) since every program solved was a relaxation of it. Step 2 only finds rows
cheaply (each LP is a fraction of a MIP); step 3 alone would be exact. The scenarios'
routing is then read back as a flow of each transport problem
(solver.program.transport.routing_values): the plan's routing and loads, as the
routing program would state them (any flow that serves everyone: the routing program
prices no route).

Where it is exact: the credits of a scenario's capacity rows depend on the routes the
latency policy allows, never on the routing chosen (the TTFT target less the longest
round trip of the users the scenario may reroute to a region, whether or not any come),
which is what makes the transport problem's capacities linear. Shared groups
(policy.colocation) extend the capacity rows after they are built and are not in the
Hall rows: `applies` keeps such instances, and hourly programs, on the routing rows.
"""

import time
from dataclasses import dataclass, replace

from models.schema.instance import Instance
from solver.backends import Backend
from solver.decompose.by_workload import optimise
from solver.decompose.workload_parts import workload_program
from solver.program.build import FleetProgram, with_bounds
from solver.program.families.hall import TransportCredit, add_hall_row, seed_cuts
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.program.optimised import Optimised
from solver.program.transport import routing_values, transport
from solver.settings import SolveSettings

MAX_LP_ROUNDS = 50
"""LP rounds before the integer rounds start however many rows the LP still breaks."""
MAX_ROUNDS = 200
"""Integer rounds before the loop gives up (each adds at least one new row)."""
LP_ROUNDS_SHARE = 0.15
"""Share of the solve's time left when they start that the LP rounds may take under a time
limit: they only find rows early (the integer rounds alone are exact), and on a tight limit
the regions' programs need the time more (10 x 20 x 6 region loss at the defaults: the
seed rows are all the rows its plans need, and its LP rounds took 1.1-1.7 s, a third of
what a 10 s limit leaves the solve; tests/bench/test_short_limits_bench.py); 1.0, the
bench's `before`."""


def applies(instance: Instance) -> bool:
    """Whether `scenario_rows: cuts` is exact for the instance: a failure policy that
    reroutes (region or zone loss) and no shared groups."""
    return instance.policy.survive.value in ("region", "zone") and not instance.policy.colocation


AUTO_MIN_REGIONS = 5
"""Regions from which `scenario_rows: auto` (the default) takes cut rows where they are
exact: below it the routing program is small (a lost region reroutes at most a few
regions' users) and the loop's extra solves cost more than they save, and the plan
states the routing program's own capacity and demand rows as what binds."""


@dataclass(frozen=True)
class FailoverRows:
    """How region and zone loss enter the program, and why."""

    cuts: bool
    """By Hall rows (this module), else by routing columns."""
    note: str = ""
    """For the plan's `solver.method` where routing columns stand in for cut rows that
    were asked for (or chosen by `auto`) but are not exact; empty otherwise (the cut
    loop states its rows itself)."""


def failover_rows(instance: Instance, asked: str) -> FailoverRows:
    """`routing`, `cuts` (where exact: `applies`) or `auto` (cut rows where exact and the
    instance has `AUTO_MIN_REGIONS` regions or more) as a choice for this instance. The
    routing rows of `auto` below the regions are the program's own and say nothing; where
    cut rows were asked for or chosen and are not exact, the plan's method says so."""
    if asked == "routing" or instance.policy.survive.value not in ("region", "zone"):
        return FailoverRows(False)
    if asked == "auto" and len(instance.regions) < AUTO_MIN_REGIONS:
        return FailoverRows(False)
    if not applies(instance):
        return FailoverRows(
            False, "failover scenarios by routing rows (shared groups: cut rows are not exact)"
        )
    return FailoverRows(True)


def solve_by_cuts(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    bounds: dict[str, tuple[float, float | None]] | None = None,
) -> Optimised:
    """The loop of the module docstring on a program built with `scenario_rows: cuts`
    (its LP gains the Hall rows added), with some variables' bounds replaced (explain's
    re-solve without a pool). The result's values hold the routing of every cut
    scenario too (served and mode load columns, which the LP does not have)."""
    credit = TransportCredit(program.sets)
    lp = program.lp
    added = sum(add_hall_row(lp, credit, cut) is not None for cut in seed_cuts(program.sets))
    quiet = settings.with_duals(False)
    found, lp_rounds, infeasible, lp_bound = _lp_rounds(
        program, backend, quiet, credit, bounds or {}
    )
    added += found
    if infeasible is not None:
        return Optimised(infeasible, cuts=added, cut_rounds=lp_rounds)
    mip_rounds = 0
    while True:
        optimised = optimise(program, backend, quiet, bounds)
        result = optimised.result
        mip_rounds += 1
        rounds = {"cuts": added, "cut_rounds": lp_rounds + mip_rounds}
        if not result.termination.has_solution:
            return replace(optimised, **rounds)
        new = len(_separate(lp, credit, result.values))
        added += new
        if not new:
            break
        if mip_rounds >= MAX_ROUNDS:
            stopped = SolveResult(
                Termination.ERROR,
                result.solver,
                result.solver_version,
                result.runtime_s,
                message=f"scenario cuts: rows still broken after {MAX_ROUNDS} integer rounds",
            )
            return Optimised(stopped, **rounds)
    values = dict(result.values) | routing_values(credit, result.values, program.sets.cut_scenarios)
    result = replace(result, values=values).within(lp_bound, settings.mip_gap)
    return replace(optimised, result=result, **rounds)


def priced_by_cuts(
    program: FleetProgram, backend: Backend, pricing: LinearProgram, settings: SolveSettings
) -> SolveResult:
    """The pricing LP (solver.readback.pricing: the plan's choices fixed, its counts
    continuous) with the Hall rows it breaks added until it breaks none, so that its
    duals are those of the routing program's pricing LP: the rows the integer loop
    added need not hold every fractional point. Rows go into `pricing` only (the plan
    is read back from `program` meanwhile); their duals are the scenarios' prices."""
    credit = TransportCredit(program.sets)
    while True:
        result = backend.run(pricing, settings)
        if not result.termination.has_solution:
            return result
        if not _separate(pricing, credit, result.values):
            return result


def _lp_rounds(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    credit: TransportCredit,
    bounds: dict[str, tuple[float, float | None]],
) -> tuple[int, int, SolveResult | None, float | None]:
    """Step 2 workload by workload: a Hall row names one workload's columns only, so the
    rows a workload's LP relaxation breaks are found on its own program
    (solver.decompose.workload_parts: its columns, its rows, its Hall rows so far, the
    whole supply) relaxed, without the other workloads' columns; each row found goes
    into that LP and into the whole program's. (The whole program's LP grows as
    regions^2 x workloads and a simplex on it more than linearly; the parts' LPs add
    up linearly.) Returns (rows added, the most rounds any workload took, the result
    of a workload whose LP is infeasible: then so is the whole, or None, and a lower
    bound on the whole program).

    The bound: each workload's program is a relaxation of the whole restricted to it
    (solver.decompose.by_workload: LB = sum_w bound(P_w)), its LP relaxation with some of
    its Hall rows a relaxation of that, so the sum over workloads of the last LP each
    solved to optimality bounds the whole program's optimum (a workload whose LP did not
    end optimal, or that the deadline or `LP_ROUNDS_SHARE` left out, counts 0: no plan
    costs less). Where the regions' own programs prove little (50 x 50 x 6 region loss,
    stopped near the root in their share of the time), this is the bound a plan's gap is
    stated against."""
    sets = program.sets
    added, most, bound = 0, 0, program.lp.objective_constant
    left_s = settings.remaining_s()
    stop_at = None if left_s is None else time.monotonic() + LP_ROUNDS_SHARE * left_s
    floors: dict[str, float] = {}
    program.region_costs["lp_floors"] = (program.lp, floors)  # the parts' floors (join_run)
    for w in sets.workloads:
        if not any((w, o) in sets.demand for o in sets.regions):
            continue
        relaxed = with_bounds(workload_program(program, w).lp, bounds, relax=True)
        rounds, proven = 0, 0.0
        while rounds < MAX_LP_ROUNDS:
            result = backend.run(relaxed, settings)
            rounds += 1
            if result.termination is Termination.INFEASIBLE:
                return added, max(most, rounds), result, None
            if not result.termination.has_solution:
                break  # out of time, say: the integer rounds decide
            if result.termination is Termination.OPTIMAL and result.objective is not None:
                proven = max(result.objective - relaxed.objective_constant, 0.0)
            new = _separate(program.lp, credit, result.values, (w,))
            for name in new:
                row = program.lp.constraints[name]
                relaxed.add_constraint(name, row.family, row.coefficients, row.sense, row.rhs)
            added += len(new)
            if not new:
                break
        most = max(most, rounds)
        bound += proven
        floors[w] = proven
        if settings.spent() or (stop_at is not None and time.monotonic() > stop_at):
            break
    return added, most, None, bound


def _separate(
    lp: LinearProgram,
    credit: TransportCredit,
    values: dict[str, float],
    workloads: tuple[str, ...] | None = None,
) -> list[str]:
    """Add to `lp` the broken Hall row of every (cut scenario, workload) at `values` (of
    `workloads` only, if given); the names of those that are new (a broken row already
    there is the solver's tolerance)."""
    sets = credit.sets
    added = []
    for f in sets.cut_scenarios:
        for w in workloads or sets.workloads:
            if not any((w, o) in sets.demand for o in sets.regions):
                continue
            cut = transport(credit, f, w, values).cut
            if cut is not None and (name := add_hall_row(lp, credit, cut)) is not None:
                added.append(name)
    return added
