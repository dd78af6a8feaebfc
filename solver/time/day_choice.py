"""The day's configurations (solver.program.families.simplicity) where the periods
program is solved period by period.

The day columns `day_config[w,c,d]` join every period of the periods program; the
period decomposition (solver.decompose.by_period) splits it on the commitment alone.
Like the commitment, the choice is shared between periods; it is fixed from a first
pass and each choice is solved by the rounds:

    day_config[w,c,d] = 1   where the choice runs (w, c, d), else 0
    config_in_day[w,c,d]@p: pool_used[w,c,d]@p <= day_config[w,c,d], in every period

(configs_per_day then holds at once and is dropped). The choices, each that differs
solved and the cheapest plan kept: a start's (a lever's base plan, whose question the
lever may have loosened: the relaxation may then choose what it allows), and

- the held fleet's (the static plan of the day's peak,
  models.operations.time_demand.held_all_day, which serves every period: every hour's
  warm rates are at most the peak's): the pools it runs (pool_used or replicas > 0);
  its own plan is among that choice's, so the day is never dearer than the peak
  fleet held every hour;
- the hour-by-hour program's LP relaxation's (`relaxed_choice`), which sees what the
  peak does not: a later month's committed floor (growth-horizon's month 5 holds 16
  H100 committed; the peak's static plan, blind to it, chose H200 for us-east chat and
  that choice cost $55,461 against $39,293 on H100).

Every choice is begun first, up to the period rounds' priced pass and its bound
(solver.decompose.by_period.begin_periods), and finished lowest bound first, each after
the first with the cheapest plan so far as its cutoff: where its bound is above that
plan, it ends there (no plan below the cutoff) and the plan kept is the one it would
have lost to. The plan kept is the one the choices tried in turn would keep (a later
choice kept only where it is cheaper by more than 1e-6), since a choice that ends at
the cutoff costs more than the plan in hand by more than that. procurement-3region's
month 0: the relaxation's choice, tried first, cost $99,732.64 in full (0.6 s of CPU)
where the peak fleet's plan costs $91,405.77.

What is proven: the plan is optimal, within its stated gap, among plans that run the
chosen configurations all day; other choices are not searched, and the method says so.

The day columns are fixed even where the program would split with them in it (a
block of a region's periods where no failover joins the regions): procurement-3region's
months split so into 3 blocks of 21 periods, and the rounds ended them 12-28% off
(91 s against 27 s fixed). Where the program does not split at all (no commitment, or
batch work joins its periods), the whole program holds the day columns free and its
search proves the day-wide choice; so it does where no fixed choice has a plan. Without
a held fleet or a start (explain's re-solves without a pool) the relaxation's choice is
the one tried (each configs_per_day row where the relaxation runs none closed).

`optimise_periods` is the periods program's one meeting with the backend, so solved (by
the program step, solver.time.step, and explain's re-solves, solver.time.alternatives).
"""

import math
from dataclasses import replace
from functools import partial

from solver.backends import Backend
from solver.backends.compile_memo import CompileMemo
from solver.backends.shared_rows import SharedRows
from solver.decompose.by_period import answer, begin_periods, solve_periods
from solver.decompose.period_passes import (
    HELD_GAP,
    LP_PRICES_SHARE,
    LP_S_PER_NONZERO,
    pass_limit,
    relaxation,
)
from solver.decompose.period_split import Fleet, split
from solver.program.families.pricing import GpuCoverRow
from solver.program.families.simplicity import (
    DAY_ROW_FAMILIES,
    ConfigInDayRow,
    ConfigsPerDayRow,
    DayConfigColumn,
)
from solver.program.families.variables import PoolUsedColumn
from solver.program.lp import Constraint, LinearProgram, SolveResult, Termination, plan_of
from solver.program.optimised import Optimised
from solver.program.row_names import ReplicasColumn, family_of, split_timed
from solver.settings import SolveSettings
from solver.time.periods import TimeProgram
from solver.time.shares import expired

LATE_WHOLE_S = 5.0
"""Seconds a program whose day's choices have no plan by the deadline, the held fleet's
included, is solved whole past it (`_late_whole`): a procurement-3region month whose
commitment, inherited from stopped months, leaves the held fleet's choice no plan under
us-east's 88 kW was solved whole to 1% in 1.9-4.2 s on a machine loaded 5-7 on 2 cores."""

