"""The periods program solved period by period (issue 33): the periods of the day share
only the committed capacity, so once the commitment is priced or fixed each period is a
program of its own, and the work grows linearly in the periods.

Split (solver.decompose.period_split): with the committed columns y taken out, the
periods program falls apart into blocks b, one per period where nothing else joins
them (batch work does: a program left in one block is solved whole), each seeing y
through its cover rows only:

    min  R y + sum_b F_b(y),    F_b(y) = min { f_b(x_b) : A_b x_b + B_b y >= d_b }.

y is whole servers of n_o GPUs per offer o (or whole GPUs, n_o = 1: a single-GPU
commitment sits at an integer optimum, solver.program.families.pricing), between the
bounds of its columns (a month's commitment is bounded by the month before's,
solver.time.months): finitely many levels k, y_o = n_o k.

Master (integer L-shaped). One binary z[o,k] per offer and level (sum_k z[o,k] = 1) and
one theta_b >= 0 per block:

    min  sum_o R_o n_o sum_k k z[o,k] + sum_b theta_b    subject to the cuts.

Two kinds of cut, each a lower bound on F_b at every y:

- Priced (Lagrangian). Block b solved with its own copy of y free and paid lambda_b per
  GPU, to a proven bound L_b <= min_y' F_b(y') + lambda_b y' <= F_b(y) + lambda_b y:
  theta_b >= L_b - lambda_b y. lambda_b are the duals of b's cover rows in the whole
  program's LP relaxation (what a committed GPU is worth in that period); such cuts
  tell the master what commitment in one region cannot replace in another.
- At a point. Block b solved at levels k^ to a proven bound F^ <= F_b(y^):
  theta_b >= F^ - sum_o sum_(k > k^_o) min(F^, s_bo (k - k^_o)) z[o,k]. F_b does not
  increase in y (more committed, the same fleet rents less), and from y^ up to
  max(y, y^) a level of offer o saves at most s_bo = n_o a_bo, a server's on-demand
  price in the block (the fleet optimal at the larger y rents that much more at y^).
  That needs on demand free to rent what the commitment covered: where it is capped
  below the commitment's reach (`max_on_demand_gpus`, whose headroom the failover
  start spends too), s_bo is infinite and the cut holds only while y_o <= y^_o (the
  min with F^ switches it off beyond; F_b >= 0). A block with no answer at k^
  (infeasible) has none below it either: the master must raise some offer above k^.

The held fleet first (`fleet`: the pipeline's static plan of the day's peak,
models.operations.time_demand.held_all_day). Every hour's warm rates are at most the
peak's, so that fleet committed all day serves every period: each block is solved at
its levels k^h renting nothing (a restriction of the block, `HELD_GAP` loose: its
solution is a known one and no cut) and the plan they make costs the commitment, about
the static plan's cost. So the rounds start from a plan no dearer than planning the
peak hour for every hour, where the lowest levels' plan rents the whole day's fleet on
demand; a block with no solution renting nothing is solved at k^h as it stands. Also
where k^h is the lowest levels (a month's floor already holds the fleet): the held
pools give each block its first solution in a fraction of a free solve.

The priced pass (below) is solved before the held fleet's and its cuts and solutions
taken after it (the master's rows and the known solutions in the order of the held pass
first: the same rounds). It needs nothing of that pass, and it can end the run before
it: a block proven infeasible proves the whole so, and where the caller holds a plan
already (`cutoff`: the day's other configuration choice, solver.time.day_choice) and
the priced cuts alone bound the program above it (period_split.priced_bound), no plan
of this one is wanted. procurement-3region: months 2-9's peak-fleet choice is 2.7-15%
dearer than the relaxation's, its priced bound within 0.6% of its plan; months 10-11's
relaxation choice has a period without a plan under us-east's power cap. Neither
spends the held pass (0.2-1.0 s a month on the shared machine) or the rounds.

Rounds. Every block priced, then every block at the lowest levels (the cut there says a
server saves at most its on-demand price; a commitment held at one level, a month before
the lead time, needs no price: its blocks are programs apart, each solved once). A
round's blocks are solved side by side in threads (`in_threads`), blocks that are one
program once (`Twins`: procurement-3region's 12 months, 2,022 block solves -> 1,198, the
same plan). Each round then solves the master: its optimum is a lower bound LB on the
whole program, with its levels k*. A block's known solutions stay feasible at another y
once their on-demand columns are re-set to cover what y leaves (the rows that name them
checked), so the cheapest re-costed one is an upper bound U_b(k*) for free; the blocks
are solved at k* (from that solution) where theta_b falls short of U_b most, until the
shortfalls left add up to less than half the requested gap. The plan at the best levels,
from its blocks' best solutions, is the upper bound UB; the run ends when (UB - LB) / UB
is within the gap (status optimal, the gap stated). It ends in finitely many rounds:
where every block has been solved at k*, theta_b >= F^_b there, so the master proposes
k* again only once LB has reached UB within the blocks' own gaps. A block at a point is
solved within `BLOCK_GAP_SHARE` of the gap (the blocks' bounds add up), one worth little
within a looser one (what it may leave is its share of the plan's gap). Without the
priced cuts the bench's hourly failover instance took 8 rounds and 147 period solves
where it takes 2 and about 40.

`solve_periods` is the periods program's one call to the backend. The rounds start at
once where the program splits; the whole program is not tried first. Held to 16 nodes
(a work limit, so that an idle and a busy machine took the same path) it proved eleven
of growth-horizon's twelve months at their root in 0.4-1.2 s each, where the rounds take
about as long, but stopped open on procurement-3region's months with three workloads
(month 0: 6.5% off after 16 nodes and 5.9 s CPU; whole, 1,542 nodes and 15.4 s), where
the rounds prove each month in under a second: the procurement run took 26.9 s with the
first solves and 12.7 s without (CPU side by side on a busy machine: 35.2 and 19.4 s;
there its month 0 was cut short by its share of the clock, 23.8% off), growth-horizon's
8.2 and 9.7 s CPU. Then the whole program from the best plan where the rounds end
outside the gap: after `MASTER_ROUNDS`, where the second round still leaves more
than `FIRST_GAP`, or where the gap has not halved within `STALL_ROUNDS` rounds. A
procurement month with region loss and two GPU types per region (6 offers) is such a
program: its gap went from 29% to 5% in 28 rounds where the whole program proves it
in one solve. Prices from each block's marginal on-demand cost at the master's levels
(a second priced solve per block and round) did not close it faster. A program of
large periods keeps its rounds to the deadline (`ROUNDS_TO_DEADLINE`).

The held fleet last: where the deadline ends the rounds without a plan, the held fleet's
is the answer, its gap stated against the LP relaxation's bound or the master's
(`_Rounds.held_plan`; a procurement month without a plan ended the whole horizon); the
periods whose caps refuse it (a month's fleet grown from the month before's past a
power or supply cap) re-planned with their pools free (period_passes.HeldPlan).

Time: each pass holds its block solves to a share of the time left (`FIRST_PASS_SHARE`,
`ROUND_SHARE`, `LP_PRICES_SHARE`: solver.decompose.period_passes' module text says why),
and no block program is built once the deadline has passed.
"""

