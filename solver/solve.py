"""The pipeline: instance -> candidates -> pre-solve checks -> program -> backend ->
read-back -> verified Plan. Each arrow is one function of its own module; this one only
sequences them.

`solve` returns a Plan that the independent verifier has accepted, or raises
`Infeasible` (with a diagnosis naming the requirements in conflict) or `NoSolution`
(time limit or solver failure). It never returns None.

The time limit bounds the whole pipeline: the settings' deadline (started here unless the
caller started it earlier, as a command does) is checked after every stage, and every
backend call, the pricing LP included, gets only the time that is left. The solve itself
stops at `solver.settings.SOLVE_SHARE` of the limit, so that a plan found by then (not
proved within the gap: status `feasible`, its gap stated) is still priced, verified and
returned; a pricing LP not ended by `PRICING_SHARE` of it leaves the plan without shadow
prices, and the plan says so. A run that passes the deadline before it has a plan raises
`TimeLimitReached` naming the stage it was in; once the solve has one, the deadline no
longer throws it away: a plan whose read-back, pricing or verification ends past the
limit (a large plan's read-back and verification take tens of seconds) is still
verified and returned, since the time is spent either way.
"""

import dataclasses
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from models.colocation.warm_cold import splittable
from models.operations.scenarios import failure_scenarios
from models.operations.time_demand import uses_time
from models.physics.efficiency import borrowed_gpus, check_engine, engine_report
from models.schema.instance import Instance
from solver.analysis.capacity_report import with_capacity_units
from solver.analysis.diagnose import diagnose_infeasible, presolve_problems
from solver.analysis.summary import buyer_summary
from solver.backends import get_backend
from solver.candidates.pools import PoolCurve, assess_pools
from solver.candidates.size_check import check_configurations, check_program_size
from solver.candidates.table import CandidateTable, build_candidates
from solver.candidates.workers import build_candidates_parallel
from solver.colocation.tiering import search_report, tiering_report
from solver.colocation.warm_cold import solve_choosing_split
from solver.decompose.by_workload import optimise
from solver.decompose.parallel import workers_kept
from solver.decompose.workload_parts import start_by_workload
from solver.errors import BackendUnavailable, Infeasible, NoSolution, PlanRejected
from solver.plan.records import SimplicityCost
from solver.plan.schema import Plan
from solver.program.build import FleetProgram, build_program
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.program.optimised import Optimised
from solver.program.sets import ProgramSets
from solver.readback.assign import chosen_sizes, gpu_use, integral, read_plan, replica_counts
from solver.readback.pricing import priced_rows, pricing_program
from solver.settings import (
    PRICING_BACKEND,
    PRICING_SHARE,
    SOLVE_SHARE,
    SolveSettings,
    TimeLimitReached,
)
from solver.verify.fleet import verify

T = TypeVar("T")

__all__ = [
    "PRICING_BACKEND",
    "SolveSettings",
    "Solved",
    "TimeLimitReached",
    "simplicity_cost",
    "solve",
    "solve_program",
]


@dataclass(frozen=True)
class Solved:
    """A solved program with its plan (what `explain` works from)."""

    program: FleetProgram
    optimised: Optimised
    plan: Plan
    settings: SolveSettings
    curves: dict[tuple[str, str], PoolCurve]
    """(workload, candidate key) -> the chosen pools' curves at their real sizes."""
    source: Instance | None = None
    """The instance as solved, where the program's is not it (an hourly plan's program is
    its peak period's, at that period's rates)."""

    @property
    def instance(self) -> Instance:
        """The instance the plan answers (levers re-solve it)."""
        return self.source if self.source is not None else self.program.sets.instance

    @property
    def result(self) -> SolveResult:
        """The backend's result."""
        return self.optimised.result


def solve(instance: Instance, settings: SolveSettings | None = None) -> Plan:
    """The cheapest fleet that meets every requirement of the instance.

    Raises:
        Infeasible: no plan exists; its diagnosis names the requirements in conflict.
        NoSolution: the backend found no plan within the time limit, or failed;
            `TimeLimitReached` (a NoSolution) when the deadline passed, naming the stage.
        PlanRejected: the verifier rejected the solver's plan (a bug, never an answer).
    """
    return solve_program(instance, settings).plan


