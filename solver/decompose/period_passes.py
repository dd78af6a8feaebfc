"""How the period rounds (solver.decompose.by_period) spend their cores and their time:
the block solves of a pass side by side in threads (`in_threads`), each held to its share
of what is left of the run (`pass_limit`), blocks that are one program solved once
(`Twins`), the blocks' prices from the whole program's LP relaxation (`lp_prices`); and
a program that does not split, solved whole (`solve_whole`).

Time. A pass solves n blocks, up to t at once, so in w = ceil(n / t) waves; given a share
s of the seconds L left, each block solve may run

    limit = max(MIN_BLOCK_S, s L / w)

so that the pass ends within s L (a solve stopped there keeps its incumbent and its
proven bound, both still valid: a cut from a weaker bound is a weaker cut, never a
wrong one). Without the limit the first pass alone could spend the whole run: every
block of a 5-region, 5-workload region-loss hourly program solved to 0.1% at whole
servers took 5-10 s on the shared machine, 24 of them before any plan existed, and the
run ended at its deadline with none. With it the rounds reach a plan (its gap stated)
and spend what is left closing the gap.

Twins. A day's profile repeats itself: two periods of one region with the same demand
and the same length are the same rows over the same columns (cost per hour x hours), up
to the period in the names. procurement-3region's three regions share one 24-hour
profile in their local time, and of each month's 63 blocks (21 periods x 3 regions) 38
are different programs. A pass hands such blocks to the backend once (`Twins.shared`):
where two of its programs compile to the same arrays (bounds, costs, integrality, rows:
the backend's whole input) and ask for the same start (column by column), gap and time
limit, the second takes the first's answer, its values renamed column by column
(`renamed`). The backend is deterministic on one input, so that answer is the one the
second solve would have given (one stopped by its time limit may differ, and is a valid
answer either way): the cuts, the rounds and the plan are those of solving every block.
Across passes, and across a month's choices of the day's configurations (which share
one memo: solver.time.day_choice), the same program comes back: its proven answer is
kept and taken again (solver.backends.compile_memo, Answers), that block counted as a
twin ("M more periods the same program as one solved").
Without answers kept, which blocks may be twins is read once per split (`Twins.shape`):
the blocks' columns by position (bounds, integrality, cost), their rows over those
positions and their covers' committed columns; only blocks of a shared shape are
compiled, the others go to the backend as they are (the rounds keep answers: none read).

Whole. A periods program that does not split (period_split.split: no commitment, so
every hour rents on demand; or one block holding most of it) is solved whole
(`solve_whole`), and where the limit ends that search before an incumbent, or with one
dearer, the held fleet's plan is the answer: the day's peak fleet held all day serves
every period (the rounds' first plan, by_period's module text); with its pools' integer
columns held in every period what is left is little more than an LP, solved past the
deadline within `HELD_WHOLE_S`, and answered FEASIBLE, its gap stated against the
search's bound, else the LP relaxation's solved in as long (against 0, a gap of 100%,
where that does not end). A search that ends proved is answered as before, and no
search's start or path changes.

Master. The rounds' master over the offers' levels, their cuts and the blocks each
round opens (`Master`, a mixin of the rounds' state, as `HeldPlan` is); the bound the
priced pass's cuts give alone, which ends a day's choice that cannot beat the plan in
hand before its rounds (solver.time.day_choice), is period_split.priced_bound.
"""

import logging
import math
import multiprocessing
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from functools import cached_property

from solver.backends import Backend
from solver.backends.compile_memo import NUMPY_ROWS, Answers, handed_on
from solver.decompose.period_split import Block, Fleet, Known, Levels, Split, level_price
from solver.program.lp import LinearProgram, Sense, SolveResult, Termination, Variable
from solver.program.row_names import split_timed
from solver.settings import SolveSettings, machine_threads

HELD_PASS_SHARE = 1 / 3
"""The share of the time left that the held fleet's pass may take."""

HELD_GAP = 0.5
"""The blocks' gap at the held fleet's levels: that pass looks for a plan (the fleet
covers nearly every period, and what a block is left to rent is small beside the
commitment), not for a proof; its cuts are weaker, still valid."""

BLOCK_GAP_SHARE = 0.25
"""A block's MIP gap as a share of the run's (the blocks' bounds add up)."""

PRICED_GAP_SHARE = 1.0
"""A priced block's MIP gap as a share of the run's (its cut only guides the master)."""