import logging
import math
import time
from dataclasses import replace

from models.schema.quantities import counted
from solver.backends import Backend
from solver.backends.compile_memo import CompileMemo
from solver.backends.shared_rows import SharedRows
from solver.decompose.parallel import solve_built
from solver.decompose.period_passes import (
    BLOCK_GAP_SHARE,
    FIRST_PASS_SHARE,
    HELD_GAP,
    HELD_PASS_SHARE,
    PRICED_GAP_SHARE,
    ROUND_SHARE,
    HeldPlan,
    Master,
    Twins,
    in_threads,
    lp_prices,
    pass_limit,
    solve_whole,
)
from solver.decompose.period_split import (
    BlockPrograms,
    Fleet,
    Known,
    Levels,
    Split,
    cheaper,
    held_values,
    priced_bound,
    savings,
    split,
)
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.settings import SolveSettings

WHOLE_AFTER_INTEGERS = 100
"""Integer columns per period (on average) up to which the whole program takes over from
rounds that close the gap slowly (a procurement month with region loss: the module
text's 29% -> 5% in 28 rounds, proved whole in one solve); a program of larger periods
(the hourly failover program's: 107 each, TP 1-8 with region loss, 97% off after a
second whole) keeps its rounds to the deadline (`ROUNDS_TO_DEADLINE`)."""

