"""The periods program as the pipeline's program step: what the one sequence of
solver.solve asks of a horizon in time (solver.time.horizon), each a method in the order
the sequence calls them:

    check_size   the size guard over every period's copy (solver.candidates.size_check)
    build        the periods program of the horizon's periods, a later month's
                 commitments bounded by the month before (solver.time.months), its
                 pre-solve problems (Infeasible); beside it, in a thread, the static plan
                 of the day's peak (`held_fleet`, by the pipeline's static step;
                 solver.time.held)
    optimise     `optimise_periods` (solver.time.day_choice): the one place the periods
                 program meets the backend, within the month's share of the solve time
                 (`month_share`), its rounds starting from that plan's fleet held every
                 hour
    diagnosis    why it has no solution (the peak period's static diagnosis; a month's
                 inherited commitments)
    price        its pricing LP (solver.time.readback.prices), run in the background
    read_back    the hours, the batch schedule, the error budget and headroom, with the
                 prices once the pricing LP has ended
    verify       the hour verifier
"""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from models.schema.instance import Instance
from models.schema.quantities import counted
from solver.analysis.diagnose import diagnose_infeasible, horizon_problems
from solver.backends import Backend
from solver.candidates.pools import assess_pools
from solver.candidates.size_check import check_program_size
from solver.candidates.table import CandidateTable
from solver.colocation.templates import TemplateMemo
from solver.decompose.by_period import Fleet
from solver.decompose.period_split import Held
from solver.errors import Diagnosis, Infeasible
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.program.build import FleetProgram, with_bounds
from solver.program.lp import SolveResult, Termination
from solver.program.optimised import Optimised
from solver.program.row_names import ReplicasColumn
from solver.settings import MIN_CALL_S, SolveSettings, TimeLimitReached
from solver.time.alternatives import cost_without, resolve_lifted, resolve_without, without_pool
from solver.time.day_choice import optimise_periods
from solver.time.fallback import refused_message
from solver.time.held import (
    HELD_PLAN_GAP,
    HELD_SHARE,
    HeldFleet,
    grown_fleet,
    held_within,
    plan_fleet,
    planned_held,
)
from solver.time.horizon import Horizon
from solver.time.months import bound_commitments, month_conflict
from solver.time.periods import TimeProgram, build_time_program, interactive_table
from solver.time.readback.prices import credited_hours, priced_hours, pricing_lp
from solver.time.shares import ending_by, expired, kept_until, month_share, retry_share
from solver.time.solve import hourly_problems, peak_period, period_instances, read_hours
from solver.verify.hours import verify_hours
from solver.verify.verdict import Verification