def solve_program(instance: Instance, settings: SolveSettings | None = None) -> Solved:
    """`solve`, keeping the program and the raw result for explanations; the returned
    settings carry the run's deadline (explain's re-solves share it)."""
    settings = (settings or SolveSettings.of(instance)).started()
    with workers_kept():  # candidates and workload solves share their worker processes
        if uses_time(instance):
            solved = _solve_in_time(instance, settings)
        elif split := splittable(instance):
            solved = solve_choosing_split(instance, split, settings, _solve_one)
        else:
            solved = _solve_one(instance, settings)
    plan = solved.plan.model_copy(update={"summary": buyer_summary(solved.plan)})
    return dataclasses.replace(solved, plan=plan)


def _solve_one(instance: Instance, settings: SolveSettings) -> Solved:
    """One program for the instance as it stands: candidates, program, solve, plan."""
    backend = get_backend(settings.backend)
    reason = backend.unavailable_reason()
    if reason:
        raise BackendUnavailable(f"backend {settings.backend!r} cannot run here: {reason}")
    check_configurations(instance)  # refused with the numbers before work that cannot end
    table = build_candidates_parallel(instance, settings)
    settings.check("candidates")
    return _solve_table(instance, settings, table)


def _solve_table(instance: Instance, settings: SolveSettings, table: CandidateTable) -> Solved:
    """`solve_program` from the candidate table on (the tiering report's dedicated
    solve reuses its co-located solve's table: the candidates do not depend on it)."""
    backend = get_backend(settings.backend)
    check_program_size(instance, table, settings.time_limit_s)
    sets = ProgramSets(instance, table, failure_scenarios(instance))
    problems = [*table.problems, *presolve_problems(sets)]
    if problems:
        raise Infeasible.from_problems(problems)
    solving = settings.within(SOLVE_SHARE)  # the rest of the limit prices and checks the plan
    parts = start_by_workload(sets, backend, solving)  # solving while the whole is built
    try:
        program = build_program(instance, table, settings=settings, sets=sets)
        settings.check("program build")
        optimised = optimise(program, backend, solving, parts=parts)
    finally:
        if parts is not None:
            parts.started.abandon()
    result = optimised.result
    if result.termination is Termination.INFEASIBLE:
        raise Infeasible(diagnose_infeasible(program, backend, settings))
    if not result.termination.has_solution:
        if result.termination is Termination.TIME_LIMIT and settings.deadline is not None:
            raise TimeLimitReached(
                "solve", settings.deadline.limit_s or 0.0, settings.deadline.elapsed_s()
            )
        raise NoSolution(
            f"{result.solver} found no plan ({result.termination}) within "
            f"{settings.time_limit_s:g} s for a program of {_size_text(program.lp)}"
            + (f": {result.message}" if result.message else "")
            + "; raise --time-limit or loosen the MIP gap",
            str(result.termination),
        )
    settings.check("solve")
    values = integral(program, result.values)
    pricer = backend if backend.capabilities.duals else get_backend(PRICING_BACKEND)
    pricing_settings = settings.within(PRICING_SHARE).with_duals()
    pricing = _in_background(pricer.run, pricing_program(program, values), pricing_settings)
    unpriced: list[str] = []

    def duals() -> dict[str, float]:
        priced = pricing()
        if priced.termination is Termination.TIME_LIMIT:
            unpriced.append(PRICING_TIMED_OUT)
            return {}
        return priced_rows(priced)

    counts = replica_counts(program.sets, values)
    curves = assess_pools(instance, chosen_sizes(program.sets, counts))
    plan = read_plan(program, optimised, values, duals, settings, curves)
    if unpriced:
        plan = plan.model_copy(update={"shadow_price_note": unpriced[0]})
    if program.groups.templates or instance.policy.colocation:
        plan = _with_tiering(instance, settings, plan, program, table)
    check = verify(instance, plan)  # past the deadline too: the plan is in hand
    if not check.ok:
        raise PlanRejected(
            "the solver's plan fails the independent verifier:\n"
            + "\n".join(f"  - {v}" for v in check.violations)
        )
    return Solved(program, optimised, with_engine(instance, plan), settings, curves)


PRICING_TIMED_OUT = (
    "no shadow prices: the pricing LP did not end within the time limit (raise --time-limit "
    "to have them)"
)


