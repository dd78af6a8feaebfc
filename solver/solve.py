"""The pipeline: instance -> candidates -> pre-solve checks -> program -> backend ->
read-back -> verified Plan. Each arrow is one function of its own module; this one only
sequences them.

`solve` returns a Plan that the independent verifier has accepted, or raises `Infeasible`
(a diagnosis naming the requirements in conflict) or `NoSolution` (time limit, failure).

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

Every horizon passes one sequence (`_solve_table`): the size guard, the program's build,
the deadline checked after it, the solve stopped at `SOLVE_SHARE`, the solver's answer
judged (solver.stages), the pricing LP in the background while the plan is read back,
the verifier. What differs between horizons is the program step, chosen by the
horizon (solver.time.horizon.Horizon: its periods and its month): the static program
(`StaticStep`: one period, the whole day at its peak; solved by workload or by cut rows)
or the periods program of a day (solver.time.step.PeriodsStep: one static copy per
period joined by the pricing rows, read back hour by hour, checked by the hour
verifier). A procurement horizon runs the same sequence for every month, rolling
(`_solve_months`; solver.time.horizon says why), and verifies the horizon once.
"""

import dataclasses
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from models.colocation.warm_cold import splittable
from models.operations.scenarios import failure_scenarios
from models.operations.time_demand import uses_time
from models.physics.efficiency import borrowed_gpus, check_engine, engine_report
from models.schema.instance import Instance
from solver.analysis.capacity_bands import with_bands
from solver.analysis.capacity_report import with_capacity_units
from solver.analysis.diagnose import diagnose_infeasible, presolve_problems
from solver.backends import Backend, get_backend
from solver.background import in_background
from solver.candidates.pools import PoolCurve, assess_pools, shared_physics
from solver.candidates.size_check import check_program_size
from solver.candidates.table import CandidateTable
from solver.colocation.groups import GroupTable
from solver.colocation.templates import TemplateMemo
from solver.colocation.tiering import search_report, tiering_report
from solver.colocation.warm_cold import solve_choosing_split
from solver.decompose.by_workload import optimise
from solver.decompose.parallel import workers_kept
from solver.decompose.scenario_cuts import (
    FailoverRows,
    failover_rows,
    priced_by_cuts,
    solve_by_cuts,
)
from solver.decompose.workload_parts import PartSolves, start_by_workload
from solver.errors import Diagnosis, Infeasible, NoSolution, SolveError
from solver.plan.schema import NO_SHADOW_PRICES, Plan
from solver.plan.summary import buyer_summary
from solver.program.build import FleetProgram, build_program
from solver.program.families.pooling import PoolAtLeastColumn
from solver.program.families.variables import PoolUsedColumn, PurchasedColumn
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.program.optimised import Optimised
from solver.program.row_names import ReplicasColumn, family_of
from solver.program.sets import ProgramSets
from solver.readback.assign import chosen_sizes, read_plan, replica_counts
from solver.readback.pricing import credited_program, priced_rows, pricing_program
from solver.settings import PRICING_BACKEND, PRICING_SHARE, SolveSettings, TimeLimitReached
from solver.simplicity import simplicity_cost
from solver.stages import (
    ProgramStep,
    build_timed,
    candidate_table,
    ready_backend,
    solution,
    solving,
    verified,
)
from solver.time.horizon import Horizon
from solver.verify.fleet import verify
from solver.verify.verdict import Verification

if TYPE_CHECKING:  # the static path loads no module of time (tests/test_imports.py)
    from solver.time.step import PeriodsStep

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
    time_step: "PeriodsStep | None" = None
    """An hourly plan's program step (its periods program, month 0's with months): what
    explain re-solves without each chosen pool (solver.time.alternatives)."""

    @property
    def instance(self) -> Instance:
        """The instance the plan answers (levers re-solve it)."""
        return self.source if self.source is not None else self.program.sets.instance

    @property
    def result(self) -> SolveResult:
        """The backend's result."""
        return self.optimised.result

    @property
    def start(self) -> dict[str, float]:
        """The plan's values by column name of the program solved (an hourly plan's: its
        periods program's, month 0's over months), where a lever's re-solve may start."""
        return self.time_step.values if self.time_step is not None else self.result.values


def solve(instance: Instance, settings: SolveSettings | None = None) -> Plan:
    """The cheapest fleet that meets every requirement of the instance.

    Raises:
        Infeasible: no plan exists; its diagnosis names the requirements in conflict.
        NoSolution: the backend found no plan within the time limit, or failed;
            `TimeLimitReached` (a NoSolution) when the deadline passed, naming the stage.
        PlanRejected: the verifier rejected the solver's plan (a bug, never an answer).
    """
    return solve_program(instance, settings).plan