FIRST_GAP = 0.25
"""The gap at the second master round, once the first round's levels are solved, above
which the rounds stop at once (the cuts start too weak to close it soon). Not the first
round's, re-costed from other levels (a 3-region procurement month: 11.8% there, 1.5%
off). At 10% a 2 x 3 x 2 hourly zone-loss program (10.9% there) stopped whole at 10.9%
after 24 s; its rounds prove it in 4.4 s."""

STALL_ROUNDS = 3
"""Rounds within which the gap must halve: where it does not, the rounds stop and the
whole program is solved from the best plan (the cuts are too weak there: region loss
with several GPU types per region lets the commitment move between offers)."""

ROUNDS_TO_DEADLINE = True
"""A large periods program (above `WHOLE_AFTER_INTEGERS`) keeps its rounds to the
deadline and returns its best plan with its gap: the whole program, 24 periods of 240
region programs (111k columns), reached 29.6% in 180 s where the rounds were closing it."""

MASTER_ROUNDS = 40
"""Master solves at most before the whole program is solved from the best plan."""

METHOD = "period decomposition"

BOUND_SLACK = 1e-6
"""Relative slack a bound must pass a `cutoff` by (solve_periods) before the rounds end
there: the blocks' bounds carry the solver's tolerances (1e-7 relative), and a choice
pruned at a tie would have lost it anyway (solver.time.day_choice keeps the first)."""

FLOAT_GAP = 1e-9
"""Relative gap that is the sums' rounding, not a gap: the rounds prove a plan within
mip_gap + FLOAT_GAP of their bound (solver.decompose.regions.join alike). At mip_gap 0 a
plan the bound met to 2e-16 read 'feasible (gap 0.000000000000021%)'."""


def within_gap(gap: float, mip_gap: float) -> bool:
    """Whether the rounds' relative gap proves the plan at the requested `mip_gap`."""
    return gap <= mip_gap + FLOAT_GAP


LOG = logging.getLogger(__name__)
"""Each round's levels and bounds, at debug level."""


def solve_periods(
    lp: LinearProgram,
    backend: Backend,
    settings: SolveSettings,
    fleet: Fleet | None = None,
    start: dict[str, float] | None = None,
    cutoff: float | None = None,
    parts: Split | None = None,
) -> SolveResult:
    """The periods program's solution: by period where it splits (the module text), else
    whole (`solve_whole`); where the rounds end outside the gap with time
    left, the whole again from the best plan (`WHOLE_AFTER_INTEGERS`); `start`: a plan
    of `lp` (a lever's base plan) the rounds, or the whole program's search, begin from;
    where the rounds prove it infeasible, that answer (the whole not solved to confirm).
    `cutoff`: the cost of a plan the caller holds already (solver.time.day_choice: the
    cheaper day's choice); where the priced pass proves every plan dearer, INFEASIBLE
    (no plan below it) before the held fleet's pass and the rounds (`_dearer`). `parts`:
    `lp`'s split where the caller has it (solver.time.day_choice: every choice's)."""
    return answer(begin_periods(lp, backend, settings, fleet, start, parts), cutoff)


def answer(steps, cutoff: float | None = None, begun: bool = False):
    """The answer of a solve in steps (`begin_periods`, `_by_period`) at `cutoff`;
    `begun`: its bound already taken (solver.time.day_choice's choices)."""
    try:
        if not begun:
            next(steps)
        steps.send(cutoff)
    except StopIteration as ended:
        return ended.value
    raise RuntimeError("a periods solve went on past its answer")


