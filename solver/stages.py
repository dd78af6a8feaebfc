"""The stages every horizon passes, each a function: the static pipeline (solver.solve)
and the hourly one (its periods program, solver.time.periods) call the same ones, so a
peak-hour, an hourly and a month plan meet the same guards under the same deadline.

1. `ready_backend`: the chosen backend runs here, or `BackendUnavailable`.
2. `candidate_table`: the configuration count guard (exit 2 beyond
   `limits.CONFIGURATIONS`, before any physics), then the candidate table, in worker
   processes when it is large (solver.candidates.workers); the deadline is checked when
   it ends ("candidates").
3. (the program's size guard, solver.candidates.size_check, and its build: the step that
   differs between horizons; the caller checks "program build".)
4. `solving`: the settings of the solve, stopped at `SOLVE_SHARE` of the run's limit so
   that a plan found by then is still priced, read back and verified.
5. `solution`: the backend's answer judged once for every horizon: infeasible (with the
   caller's diagnosis), no plan within the limit (`TimeLimitReached` naming the stage),
   no plan for another reason (`NoSolution`), or a plan, its integer columns rounded.
6. `verified`: the independent verifier's verdict, or `PlanRejected`.

`ProgramStep` is what the sequence (solver.solve._solve_table) asks of the step that
differs between horizons: the static program (solver.solve.StaticStep) or the periods
program of a day and month (solver.time.step.PeriodsStep), chosen by the horizon
(solver.time.horizon.Horizon).
"""

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Protocol

from models.schema.instance import Instance
from solver.backends import Backend, get_backend
from solver.candidates.list_sizes import dominant_list
from solver.candidates.size_check import check_configurations
from solver.candidates.table import CandidateTable
from solver.candidates.workers import build_candidates_parallel
from solver.errors import BackendUnavailable, Diagnosis, Infeasible, NoSolution, PlanRejected
from solver.plan.schema import Plan
from solver.program.build import FleetProgram
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.program.optimised import Optimised
from solver.settings import SOLVE_SHARE, SolveSettings, TimeLimitReached
from solver.verify.verdict import Verification


class ProgramStep(Protocol):
    """The part of the sequence that differs between horizons, in the order it is called:
    size guard, build (pre-solve problems: Infeasible), optimise, close (whatever ran
    beside the solve is let go), diagnosis (of an infeasible program), price (the
    pricing LP, run in the background), read_back (the plan, waiting on the prices only
    where it needs them), verify, explained (what `explain` reads). `credited`: the
    solved values with every pooling step their pools reach credited, which the pricing
    LP, the read-back and explain read (solver.readback.pricing)."""

    build_stage: str
    built_late: bool
    """Whether the build passed the deadline with a fallback in hand and built on."""
    curves: dict

    @property
    def lp(self) -> LinearProgram: ...

    def check_size(self) -> None: ...

    def build(self, backend: Backend, solve_settings: SolveSettings) -> None: ...

    def optimise(self, backend: Backend, solve_settings: SolveSettings) -> Optimised: ...

    def close(self) -> None: ...

    def diagnosis(self, backend: Backend) -> Diagnosis: ...

    def credited(self, values: dict[str, float]) -> dict[str, float]: ...

    def price(
        self, pricer: Backend, values: dict[str, float], settings: SolveSettings
    ) -> SolveResult: ...

    def read_back(
        self, optimised: Optimised, values: dict[str, float], pricing: Callable[[], SolveResult]
    ) -> Plan: ...

    def verify(self, plan: Plan) -> Verification: ...

    def explained(
        self, optimised: Optimised, plan: Plan, values: dict[str, float]
    ) -> tuple[FleetProgram, Optimised]: ...


def ready_backend(settings: SolveSettings) -> Backend:
    """The settings' backend, or BackendUnavailable saying why it cannot run here."""
    backend = get_backend(settings.backend)
    reason = backend.unavailable_reason()
    if reason:
        raise BackendUnavailable(f"backend {settings.backend!r} cannot run here: {reason}")
    return backend


def candidate_table(instance: Instance, settings: SolveSettings) -> CandidateTable:
    """The instance's candidate table, refused with the numbers before work that cannot
    end (InputError, exit 2), built in worker processes when large; the deadline is
    checked when it is built (TimeLimitReached naming "candidates")."""
    check_configurations(instance)
    table = build_candidates_parallel(instance, settings)
    if dominant := dominant_list(table):  # told only if the run gets long
        settings.hold(dominant.text())
    settings.check("candidates")
    return table


def solving(settings: SolveSettings) -> SolveSettings:
    """The settings of the solve stage: the deadline at `SOLVE_SHARE` of the limit."""
    return settings.within(SOLVE_SHARE)