def solve_program(
    instance: Instance,
    settings: SolveSettings | None = None,
    table: CandidateTable | None = None,
    program: FleetProgram | None = None,
) -> Solved:
    """`solve`, keeping the program and the raw result for explanations; the returned
    settings carry the run's deadline (explain's re-solves share it). `table`: the
    instance's candidate table where the caller built it already, and `program` its
    static program built from it (`StaticStep.build`; a lever compares its program with
    the base's first: solver.analysis.lever_programs), which is then solved as it is."""
    settings = (settings or SolveSettings.of(instance)).started()
    with workers_kept():  # candidates and workload solves share their worker processes
        if not uses_time(instance) and (split := splittable(instance)):
            solved = solve_choosing_split(instance, split, settings, _solve_one)
        else:
            solved = _solve_one(instance, settings, table, program)
    plan = solved.plan.model_copy(update={"summary": buyer_summary(solved.plan)})
    return dataclasses.replace(solved, plan=plan)


def _solve_one(
    instance: Instance,
    settings: SolveSettings,
    table: CandidateTable | None = None,
    program: FleetProgram | None = None,
) -> Solved:
    """One program for the instance as it stands: candidates and program unless given,
    solve, plan; with policy.horizon_months each month in turn (`_solve_months`), sharing
    their physics (`shared_physics`: procurement-3region's months ask 119 of it 967 times);
    a horizon in time with fewer young garbage collections (solver.time.collector: 1.9 s
    of procurement-3region's 16.6 s of CPU went to the collector)."""
    ready_backend(settings)
    horizon = Horizon.of(instance)
    collector = nullcontext()
    if horizon.in_time:  # the static path loads no module of time (tests/test_imports.py)
        from solver.time.collector import fewer_collections

        collector = fewer_collections()
    with collector, shared_physics() if horizon.months else nullcontext():
        table = table if table is not None else candidate_table(instance, settings)
        started = _elapsed_s(settings)
        solved = _solve_table(instance, settings, table, horizon, built=program)
        if horizon.months:
            overhead = _overhead_s(solved, _elapsed_s(settings) - started)
            solved = _solve_months(instance, settings, horizon, solved, overhead)
    return solved


def _elapsed_s(settings: SolveSettings) -> float:
    """Seconds into the run (0 without a deadline)."""
    return 0.0 if settings.deadline is None else settings.deadline.elapsed_s()


def _overhead_s(solved: "Solved", took_s: float) -> float:
    """What a month's sequence took (`took_s`) besides its solve: build, pricing LP and
    read-back."""
    step = solved.time_step
    return max(0.0, took_s - (step.optimise_s if step is not None else 0.0))


def _solve_table(
    instance: Instance,
    settings: SolveSettings,
    table: CandidateTable,
    horizon: Horizon | None = None,
    templates: TemplateMemo | None = None,
    built: FleetProgram | None = None,
) -> Solved:
    """The one sequence, for every horizon, from the candidate table on (the tiering
    report's dedicated solve reuses its co-located solve's table: the candidates do not
    depend on it): size guard, program build, the deadline checked, the solve at
    `SOLVE_SHARE`, the answer judged, the pricing LP in the background by `PRICING_SHARE`
    while the plan is read back, the verifier. The horizon (solver.time.horizon) chooses
    the program step: the static program, or the periods program of its day and month
    (`templates`: the months' memo of shared group templates, solver.colocation.templates;
    `built`: the static program, built from `table` already)."""
    horizon = horizon or Horizon.of(instance)
    backend = get_backend(settings.backend)
    step: ProgramStep = StaticStep(instance, table, settings, built=built)
    if horizon.in_time:  # the static path loads no module of time (tests/test_imports.py)
        from solver.time.step import PeriodsStep

        step = PeriodsStep(
            instance, table, horizon, settings, held_fleet=held_fleet, templates=templates
        )
    step.check_size()
    solve_settings = solving(settings)  # the rest of the limit prices and checks the plan
    try:
        solve_settings = build_timed(step, backend, solve_settings, settings, not horizon.in_time)
        horizon.checked(settings, step.build_stage, step.built_late)  # or past it (Horizon)
        optimised = step.optimise(backend, solve_settings)
    finally:
        step.close()
    diagnose = partial(step.diagnosis, backend)
    share = f"month {horizon.month}" if horizon.months else None  # its share of the limit
    found = solution(
        optimised.result, step.lp, settings, diagnose, horizon.stage, horizon.what, share
    )
    values = step.credited(found)  # every pooling step reached: solver.readback.pricing
    pricer = backend if backend.capabilities.duals else get_backend(PRICING_BACKEND)
    pricing_settings = settings.within(PRICING_SHARE).with_duals()
    pricing = in_background(step.price, pricer, values, pricing_settings)
    plan = step.read_back(optimised, values, pricing)
    if horizon.in_time and not horizon.month:
        plan = _hourly_tiering(instance, plan, step.program)
    if horizon.verified_alone:  # past the deadline too (the plan says so)
        plan = verified(plan, step.verify(plan), horizon.what, settings)
    program, explained = step.explained(optimised, plan, values)
    source = instance if horizon.in_time else None
    in_time = step if horizon.in_time else None
    plan = with_engine(instance, plan)
    return Solved(program, explained, plan, settings, step.curves, source, in_time)


