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

from dataclasses import replace

from models.schema.instance import Instance
from solver.backends import Backend
from solver.decompose.by_workload import optimise
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


def applies(instance: Instance) -> bool:
    """Whether `scenario_rows: cuts` is exact for the instance: a failure policy that
    reroutes (region or zone loss) and no shared groups."""
    return instance.policy.survive.value in ("region", "zone") and not instance.policy.colocation


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
    sets = program.sets
    credit = TransportCredit(sets)
    lp = program.lp
    added = sum(add_hall_row(lp, credit, cut) is not None for cut in seed_cuts(sets))
    quiet = settings.with_duals(False)
    lp_rounds = 0
    while lp_rounds < MAX_LP_ROUNDS:
        relaxed = backend.run(with_bounds(lp, bounds or {}, relax=True), quiet)
        lp_rounds += 1
        if not relaxed.termination.has_solution:
            if relaxed.termination is Termination.INFEASIBLE:
                return Optimised(relaxed, cuts=added, cut_rounds=lp_rounds)
            break  # out of time, say: the integer rounds decide
        new = _separate(lp, credit, relaxed.values)
        added += new
        if not new:
            break
    mip_rounds = 0
    while True:
        optimised = optimise(program, backend, quiet, bounds)
        result = optimised.result
        mip_rounds += 1
        rounds = {"cuts": added, "cut_rounds": lp_rounds + mip_rounds}
        if not result.termination.has_solution:
            return replace(optimised, **rounds)
        new = _separate(lp, credit, result.values)
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
    values = dict(result.values) | routing_values(credit, result.values, sets.cut_scenarios)
    return replace(optimised, result=replace(result, values=values), **rounds)


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


def _separate(lp: LinearProgram, credit: TransportCredit, values: dict[str, float]) -> int:
    """Add to `lp` the broken Hall row of every (cut scenario, workload) at `values`; how
    many are new (a broken row already there is the solver's tolerance)."""
    sets = credit.sets
    added = 0
    for f in sets.cut_scenarios:
        for w in sets.workloads:
            if not any((w, o) in sets.demand for o in sets.regions):
                continue
            cut = transport(credit, f, w, values).cut
            if cut is not None and add_hall_row(lp, credit, cut) is not None:
                added += 1
    return added