def begin_periods(lp, backend, settings, fleet=None, start=None, parts=None, memo=None):
    """`solve_periods` in steps (`answer`): yields the priced pass's bound (-inf where
    the program is solved whole), is sent the cutoff, and returns the answer; the day's
    choices are begun so, the one of the lowest bound finished first, their blocks' rows
    compiled through one `memo` (solver.time.day_choice)."""
    parts = split(lp) if parts is None else parts
    if parts is None:
        yield -math.inf
        return solve_whole(lp, backend, settings, fleet, start)
    small = lp.size()["integer_variables"] <= WHOLE_AFTER_INTEGERS * len(parts.blocks)
    whole_after = small or not ROUNDS_TO_DEADLINE
    steps = _by_period(lp, backend, settings, parts, start, -math.inf, whole_after, fleet, memo)
    found = yield from steps
    if found is not None and found.termination in (Termination.OPTIMAL, Termination.INFEASIBLE):
        return found
    held = found is not None and found.termination.has_solution
    if held and (_expired(settings) or not whole_after):
        return found  # a large program's rounds ran to the deadline: the whole cannot help
    if _expired(settings):  # no plan and no time: passing the whole program costs seconds
        return SolveResult(Termination.TIME_LIMIT, backend.name, backend.version(), 0.0)
    whole = backend.run(lp, settings, start=found.values if held else start)
    if held and not (
        whole.termination.has_solution and (whole.objective or math.inf) <= found.objective
    ):
        return found.within(whole.bound, settings.mip_gap)
    return whole.within(found.bound if held else None, settings.mip_gap)  # the rounds' bound


def solve_by_period(
    lp: LinearProgram,
    backend: Backend,
    settings: SolveSettings,
    parts: Split | None = None,
    start: dict[str, float] | None = None,
    lower: float = -math.inf,
    whole_after: bool = True,
    fleet: Fleet | None = None,
    cutoff: float | None = None,
) -> SolveResult | None:
    """The rounds of the module text (`parts`: the split of `lp`, made here if not
    given; `start`: a plan of the whole program to begin from; `lower`: a bound on it
    known already; `whole_after`: stop where the cuts close the gap slowly, for the
    whole program to take over, else go on to the deadline; `cutoff`: `solve_periods`'s);
    None where the program does not split or a block's solve with its commitment free
    ends without an answer and without a proof (a solver error: the whole program then
    says why); INFEASIBLE where such a block is proven infeasible (`_Rounds.infeasible`)
    or the priced pass's bound is above `cutoff` (`_dearer`)."""
    steps = _by_period(lp, backend, settings, parts, start, lower, whole_after, fleet)
    return answer(steps, cutoff)