def held_fleet(
    instance: Instance, table: CandidateTable, settings: SolveSettings, templates=None
) -> tuple[dict[tuple[str, str], float], dict[str, float]] | None:
    """The static program of `instance` solved within `settings` (the hourly rounds' held
    fleet: solver.time.held): its GPUs bought per (region, GPU type) and its pools'
    integer columns (replicas, configuration and pooling-step choices) by name; None
    where it has no plan in time (a lever's start, a plan of the periods program, is
    none of the peak's). `templates`: a `TemplateMemo` over `table`, or None."""
    settings = dataclasses.replace(settings, start=None)
    step = StaticStep(instance, table, settings, templates=templates)
    backend = get_backend(settings.backend)
    try:
        step.build(backend, settings)
        result = step.optimise(backend, settings).result
    except SolveError:  # infeasible at the peak, or no plan in time: the rounds go on
        return None
    finally:
        step.close()
    if not result.termination.has_solution:
        return None
    bought = {
        (region.name, gpu): result.values.get(PurchasedColumn(region.name, gpu).name(), 0.0)
        for region in instance.regions
        for gpu in region.supply
    }
    pools = {ReplicasColumn.family, PoolUsedColumn.family, PoolAtLeastColumn.family}
    layout = {
        name: result.values.get(name, 0.0) for name in step.lp.variables if family_of(name) in pools
    }
    return bought, layout


def _solve_months(
    instance: Instance,
    settings: SolveSettings,
    horizon: Horizon,
    first: Solved,
    overhead_s: float = 0.0,
) -> Solved:
    """The months of policy.horizon_months after month 0 (`first`), each through
    `_solve_table` on its grown demand with its commitments bounded by the month before
    (rolling: solver.time.horizon says why), from one candidate table built on the
    horizon's largest demand, each within its share of the solve time less what the
    month before took besides its solve (`overhead_s` for month 1:
    solver.time.shares.month_share), their shared group templates built once per demand
    they read (solver.colocation.templates); the whole horizon verified once by the hour
    verifier, in the time every month keeps for it (month 0's own verification's). A
    month whose turn comes past the limit, or past what that time leaves of it
    (solver.time.shares.tail_due), is cut, not searched: held and grown without a
    program (solver.time.cut_month), else its program's fallback; where the verifier
    refuses the months so held, they are planned again from the first of them by their
    programs."""
    from solver.time.cut_month import cut_month_plan
    from solver.time.months import diagnosed_in_month, horizon_table, verification_kept, with_months
    from solver.time.shares import tail_due
    from solver.verify.hours import verify_hours

    cut: dict[int, float] = {}  # month -> seconds into the run its turn came, past the limit
    if horizon.months > 1:
        table = horizon_table(instance, horizon.months, settings, first.time_step.fallback)
        templates = first.time_step.memo_over(instance, table)
        verify_s = verification_kept(instance, first.plan, horizon.months, settings)

    def months_from(month_1, later, previous, solved, builds, overhead_s, hold):
        """Months `month_1` on, after `later` (builds: each month's, for kept_until);
        with `hold`, the state where the first month was held and grown, else None."""
        held_from = searched = None  # searched: the month the cut months grow from
        for month in range(month_1, horizon.months):
            floor = {(c.region, c.gpu): c.committed_gpus for c in previous.committed}
            started = _elapsed_s(settings)
            if tail_due(settings, verify_s):  # past L, or past what the tail needs of it
                cut[month] = started  # not searched: held and grown, or its fallback's plan
                searched = searched or (month - 1, previous)
                if hold and (held := cut_month_plan(instance, month, previous, table, searched)):
                    state = (month, [*later], previous, solved, builds, overhead_s)
                    held_from, previous = held_from or state, held
                    later.append(held)
                    settings.passed(f"month {month} of {horizon.months - 1} (held and grown)")
                    continue
            earlier, builds = solved.time_step.fallback, (*builds, solved.time_step.build_s)
            grown, month_horizon = horizon.later_month(
                instance, month, floor, started, overhead_s, earlier, builds, verify_s
            )
            try:
                solved = _solve_table(grown, settings, table, month_horizon, templates)
            except Infeasible as error:  # its numbers are the month's grown demand: say so
                growth = month_horizon.growth_factor
                raise Infeasible(diagnosed_in_month(error.diagnosis, month, growth)) from None
            overhead_s = _overhead_s(solved, _elapsed_s(settings) - started)
            previous, searched = solved.plan, None
            later.append(previous)
            settings.passed(f"month {month} of {horizon.months - 1}")
        return later, held_from

    def checked(later: list[Plan]) -> tuple[Plan, Verification]:
        plan = with_months(instance, first.plan, later, cut, settings.deadline)
        plan = with_engine(instance, plan)
        return plan, verify_hours(instance, plan)  # past the limit too

    later, held_from = months_from(1, [], first.plan, first, (), overhead_s, True)
    plan, verdict = checked(later)
    if not verdict.ok and held_from is not None:  # a cap the rule missed: their programs
        plan, verdict = checked(months_from(*held_from, hold=False)[0])
    return dataclasses.replace(first, plan=verified(plan, verdict, "hourly plan", settings))