LATE_WHOLE = f"none by the deadline: the program solved whole past it (within {LATE_WHOLE_S:g} s)"
"""The answer's message where it is `_late_whole`'s, which the plan's method names
(solver.time.solve.day_method)."""

DAY_METHOD = "each pool's configuration held all day"
"""What a plan whose day choice was fixed says in its method, with the choice's source
(proven for that choice)."""

CHOSEN_METHOD = "each pool's configuration chosen for the whole day"
"""What a plan of the whole program with its day columns free says."""

OPEN = 0.5


_DAY = DayConfigColumn.family + "["
"""How a day column's name begins (`family_of(name) == DayConfigColumn.family`, for a
name with an index: the test of every column of a month's program, read at C speed)."""


def _is_day(name: str) -> bool:
    """`family_of(name) == DayConfigColumn.family`."""
    return name.startswith(_DAY) or name == DayConfigColumn.family


def day_columns(lp: LinearProgram) -> list[str]:
    """The day's configuration columns of `lp` (none: no limit, or one period)."""
    return list(filter(_is_day, lp.variables))


def without_day(lp: LinearProgram, choice: dict[str, float] | None = None) -> LinearProgram:
    """`lp` less its day columns and rows; with `choice` (day column -> 0 or 1), each
    config_in_day row kept with its day column at the choice's value,
    pool_used[w,c,d]@p <= 0 or 1 (a row, not a bound: the held fleet's pass fixes its
    pools' columns by their bounds, solver.decompose.by_period)."""
    fixed = LinearProgram(lp.name, objective=dict(lp.objective))
    fixed.objective_constant = lp.objective_constant
    fixed.variables = {name: var for name, var in lp.variables.items() if not _is_day(name)}
    rows = fixed.constraints
    for name, row in lp.constraints.items():
        if row.family not in DAY_ROW_FAMILIES:
            rows[name] = row
        elif choice is not None and row.family == ConfigInDayRow.family:
            day = list(filter(_is_day, row.coefficients))
            own = {v: c for v, c in row.coefficients.items() if v not in day}
            rhs = row.rhs - sum(row.coefficients[v] * choice.get(v, 0.0) for v in day)
            rows[name] = Constraint(row.name, row.family, own, row.sense, rhs)
    return fixed


def choice_of(lp: LinearProgram, values: dict[str, float]) -> dict[str, float] | None:
    """The day columns of `lp` set from a plan's `values`: its own day columns where it
    names them, else open where it runs the pool (pool_used or replicas above 0, under
    a period's name or the static one); None where that opens more configurations than
    a configs_per_day row allows."""
    columns = day_columns(lp)
    if any(name in values for name in columns):
        choice = {name: float(values.get(name, 0.0) > OPEN) for name in columns}
    else:
        running = {
            split_timed(name)[0]
            for name, value in values.items()
            if value > OPEN and family_of(name) in (PoolUsedColumn.family, ReplicasColumn.family)
        }
        choice = {}
        for name in columns:
            day = DayConfigColumn.parse(name)
            pool = (day.workload, day.candidate, day.region)
            opened = {PoolUsedColumn(*pool).name(), ReplicasColumn(*pool).name()} & running
            choice[name] = 1.0 if opened else 0.0
    for row in lp.constraints.values():
        if row.family != ConfigsPerDayRow.family:
            continue
        opened = sum(choice.get(v, 0.0) for v in row.coefficients)
        if opened > row.rhs + 1e-9:
            return None
    return choice


def with_day_columns(lp: LinearProgram, values: dict[str, float]) -> dict[str, float]:
    """A plan's `values` with `lp`'s day columns set where it names none (`choice_of`: a
    base plan solved before its program had them, a lever's that adds a configuration);
    as they are where no choice fits."""
    if not day_columns(lp) or any(name in values for name in day_columns(lp)):
        return values
    choice = choice_of(lp, values)
    return values if choice is None else values | choice