FIRST_PASS_SHARE = 1 / 3
"""The share of the time left that the priced pass may take (`pass_limit`:
each block solve is held to its part of it); the lowest levels' pass, like a round,
takes up to `ROUND_SHARE` of what is left after it."""

ROUND_SHARE = 1 / 2
"""The share of the time left that a round's block solves may take; a block solved
again at the same levels is given twice its last limit (its bound was short)."""

MIN_BLOCK_S = 0.5
"""The least time a block solve is given, however little is left: HiGHS needs about that
to find a first incumbent of a whole-server period (below it a pass would end with
blocks that have none)."""

LATE_BLOCK_S = 1.0
"""The time a block solve of the held fleet's last plan is given past the deadline
(solver.decompose.by_period: the rounds ended without a plan). Its pools are held, so
it is little more than an LP: a 5-region, 8-workload region-loss period took well
under that."""

HELD_WHOLE_S = 2.0
"""The time the held fleet's plan of a program solved whole (`solve_whole`), and the LP
relaxation that states its gap, are each given past the deadline: its pools are held, so
it is little more than an LP (a period's block of it takes well under `LATE_BLOCK_S`)."""

WHOLE_HELD = "none by the deadline: the held fleet's plan"
"""The answer's message where it is the held fleet's plan (the rounds' words: by_period),
which the plan's method names (solver.time.solve)."""

LP_PRICES_SHARE = 1 / 4
"""The share of the time left that the whole program's LP relaxation may take for the
blocks' prices (none if it does not end: the priced pass is then skipped)."""

LP_S_PER_NONZERO = 1e-5
"""Seconds the prices' LP relaxation takes per nonzero, passing included: the 10 x 10 x 6
hourly program's (371k nonzeros) took 3.7-4.7 s on the shared machine, 5.2 s where its
month's share allowed 0.5 s (passing it to the backend does not stop at the limit)."""

PRICE_FLOOR = 1e-6
"""A block's price on an offer moving its priced cut by less than this share of the LP
relaxation's optimum, over the offer's whole reach, is taken as 0: such prices (duals
of 1e-5 $ per GPU) leave the block an objective near 0, which a relative gap proves
only slowly (0.2-0.4 s a block, where the cut gains nothing)."""


def threads_for(count: int) -> int:
    """Solves at once for `count` blocks: one per core, one inside a worker process (its
    siblings have the cores)."""
    if multiprocessing.parent_process():
        return 1
    return max(1, min(count, machine_threads()))


def pass_limit(settings: SolveSettings, count: int, share: float) -> float | None:
    """Seconds each of `count` block solves may run so that the pass ends within `share`
    of what is left of the run (the module text); None where the run has no limit."""
    left = settings.remaining_s()
    if left is None or count < 1:
        return left
    waves = math.ceil(count / threads_for(count))
    return max(MIN_BLOCK_S, share * left / waves)


def in_threads(backend: Backend, programs: dict, settings, start) -> list[tuple[int, SolveResult]]:
    """Each of `programs` (index -> program, or a function that builds it) solved by
    `backend` with `settings(i)` from `start(i)`, up to one per core at once in threads
    of this process (the backend releases the interpreter lock while it solves; a thread
    costs no start-up where a worker process imports the planner, about half a second,
    for solves of 0.02-0.3 s here); one at a time inside a worker process (its siblings
    have the cores). A program whose turn comes after the run's deadline is neither
    built nor passed to the backend (a time limit without a solution: passing 240
    period programs of 10 regions x 20 workloads took 25 s past the deadline).
    (index, result) in index order."""
    chosen = sorted(programs)

    def one(i: int) -> SolveResult:
        own = settings(i)
        if own.spent():
            return SolveResult(Termination.TIME_LIMIT, backend.name, backend.version(), 0.0)
        program = programs[i]() if callable(programs[i]) else programs[i]
        return backend.run(program, own, start=start(i))

    threads = threads_for(len(chosen))
    if threads <= 1:
        return [(i, one(i)) for i in chosen]
    backend.is_available()  # loads the library here: two threads loading it at once fail
    with ThreadPoolExecutor(threads, thread_name_prefix="fleetplan-period") as pool:
        futures = [(i, pool.submit(one, i)) for i in chosen]
        return [(i, future.result()) for i, future in futures]