def _in_background(run: Callable[..., T], *args) -> Callable[[], T]:
    """`run(*args)` started in a thread; the returned function waits for it and gives its
    result (or raises what it raised). The pricing LP runs so while the plan is read
    back: HiGHS releases the interpreter lock while it solves, so the two share the
    cores."""
    outcome: list = []

    def target() -> None:
        try:
            outcome.append((True, run(*args)))
        except BaseException as error:  # handed to the waiting caller
            outcome.append((False, error))

    thread = threading.Thread(target=target, name="fleetplan-pricing", daemon=True)
    thread.start()

    def result() -> T:
        thread.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value

    return result


def with_engine(instance: Instance, plan: Plan) -> Plan:
    """The plan with the engine profile used and the GPU types it uses that run on
    borrowed efficiency factors (`models.physics.efficiency.efficiency_source`)."""
    used = sorted({use.gpu for use in plan.gpus if use.used} | {p.gpu for p in plan.replicas})
    specs = [instance.gpu_specs[gpu] for gpu in used if gpu in instance.gpu_specs]
    return plan.model_copy(
        update={
            "engine": check_engine(instance.engine),
            "borrowed_efficiency": bool(borrowed_gpus(specs, instance.engine)),
            "efficiency_note": engine_report(specs, instance.engine),
        }
    )


def _with_tiering(
    instance: Instance,
    settings: SolveSettings,
    plan: Plan,
    program: FleetProgram,
    table: CandidateTable,
) -> Plan:
    """The plan with its tiering report: the same instance re-solved with colocation off
    (from the same candidate table) gives the idle fraction and cost without sharing
    (solver.colocation.tiering)."""
    off = instance.model_copy(
        update={"policy": instance.policy.model_copy(update={"colocation": False})}
    )
    try:
        dedicated = _solve_table(off, settings, table).plan
    except (Infeasible, NoSolution):
        dedicated = None
    groups = program.groups
    report = tiering_report(plan, dedicated, len(groups.templates), groups.enumeration_s)
    plan, unit = with_capacity_units(instance, plan)
    return plan.model_copy(
        update={"tiering": report, "capacity_unit": unit, "colocation": search_report(groups)}
    )


def _solve_in_time(instance: Instance, settings: SolveSettings) -> Solved:
    """The hourly plan (solver.time.solve); the peak period's program stands for the
    program in what `explain` reads."""
    from solver.time.solve import solve_time

    plan, peak, values = solve_time(instance, settings)
    result = SolveResult(
        termination=Termination.OPTIMAL if plan.status == "optimal" else Termination.FEASIBLE,
        solver=plan.solver.name if plan.solver else "",
        solver_version=plan.solver.version if plan.solver else "",
        runtime_s=plan.solver.runtime_s if plan.solver else 0.0,
        objective=plan.cost_per_month,
        values=values,
    )
    return Solved(
        peak.program, Optimised(result), with_engine(instance, plan), settings, {}, instance
    )


def simplicity_cost(
    instance: Instance,
    plan: Plan,
    settings: SolveSettings,
    table: CandidateTable | None = None,
) -> SimplicityCost | None:
    """What policy.max_configs_per_pool costs: the same instance solved with the limit
    lifted (None when there is no limit); `explain` reports it (a second solve, kept out
    of `solve`). The unlimited plan is not verified or priced;
    only its cost and its number of pools are read. Not found within the time limit:
    its cost is None."""
    limit = instance.policy.max_configs_per_pool
    if limit is None or plan.cost_per_month is None:
        return None
    policy = instance.policy.model_copy(update={"max_configs_per_pool": None})
    lifted = instance.model_copy(update={"policy": policy})
    # The candidates do not depend on the limit: reuse the plan's table when given.
    table = build_candidates(lifted, settings) if table is None else table
    program = build_program(lifted, table, settings=settings)
    result = optimise(program, get_backend(settings.backend), settings).result
    if not result.termination.has_solution:
        return SimplicityCost(
            max_configs_per_pool=limit, cost_per_month_unlimited=None, extra_cost_per_month=None
        )
    values = integral(program, result.values)
    uses = gpu_use(program.sets, replica_counts(program.sets, values))
    unlimited = sum(use.cost_per_month for use in uses)
    return SimplicityCost(
        max_configs_per_pool=limit,
        cost_per_month_unlimited=unlimited,
        extra_cost_per_month=plan.cost_per_month - unlimited,
        configurations_unlimited=len(replica_counts(program.sets, values)),
    )


def _size_text(lp: LinearProgram) -> str:
    size = lp.size()
    return (
        f"{size['variables']} variables ({size['integer_variables']} integer) and "
        f"{size['constraints']} constraints"
    )
