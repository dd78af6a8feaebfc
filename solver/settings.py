"""The one runtime settings object of a solve: which backend, its limits, and its deadline.

The instance file's `solver` section (`models.schema.policy.SolverSettings`) is the schema a
user writes; `SolveSettings` is what the pipeline, the decomposition, the diagnosis and
every backend call read. `SolveSettings.of` applies command-line overrides to the
instance's section; `Backend.solve` builds one from its keyword arguments, so a backend
sees the same object (`solver.backends.base.SolveOptions` is this class).

The time limit bounds the whole run, not one solver call: a command starts one
`Deadline` (`SolveSettings.started`), every stage (candidates, program build, solve,
pricing, verification, explain) checks it when it ends (`Deadline.check`, which raises
`TimeLimitReached` naming the stage), and every backend call gets only the time that is
left (`SolveSettings.remaining_s`).
"""

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from models.schema import limits
from models.schema.backend_names import DEFAULT_BACKEND
from models.schema.instance import Instance
from solver import progress
from solver.errors import NoSolution
from solver.progress import StageReporter

MIN_CALL_S = 0.01
"""Least time limit handed to a solver call (a zero or negative one is an error there)."""
SOLVE_SHARE = 0.8
"""Share of a run's time limit its solve may use (`SolveSettings.within`): the rest is
kept for the pricing LP, the verifier and the report, so that a solve the limit stops
with a plan in hand (FEASIBLE, its gap stated) still returns that plan. The fifth kept
covers the largest bench instance's work after its solve (the README's speed notes)."""
PRICING_SHARE = 0.95
"""Share of a run's time limit by which the pricing LP must end: a plan whose pricing LP
has not ended by then is reported without shadow prices (and says so), and the rest is
the verifier's."""
PRICING_BACKEND = "highs"
"""Backend that prices a plan when the chosen one gives no duals (scip, cpsat)."""


class TimeLimitReached(NoSolution):
    """The deadline passed while `stage` was running; nothing after it was done."""

    def __init__(
        self,
        stage: str,
        limit_s: float,
        elapsed_s: float,
        detail: str = "",
        share: str | None = None,
    ):
        self.stage = stage
        advice = detail or "raise --time-limit (or solver.time_limit_s)"
        said = reached(stage, limit_s, elapsed_s, share)
        super().__init__(f"{said}; {advice}", "time_limit")


def reached(stage: str, limit_s: float, elapsed_s: float, share: str | None = None) -> str:
    """What stopped `stage`: the run's limit, or, where `share` names whose share of it
    the stage ran in (a month's of a horizon: solver.time.shares) and it stopped before
    the limit, that share, with how much of the limit was used. 'time limit of 60 s
    reached in month 46 after 20.6 s' said the limit was reached at a third of it; it
    now says 'month 46's share of the 60 s time limit ran out after 20.6 s (34% of the
    limit used)'."""
    if share and 0.0 < elapsed_s < limit_s:
        where = "" if stage == share else f" in {stage}"
        return (
            f"{share}'s share of the {limit_s:g} s time limit ran out after {elapsed_s:.1f} s"
            f"{where} ({elapsed_s / limit_s:.0%} of the limit used)"
        )
    return f"time limit of {limit_s:g} s reached in {stage} after {elapsed_s:.1f} s"


@dataclass(frozen=True)
class Deadline:
    """A wall-clock budget on the monotonic clock, started once and handed down.

    Attributes:
        start: `time.monotonic()` when the budget started.
        limit_s: Seconds allowed from `start`; None for no limit.
    """

    start: float
    limit_s: float | None
    stages: StageReporter = field(default_factory=StageReporter, compare=False, repr=False)
    """Reports the stages the run passes once it is past progress.QUIET_S."""

    @classmethod
    def starting_now(cls, limit_s: float | None) -> "Deadline":
        """A budget of `limit_s` seconds from now."""
        return cls(time.monotonic(), limit_s)

    def elapsed_s(self) -> float:
        """Seconds since the start."""
        return time.monotonic() - self.start

    def remaining_s(self, floor_s: float = MIN_CALL_S) -> float | None:
        """Seconds left (at least `floor_s`), or None without a limit."""
        if self.limit_s is None:
            return None
        return max(floor_s, self.limit_s - self.elapsed_s())

    def expired(self) -> bool:
        """Whether the budget is spent."""
        return self.limit_s is not None and self.elapsed_s() >= self.limit_s

    def check(self, stage: str) -> None:
        """Stop the run, naming `stage`, when the budget is spent.

        Raises:
            TimeLimitReached: the deadline has passed.
        """
        if self.limit_s is not None and self.expired():
            raise TimeLimitReached(stage, self.limit_s, self.elapsed_s())