def lp_prices(
    lp: LinearProgram, parts: Split, backend: Backend, settings: SolveSettings, rows=None
) -> tuple[list[dict[str, float]], float]:
    """Each block's prices on the commitment: the duals of its cover rows in the whole
    program's LP relaxation, solved within `LP_PRICES_SHARE` of the time left (none
    where the backend gives no duals, the relaxation ends without them, it would take
    longer than that at `LP_S_PER_NONZERO`, or the deadline has passed: a month the
    limit cut is not searched, solver.time.months), those below `PRICE_FLOOR` taken as 0
    (any price gives a valid cut); and the relaxation's optimum, a bound on the program
    (-inf where it did not end optimal). `rows`: `relaxation`'s."""
    limit = pass_limit(settings, 1, LP_PRICES_SHARE)
    late = settings.spent()
    if late or (limit is not None and limit < LP_S_PER_NONZERO * lp.size()["nonzeros"]):
        return [{} for _ in parts.blocks], -math.inf
    settings = settings.limited(limit)
    answer = backend.run(relaxation(lp, rows), settings.with_duals())
    duals = answer.duals or {}
    floor = PRICE_FLOOR * abs(answer.objective or 0.0)
    reach = {o.gpus: o.per_level * o.highest for o in parts.offers}
    prices = []
    for block in parts.blocks:
        own: dict[str, float] = {}
        for cover in block.covers:
            dual = max(duals.get(cover.row, 0.0), 0.0)
            own[cover.committed] = own.get(cover.committed, 0.0) + dual
        prices.append({o: p if p * reach[o] > floor else 0.0 for o, p in own.items()})
    optimal = answer.termination is Termination.OPTIMAL and answer.objective is not None
    return prices, answer.objective if optimal else -math.inf


def relaxation(lp: LinearProgram, rows=None) -> LinearProgram:
    """`lp` with no integer column (a continuous column is kept as it is: a Variable is
    frozen; `dataclasses.replace` on each of the 3,090 columns of a procurement month was
    most of this copy), its rows compiled by numpy (compile_memo, Whole programs), or
    sliced from `rows` where they are its rows (solver.backends.shared_rows: the
    month's rows compiled once)."""
    return LinearProgram(
        lp.name + "-relaxed",
        {
            n: Variable(v.name, v.lower, v.upper) if v.integer else v
            for n, v in lp.variables.items()
        },
        lp.constraints,
        lp.objective,
        lp.objective_constant,
        rows_memo=NUMPY_ROWS if rows is None else rows,
    )


Build = Callable[[], LinearProgram]
"""A block's program, built when asked."""


class Twins:
    """The blocks of a split by shape (the module text)."""

    def __init__(self, lp: LinearProgram, parts: Split):
        self._lp, self._parts = lp, parts

    @cached_property
    def shape(self) -> list[int]:
        """Per block, the first block of its shape (read only where a pass keeps no
        answers: 0.2 s of CPU over procurement-3region's months, unused by the rounds)."""
        first: dict[tuple, int] = {}
        blocks = self._parts.blocks
        return [first.setdefault(_shape(self._lp, b), i) for i, b in enumerate(blocks)]

    def run(
        self,
        chosen: list[int],
        programs: dict[int, Build],
        asks: Callable[[int], tuple[dict[str, float] | None, float, float | None]],
        expired: Callable[[], bool],
        solve: Callable[[dict[int, Build | LinearProgram]], dict[int, SolveResult]],
        answers: Answers | None = None,
    ) -> Iterator[tuple[int, SolveResult, bool]]:
        """The `chosen` blocks' answers, each block's program handed to `solve` once
        for all its twins (`shared`), none where `answers` holds its proven answer from
        an earlier pass (solver.backends.compile_memo.Answers): (block, result, whether
        solved itself) in block order, for each block `solve` answered (it may leave
        out those past the deadline). Each proven answer is kept in `answers`."""
        built, stands_for, keys = self.shared(chosen, programs, asks, expired, answers)
        taken = {}
        for i, key in keys.items():
            kept = None if answers is None or i in stands_for else answers.get(key, asks(i)[2])
            if kept is not None:
                taken[i] = kept
        skipped = stands_for.keys() | taken.keys()
        found = solve({i: built.get(i, programs[i]) for i in chosen if i not in skipped})
        for i, key in keys.items():
            if answers is not None and i in found:
                answers.keep(key, found[i], tuple(built[i].variables))
        for i in chosen:
            j = stands_for.get(i, i)
            if j in taken:
                yield i, renamed(taken[j][0], taken[j][1], built[i]), False
            elif j == i and i in found:
                yield i, found[i], True
            elif j in found:
                yield i, renamed(found[j], built[j].variables, built[i]), False

    def shared(
        self,
        chosen: Iterable[int],
        programs: dict[int, Build],
        asks: Callable[[int], tuple[dict[str, float] | None, float, float | None]],
        expired: Callable[[], bool],
        answers: Answers | None = None,
    ) -> tuple[dict[int, LinearProgram], dict[int, int], dict[int, Hashable]]:
        """The `chosen` blocks' programs that share a shape with another chosen block,
        or every one where `answers` are kept, built ({block: program}); those whose
        solve another's stands for ({block: the block solved in its stead}); and each
        built block's key in `answers` (its program's arrays, start and gap). `asks(i)`:
        the start block i's solve is given, its gap and its time limit. None built once
        `expired()` (the pass then skips them as it skips every block past the
        deadline)."""
        chosen = list(chosen)
        count = Counter(self.shape[i] for i in chosen) if answers is None else None
        built: dict[int, LinearProgram] = {}
        solved: dict[tuple, int] = {}
        stands_for: dict[int, int] = {}
        keys: dict[int, Hashable] = {}
        for i in chosen:
            if count is not None and count[self.shape[i]] < 2:
                continue
            if expired():
                break
            built[i] = program = programs[i]()
            start, gap, limit = asks(i)
            try:
                arrays = _arrays(program)
            except ValueError:  # the backend names what is wrong: solved alone
                continue
            named = None if not start else tuple(start.get(v, 0.0) for v in program.variables)
            keys[i] = (arrays, named, gap)
            j = solved.setdefault((arrays, named, gap, limit), i)
            if j != i:
                stands_for[i] = j
        return built, stands_for, keys