PRICING_TIMED_OUT = (
    f"{NO_SHADOW_PRICES}: the pricing LP did not end within the time limit (raise --time-limit "
    "to have them)"
)


@dataclass
class StaticStep:
    """The static program as the sequence's program step (solver.stages.ProgramStep):
    failover by routing columns or by cut rows (`solver.scenario_rows`), solved by
    workload (solver.decompose), read back by solver.readback, checked by the fleet
    verifier."""

    instance: Instance
    table: CandidateTable
    settings: SolveSettings
    build_stage: str = "program build"
    built_late: bool = False  # never: no fallback to build on past the deadline
    program: FleetProgram = field(init=False)
    curves: dict[tuple[str, str], PoolCurve] = field(default_factory=dict)
    parts: PartSolves | None = None
    failover: FailoverRows = field(init=False)
    """Failover by cut rows (solver.decompose.scenario_cuts), else by routing columns."""
    built: FleetProgram | None = None
    """The program, where built from `table` already (its pre-solve problems checked):
    `build` starts the workload parts and takes it as it is."""
    templates: TemplateMemo | None = None
    """The shared group templates' memo over `table` (a held fleet's: `held_fleet`)."""

    def __post_init__(self) -> None:
        self.failover = failover_rows(self.instance, self.settings.scenario_rows)

    @property
    def cuts(self) -> bool:
        """Whether failover is by cut rows."""
        return self.failover.cuts

    @property
    def lp(self) -> LinearProgram:
        """The program the backend solves."""
        return self.program.lp

    def check_size(self) -> None:
        """The size guard, over the scenarios with routing columns."""
        routed = tuple(
            f for f in failure_scenarios(self.instance) if not (self.cuts and f.reroutes)
        )
        check_program_size(self.instance, self.table, self.settings.time_limit_s, scenarios=routed)

    def build(self, backend: Backend, solve_settings: SolveSettings, parts: bool = True) -> None:
        """The pre-solve problems (Infeasible), then the program (or the one `built`),
        its workload parts started in workers while it builds (`parts` false: none, the
        program is only looked at: solver.analysis.lever_programs)."""
        if self.built is not None:
            if parts and not self.cuts:
                self.parts = start_by_workload(self.built.sets, backend, solve_settings)
            self.program = self.built
            return
        instance, table = self.instance, self.table
        rows = "cuts" if self.cuts else "routing"
        deadline = partial(self.settings.check, self.build_stage, within=True)
        sets = ProgramSets(
            instance, table, failure_scenarios(instance), scenario_rows=rows, deadline=deadline
        )
        problems = [*table.problems, *presolve_problems(sets)]
        if problems:
            raise Infeasible.from_problems(problems)
        if parts and not self.cuts:
            self.parts = start_by_workload(sets, backend, solve_settings)
        groups = (self.templates or TemplateMemo(table)).templates(instance, self.settings)
        self.program = build_program(
            instance, table, settings=self.settings, groups=groups, sets=sets
        )

    def optimise(self, backend: Backend, solve_settings: SolveSettings) -> Optimised:
        """By cut rows, or by workload from the parts started at the build."""
        if self.cuts:
            return solve_by_cuts(self.program, backend, solve_settings)
        optimised = optimise(self.program, backend, solve_settings, parts=self.parts)
        return dataclasses.replace(optimised, failover=self.failover.note)

    def close(self) -> None:
        """The workload parts no longer needed are abandoned."""
        if self.parts is not None:
            self.parts.started.abandon()

    def diagnosis(self, backend: Backend) -> Diagnosis:
        """The requirements in conflict (a cut program holds no routing to name a
        conflict with: the routing program is built for it)."""
        routing = self.program
        if self.cuts:
            routing = build_program(self.instance, self.table, settings=self.settings)
        return diagnose_infeasible(routing, backend, self.settings)

    def credited(self, values: dict[str, float]) -> dict[str, float]:
        """`values` with every pooling step its pools reach credited."""
        return credited_program(self.program, values)

    def price(
        self, pricer: Backend, values: dict[str, float], settings: SolveSettings
    ) -> SolveResult:
        """The pricing LP (solver.readback.pricing); with cut rows, the rows the
        fractional counts break too."""
        lp = pricing_program(self.program, values)
        if self.cuts:
            return priced_by_cuts(self.program, pricer, lp, settings)
        return pricer.run(lp, settings)

    def read_back(
        self,
        optimised: Optimised,
        values: dict[str, float],
        pricing: Callable[[], SolveResult],
    ) -> Plan:
        """The plan at its pools' physics, priced once `pricing` ends; with groups or
        colocation, its tiering report."""
        instance, program = self.instance, self.program
        unpriced: list[str] = []

        def duals() -> dict[str, float]:
            priced = pricing()
            if priced.termination is Termination.TIME_LIMIT:
                unpriced.append(PRICING_TIMED_OUT)
                return {}
            return priced_rows(priced)

        counts = replica_counts(program.sets, values)
        self.curves = assess_pools(instance, chosen_sizes(program.sets, counts))
        plan = read_plan(program, optimised, values, duals, self.settings, self.curves)
        if unpriced:
            plan = plan.model_copy(update={"shadow_price_note": unpriced[0]})
        if program.groups.templates or instance.policy.colocation:
            plan = _with_tiering(instance, self.settings, plan, program, self.table)
        return plan

    def verify(self, plan: Plan) -> Verification:
        """The fleet verifier."""
        return verify(self.instance, plan)

    def explained(
        self, optimised: Optimised, plan: Plan, values: dict[str, float]
    ) -> tuple[FleetProgram, Optimised]:
        """What `explain` reads: the program and its result as read back."""
        del plan
        return self.program, dataclasses.replace(
            optimised, result=dataclasses.replace(optimised.result, values=values)
        )


