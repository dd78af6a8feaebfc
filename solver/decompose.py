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
gap the union is a plan as good as the joint solve would return. Otherwise (workloads
compete for a GPU type in some region, or share an existing fleet unevenly) the joint
program is solved as one.

Whole servers (policy.buy_unit: node) and site power are shared between workloads
too: each P_w buys single GPUs against the whole power of each site (a relaxation
still), the join rounds each (r, g) purchase up to whole servers, and the joined plan
must then hold every row of the whole program, power included, and be within the gap;
otherwise the whole is solved as one.

Why: failover couples every region of a workload, and each (workload, region, phase)
rounds its replicas up on its own, so the joint branch and bound has to close hundreds
of independent roundings at once; a 0.1% gap on a large fleet is less than one
GPU-month. Apart, each program closes its own gap in well under a second. Measured on
the benchmark's 10-region x 20-workload x 6-GPU-type instance with region loss (HiGHS
1.16, one thread): the joint program stood at a 2.3% gap after 30 s and 0.38% after
300 s ($512,321/month); the twenty programs apart reach 0.02% in 2 to 5 s of solver
time ($500,554/month).

With co-location (solver.groups) a shared group template couples its members: they
share rows (its groups[t,r] column sits in each member's capacity rows), so the parts
are the connected groups of workloads coupled by some template, each solved jointly
(a workload in no template is a part of its own). The bound argument above holds part
by part.
"""

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from models.instance import BuyUnit
from models.site import gpus_bought, node_gpus
from solver.backends import Backend
from solver.candidates import CandidateTable
from solver.families.pool_sizes import PoolSizeIsColumn
from solver.families.servers import ServersColumn
from solver.families.variables import PurchasedColumn
from solver.groups import GroupTable
from solver.lp import LinearProgram, SolveResult, Termination
from solver.parallel import (
    Started,
    processes_for,
    solve_each,
    start_each,
    worth_parallel,
    worth_workers,
)
from solver.program import FleetProgram, build_program, with_bounds
from solver.replica_dominance import PoolSizes, dominance, sizes_start, with_sizes
from solver.row_names import GroupsColumn, ReplicasColumn, split_name
from solver.sets import ProgramSets
from solver.settings import MIN_CALL_S, SolveSettings
from solver.warm_start import warm_start

MIN_TIME_LIMIT_S = 1.0
"""Time the whole program still gets when the decomposition used up the limit."""
FEASIBILITY_TOLERANCE = 1e-6
"""Relative violation of a row tolerated when the union is checked against the whole."""

Bounds = dict[str, tuple[float, float | None]]


class Method(StrEnum):
    """How a program was solved."""

    ONE_PROGRAM = "one program"
    BY_WORKLOAD = "decomposed by workload"
    BY_COUPLED_WORKLOADS = "decomposed by coupled workloads"


@dataclass(frozen=True)
class Optimised:
    """A backend result and how it was reached."""

    result: SolveResult
    method: Method = Method.ONE_PROGRAM
    programs: int = 1
    """Programs solved: 1, or one per workload when decomposed."""
    processes: int = 1
    """Processes that solved them side by side (solver.parallel): 1 is this process."""

    @property
    def description(self) -> str:
        """One line for the report, e.g. `decomposed by workload: 3 independent programs
        joined` or `... joined, solved in 2 parallel processes`."""
        if self.method in (Method.BY_WORKLOAD, Method.BY_COUPLED_WORKLOADS):
            joined = f"{self.method}: {self.programs} independent programs joined"
            if self.processes > 1:
                joined += f", solved in {self.processes} parallel processes"
            return joined
        return str(self.method)


@dataclass(frozen=True)
class PartSolves:
    """Workload programs solving in worker processes since the candidate table was built
    (`start_by_workload`), one per workload in the program's order."""

    parts: tuple[tuple[str, ...], ...]
    started: Started
    processes: int


def start_by_workload(
    sets: ProgramSets, backend: Backend, settings: SolveSettings
) -> PartSolves | None:
    """Hand each workload's program to the worker processes before the whole program is
    built: with two workloads or more, no co-location (no template couples them), and
    replica counts enough to be worth the workers (solver.parallel.worth_workers) on
    idle cores. None otherwise (`optimise` then builds and solves the parts itself)."""
    instance = sets.instance
    workloads = sets.workloads
    if (
        instance.policy.colocation
        or sets.elastic
        or not worth_workers(len(workloads), len(sets.pools))
    ):
        return None
    processes = processes_for(len(workloads))
    size = {w: 0 for w in workloads}
    for pool in sets.pools:
        size[pool.workload] += 1 + len(pool.tiers)  # its replica count and pooling steps
    order = sorted(range(len(workloads)), key=lambda i: -size[workloads[i]])
    arguments = [
        (backend.name, *_part_inputs(sets, (workloads[i],)), settings.with_duals(False))
        for i in order
    ]
    started = start_each(_solve_part, arguments, processes)
    if started is None:
        return None
    return PartSolves(tuple((workloads[i],) for i in order), started, processes)


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
    starting from the plan of a restriction of it (solver.warm_start) when the program
    is large enough. Pools are first bounded to the sizes an optimal plan needs
    (solver.replica_dominance), except where `bounds` name the candidates involved; the
    result holds the program's columns only."""
    started = time.monotonic()
    reduction = dominance(program, bounds)
    bounds = {**reduction.bounds, **(bounds or {})} or None
    if len(program.sets.workloads) > 1:
        joined = solve_by_workload(program, backend, settings, bounds, reduction.sizes, parts)
        if joined is not None:
            return joined
    lp = with_bounds(program.lp, bounds) if bounds else program.lp
    first = settings.limited(_left_s(settings, started)).with_duals(False)
    start = warm_start(program, backend, first, bounds)
    if start is not None:
        start |= sizes_start(reduction.sizes, start)
    one = settings.limited(_left_s(settings, started)).with_duals(False)  # the start's time out
    result = backend.run(with_sizes(lp, reduction.sizes), one, start=start)
    own = {name: value for name, value in result.values.items() if name in program.lp.variables}
    return Optimised(replace(result, values=own))


def _left_s(settings: SolveSettings, started: float) -> float | None:
    """What is left of the settings' time limit since `started` (at least
    `MIN_TIME_LIMIT_S`), None without a limit."""
    if settings.time_limit_s is None:
        return None
    return max(settings.time_limit_s - (time.monotonic() - started), MIN_TIME_LIMIT_S)


def workload_program(program: FleetProgram, workload: str | tuple[str, ...]) -> FleetProgram:
    """The program of one workload (or of workloads coupled by shared groups) alone, over
    the whole supply (and the whole power of each site), buying single GPUs: whole
    servers are shared between workloads, so rounding each workload's purchase up to
    servers on its own would not be a relaxation; the join rounds the sum (`_purchases`)."""
    part = (workload,) if isinstance(workload, str) else workload
    alone, table, scenarios = _part_inputs(program.sets, part)
    return build_program(alone, table, scenarios, groups=program.groups.restricted(part))


def _part_inputs(sets: ProgramSets, part: tuple[str, ...]) -> tuple:
    """(instance, candidate table, scenarios) of the part's program (`workload_program`)."""
    policy = sets.instance.policy.model_copy(update={"buy_unit": BuyUnit.GPU})
    alone = sets.instance.model_copy(
        update={
            "workloads": [w for w in sets.instance.workloads if w.name in part],
            "policy": policy,
        }
    )
    return alone, CandidateTable({w: sets.table.of(w) for w in part}), sets.scenarios


def _solve_part(backend: str, instance, table, scenarios, settings: SolveSettings) -> SolveResult:
    """One workload's program built, bounded by dominance and solved, in a worker (one
    solver thread): what `solve_by_workload` does for a part in this process."""
    from solver.backends import get_backend

    part = build_program(instance, table, scenarios, groups=GroupTable())
    reduction = dominance(part)
    lp = with_sizes(with_bounds(part.lp, reduction.bounds), reduction.sizes)
    return get_backend(backend).run(lp, replace(settings, threads=1))


def solve_by_workload(
    program: FleetProgram,
    backend: Backend,
    settings: SolveSettings,
    bounds: Bounds | None = None,
    sizes: Sequence[PoolSizes] = (),
    started: PartSolves | None = None,
) -> Optimised | None:
    """Solve each workload's program apart and join the solutions (each with the size
    rows of its pools among `sizes`, solver.replica_dominance); with `started`, the
    results of the parts handed to the workers already.

    Returns the joined result when it is feasible for the whole program and within the
    requested gap; a result with termination INFEASIBLE when some workload alone has no
    plan (then neither has the whole); None when the whole must be solved as one.
    """
    bounds = bounds or {}
    limit_s = settings.time_limit_s if settings.time_limit_s is not None else float("inf")
    deadline = time.monotonic() + limit_s
    values: dict[str, float] = {}
    lower_bound = 0.0
    runtime_s = 0.0
    solver = version = ""
    parts = program.groups.components(program.sets.workloads)
    if len(parts) < 2:
        return None
    method = Method.BY_COUPLED_WORKLOADS if program.groups.templates else Method.BY_WORKLOAD

    def infeasible(result: SolveResult) -> bool:
        return result.termination is Termination.INFEASIBLE

    if started is not None and sorted(started.parts) == sorted(parts):
        parts, processes = list(started.parts), started.processes
        backend.prepare(program.lp)  # while the workers solve (the pricing LP is the whole)
        results = started.started.results(stop=infeasible)
    else:
        lps = []
        for workload in parts:
            part = workload_program(program, workload)
            own = {name: bound for name, bound in bounds.items() if name in part.lp.variables}
            lps.append(with_sizes(with_bounds(part.lp, own), sizes))
        processes = processes_for(len(lps)) if worth_parallel(lps) else 1

        def part_settings(_index: int) -> SolveSettings:
            left = max(deadline - time.monotonic(), MIN_CALL_S)
            limited = None if settings.time_limit_s is None else left
            return settings.limited(limited).with_duals(False)

        results = solve_each(backend, lps, part_settings, processes, stop=infeasible)
    for index, result in results:
        workload = parts[index]
        runtime_s += result.runtime_s
        solver, version = result.solver, result.solver_version
        if result.termination is Termination.INFEASIBLE:
            who = workload[0] if len(workload) == 1 else "+".join(workload)
            alone = replace(result, runtime_s=runtime_s, message=f"{who} alone: infeasible")
            return Optimised(alone, method, len(parts), processes)
        if not result.termination.has_solution or result.objective is None:
            return None
        gap = result.mip_gap if result.mip_gap is not None else settings.mip_gap
        lower_bound += result.objective * (1 - max(gap, 0.0))
        values.update({name: value for name, value in result.values.items() if _per_workload(name)})
    values.update(_purchases(program, values))
    if not _feasible(program.lp, values, bounds):
        return None
    upper_bound = program.lp.objective_value(values)
    gap = (upper_bound - lower_bound) / upper_bound if upper_bound > 0 else 0.0
    if gap > settings.mip_gap + 1e-9:
        return None
    joined = SolveResult(
        termination=Termination.OPTIMAL,
        solver=solver,
        solver_version=version,
        runtime_s=runtime_s,
        objective=upper_bound,
        values=values,
        mip_gap=max(gap, 0.0),
    )
    optimised = Optimised(joined, method, len(parts), processes)
    return replace(optimised, result=replace(joined, message=optimised.description))


def _per_workload(name: str) -> bool:
    """Columns the join takes from a workload's solution (purchases are rounded on the
    whole; the size binaries are not the program's)."""
    family = split_name(name)[0]
    return family not in (PurchasedColumn.family, ServersColumn.family, PoolSizeIsColumn.family)


def _purchases(program: FleetProgram, values: dict[str, float]) -> dict[str, float]:
    """purchased[r,g] = max(0, used - existing), in whole servers servers[r,g] where
    bought so (models.site.gpus_bought), for the joined replicas."""
    sets = program.sets
    used = {key: 0.0 for key in sets.offers}
    for pool in sets.pools:
        name = ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name()
        count = values.get(name, 0.0)
        used[(pool.region, pool.candidate.gpu)] += round(count) * pool.candidate.gpus
    for t in program.groups.templates:
        for r, g in sets.offers:
            if g == t.gpu:
                count = values.get(GroupsColumn(t.key, r).name(), 0.0)
                used[(r, g)] += round(count) * t.gpus
    values = {}
    for (r, g), offer in sets.offers.items():
        n = node_gpus(sets.instance, g)
        bought = gpus_bought(round(used[(r, g)]), offer.existing, n)
        values[PurchasedColumn(r, g).name()] = float(bought)
        if ServersColumn(r, g).name() in program.lp.variables:
            values[ServersColumn(r, g).name()] = float(bought // n)
    return values


def _feasible(lp: LinearProgram, values: dict[str, float], bounds: Bounds) -> bool:
    for name, var in lp.variables.items():
        lower, upper = bounds.get(name, (var.lower, var.upper))
        value = values.get(name, 0.0)
        if value < lower - FEASIBILITY_TOLERANCE or (
            upper is not None and value > upper + FEASIBILITY_TOLERANCE
        ):
            return False
    for row in lp.constraints.values():
        scale = 1.0 + sum(abs(c * values.get(v, 0.0)) for v, c in row.coefficients.items())
        if row.slack(values) < -FEASIBILITY_TOLERANCE * scale:
            return False
    return True