def renamed(result: SolveResult, solved: Iterable[str], twin: LinearProgram) -> SolveResult:
    """`result` of the program of columns `solved` (in order) as the answer of its twin:
    its values moved from each column of `solved` to the column of `twin` at the same
    position."""
    values = {
        own: result.values[name]
        for name, own in zip(solved, twin.variables, strict=True)
        if name in result.values
    }
    return replace(result, values=values)


def _arrays(program: LinearProgram) -> tuple:
    """What the backend is handed of `program`, without the names; the compile is
    handed on to the backend's (solver.backends.compile_memo, Handed on)."""
    compiled = handed_on(program)
    return (
        compiled.lower.tobytes(),
        compiled.upper.tobytes(),
        compiled.integer.tobytes(),
        compiled.cost.tobytes(),
        compiled.objective_constant,
        compiled.row_start.tobytes(),
        compiled.col_index.tobytes(),
        compiled.coef.tobytes(),
        compiled.row_lower.tobytes(),
        compiled.row_upper.tobytes(),
    )


def _shape(lp: LinearProgram, block: Block) -> tuple:
    """The block without its names: its columns by position (bounds, integrality,
    cost), its rows' terms over those positions in their order (a column outside the
    block, a cover's committed one shared by every period, by name), and its covers'
    committed columns."""
    at = {name: k for k, name in enumerate(block.columns)}
    variables, objective, constraints = lp.variables, lp.objective, lp.constraints
    columns = tuple(
        (variables[name].lower, variables[name].upper, variables[name].integer, objective.get(name))
        for name in block.columns
    )
    rows = tuple(
        (
            row.sense,
            row.rhs,
            *map(at.get, row.coefficients, row.coefficients),
            *row.coefficients.values(),
        )
        for row in map(constraints.__getitem__, block.rows)
    )
    return columns, rows, tuple(cover.committed for cover in block.covers)


def solve_whole(
    lp: LinearProgram,
    backend: Backend,
    settings: SolveSettings,
    fleet: Fleet | None = None,
    start: dict[str, float] | None = None,
) -> SolveResult:
    """`lp` solved whole from `start`; where the limit ends the search without a plan,
    or with one dearer, the held fleet's (`fleet`: the module text, Whole)."""
    whole = backend.run(lp, settings, start=start)
    if whole.termination not in (Termination.TIME_LIMIT, Termination.FEASIBLE):
        return whole  # proved, infeasible or failed: as before
    fleet_held = fleet() if fleet is not None else None
    layout = None if fleet_held is None else fleet_held.late_layout
    held = None if layout is None else held_plan(lp, backend, layout, settings.threads)
    if held is None or (whole.objective is not None and whole.objective <= held.objective):
        return whole
    bound = whole.bound if whole.bound is not None else _relaxed(lp, backend, settings.threads)
    bound = max(0.0, bound)  # a plan's objective is a cost: never below 0
    gap = max(0.0, (held.objective - bound) / max(abs(held.objective), 1e-9))
    return replace(
        held,
        termination=Termination.FEASIBLE,
        mip_gap=gap,
        runtime_s=held.runtime_s + whole.runtime_s,
        message=WHOLE_HELD,
    )