def _by_period(lp, backend, settings, parts, start, lower, whole_after, fleet, memo=None):
    """`solve_by_period` in steps (`answer`): yields the priced pass's bound."""
    parts = parts or split(lp)
    if parts is None:
        return None
    started = time.monotonic()
    run = _Rounds(lp, parts, backend, settings)
    run.memo = run.memo if memo is None else memo
    if run.memo.rows_from is None:  # the program's rows compiled once, sliced
        run.memo.rows_from = SharedRows(lp)
    begun = run.begin_with(start) if start else None
    lowest, blocks = {o.gpus: o.lowest for o in parts.offers}, range(len(parts.blocks))
    fleet_held = None if fleet is None or _expired(settings) else fleet()
    held = None if fleet_held is None else fleet_held.levels(parts)
    prices, relaxed = [], -math.inf
    if any(o.lowest < o.highest for o in parts.offers):  # else the lowest levels are all
        prices, relaxed = lp_prices(lp, parts, backend, settings, run.memo.rows_from)
    # a block without an answer: infeasible (so is the whole), failed, or the deadline
    answered = run.priced_blocks(dict(enumerate(prices)))
    if not answered and (run.infeasible is not None or not _expired(settings)):
        return run.infeasible
    bound = max(relaxed, priced_bound(lp, parts, run.priced_cuts))
    cutoff = yield bound
    if cutoff is not None and bound > cutoff + BOUND_SLACK * abs(cutoff):
        return _dearer(backend, started, bound, cutoff)
    if held is not None:
        run.solve_held(held, fleet_held.layout)
        LOG.debug("held levels %s solved, %.1f s", list(held.values()), time.monotonic() - started)
    run.take_priced()
    if answered and not run.solve_blocks(lowest, blocks) and not _expired(settings):
        return None
    LOG.debug("priced and lowest levels solved, %.1f s", time.monotonic() - started)
    gaps: list[float] = []
    best = cheaper(run.known.plan(lowest), begun and run.known.plan(begun))
    best = cheaper(best, held and run.known.plan(held))
    while run.rounds < MASTER_ROUNDS and not _expired(settings):
        answer = run.master()
        if answer is None:
            break
        levels, bound, thetas = answer
        lower = max(lower, bound)
        best = cheaper(best, run.known.plan(levels))
        gaps.append(math.inf if best is None else (best[0] - lower) / max(abs(best[0]), 1e-9))
        if within_gap(gaps[-1], settings.mip_gap):
            break
        if whole_after and (
            (len(gaps) > 1 and gaps[1] > FIRST_GAP)
            or (len(gaps) > STALL_ROUNDS and gaps[-1] > gaps[-1 - STALL_ROUNDS] / 2)
        ):
            break  # the cuts close the gap too slowly: the whole program takes over
        chosen = run.open_blocks(levels, thetas, settings.mip_gap / 2)
        LOG.debug(
            "round %d: levels %s, bound %.2f, plan %s, %d periods to solve, %.1f s",
            run.rounds,
            list(levels.values()),
            lower,
            best and f"{best[0]:.2f}",
            len(chosen),
            time.monotonic() - started,
        )
        if not chosen or not run.solve_blocks(levels, chosen):
            break
        best = cheaper(best, run.known.plan(levels))
    late = best is None and fleet is not None and _expired(settings)
    if late and (fleet_held := fleet_held or fleet()) is not None:  # no plan: the held one
        best = run.held_plan(fleet_held.levels(parts), fleet_held.late_layout)
        lower = max(lower, relaxed)  # its gap against the LP relaxation's bound, or the master's
    if best is None:
        return None
    if not run.rounds and (answer := run.master(late=True)) is not None:  # stopped: its bound
        lower = max(lower, answer[1])
    cost, values = best
    gap = max(0.0, (cost - lower) / max(abs(cost), 1e-9)) if math.isfinite(lower) else None
    proved = gap is not None and within_gap(gap, settings.mip_gap)
    return SolveResult(
        termination=Termination.OPTIMAL if proved else Termination.FEASIBLE,
        solver=backend.name,
        solver_version=backend.version(),
        runtime_s=time.monotonic() - started,
        objective=lp.objective_value(values),
        values=values,
        mip_gap=gap,
        message=f"{METHOD}: {counted(len(parts.blocks), 'period')}, "
        + ("from the day's peak fleet held every hour, " if held is not None else "")
        + ("none by the deadline: the held fleet's plan, " if late else "")
        + (
            f"{counted(run.refitted, 'period')} it does not fit under the caps "
            "re-planned with their pools free"
            + (" at the lowest commitment, " if run.refitted_lowest else ", ")
            if run.refitted
            else ""
        )
        + f"{counted(run.rounds, 'master round')}, "
        f"{counted(run.solves, 'period solve')}"
        + (f" ({run.shared} more periods the same program as one solved)" if run.shared else ""),
    )


def _dearer(backend: Backend, started: float, bound: float, cutoff: float) -> SolveResult:
    """The answer where the priced pass's `bound` is above `cutoff`: no plan below it."""
    return SolveResult(
        Termination.INFEASIBLE,
        backend.name,
        backend.version(),
        time.monotonic() - started,
        message=f"{METHOD}: no plan below {cutoff:,.2f} (the priced periods' bound {bound:,.2f})",
    )


def _expired(settings: SolveSettings) -> bool:
    return settings.spent()  # one place the tests stop the rounds at (test_stopped_months)


