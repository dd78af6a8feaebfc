"""Levers ranked by dollars: the plan re-solved with one change at a time (the levers
themselves, instance transformations: solver.analysis.lever_edits; each lever's re-solve
and its result: solver.analysis.lever_solve).

Re-solves run in a spawn-context process pool with one solver thread each (DESIGN.md,
"Scale") when there is more than one and `jobs` > 1.

Where the caller gives a time limit (`explain --levers`: what is left of the run's, or
`--levers-time-limit`), the levers share one deadline, counted from when they start
(solver.analysis.lever_shares): each lever, as it starts, gets an even share of what is
left over the rounds of `jobs` levers still to end (itself included), so the time a
quick lever leaves is the later ones' (a lever with no base plan to start from: at
least twice what the base plan's solve took, `BASE_SOLVES`), and never more than what
is left: the deadline is kept, in every horizon. A share counts from when the lever is
handed out, so a worker's start-up is inside it. A lever its share stops unproven is
tried once more after every lever has had its turn, with what the quicker ones left,
and keeps the better of its two ends. A lever its limit stops with a plan reports it
with its gap (`status` "feasible", `gap`): its cost is then an upper bound and its
saving a lower bound; one stopped before it has any plan says so (`no_solution`); one
whose turn comes with less than `MIN_START_S` left is not started and says that
(`no_solution`, `NOT_STARTED`), so no lever is dropped. Without a time limit from the
caller, each lever gets the instance's whole time limit.

The base plan starts every static re-solve (`SolveSettings.start`, by column name). A
lever that relaxes the question (a GPU type offered, a target looser, a failure
requirement dropped, ...) keeps the base plan a plan of its program: its search begins
with the base's cost in hand, skips the restricted program's start
(solver.decompose.warm_start), and even stopped by its share never reads below the base
(a saving >= 0, where a search stopped early could end on a dearer plan). For any lever
the start changes the search only, never the optimum the lever is proven to; a static
base program as large as a group's (lever_groups.large) has it leave out the pools config
dominance removes (`DOMINATED`: no optimum lost, a start it rules out not used). An hourly
or month lever that relaxes starts from the base plan where it is a plan of its periods
program (solver.time.day_choice.optimise_periods), others from none: one stopped on a plan
dearer than the base reports the base plan, saving 0, with a note (`base_is_better`).

`allow GPU` levers that save nothing are proven together where they can be, each
probed first (solver.analysis.lever_groups: where the group finds a cheaper plan, each
is solved alone).
"""

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import nullcontext
from typing import Any

from models.operations.time_demand import uses_time
from models.schema.instance import Instance
from solver.analysis import lever_shares
from solver.analysis.lever_edits import LeverWork, lever_work
from solver.analysis.lever_groups import (
    GroupOutcome,
    GroupWork,
    Neutral,
    groupable,
    groups_in,
    large,
    probes_early,
    servers_screen,
    solve_group,
)
from solver.analysis.lever_programs import BaseProgram, rounding_note, unused_offers
from solver.analysis.lever_shares import BASE_SOLVES, MIN_SHARE_S, NONE_LEFT, Shares
from solver.analysis.lever_solve import (
    STOPPED,
    LeverResult,
    as_base,
    base_is_better,
    lever_cost,
    not_started,
    solve_lever,
)
from solver.candidates.pools import seeded_share, shared_physics
from solver.candidates.table import CandidateTable
from solver.decompose.parallel import idle_cores
from solver.plan.schema import Plan
from solver.program.lp import LinearProgram
from solver.settings import Deadline
from solver.workers import new_pool

SHARED = True
"""Whether levers share their tables' physics (`shared_physics`); off: the bench's before."""
DOMINATED = True
"""Whether large static programs' levers search without dominated pools (module text)."""


def rank_levers(instance: Instance, base: Plan, **options) -> tuple[LeverResult, ...]:
    """Every applicable lever re-solved, largest saving first (no plan: last): a
    `LeverRun` of `instance` and `base` started and waited for (`options`: its other
    arguments, by name)."""
    with LeverRun(instance, base, **options) as run:
        return run.results()