def _relaxed(lp: LinearProgram, backend: Backend, threads: int) -> float:
    """The optimum of `lp`'s LP relaxation within `HELD_WHOLE_S`, or -inf."""
    answer = backend.solve(relaxation(lp), time_limit_s=HELD_WHOLE_S, threads=threads)
    optimal = answer.termination is Termination.OPTIMAL and answer.objective is not None
    return answer.objective if optimal else -math.inf


def held_plan(
    lp: LinearProgram, backend: Backend, layout: dict[str, float], threads: int = 1
) -> SolveResult | None:
    """`lp` with its integer columns named in `layout` (by their names less the period)
    held at the layout's values in every period, solved to `HELD_GAP` within
    `HELD_WHOLE_S` (past the deadline); None where it has no solution."""
    held = LinearProgram(
        lp.name + "-held", dict(lp.variables), lp.constraints, lp.objective, lp.objective_constant
    )
    for name, variable in lp.variables.items():
        value = layout.get(split_timed(name)[0]) if variable.integer else None
        if value is not None:
            held.variables[name] = replace(variable, lower=round(value), upper=round(value))
    found = backend.solve(held, time_limit_s=HELD_WHOLE_S, mip_gap=HELD_GAP, threads=threads)
    if not found.termination.has_solution or found.objective is None:
        return None
    return found


LOG = logging.getLogger("solver.decompose.by_period")  # the held plan's re-fits (debug)


class HeldPlan:
    """The held fleet's last plan in the period rounds (solver.decompose.by_period), a
    mixin of their state (its `parts`, `known`, `_fixed` and `_run`): where the deadline
    ends the rounds without a plan, the plan at the held fleet's levels with its pools
    held, each period it does not fit under the caps (a power or supply cap its pools,
    grown from the month before's, pass) re-planned with its pools free, at its levels,
    else every block at the lowest; where even that leaves a period without one, the
    program is solved whole past the deadline (solver.time.day_choice), and without a plan
    then solver.time.fallback names the caps the held fleet passes."""

    parts: Split
    known: Known

    refitted: int = 0
    """Blocks the held fleet's last plan re-planned with their pools free (`refit`)."""
    refitted_lowest: bool = False
    """Whether they were re-planned at the lowest levels (`held_plan`)."""

    def held_plan(self, levels: Levels, layout: dict[str, float]) -> tuple | None:
        """The plan at the held fleet's `levels`, its pools (`layout`) held, each block
        without a known one solved past the deadline (`LATE_BLOCK_S`); None: a block has none."""
        for i, result in self._late(levels, layout):
            if result.termination.has_solution:
                self.known.add(i, result.values)
        self.refit(levels)
        plan = self.known.plan(levels)
        lowest = {o.gpus: o.lowest for o in self.parts.offers}
        if plan is None and lowest != levels:  # its commitment leaves a period no room
            self.refitted, self.refitted_lowest = 0, True
            self.refit(lowest)
            plan = self.known.plan(lowest)
        return plan

    def refit(self, levels: Levels) -> None:
        """The blocks without a known solution at `levels`, whose periods the held fleet
        does not fit (a power or supply cap its pools, grown from the month before's,
        pass: ceil(n (1 + g)^k) replicas in whole servers), each solved at `levels` with
        its pools free, past the deadline within `LATE_BLOCK_S` to `HELD_GAP`: a plan of
        the period under its caps, not proven (`refitted` counts them; the plan's method
        says so). Where the held fleet's commitment leaves a period no plan at all,
        `held_plan` re-fits every block at the lowest levels (the floor: the rest
        rented)."""
        for i, result in self._late(levels):
            if result.termination.has_solution:
                self.known.add(i, result.values)
                self.refitted += 1
            else:
                LOG.debug("period %d not re-fitted at %s: %s", i, list(levels.values()), result)

    def _late(self, levels: Levels, held: dict[str, float] | None = None):
        """The blocks without a known solution at `levels`, each solved at them past the
        deadline within `LATE_BLOCK_S` to `HELD_GAP` (`held`: its pools held at these
        values; None: free): (block, result) in block order."""
        blocks = [i for i in range(len(self.parts.blocks)) if self.known.upper(i, levels) is None]
        programs = {i: lambda i=i: self._fixed(i, levels, held=held) for i in blocks}
        timed = lambda _i: LATE_BLOCK_S  # noqa: E731
        return self._run(programs, lambda _i: HELD_GAP, lambda _i: None, timed, True)