def machine_threads() -> int:
    """Cores this process may use (the solver threads' ceiling): `limits.max_threads`,
    which the warning about `solver.threads` reads too."""
    return limits.max_threads()


EXECUTORS = ("local", "ray")
"""Where the decompositions' subproblems run (`SolveSettings.executor`)."""

SCENARIO_ROWS = ("auto", "routing", "cuts")
"""The ways region and zone loss may enter the program (`SolveSettings.scenario_rows`)."""

COMPARISON_GAP = 0.01
"""Relative gap of comparison re-solves: 1% of a plan's cost is well inside what a
planner reads from "what would it cost without this pool", and proving the last 0.1% of a
whole-server program can take ten times as long."""


@dataclass(frozen=True)
class SolveSettings:
    """Backend, limits and whether duals are wanted, validated once."""

    backend: str = DEFAULT_BACKEND
    time_limit_s: float | None = 60.0
    """Wall-clock budget of the whole run; None for no limit."""
    mip_gap: float = 1e-3
    threads: int = 1
    """Solver threads, never more than the machine's cores (`SolveSettings.of` caps it)."""
    want_duals: bool = False
    """Return row duals (an LP only, and a backend that can)."""
    tighten: bool = False
    """Add the valid inequalities of solver.program.tightening to the program
    (same plans and optimum; off: they did not shorten the shipped instances' solves)."""
    scenario_rows: str = "auto"
    """How region and zone loss enter the program: `routing` (each scenario restates the
    routing of every region), `cuts` (only the Hall rows its solutions break:
    solver.decompose.scenario_cuts; where that is not exact, routing) or `auto` (cuts
    where exact from `AUTO_MIN_REGIONS` regions, routing below: failover_rows there)."""
    executor: str = "local"
    """Where the workload, scenario and period subproblems run: `local` (this machine's
    worker processes, solver.decompose.parallel) or `ray` (Ray tasks on the cluster
    `ray.init` finds, or a local one: the `ray` extra)."""
    node_limit: int | None = None
    """Branch-and-bound nodes one backend call may search (`Capabilities.node_limit`); None
    for no limit. A work limit, not a clock: a search held to it ends at the same point
    on an idle and on a loaded machine (solver.decompose.region_bounds, warm_start)."""
    deadline: Deadline | None = field(default=None, compare=False)
    """The run's deadline once started (`started`); None before."""
    start: Mapping[str, float] | None = field(default=None, compare=False, repr=False)
    """Values by column name of a plan the whole program's search may start from, in
    place of the restricted program's (solver.decompose.warm_start): a lever's re-solve
    starts from the base plan (solver.analysis.levers). A start changes the search only,
    never the optimum; one the program's bounds rule out is not used."""
    dominated_with_start: bool = field(default=False, compare=False)
    """Whether a search from `start` too leaves out the pools config dominance removes
    (solver.candidates.config_dominance; the optimum unchanged): a group of GPU levers'
    (solver.analysis.lever_groups), where it pays; without a start they always are."""
    region_rows_with_start: bool = field(default=True, compare=False)
    """Whether a search from `start` works out its regions' own programs for the
    region_cost rows (solver.decompose.region_bounds) where the program holds none yet:
    off for a lever's re-solve from the base plan (solver.analysis.lever_solve.REGION_ROWS),
    whose incumbent ends the search in fewer nodes than the regions' programs cost; rows
    the program holds already (`FleetProgram.region_costs`) are used either way."""

    def __post_init__(self) -> None:
        if self.time_limit_s is not None and not (
            math.isfinite(self.time_limit_s) and self.time_limit_s > 0
        ):
            raise ValueError(f"time_limit_s must be a positive number, got {self.time_limit_s}")
        if not (math.isfinite(self.mip_gap) and self.mip_gap >= 0):
            raise ValueError(f"mip_gap must be a number >= 0, got {self.mip_gap}")
        if self.node_limit is not None and (
            isinstance(self.node_limit, bool)
            or not isinstance(self.node_limit, int)
            or self.node_limit < 1
        ):
            raise ValueError(f"node_limit must be an integer >= 1, got {self.node_limit!r}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"threads must be an integer >= 1, got {self.threads!r}")
        if self.executor not in EXECUTORS:
            raise ValueError(
                f"executor must be one of {', '.join(EXECUTORS)}, got {self.executor!r}"
            )
        if self.scenario_rows not in SCENARIO_ROWS:
            raise ValueError(
                f"scenario_rows must be one of {', '.join(SCENARIO_ROWS)}, "
                f"got {self.scenario_rows!r}"
            )

    @classmethod
    def of(
        cls,
        instance: Instance,
        backend: str | None = None,
        time_limit_s: float | None = None,
        mip_gap: float | None = None,
        threads: int | None = None,
        scenario_rows: str | None = None,
        executor: str | None = None,
    ) -> "SolveSettings":
        """The instance's `solver` section with any given override applied; threads
        capped at the machine's cores (more only oversubscribe, and a huge count hangs
        HiGHS and SCIP)."""
        base = instance.solver
        wanted_threads = base.threads if threads is None else threads
        return cls(
            backend=backend or base.backend,
            time_limit_s=base.time_limit_s if time_limit_s is None else time_limit_s,
            mip_gap=base.mip_gap if mip_gap is None else mip_gap,
            threads=max(1, min(wanted_threads, machine_threads())),
            scenario_rows=scenario_rows or base.scenario_rows,
            executor=executor or "local",
        )

    def started(self, at: float | None = None) -> "SolveSettings":
        """These settings with the run's deadline started (at `at`, a `time.monotonic()`
        reading, or now); settings already started keep their deadline."""
        if self.deadline is not None:
            return self
        start = time.monotonic() if at is None else at
        progress.forget_held()
        return replace(self, deadline=Deadline(start, self.time_limit_s))

    def within(self, share: float) -> "SolveSettings":
        """These settings with the deadline moved to `share` of the run's limit, for one
        stage of a run (`SOLVE_SHARE`, `PRICING_SHARE`; the run's own checks keep the
        whole limit)."""
        if self.deadline is None or self.deadline.limit_s is None:
            return self
        return replace(self, deadline=Deadline(self.deadline.start, self.deadline.limit_s * share))

    def spent(self) -> bool:
        """Whether the deadline has passed (False before start or without a limit): a
        stage that would build programs only to stop each at once skips to what follows."""
        return self.deadline is not None and self.deadline.expired()

    def remaining_s(self) -> float | None:
        """The time limit of the next solver call: what is left of the deadline, and no
        more than `time_limit_s`."""
        left = None if self.deadline is None else self.deadline.remaining_s()
        if self.time_limit_s is None:
            return left
        return self.time_limit_s if left is None else min(left, self.time_limit_s)

    def check(self, stage: str, within: bool = False) -> None:
        """Stop the run naming `stage` when the deadline has passed (no-op before start);
        `within`: checked inside the stage, so its progress line says `in STAGE`, not done.

        Raises:
            TimeLimitReached: the deadline has passed.
        """
        if self.deadline is not None:
            self.deadline.check(stage)
            self.deadline.stages.passed(stage, self.deadline.elapsed_s(), within)

    def hold(self, note: str) -> None:
        """Tell `note` with the run's first progress message (solver.progress.hold)."""
        progress.hold(note)

    def passed(self, stage: str, within: bool = False) -> None:
        """Report `stage` done, or the run `within` it (solver.progress, past QUIET_S),
        without stopping the run."""
        if self.deadline is not None:
            self.deadline.stages.passed(stage, self.deadline.elapsed_s(), within)

    def limited(self, time_limit_s: float | None) -> "SolveSettings":
        """The same settings with another time limit (the deadline still applies)."""
        return replace(self, time_limit_s=time_limit_s)

    def nodes(self, node_limit: int | None) -> "SolveSettings":
        """The same settings with a node limit on each backend call (the deadline still
        applies)."""
        return replace(self, node_limit=node_limit)

    def for_comparison(self) -> "SolveSettings":
        """These settings for a comparison re-solve (explain's alternatives, what a policy
        limit costs): the gap loosened to at most `COMPARISON_GAP`, the deadline kept."""
        return replace(self, mip_gap=max(self.mip_gap, COMPARISON_GAP))

    def with_duals(self, want_duals: bool = True) -> "SolveSettings":
        """The same settings asking (or not) for duals."""
        return replace(self, want_duals=want_duals)