class _Rounds(HeldPlan, Master, BlockPrograms):
    """The rounds' state: the cuts, each block's known solutions, the solves made."""

    def __init__(self, lp: LinearProgram, parts: Split, backend: Backend, settings: SolveSettings):
        self.lp, self.parts, self.backend, self.settings = lp, parts, backend, settings
        self.offer_of = {o.gpus: o for o in parts.offers}
        self.cuts: list[tuple[int, float, dict[tuple[str, int], float]]] = []
        """(block, F^, {(offer, level): coefficient}): theta_b + sum coef z >= F^."""
        self.known = Known(lp, parts)
        self.forbidden: list[Levels] = []
        """Levels at which a block has no answer: some offer must be above them."""
        self.saving = [savings(lp, self.offer_of, block) for block in parts.blocks]
        self.limits: dict[tuple[int, tuple[int, ...]], float] = {}
        """(block, levels) -> the time limit it was last solved in there."""
        self.twins = Twins(lp, parts)
        self.memo = CompileMemo()  # rows compiled once, proven answers kept: all passes
        self.solves = 0
        self.shared = 0
        self.rounds = 0
        self.infeasible: SolveResult | None = None  # the priced pass's proof of no plan
        self.priced_cuts: list[tuple[int, float, dict, dict[str, float]]] = []
        """The priced pass's (block, L_b, terms, its solution), until `take_priced`."""

    def begin_with(self, values: dict[str, float]) -> Levels:
        """A plan of the whole program as each block's first known solution; its levels."""
        for i in range(len(self.parts.blocks)):
            self.known.add(i, values)
        return {
            o.gpus: min(o.highest, max(o.lowest, round(values.get(o.gpus, 0.0) / o.per_level)))
            for o in self.parts.offers
        }

    def priced_blocks(self, prices: dict[int, dict[str, float]]) -> bool:
        """Blocks with their commitment free at `prices` (block -> prices per GPU;
        Lagrangian): the cut theta_b >= L_b - prices_b y and a known solution each,
        held in `priced_cuts` until `take_priced`.
        A block priced 0 throughout is left out: its cut, theta_b >= min F_b, is at
        most what the full commitment leaves to rent, and proving an optimum of 0 took
        HiGHS up to 0.5 s. False where a block has no answer (one its time limit
        stopped before it had a solution is left without a cut); one proven infeasible
        proves the whole so (`infeasible`: the block is a relaxation of it)."""
        programs = {
            i: lambda i=i, own=own: self._free(i, own)
            for i, own in prices.items()
            if any(own.values())
        }
        gap = self.settings.mip_gap * PRICED_GAP_SHARE
        limit = pass_limit(self.settings, len(programs), FIRST_PASS_SHARE)
        for i, result in self._run(programs, lambda _i: gap, lambda _i: None, lambda _i: limit):
            if result.termination is Termination.TIME_LIMIT:
                continue
            if result.termination is Termination.INFEASIBLE:
                self.infeasible = replace(result, message=f"{METHOD}: period {i} has no plan")
            if not result.termination.has_solution:
                return False
            terms = {}
            for committed, price in prices[i].items():
                offer = self.offer_of[committed]
                for k in offer.levels:
                    if price * k:
                        terms[(committed, k)] = price * offer.per_level * k
            self.priced_cuts.append((i, result.lower_bound(gap), terms, result.values))
        return True

    def take_priced(self) -> None:
        """The priced pass's cuts and known solutions, taken after the held fleet's pass
        (its known solutions first, as when that pass ran first: ties between known
        solutions, and the master's rows, keep their order)."""
        for i, bound, terms, values in self.priced_cuts:
            self.cuts.append((i, bound, terms))
            self.known.add(i, values)
        self.priced_cuts = []

    def _run(self, programs, gap, start, limit, late: bool = False):
        """Solve `programs` (block -> program), each within `gap(i)` from `start(i)` in at
        most `limit(i)` s (None: what is left; `late`: past the deadline), in threads or as
        Ray tasks (`executor: ray`), twins once (`Twins`); (block, result) in block order."""
        chosen = sorted(programs)
        base = replace(self.settings, deadline=None) if late else self.settings

        def settings(i: int) -> SolveSettings:
            own = replace(base, mip_gap=gap(i), want_duals=False)
            held = limit(i)
            if held is None or (own.time_limit_s is not None and own.time_limit_s <= held):
                return own
            return own.limited(held)

        def solve(own: dict) -> dict[int, SolveResult]:
            if self.settings.executor != "ray":
                return dict(in_threads(self.backend, own, settings, start))
            build = lambda i: (own[i]() if callable(own[i]) else own[i], self.backend)  # noqa: E731
            return dict(solve_built(build, sorted(own), settings, len(own), start=start))

        asks = lambda i: (start(i), gap(i), limit(i))  # noqa: E731
        expired = lambda: _expired(base)  # noqa: E731
        answers = self.memo.answers  # kept across passes
        for i, result, solved in self.twins.run(chosen, programs, asks, expired, solve, answers):
            self.solves += solved
            self.shared += not solved
            yield i, result

    def solve_blocks(
        self, levels: Levels, blocks, share: float = ROUND_SHARE, gap: float | None = None
    ) -> bool:
        """`blocks` solved at `levels`, each from its cheapest known solution there and
        within its part of `share` of the time left (twice its last limit where it was
        solved at these levels before) and its gap (`gap`, else `_gap`): a cut and a
        known solution each. False where none answered (the deadline)."""
        chosen = list(blocks)
        starts = {i: self.known.upper(i, levels) for i in chosen}
        plan = self.known.plan(levels)
        gaps = {i: gap or self._gap(starts[i], plan, len(self.parts.blocks)) for i in chosen}
        programs = {i: lambda i=i: self._fixed(i, levels) for i in chosen}
        key = tuple(levels[o.gpus] for o in self.parts.offers)
        base = pass_limit(self.settings, len(chosen), share)
        limits = {}
        for i in chosen:
            earlier = self.limits.get((i, key))
            limits[i] = None if base is None else max(base, 2 * (earlier or 0.0))
            if limits[i] is not None:
                self.limits[(i, key)] = limits[i]
        answered = False
        committed = held_values(levels, self.offer_of)
        for i, result in self._run(
            programs,
            gaps.get,
            lambda i: None if starts[i] is None else starts[i][1] | committed,
            limits.get,
        ):
            if result.termination is Termination.INFEASIBLE:
                self.forbidden.append(dict(levels))
                answered = True
            elif result.termination.has_solution:
                answered = True
                self._cut(i, levels, result.lower_bound(gaps[i]))
                self.known.add(i, result.values)
        return answered

    def solve_held(self, levels: Levels, layout: dict[str, float]) -> None:
        """Every block at the held fleet's `levels` renting nothing (a restriction of the
        block: its solution is a known one, its bound no cut): first with the held
        fleet's pools (`layout`, where the block has them), then free to lay them out,
        each pass within `HELD_PASS_SHARE` of the time left; a block without a solution
        so is solved at `levels` as it stands."""
        rest = list(range(len(self.parts.blocks)))
        for held in (layout, {}):
            programs = {
                i: lambda i=i, held=held: self._fixed(i, levels, rent=False, held=held)
                for i in rest
            }
            limit = pass_limit(self.settings, len(programs), HELD_PASS_SHARE)
            solved = self._run(
                programs, lambda _i: HELD_GAP, lambda _i: None, lambda _i, limit=limit: limit
            )
            for i, result in solved:
                if result.termination.has_solution:
                    rest.remove(i)
                    self.known.add(i, result.values)
            if not rest or _expired(self.settings):
                return
        self.solve_blocks(levels, rest, HELD_PASS_SHARE, HELD_GAP)

    def _gap(self, start, plan, blocks: int) -> float:
        """A block's relative gap: the run's share, looser for a block worth little
        (its absolute gap no more than its share of the plan's)."""
        share = self.settings.mip_gap * BLOCK_GAP_SHARE
        if start is None or plan is None or start[0] <= 0:
            return share
        return min(0.5, max(share, share * plan[0] / (blocks * start[0])))