def relaxed_choice(
    lp: LinearProgram, base: dict[str, float], backend, settings, rows=None
) -> dict[str, float] | None:
    """`base` with each configs_per_day row's choice taken from the LP relaxation of the
    program without the day rows (the hour-by-hour program, which sees the month's
    committed floor): its K configurations of the most GPU-hours, sum over periods of
    replicas@p x GPUs per replica (from the gpu_cover rows), where it runs any there;
    None where the relaxation does not end within `LP_PRICES_SHARE` of the time left, or
    the deadline has passed (no choice is searched for then: the held fleet's is tried).
    `rows`: the month's rows compiled once (solver.backends.shared_rows), which the
    relaxation's rows are sliced from."""
    if expired(settings):
        return None
    free = without_day(lp)
    limit = pass_limit(settings, 1, LP_PRICES_SHARE)
    if limit is not None and limit < LP_S_PER_NONZERO * free.size()["nonzeros"]:
        return None
    answer = backend.run(relaxation(free, rows), settings.limited(limit).with_duals(False))
    if not answer.termination.has_solution:
        return None
    gpus: dict[str, float] = {}  # per day column: GPU-periods the relaxation runs
    for row in free.constraints.values():
        if row.family != GpuCoverRow.family:
            continue
        for name, coefficient in row.coefficients.items():
            if family_of(name) == ReplicasColumn.family and coefficient < 0:
                pool = ReplicasColumn.parse(name)
                day = DayConfigColumn(pool.workload, pool.candidate, pool.region).name()
                gpus[day] = gpus.get(day, 0.0) - coefficient * answer.values.get(name, 0.0)
    choice = dict(base)
    for row in lp.constraints.values():
        if row.family != ConfigsPerDayRow.family:
            continue
        ranked = sorted(row.coefficients, key=lambda v: -gpus.get(v, 0.0))
        kept = [v for v in ranked[: round(row.rhs)] if gpus.get(v, 0.0) > OPEN]
        if kept:
            choice |= {v: float(v in kept) for v in row.coefficients}
    return choice


def solve_by_day(
    lp, backend, settings, fleet: Fleet | None, start, solve, begin=None
) -> SolveResult:
    """`solve(lp, backend, settings, fleet, start)` (solver.decompose.by_period
    .solve_periods) with the day's configurations fixed where the program splits once
    they are (the module text): `start`'s (a lever's base plan), the held fleet's and the
    relaxation's (`relaxed_choice`), those that differ each solved, the cheapest kept, its
    source in the method; else on `lp` itself. Where the deadline leaves it no plan even
    so (the held fleet's included), the program solved whole past it (`_late_whole`)."""
    found = _by_day(lp, backend, settings, fleet, start, solve, begin)
    if found.termination.has_solution or not expired(settings):
        return found
    return _late_whole(lp, backend, settings) or found


class _Begun:
    """A choice's solve begun up to its priced pass (its steps:
    solver.decompose.by_period.begin_periods): its `bound`, and its answer at a cutoff
    (`finish`)."""

    def __init__(self, steps):
        self._steps, self._answer = steps, None
        try:
            self.bound = next(steps)
        except StopIteration as ended:  # ended before its priced pass: no cutoff to meet
            self.bound, self._answer = -math.inf, ended.value

    def finish(self, cutoff: float | None) -> SolveResult:
        """The answer, `cutoff` as solve_periods' (solver.decompose.by_period)."""
        if self._answer is None:
            self._answer = answer(self._steps, cutoff, begun=True)
        return self._answer


def _in_turn(solve, fixed, backend, settings, fleet, own, parts, memo):
    """`solve` (solve_periods' face) in steps with no bound: the choices finish in turn
    (`memo` unused: solve_periods compiles through its own)."""
    del memo
    cutoff = yield -math.inf
    return solve(fixed, backend, settings, fleet, own, cutoff=cutoff, parts=parts)