class Master:
    """The rounds' cuts at a point, their master and the blocks each round opens
    (solver.decompose.by_period's module text has the math), a mixin of the rounds'
    state."""

    lp: LinearProgram
    parts: Split
    known: Known
    backend: Backend
    settings: SolveSettings
    cuts: list[tuple[int, float, dict[tuple[str, int], float]]]
    forbidden: list[Levels]
    saving: list[dict[str, float]]
    rounds: int

    def _cut(self, index: int, levels: Levels, bound: float) -> None:
        """The cut at levels (by_period's text): F^ itself from the first k it is reached."""
        terms: dict[tuple[str, int], float] = {}
        for offer in self.parts.offers if bound > 0 else ():
            saving, level = self.saving[index].get(offer.gpus, 0.0), levels[offer.gpus]
            for k in range(level + 1, offer.highest + 1) if saving > 0 else ():
                if (drop := saving * (k - level)) >= bound:
                    above = range(k, offer.highest + 1)
                    terms.update(dict.fromkeys([(offer.gpus, j) for j in above], bound))
                    break
                terms[(offer.gpus, k)] = drop
        self.cuts.append((index, bound, terms))

    def master(self, late: bool = False) -> tuple[Levels, float, list[float]] | None:
        """The master's levels, its proven bound and theta per block (None: no answer);
        `late`: past the deadline, within `MIN_BLOCK_S` (the cuts made still bound the plan)."""
        self.rounds += 1
        master = LinearProgram(f"{self.lp.name}-master")
        z = {}
        for offer in self.parts.offers:
            price = level_price(self.lp, offer)
            for k in offer.levels:
                z[(offer.gpus, k)] = master.add_variable(
                    f"level[{offer.gpus},{k}]", upper=1.0, integer=True
                )
                master.add_objective({z[(offer.gpus, k)]: price * k})
            one = {z[(offer.gpus, k)]: 1.0 for k in offer.levels}
            master.add_constraint(f"one[{offer.gpus}]", "one", one, Sense.EQ, 1.0)
        thetas = [master.add_variable(f"theta[{i}]") for i in range(len(self.parts.blocks))]
        master.add_objective(dict.fromkeys(thetas, 1.0))
        for number, (i, rhs, terms) in enumerate(self.cuts):
            coefficients = {thetas[i]: 1.0} | {z[key]: c for key, c in terms.items()}
            master.add_constraint(f"cut[{number}]", "cut", coefficients, Sense.GE, rhs)
        for number, levels in enumerate(self.forbidden):
            above = {
                z[(o.gpus, k)]: 1.0
                for o in self.parts.offers
                for k in o.levels
                if k > levels[o.gpus]
            }
            master.add_constraint(f"above[{number}]", "above", above, Sense.GE, 1.0)
        settings = replace(self.settings, mip_gap=1e-9, want_duals=False)
        if late:
            settings = replace(settings, deadline=None, time_limit_s=MIN_BLOCK_S)
        result = self.backend.run(master, settings)
        if not result.termination.has_solution:
            return None
        levels = {
            o.gpus: next(k for k in o.levels if result.values[z[(o.gpus, k)]] > 0.5)
            for o in self.parts.offers
        }
        return levels, result.lower_bound(settings.mip_gap), [result.values[t] for t in thetas]

    def open_blocks(self, levels: Levels, thetas: list[float], share: float) -> list[int]:
        """The blocks to solve at `levels`: those whose theta falls furthest below their
        cheapest known solution there (all without one), until the shortfalls left add
        up to at most `share` of the plan's cost there."""
        plan = self.known.plan(levels)
        shortfalls = []
        for i, theta in enumerate(thetas):
            known = self.known.upper(i, levels)
            shortfalls.append((math.inf if known is None else known[0] - theta, i))
        shortfalls.sort(reverse=True)
        left = sum(d for d, _ in shortfalls)
        chosen = []
        for shortfall, i in shortfalls:
            if shortfall <= 0 or (plan is not None and left <= share * abs(plan[0])):
                break
            chosen.append(i)
            left -= shortfall
        return chosen