@dataclass
class PeriodsStep:
    """One horizon's periods program through the pipeline's stages (the module text)."""

    instance: Instance
    """The instance of the horizon's month (its demand grown for a later month)."""
    table: CandidateTable
    horizon: Horizon
    settings: SolveSettings
    program: TimeProgram = field(init=False)
    held_fleet: HeldFleet | None = None
    """The static plan of the day's peak (`held_all_day`), by the pipeline's static step
    (solver.solve): its purchases per (region, GPU type), or None without one."""
    held: Fleet | None = field(default=None, init=False)
    """The held fleet once the build has started planning it (`_held_beside`)."""
    held_thread: threading.Thread | None = field(default=None, init=False)
    """The thread planning the held fleet (`_held_beside`), joined by `close`."""
    held_found: Held | None = field(default=None, init=False)
    """The held fleet the rounds started from, once they asked for it: the month's own,
    else the month before's (`Horizon.earlier_fleet`)."""
    build_s: float = 0.0
    built_late: bool = field(default=False, init=False)
    """Whether the build passed the run's deadline with its fallback in hand and built on
    (`_build_checked`): its deadline check is then a progress line (solver.solve)."""
    optimise_s: float = 0.0
    """Seconds `optimise` took (what a month's overhead is measured without)."""
    kept_s: float | None = None
    """Seconds into the run by which its solve and pricing LP end (`kept_until`), once
    `optimise` has started."""
    templates: TemplateMemo | None = None
    """The shared group templates of the horizon's months (solver.colocation.templates),
    or None: the day's own."""
    curves: dict = field(default_factory=dict)
    """(workload, candidate key) -> the curves of the plan's interactive pools at their
    peak sizes (what explain's limiting factors read), set by `explained`."""
    values: dict[str, float] = field(default_factory=dict)
    """The plan's solution of the whole periods program (every period's columns, what
    explain's slack by family reads), set by `explained`."""

    @property
    def build_stage(self) -> str:
        """The stage the deadline names after the build."""
        return f"program build ({counted(len(self.horizon.periods), 'period')})"

    @property
    def lp(self):
        """The program the backend solves."""
        return self.program.lp

    @property
    def fallback(self) -> Held | None:
        """The next month's fallback (`Horizon.earlier_fleet`, grown: `grown_fleet`):
        this month's own held fleet where the rounds asked for it, else its plan's
        (`plan_fleet`, once `explained`), except where that plan holds no more than the
        earlier month's fleet it held (its fallback's plan, the month's own search ended
        at its share): that fleet then, as it was planned, so that the next month grows
        it from its own month once, ceil(n (1 + g)^k), not month by month (ceil of ceil:
        a pool of n < 1/g replicas gained one every month, n + k after k months; growth-
        horizon at monthly_growth 0.01, 120 months and a 30 s limit paid $594,278 in
        month 119 against the $68,620 of its optimal plan)."""
        own = self.held_found
        if own is not None and own.month == self.horizon.month:
            return own
        planned = plan_fleet(self.values, self.horizon.month)
        if own is not None and (planned is None or held_within(planned, own)):
            return own  # grown again from its own month: ceil(n (1 + g)^k), once
        return planned or own

    def check_size(self) -> None:
        """The size guard over every period's copy."""
        check_program_size(
            self.instance,
            interactive_table(self.instance, self.table),
            self.settings.time_limit_s,
            periods=period_instances(self.instance),
        )

    def build(self, backend: Backend, solve_settings: SolveSettings) -> None:
        """The periods program, a later month's commitments bounded (Infeasible on a
        pre-solve problem); the held fleet is planned beside it (`_held_beside`)."""
        del backend
        started = time.monotonic()
        builds = self.horizon.builds_s  # its own not yet known: the months' before it
        kept = kept_until(self.settings, self.horizon, max(builds)) if builds else None
        if self.templates is None:  # the day's own, shared with its held fleet's build
            self.templates = TemplateMemo(interactive_table(self.instance, self.table))
        self.held = self._held_beside(month_share(solve_settings, self.horizon, kept))
        late = replace(self.settings, deadline=None) if self.horizon.past_limit else None
        self.program = build_time_program(
            self.instance,
            self.table,
            late or self.settings,
            self.horizon.periods,
            self.templates,
            check=None if late else self._build_checked,
        )
        if self.horizon.month:
            bound_commitments(self.program, self.horizon.committed_floor, self.horizon.frozen)
        self.build_s = time.monotonic() - started
        problems = [*self.table.problems, *hourly_problems(self.program)]
        if not problems and self.horizon.month == 0 and self.horizon.months > 1:
            peak = peak_period(self.program).program.sets  # before month 0 is solved
            problems = horizon_problems(peak, self.horizon.months)
        if problems:
            raise Infeasible.from_problems(problems)

    def _build_checked(self, stage: str) -> None:
        """The deadline checked after each period's copy. Past it, a program whose
        fallback is in hand (the day's peak plan, planned beside the build: `held`) builds
        on and answers with it, as a solve the limit stops does (solver.decompose
        .by_period: the peak fleet held every hour); the run then ends past the limit by
        the rest of the build. Without one the run ends (TimeLimitReached, exit 4),
        saying that its fallback was not found in time either."""
        deadline = self.settings.deadline
        if self.built_late or deadline is None or deadline.limit_s is None:
            self.settings.passed(stage, within=True)
            return
        if not deadline.expired():
            self.settings.check(stage, within=True)
            return
        if not self._has_fallback():
            whose = f"month {self.horizon.month}'s" if self.horizon.months else "the day's"
            raise TimeLimitReached(
                stage,
                deadline.limit_s,
                deadline.elapsed_s(),
                f"{whose} peak plan, its fallback, was not found in time either: raise "
                "--time-limit (or solver.time_limit_s)",
            )
        self.built_late = True
        self.settings.passed(stage)

    def memo_over(self, instance: Instance, table: CandidateTable) -> TemplateMemo:
        """A memo of shared group templates over `table`'s interactive candidates sharing
        what this step's builds learnt of the groups' loads (`TemplateMemo.over`: a
        horizon's later months, `instance` as written)."""
        interactive = interactive_table(instance, table)
        memo = self.templates
        return memo.over(interactive) if memo is not None else TemplateMemo(interactive)

    def optimise(self, backend: Backend, solve_settings: SolveSettings) -> Optimised:
        """`optimise_periods`, within the month's share of the solve time (`month_share`;
        where the rounds end without a plan, the held fleet's is theirs:
        solver.decompose.by_period); where the share still ends without one, again
        within one more part of what is left (`retry_share`), so that the months after it
        keep theirs (it took all that was left, and a month without a plan ends the
        horizon: the months before it were lost); neither past what the months after it
        need to build (`kept_until`), except for month 0 without its peak plan, which has
        no fallback at all: its second try has all the solve time left (without a
        plan of its own the run ends with exit 4; later months build past the limit and
        take theirs: `Horizon.past_limit`). Where the limit leaves it no plan, the
        message names the caps its fallback fleet passes (`_refused`)."""
        started = time.monotonic()
        self.kept_s = kept_until(self.settings, self.horizon, self.build_s)
        try:
            return self._refused(self._optimised(backend, solve_settings))
        finally:
            self.optimise_s = time.monotonic() - started

    def _optimised(self, backend: Backend, solve_settings: SolveSettings) -> Optimised:
        """`optimise`'s tries (its text)."""
        shared = month_share(solve_settings, self.horizon, self.kept_s)
        found = optimise_periods(self.program, backend, shared, self.held)
        stopped = found.result.termination is Termination.TIME_LIMIT
        if shared is solve_settings or not stopped or expired(solve_settings):
            return found
        again = retry_share(solve_settings, self.horizon, self.kept_s)
        if not self.horizon.month and not self._has_fallback():
            again = solve_settings  # month 0 with no fallback: this try or exit 4
        elif expired(again):  # the months after it need what is left
            return found
        return optimise_periods(self.program, backend, again, self.held)

    def _has_fallback(self) -> bool:
        """Whether the day's peak plan, planned beside the build (`held`), is in hand."""
        return self.held is not None and self.held() is not None

    def _refused(self, found: Optimised) -> Optimised:
        """`found`, its message naming the caps the fallback fleet passes where the limit
        left it no plan even so (solver.time.fallback: exit 4's advice)."""
        held = self.held_found
        if found.result.termination is not Termination.TIME_LIMIT or held is None:
            return found
        h = self.horizon
        said = refused_message(self.instance, self.table, held, h.month, h.months)
        return replace(found, result=replace(found.result, message=said))

    def _held_beside(self, settings: SolveSettings) -> Fleet | None:
        """The static plan of the day's peak as committed GPUs (solver.decompose.by_period,
        `Fleet`), planned in a thread beside the periods program's build (its HiGHS
        solves and worker processes run while the build holds the interpreter), within
        `HELD_SHARE` of the time left, to `HELD_PLAN_GAP` at least; the rounds wait for it.
        Where it has none in time, a later month starts from the month before's (its
        floor may already hold more, and a block that cannot serve at its levels renting
        nothing is solved there renting: solver.decompose.by_period)."""
        earlier = self.horizon.earlier_fleet
        earlier = earlier if isinstance(earlier, Held) else None

        def earlier_only() -> Held | None:
            self.held_found = earlier
            return earlier

        if earlier is not None:
            earlier = grown_fleet(earlier, self.instance, self.horizon.month)
        if self.held_fleet is None:
            return earlier_only if earlier is not None else None
        deadline = settings.deadline
        held = settings
        if deadline is not None and deadline.limit_s is not None:
            now = deadline.elapsed_s()
            share = HELD_SHARE * max(0.0, deadline.limit_s - now)
            if share < MIN_CALL_S:  # the month's share is spent: no time to plan it
                return earlier_only if earlier is not None else None
            held = replace(settings, deadline=replace(deadline, limit_s=now + share))
            held = held.limited(min(share, settings.time_limit_s or share))
        held = replace(held, mip_gap=max(held.mip_gap, HELD_PLAN_GAP))
        found: list = []
        memo = self.templates.over(self.table) if self.templates is not None else None
        inputs = (self.held_fleet, self.instance, self.table, held, self.horizon.month, memo)
        thread = threading.Thread(
            target=lambda: found.append(planned_held(*inputs)), name="held-fleet", daemon=True
        )
        thread.start()
        self.held_thread = thread

        def waited() -> Held | None:
            thread.join()
            if not found or isinstance(found[0], BaseException):
                raise found[0] if found else RuntimeError("the held fleet's thread ended")
            self.held_found = found[0] if found[0] is not None else earlier
            return self.held_found

        return waited

    def close(self) -> None:
        """Nothing runs beside the solve once it ends: the held fleet's thread, where the
        rounds never asked for it (a program solved whole, proven without its fallback), is
        waited for (within its own share of the limit). Left running, its HiGHS solve
        outlived the solve's return, ran beside the next month's, and a process exiting
        while it ran was aborted by the C++ runtime ("terminate called without an active
        exception", exit 134, after the plan was written)."""
        if self.held_thread is not None:
            self.held_thread.join()

    def diagnosis(self, backend: Backend) -> Diagnosis:
        """Month 0: the peak period's static diagnosis; a later month: its demand on the
        commitments it inherits, with its peak period's conflicts where that period has
        no plan on any commitment (a power cap the grown demand passes, say)."""
        peak = diagnose_infeasible(peak_period(self.program).program, backend, self.settings)
        if not self.horizon.month:
            return peak
        h = self.horizon
        inherited = month_conflict(self.instance, h.month, h.frozen, h.growth_factor)
        if any(p.requirement != "program" for p in peak.problems):
            # the month's own peak has no plan on any commitment (power, supply): name it
            return Diagnosis(
                inherited.summary,
                (*inherited.problems[:1], *peak.problems),
                f"{inherited.method}; month {h.month}'s peak period: {peak.method}",
            )
        return inherited

    def credited(self, values: dict[str, float]) -> dict[str, float]:
        """`values` with every pooling step reached credited in every period
        (solver.time.readback.prices)."""
        return credited_hours(self.program, values)

    def price(
        self, pricer: Backend, values: dict[str, float], settings: SolveSettings
    ) -> SolveResult:
        """The pricing LP (solver.time.readback.prices), solved, by what the months after this one
        need at the latest (`kept_until`); a month whose time that is already is not
        priced (the plan says so): passing the LP to the backend alone took 8-14 s a
        month on the generated 5 x 8 x 4 instance under load, whatever its limit."""
        settings = ending_by(settings, self.kept_s)
        if self.horizon.months and expired(settings):
            return SolveResult(Termination.TIME_LIMIT, pricer.name, pricer.version(), 0.0)
        return pricer.run(pricing_lp(self.program, values), settings)

    def read_back(
        self,
        optimised: Optimised,
        values: dict[str, float],
        pricing: Callable[[], SolveResult],
    ) -> Plan:
        """The hourly plan; its prices read once `pricing` ends (the periods are read
        back meanwhile)."""

        def duals() -> tuple[dict[str, float], str]:
            result = pricing()
            month = self.horizon.month
            stage = f"month {month} pricing" if month else "pricing"
            if result.termination is not Termination.OPTIMAL:  # the plan's note says why
                stage += f" (not priced: {result.termination})"
            self.settings.passed(stage)
            return priced_hours(result)

        return read_hours(
            self.program,
            optimised.result,
            values,
            self.settings,
            self.build_s,
            duals,
            in_horizon=bool(self.horizon.month),
        )

    def verify(self, plan: Plan) -> Verification:
        """The hour verifier."""
        return verify_hours(self.instance, plan)

    def without_pools(
        self, pools: tuple[ReplicaPool, ...]
    ) -> list[tuple[ReplicaPool, tuple[TimeProgram, dict[str, tuple[float, float]]]]]:
        """Each interactive pool with the periods program to re-solve and the bounds that
        remove it from its region in every period (solver.time.alternatives; batch and
        shared pools have none and are left out)."""
        found = [(p, without_pool(self.program, p)) for p in pools if not p.shared]
        return [(p, (self._program_without(p), bounds)) for p, bounds in found if bounds]

    def _program_without(self, pool: ReplicaPool) -> TimeProgram:
        """The periods program itself, or, where pruning dropped candidates that the
        pool's dominated, the periods program over the table with them back
        (CandidateTable.without), their replicas held at 0 outside the pool's region in
        every period (where the pool's configuration is still offered and dominates
        them: solver.analysis.without.program_without), its month's commitments bounded
        as the plan's were."""
        table = self.table.without(pool.workload, pool.key)
        if table is None:
            return self.program
        settings = replace(self.settings, deadline=None)  # the re-solves watch it
        program = build_time_program(self.instance, table, settings, self.horizon.periods)
        if self.horizon.month:
            bound_commitments(program, self.horizon.committed_floor, self.horizon.frozen)
        kept = {c.key for c in self.table.of(pool.workload)}
        restored = [c.key for c in table.of(pool.workload) if c.key not in kept]
        elsewhere = {
            name: (0.0, 0.0)
            for key in restored
            for region in self.instance.regions
            if region.name != pool.region
            for part in program.periods
            if (name := ReplicasColumn(pool.workload, key, region.name).at(part.first_hour).name())
            in program.lp.variables
        }
        return replace(program, lp=with_bounds(program.lp, elsewhere))

    resolver = staticmethod(resolve_without)
    """The re-solve without a pool, module-level so that a worker process can run it:
    `resolver(program, settings, bounds)`."""

    simplicity_resolver = staticmethod(resolve_lifted)
    """The re-solve with the limit on configurations per pool lifted, module-level so
    that a worker process can run it: `simplicity_resolver(program, plan, settings)`."""

    def cost_without(
        self, result: SolveResult, settings: SolveSettings, pool: ReplicaPool, program
    ) -> tuple[float, tuple[str, ...]]:
        """The re-solved plan's cost and the pools of the workload in the region at peak
        (`program`: the periods program re-solved, `without_pools`)."""
        return cost_without(program, result, settings, pool)

    def explained(
        self, optimised: Optimised, plan: Plan, values: dict[str, float]
    ) -> tuple[FleetProgram, Optimised]:
        """What `explain` reads: the peak period's program, with that period's values
        under the static names (its utilisation and slack), and the curves of the plan's
        interactive pools at their peak sizes (their limiting factors); its alternatives
        re-solve the periods program itself (solver.time.alternatives)."""
        del optimised  # its values are the whole program's
        self.values = values
        peak = peak_period(self.program)
        sets = peak.program.sets
        chosen: dict = {}
        for pool in plan.replicas:
            c = next((c for c in sets.table.of(pool.workload) if c.key == pool.key), None)
            if c is None or pool.shared:
                continue  # batch and shared pools: no candidate of the interactive table
            _, _, sizes = chosen.setdefault((pool.workload, c.key), (c.config, c.curve, set()))
            sizes.add(pool.count)
        self.curves = assess_pools(sets.instance, chosen)
        kept = SolveResult(
            termination=Termination.OPTIMAL if plan.status == "optimal" else Termination.FEASIBLE,
            solver=plan.solver.name if plan.solver else "",
            solver_version=plan.solver.version if plan.solver else "",
            runtime_s=plan.solver.runtime_s if plan.solver else 0.0,
            objective=plan.cost_per_month,
            values=self.program.period_values(values, peak.first_hour),
        )
        return peak.program, Optimised(kept)