def with_engine(instance: Instance, plan: Plan) -> Plan:
    """The plan with the engine profile used, the GPU types it runs (`Plan.gpu_types_run`)
    on borrowed efficiency factors (`models.physics.efficiency.efficiency_source`) and
    each pool's measured error band (`solver.analysis.capacity_bands`)."""
    used = sorted({use.gpu for use in plan.gpus if use.used} | set(plan.gpu_types_run()))
    specs = [instance.gpu_specs[gpu] for gpu in used if gpu in instance.gpu_specs]
    return with_bands(instance, plan).model_copy(
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
    return with_tiering(instance, plan, program.groups, dedicated)


def with_tiering(
    instance: Instance, plan: Plan, groups: GroupTable, dedicated: Plan | None
) -> Plan:
    """`plan` with its co-location account, in every horizon: the tiering report against
    `dedicated` (the same instance solved with colocation off; None where it was not
    solved: an hourly plan, whose periods program is not run twice) and the group search;
    a static plan also its capacity unit (an hourly plan's peak fleet is its hours' pools,
    which carry none)."""
    report = tiering_report(plan, dedicated, len(groups.templates), groups.enumeration_s)
    unit = ""
    if not plan.hours:
        plan, unit = with_capacity_units(instance, plan)
    return plan.model_copy(
        update={"tiering": report, "capacity_unit": unit, "colocation": search_report(groups)}
    )


def _hourly_tiering(instance: Instance, plan: Plan, program) -> Plan:
    """An hourly plan (or a horizon's month 0) with its co-location account, from its
    busiest period's groups, as a static plan has it (`_with_tiering`)."""
    from solver.time.solve import peak_period

    groups = peak_period(program).program.groups
    if not groups.templates and not instance.policy.colocation:
        return plan
    return with_tiering(instance, plan, groups, None)