class LeverRun:
    """The levers of one base plan re-solved, `jobs` at a time, in the background:
    `begin` hands them to worker processes and returns at once (a caller has other work
    for the time they take: explain's own re-solves), `results` waits for them. As a
    context manager it begins on entry and, on an error, cancels what has not started.

    Begun `beside` other work (explain's re-solves, each within its share of explain's
    time limit, not to be slowed into stopping unproven), the levers take one worker
    fewer (at least one) until `results` is called, all `jobs` once the caller waits;
    where others' work keeps the cores busy (fewer than `jobs` idle:
    solver.decompose.parallel.idle_cores), they begin when the caller waits, as alone.

    Args:
        instance: The base instance.
        base: The base plan (its $/month is what savings are measured from; its GPUs and
            servers what the rounding note compares with).
        backend: Solver backend (default: the instance's).
        jobs: Re-solves in parallel (spawn-context processes, one solver thread each).
        on_done: Called with each result as it finishes (progress), from the thread
            that hands out the work.
        start: The base plan's column values (`Solved.result.values`): every static
            re-solve starts from them (the module text). None: each starts on its own.
        time_limit_s: The levers' one time limit, shared as the module text says
            (`explain --levers`: what is left of the run's); None (the default): each
            lever gets the instance's whole `solver.time_limit_s`.
        program: The base plan's program (`Solved.program.lp`): a static lever whose
            program is the same is not solved again (solver.analysis.lever_programs);
            `allow GPU` levers whose programs relaxed but for whole servers find no use
            for their types are proven together, each solved alone only where that proves nothing
            (solver.analysis.lever_groups: each probed first, `_outcome`).
        deadline: The levers' deadline where it started before them (`explain --levers`:
            the run's, so that levers begun only once explain's own re-solves end do not
            count their time from then); `time_limit_s` is then what was left of it.
        table: The base's candidate table, for lever_programs.offers_nothing.
    """

    def __init__(
        self,
        instance: Instance,
        base: Plan,
        backend: str | None = None,
        jobs: int = 1,
        on_done: Callable[[LeverResult], None] | None = None,
        start: Mapping[str, float] | None = None,
        time_limit_s: float | None = None,
        program: LinearProgram | None = None,
        deadline: Deadline | None = None,
        table: CandidateTable | None = None,
    ):
        self.base = base
        self.base_program = None
        if program is not None and not uses_time(instance):
            self.base_program = BaseProgram.of(program, base)
        self.backend = backend
        self.jobs = max(jobs, 1)
        self.on_done = on_done
        self.work = lever_work(instance)
        self._relaxing = {item.name for item in self.work if item.relaxes}
        self.start = None if uses_time(instance) else start  # by_period starts on its own
        self._loosened = start  # hourly/month too: solver.time.day_choice.optimise_periods
        self.time_limit_s = time_limit_s
        self._deadline = deadline
        self._base_run_s = 0.0 if deadline is None else deadline.elapsed_s()
        self._instance, self._lp = instance, program
        self._unused = unused_offers(instance, base, program, table, backend)
        self._reduced = DOMINATED and self.start is not None and large(program)
        self._probing = self._probed(instance, program)
        self._base_bound: tuple[float, dict[str, float]] | None = None  # `_screened`
        """The levers whose turn first probes them (`solve_lever(probe=...)`) and the base
        program's `servers_bound` they are probed against: they go right after the levers
        `lever_work` puts before them (a finer server's, the longest), so that their group
        (`_outcome`) starts early and does not run alone at the end."""
        self.work = probes_early(self.work, self._probing)
        self._neutral: list[Neutral] = []
        self._first: dict[str, LeverResult] = {}
        """Levers stopped by their share, tried once more: their first result."""
        self._done: list[LeverResult] = []
        self._pool: Any = None
        self._thread: threading.Thread | None = None
        self._failed: list[BaseException] = []
        self._limit = self.jobs
        """Levers at once now (`beside`: one fewer until `results`)."""
        self._woken: Future = Future()
        """Done when `results` lifts the limit (the dispatcher waits on it too)."""

    def _probed(self, instance: Instance, program: LinearProgram | None) -> set[str]:
        """The `allow GPU` levers that may be proven together (lever_groups: `groups_in`,
        `groupable`; two at least)."""
        if program is None or not groups_in(instance, program, self.start, self.base_program):
            return set()
        names = {
            item.name
            for item in self.work
            if item.relaxes and groupable(instance, item.offers, item.instance)
        }
        return names if len(names) > 1 else set()

    def _screened(self) -> None:
        """The base program's `servers_bound` and plan for the probes (none: no probe), by
        the thread handing levers out, not the caller's (chat-3region: 0.35 s)."""
        if self._probing and self._base_bound is None:
            screen = servers_screen(self._lp, self.backend)
            found = screen.termination.has_solution
            self._probing = self._probing if found else set()
            self._base_bound = (screen.objective, dict(screen.values)) if found else None

    def __enter__(self) -> "LeverRun":
        return self.begin()

    def __exit__(self, kind, error, trace) -> None:
        self.close(cancel=error is not None)

    def close(self, cancel: bool = False) -> None:
        """Shut the workers down once the running levers end; `cancel`: the levers not
        started are dropped (an error: nobody waits for them)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=cancel)
        if self._thread is not None:
            self._thread.join()

    def begin(self, beside: bool = False) -> "LeverRun":
        """Hand the levers to `jobs` worker processes (made in this thread, so that they
        end with it: solver.workers), handed out by a thread of their own, one fewer
        while the caller works `beside` them; with one job or one lever, nothing yet
        (`results` solves them here)."""
        if self._pool is not None or not self._parallel:
            return self
        if beside and idle_cores() < self.jobs:
            return self  # the cores are others': begun by `results`
        if beside:
            self._limit = max(self.jobs - 1, 1)
        self._shares = self._new_shares()
        self._pool = new_pool(self.jobs, then=seeded_share() if SHARED else None)
        self._thread = threading.Thread(target=self._hand_out, name="fleetplan-levers", daemon=True)
        self._thread.start()
        return self

    def results(self) -> tuple[LeverResult, ...]:
        """Every lever's result, largest saving first (no plan: last), once all ended."""
        if not self._parallel:
            self._shares = self._new_shares()
            self._screened()
            waiting: deque = deque(self.work)
            with shared_physics() if SHARED else nullcontext():
                while waiting:
                    item = waiting.popleft()
                    task = self._task(item, 0)
                    done = task[0](*task[1], **task[2]) if task else _not_started(item)
                    self._outcome(done, waiting)
        else:
            self.begin()
            self._limit = self.jobs
            if not self._woken.done():
                self._woken.set_result(None)
            self._thread.join()
            if self._failed:
                raise self._failed[0]
        noted = (
            r.model_copy(update={"note": rounding_note(r, self.base) or r.note}) for r in self._done
        )
        return tuple(sorted(noted, key=_rank))

    @property
    def beside(self) -> int:
        """Worker processes solving levers beside the caller now (`begin(beside=True)`)."""
        running = self._pool is not None and not self._woken.done()
        return self._limit if running else 0

    @property
    def _parallel(self) -> bool:
        return self.jobs > 1 and len(self.work) > 1

    def _new_shares(self) -> "Shares":
        """The levers' one deadline (module text): the given one (the run's), else
        `time_limit_s` from now. Under the run's deadline a share is at least what the
        base run took until the levers were made (its candidates, program, solve and
        checks): a lever is one more such run, and a share below it stops a lever in its
        candidates or build with no plan at all, where the later levers, not started,
        leave the earlier ones enough to answer (a loaded machine). A lever is expected to
        take that floor, or the base plan's solve where that is longer (`Shares.expect_s`)."""
        floor_s = max(MIN_SHARE_S, self._base_run_s)
        solved_s = self.base.solver.runtime_s if self.base.solver else 0.0
        if self.start is None:  # no base plan in hand: a share must let the lever find one
            floor_s = max(floor_s, BASE_SOLVES * solved_s)
        deadline = self._deadline or Deadline.starting_now(self.time_limit_s)
        expect_s = max(floor_s, solved_s) if lever_shares.EXPECTED else 0.0
        return Shares(deadline, self.jobs, len(self.work), floor_s, expect_s)

    def _task(
        self, item: "LeverWork | GroupWork", running: int
    ) -> tuple[Callable, tuple, dict] | None:
        """The function and arguments that do `item`, `running` others beside it: a
        lever's solve within its share (None: not to start, `NONE_LEFT`), or a group's."""
        base_cost = lever_cost(self.base)
        grouped = isinstance(item, GroupWork)
        share_s = self._shares.next_s(running, len(item.members) if grouped else 1)
        if share_s == NONE_LEFT:
            return None
        if grouped:
            args = (item.members, self._instance, base_cost, self.backend, self.start, self._lp)
            return solve_group, (*args, share_s, time.monotonic()), {}
        probe: dict[str, Any] = {"reduced": True} if self._reduced else {}
        if item.name in self._probing and item.offers and self._base_bound is not None:
            probe["probe"] = (item.offers, *self._base_bound)
        if item.offers and self._unused is not None:
            probe["unused"] = self._unused
        start = self._loosened if item.relaxes else self.start
        return solve_lever, (
            item.name, item.instance, base_cost, self.backend, share_s, start,
            self.base_program, time.monotonic(),
        ), probe  # fmt: skip

    def _outcome(self, outcome: "LeverResult | Neutral | GroupOutcome", waiting: deque) -> None:
        """Take in what a task returned: a lever's result; a probed lever's `Neutral`,
        kept until every probe is back, then the neutral levers put first in `waiting`
        as one group (one alone: solved alone); a group's outcome, whose answered levers
        take the base plan and whose others go back first in `waiting`, solved alone."""
        if isinstance(outcome, GroupOutcome):
            base_cost, base = lever_cost(self.base), self.base_program
            for name, answer in outcome.answered.items() if base is not None else ():
                result = as_base(name, base_cost, base, answer.note, answer.gap)
                if answer.fields is not None:  # the group's plan, a plan of the lever's
                    cost = answer.cost_per_month
                    changes = {"cost_per_month": cost, "saving_per_month": base_cost - cost}
                    result = result.model_copy(update={**changes, **answer.fields})
                self._finished(result)
            waiting.extendleft(reversed([i for i in self.work if i.name in outcome.unanswered]))
            return
        if isinstance(outcome, Neutral):
            self._neutral.append(outcome)
        else:
            self._ended(outcome, waiting)
        if outcome.lever not in self._probing:
            return
        self._probing.discard(outcome.lever)
        if self._probing or not self._neutral:
            return
        members, self._neutral = tuple(self._neutral), []
        if len(members) > 1:
            waiting.appendleft(GroupWork(members))
        else:
            waiting.extendleft(i for i in self.work if i.name == members[0].lever)

    def _ended(self, result: LeverResult, waiting: deque) -> None:
        """A lever's solve ended: one its share of a shared deadline stopped unproven goes
        once more to the end of `waiting` (`Shares.again`: with what the others leave
        it), and the better of its two ends is its result (`_better`)."""
        first = self._first.pop(result.lever, None)
        if first is None and self.time_limit_s is not None and _stopped(result):
            self._first[result.lever] = result
            self._shares.again()
            waiting.extend(item for item in self.work if item.name == result.lever)
            return
        self._finished(result if first is None else min(first, result, key=_better))

    def _finished(self, result: LeverResult) -> None:
        if result.lever in self._relaxing:
            result = base_is_better(result, self.base)
        self._done.append(result)
        if self.on_done:
            self.on_done(result)

    def _hand_out(self) -> None:
        """The dispatcher: start levers while fewer than the limit run, each with its
        share as it starts, until every one has ended (an error ends it, for `results`);
        it wakes when a lever ends or `results` lifts the limit."""
        try:
            self._screened()
            waiting: deque = deque(self.work)
            running: set[Future] = set()
            while waiting or running:
                while waiting and len(running) < self._limit:
                    item = waiting.popleft()
                    task = self._task(item, len(running))
                    if task is None:
                        self._outcome(_not_started(item), waiting)
                        continue
                    running.add(self._pool.submit(task[0], *task[1], **task[2]))
                woken = set() if self._woken.done() else {self._woken}
                finished, _ = wait(running | woken, return_when=FIRST_COMPLETED)
                for future in finished - woken:
                    running.discard(future)
                    self._outcome(future.result(), waiting)
        except BaseException as error:  # handed to `results`
            self._failed.append(error)


def _not_started(item: "LeverWork | GroupWork") -> "LeverResult | GroupOutcome":
    """What a task not started (no time left) gives: the lever's `not_started`, or for a
    group its members back to be solved alone (and so not started either)."""
    if isinstance(item, GroupWork):
        return GroupOutcome({}, tuple(member.lever for member in item.members))
    return not_started(item.name)


def _stopped(result: LeverResult) -> bool:
    """Whether the lever's share stopped it before it was proven (with a plan or none)."""
    return result.status == "feasible" or (
        result.status == "no_solution" and result.reason.startswith(STOPPED.split("(")[0])
    )


def _better(result: LeverResult) -> tuple[bool, bool, float, float]:
    """The order of two ends of one lever: proven first, then with a plan, the cheaper
    plan, the smaller gap."""
    cost = math.inf if result.cost_per_month is None else result.cost_per_month
    return result.status != "solved", result.cost_per_month is None, cost, result.gap or 0.0


def _rank(result: LeverResult) -> tuple[bool, float, str]:
    saving = result.saving_per_month
    return (saving is None, -(saving or 0.0), result.lever)