def _by_day(lp, backend, settings, fleet: Fleet | None, start, solve, begin=None) -> SolveResult:
    """`solve_by_day` but its last resort. The program fixed at any choice splits alike
    (a choice moves only the config_in_day rows' right-hand sides, which the split does not
    read): it is split once, at none open, and each choice's rounds take that split."""
    unchosen = without_day(lp, {}) if day_columns(lp) else None
    parts = split(unchosen) if unchosen is not None else None
    if parts is None:
        return solve(lp, backend, settings, fleet, start)
    memo = CompileMemo()  # the choices' blocks' memo, their rows sliced from one compile
    memo.rows_from = SharedRows(unchosen)
    if begin is None:  # each choice solved in turn: no bound until it ends
        begin = partial(_in_turn, solve)
    choices: list[tuple[str, dict[str, float]]] = []
    held = fleet() if fleet is not None else None
    firsts = [
        ("the start's", choice_of(lp, start) if start else None),
        ("the peak fleet's", choice_of(lp, held.late_layout) if held is not None else None),
    ]
    for source, choice in firsts:
        if choice is not None and all(choice != c for _, c in choices):
            choices.append((source, choice))
    base = choices[0][1] if choices else dict.fromkeys(day_columns(lp), 0.0)
    relaxed = relaxed_choice(lp, base, backend, settings, memo.rows_from)
    if relaxed is not None and all(relaxed != c for _, c in choices):
        choices.append(("the hour-by-hour LP relaxation's", relaxed))
    begun = []  # each choice begun (the module text)
    for position, (source, choice) in enumerate(reversed(choices)):
        if begun and expired(settings):
            break  # the month's share is spent: the choices begun
        fixed = without_day(lp, choice)
        own = {k: v for k, v in start.items() if k in fixed.variables} if start else None
        own = own if own is not None and plan_of(fixed, own) else None
        steps = begin(fixed, backend, settings, fleet, own, parts, memo)
        begun.append((position, source, choice, _Begun(steps)))
    done, found = [], None
    for position, source, choice, run in sorted(begun, key=lambda b: (b[3].bound, b[0])):
        plans = [f.objective or 0.0 for _, f, *_ in done if f.termination.has_solution]
        if plans and expired(settings):
            break  # the month's share is spent: the plan in hand
        found = run.finish(min(plans) if plans else None)  # a dearer choice loses
        done.append((position, found, choice, source))
    best = None
    for _, found_, choice, source in sorted(done, key=lambda d: d[0]):  # as tried before
        if found_.termination.has_solution and (
            best is None or (found_.objective or 0.0) < (best[0].objective or 0.0) - 1e-6
        ):
            best = (found_, choice, source)
    if best is None:
        if found is not None and expired(settings):
            return found
        return solve(lp, backend, settings, fleet, start)
    found, choice, source = best
    tried = f"the cheapest of {len(choices)} tried" if len(choices) > 1 else "the one tried"
    day = f"{DAY_METHOD} at {source} choice ({tried}; the gap is within that choice)"
    message = f"{found.message}, {day}" if found.message else day
    return replace(found, values=found.values | choice, message=message)


def _late_whole(lp: LinearProgram, backend, settings) -> SolveResult | None:
    """Past the deadline, where the choices tried have no plan (the held fleet's plan,
    its periods re-planned with their pools free at its commitment, has none: a month
    whose inherited commitment and caps leave its day's choice no room): the program
    itself solved whole within `LATE_WHOLE_S` to `HELD_GAP`, its commitment and its
    configurations free; its plan stopped (FEASIBLE, its own gap stated), its proof that
    there is none (INFEASIBLE: the month is diagnosed, exit 3, as one solved within its
    share is; it was read as stopped, exit 4, 'raise --time-limit'), or None."""
    late = replace(settings, deadline=None, mip_gap=max(settings.mip_gap, HELD_GAP))
    found = backend.run(lp, late.limited(LATE_WHOLE_S).with_duals(False))
    if found.termination is Termination.INFEASIBLE:
        return found
    if not found.termination.has_solution:
        return None
    return replace(found, termination=Termination.FEASIBLE, message=LATE_WHOLE)


def optimise_periods(
    program: TimeProgram, backend: Backend, settings: SolveSettings, fleet: Fleet | None = None
) -> Optimised:
    """The periods program solved: period by period where only the commitment joins its
    periods, else whole (solver.decompose.by_period.solve_periods), the day's
    configurations fixed from a first pass where it splits (the module text);
    `fleet`: one that serves every period, held all day (the rounds' first plan, and
    one such pass); the settings' start (a
    lever's base plan: solver.analysis.levers) where it is a plan of this program (a
    lever that only loosens the question), which the search then begins from, as a
    static lever's does (its day columns set from its pools where it names none:
    `with_day_columns`)."""
    lp = program.lp
    start = None if settings.start is None else with_day_columns(lp, dict(settings.start))
    begun = start if start is not None and plan_of(lp, start) else None
    own = settings.with_duals(False)
    return Optimised(solve_by_day(lp, backend, own, fleet, begun, solve_periods, begin_periods))