AFTER_PER_BUILD = 3.0
"""Seconds the stages after the solve are kept per second the program's build took
(`build_timed`): the read-back, the verifier and the report each walk the program or its
plan once, as the build does, on the same machine under the same load. Measured on the
10 x 20 x 6 region-loss instance at the defaults at stop 26 (a loaded 2-core machine):
build 2.3 s, then cover 3.7, read-back 2.1, verify 0.5 and the report 1.9 s (3.6 x the
build), whence 4.0; at stop 28 (a machine 2.5 x faster, load 3) build 0.44-0.54 s, then
read-back and verify 0.67-0.75 s and the report 0.34-0.52 s (2.0-2.7 x the build), and
on 20 x 20 x 6 build 1.5 s, the workload parts' covers 1.6 s, read-back and verify 1.8 s.
The regions' stage now builds its covers within the solve's time where the clock left a
region without a plan (solver.decompose.regions.plan.COVERS_FIRST); 4 x kept a 10 s limit's
solve from ending its regions' programs, 2.5 x let 20 x 20 x 6 end 2.7 s past a 10 s limit
(tests/bench/test_short_limits_bench.py)."""


def build_timed(
    step: "ProgramStep",
    backend: Backend,
    solve_settings: SolveSettings,
    settings: SolveSettings,
    keep: bool = True,
) -> SolveSettings:
    """Build the step's program, and the settings its solve runs under: `solve_settings`
    with the deadline moved earlier where the run's limit less `AFTER_PER_BUILD` times
    the build's seconds comes first (`keep`; a short limit on a large program leaves the
    stages after the solve their time, and the run ends near its limit rather than
    twice past it)."""
    started = time.monotonic()
    step.build(backend, solve_settings)
    if not keep:
        return solve_settings
    return kept_after(settings, solve_settings, AFTER_PER_BUILD * (time.monotonic() - started))


def kept_after(
    settings: SolveSettings, solve_settings: SolveSettings, after_s: float
) -> SolveSettings:
    """`solve_settings` with its deadline at the run's limit less `after_s` where that is
    earlier (never before the run's start); unchanged without a limit."""
    run, solve = settings.deadline, solve_settings.deadline
    if run is None or run.limit_s is None or solve is None or solve.limit_s is None:
        return solve_settings
    limit_s = min(solve.limit_s, max(run.limit_s - after_s, 0.0))
    return replace(solve_settings, deadline=replace(solve, limit_s=limit_s))


def solution(
    result: SolveResult,
    lp: LinearProgram,
    settings: SolveSettings,
    diagnose: Callable[[], Diagnosis],
    stage: str = "solve",
    what: str = "plan",
    share: str | None = None,
) -> dict[str, float]:
    """The solved values, integer columns rounded (solvers return 2.9999999).

    Raises:
        Infeasible: the program has no solution; `diagnose()` names why.
        TimeLimitReached: the deadline stopped `stage` before it had a plan (one ended
            past it is kept: the time is spent either way); `share`: whose share of the
            limit the stage ran in (a month's), named where it ended before the limit.
        NoSolution: the backend stopped without a plan for another reason.
    """
    if result.termination is Termination.INFEASIBLE:
        raise Infeasible(diagnose())
    if not result.termination.has_solution:
        deadline = settings.deadline
        if result.termination is Termination.TIME_LIMIT and deadline is not None:
            detail = result.message if "--time-limit" in result.message else ""  # the stages'
            limit_s, elapsed_s = deadline.limit_s or 0.0, deadline.elapsed_s()
            raise TimeLimitReached(stage, limit_s, elapsed_s, detail, share)
        raise NoSolution(
            f"{result.solver} found no {what} ({result.termination}) within "
            f"{settings.time_limit_s:g} s for a program of {size_text(lp)}"
            + (f": {result.message}" if result.message else "")
            + "; raise --time-limit or loosen the MIP gap",
            str(result.termination),
        )
    settings.passed(stage)  # a plan in hand is kept past the deadline (solver.solve)
    values = dict(result.values)
    for name in lp.integer_variables:
        values[name] = float(round(values.get(name, 0.0)))
    return values


def verified(
    plan: Plan, check: Verification, what: str = "plan", settings: SolveSettings | None = None
) -> Plan:
    """The plan, once the verifier found no violation (checked past the deadline too: the
    plan is in hand), with a note where it ended past `settings`' time limit
    (`_past_limit`).

    Raises:
        PlanRejected: the verifier found violations (a bug, never an answer).
    """
    if not check.ok:
        raise PlanRejected(f"the solver's {what}", check.violations)
    return plan if settings is None else _past_limit(plan, settings, f"verification of the {what}")


def size_text(lp: LinearProgram) -> str:
    """The program's size in words."""
    size = lp.size()
    return (
        f"{size['variables']} variables ({size['integer_variables']} integer) and "
        f"{size['constraints']} constraints"
    )


def _past_limit(plan: Plan, settings: SolveSettings, stage: str) -> Plan:
    """The plan, with a note where `stage` (run whatever the limit: the plan's verification)
    ended past the run's time limit, saying by how much: the limit bounds the whole run,
    and the plan says where it did not."""
    deadline = settings.deadline
    if deadline is None or deadline.limit_s is None or not deadline.expired():
        return plan
    note = (
        f"time limit: the {stage} ended at {deadline.elapsed_s():.1f} s, past the "
        f"{deadline.limit_s:g} s limit (it runs whatever the limit: every plan is verified)"
    )
    return plan.model_copy(update={"notes": (*plan.notes, note)})
