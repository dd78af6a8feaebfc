"""Rows compiled once for programs built again over the same rows (issue 33).

The period rounds (solver.decompose.by_period) build each block's program anew for
every pass: at the held fleet's levels, then free, at the lowest levels, at each round's
levels. Those programs differ in their columns' bounds (the commitment's level, pools
held, nothing rented) and keep the block's rows, yet each was compiled whole, and the
rows are most of a compile (`rows_by_loop`): procurement-3region's 12 months compiled
4,813 block programs of a few dozen rows each (month 0's: 216 us each whole, 56 us with
their rows reused).

A `CompileMemo` keeps the rows' arrays of each program it compiles, by its column names
(in order) and row names, with what the rows said (sense, right-hand side and
coefficients, copied). A program of the same names whose rows still say the same gets
those arrays, and only its columns (bounds, integrality, costs) are compiled; any other
is compiled whole and remembered. So the arrays are always `compile_program`'s of the
program as it stands: a row changed since (a right-hand side, a coefficient, a sense)
or a column added, removed or moved compiles anew.

Where only right-hand sides moved (the same senses and coefficients: a day's choice of
configurations moves only its config_in_day rows' bounds, a later month's grown demand only
its demand rows'), the rows' structure (row_start, col_index, coef) is kept and only their
bounds are worked out again (`restated`), as `rows_by_loop` works them out. The period
rounds of a day's choices of configurations share one memo (solver.time.day_choice:
the choices' programs differ only in their config_in_day rows' bounds; a later month's
rows name their month, so months would share nothing): procurement-3region compiled its
blocks' rows 1,263 times (1.7 s of 18.6 s CPU, months and choices together) with a
memo per choice, 1,139 with a month's choices sharing one, 335 more compiles restated.
A memo's `limit` keeps the programs most recently compiled (None: every one).

A program asks for it through `LinearProgram.rows_memo`; `compile_program` then goes
through it. A memo is safe to share between threads (each program's entry is replaced
whole, under a lock) and pickles empty (a worker compiles its own).

Whole programs. A month's whole periods program is compiled as a whole a few times a
month (the LP relaxations of the day's choices and of the blocks' prices, the pricing
LP: 46 compiles of about 4,300-4,800 rows and 11,000-12,000 coefficients over
procurement-3region's 12 months), each below `ARRAYS_FROM_NONZEROS`, so by the loop:
1.07 s of CPU. `NUMPY_ROWS` compiles such a program's rows by numpy
(solver.backends.row_arrays.rows_by_arrays, the loop's arrays to the value:
tests/solver/backends/test_compile_arrays.py), about 10 ms against 20-23 ms each, and
keeps nothing. Only the time path asks for it: numpy is loaded there already (HiGHS is
handed arrays, not MPS text, either way: solver.backends.highs), where a one-model
solve's program, compiled by numpy, reached HiGHS another way (commit 094f191e).

Handed on. Twins (solver.decompose.period_passes) compiles each block program of a pass
for its key (what the backend is handed: its arrays) and then hands the program to the
backend, which compiled it again: through the memo its rows are reused, but its columns,
the rows' comparison with what they said and the memo's key were worked out a second
time (procurement-3region: 4,493 compiles for 1,665 block solves and 46 whole
programs). `handed_on` keeps the first compile on the program itself (`CompiledOnce`,
its `rows_memo` until its next compile), so the backend's compile of the very program
Twins compiled, unchanged, is that compile; a later compile goes through the memo again.

Answers. The period rounds also hand the backend the same block program again: Twins
(solver.decompose.period_passes) solves the blocks of one pass that are one program
once, and the same program comes back in later passes and in the day's other choice of
configurations (a block at the held fleet's levels renting nothing, in both choices
where they agree on its region's configurations; a block priced alike; a block at the
lowest levels): procurement-3region's 12 months handed the backend 136 such repeats of
1,665 block solves. A memo's `answers` (`Answers`) keep each proven answer (OPTIMAL or
INFEASIBLE) by what the backend was handed of its program, without the names (the
compiled arrays: bounds, costs, integrality, rows), its start column by column and its
MIP gap; a later block whose program, start and gap are those takes that answer, its
values renamed column by column. The backend is deterministic on one input and its time
limit does not steer a search that ends before it, so an answer proven in
`WITHIN_LIMIT` of the later solve's limit or less is the answer that solve would give;
one stopped by its limit (FEASIBLE, TIME_LIMIT) is not kept. The rounds count such a
block with the twins: the plan's method says "N period solves (M more periods the same
program as one solved)", N the backend's solves and M the blocks that took another's
answer, in the pass or an earlier one (solver.decompose.by_period).
"""

import math
import threading
from array import array
from collections import OrderedDict
from collections.abc import Hashable

from solver.backends.base import CompiledProgram, compile_program, compile_with_rows
from solver.backends.row_arrays import rows_by_arrays, zeros
from solver.program.lp import Constraint, LinearProgram, Sense, SolveResult, Termination

RowsSaid = tuple[tuple[str, float, dict[str, float]], ...]
"""Each row's sense, right-hand side and coefficients as they were compiled."""


def _said(rows: list[Constraint]) -> RowsSaid:
    return tuple((row.sense, row.rhs, dict(row.coefficients)) for row in rows)


def _compare(rows: list[Constraint], said: RowsSaid) -> tuple[bool, bool]:
    """Whether the rows still say the same (senses and coefficients; right-hand sides)."""
    same_rhs = True
    for row, (sense, rhs, coefficients) in zip(rows, said, strict=True):
        if row.sense != sense or row.coefficients != coefficients:
            return False, False
        same_rhs = same_rhs and row.rhs == rhs
    return True, same_rhs


def _bounds(rows: list[Constraint], names: tuple[str, ...]) -> tuple[array, array]:
    """The rows' bounds from their senses, as `rows_by_loop` works them out (its
    ValueError for a right-hand side that is not finite)."""
    lower, upper = zeros("d", len(rows)), zeros("d", len(rows))
    for i, row in enumerate(rows):
        if not math.isfinite(row.rhs):
            raise ValueError(f"constraint {names[i]} has right-hand side {row.rhs}")
        sense = Sense(row.sense)
        lower[i] = row.rhs if sense in (Sense.GE, Sense.EQ) else -math.inf
        upper[i] = row.rhs if sense in (Sense.LE, Sense.EQ) else math.inf
    return lower, upper


PROVEN = (Termination.OPTIMAL, Termination.INFEASIBLE)
"""The answers kept: a search that ended by itself, not at its time limit."""

WITHIN_LIMIT = 0.5
"""The share of a later solve's time limit an answer's own run may have taken to stand
for it (a run close to the limit might have stopped there)."""


class Answers:
    """Proven answers by the backend's input (the module text, Answers)."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, tuple[SolveResult, tuple[str, ...]]] = {}
        self.taken = 0
        """Blocks that took a kept answer (a count for benches and tests)."""

    def get(self, key: Hashable, limit_s: float | None) -> tuple[SolveResult, tuple] | None:
        """The answer kept for `key` and its program's columns in order, where its run
        took at most `WITHIN_LIMIT` of `limit_s` (None: no limit); else None."""
        kept = self._kept.get(key)
        if kept is None or (limit_s is not None and kept[0].runtime_s > WITHIN_LIMIT * limit_s):
            return None
        self.taken += 1
        return kept

    def keep(self, key: Hashable, result: SolveResult, columns: tuple[str, ...]) -> None:
        """`result` of the program of `columns` kept for `key`, where it is proven."""
        if result.termination in PROVEN:
            self._kept.setdefault(key, (result, columns))


class CompileMemo:
    """The rows' arrays of the programs compiled so far (the module text); `limit`: the
    programs it keeps, the least recently compiled let go first (None: every one)."""

    def __init__(self, limit: int | None = None) -> None:
        self._rows: OrderedDict[tuple[tuple[str, ...], tuple[str, ...]], tuple[RowsSaid, tuple]]
        self._rows = OrderedDict()
        self._lock = threading.Lock()
        self.limit = limit
        self.reused = 0
        """Compiles that took their rows' arrays from the memo (a count for benches and
        tests; threads may miss an increment)."""
        self.restated = 0
        """Compiles that took the rows' structure from the memo and worked out only their
        bounds (a right-hand side moved)."""
        self.answers = Answers()
        """The proven answers of the programs handed to the backend (the module text)."""
        self.rows_from = None
        """Where a program compiled anew takes its rows' arrays from, if anywhere: an
        object whose `rows_for(lp)` gives them, or None where it cannot
        (solver.backends.shared_rows: the month's rows compiled once, sliced); None:
        each such program's rows compiled here."""

    def __reduce__(self):
        return CompileMemo, (self.limit,)

    def _kept(self, key: tuple) -> tuple[RowsSaid, tuple] | None:
        with self._lock:
            kept = self._rows.get(key)
            if kept is not None:
                self._rows.move_to_end(key)
            return kept

    def _keep(self, key: tuple, entry: tuple[RowsSaid, tuple]) -> None:
        with self._lock:
            self._rows[key] = entry
            self._rows.move_to_end(key)
            while self.limit is not None and len(self._rows) > self.limit:
                self._rows.popitem(last=False)

    def compile(self, lp: LinearProgram) -> CompiledProgram:
        """`compile_program(lp)`, its rows' arrays the memo's where they still hold."""
        key = (tuple(lp.variables), tuple(lp.constraints))
        rows = [lp.constraints[name] for name in key[1]]
        kept = self._kept(key)
        if kept is not None:
            terms, rhs = _compare(rows, kept[0])
            if terms and rhs:
                self.reused += 1
                return compile_with_rows(lp, kept[1])
            if terms:  # only right-hand sides moved: the structure kept, bounds anew
                arrays = (*kept[1][:3], *_bounds(rows, key[1]))
                compiled = compile_with_rows(lp, arrays)
                self._keep(key, (_said(rows), arrays))
                self.restated += 1
                return compiled
        fresh = None if self.rows_from is None else self.rows_from.rows_for(lp)
        compiled = compile_with_rows(lp, fresh)
        arrays = (
            compiled.row_start,
            compiled.col_index,
            compiled.coef,
            compiled.row_lower,
            compiled.row_upper,
        )
        self._keep(key, (_said(rows), arrays))
        return compiled


class NumpyRows:
    """A compile of whole programs that keeps nothing: the rows' arrays by numpy, the
    loop's where numpy finds a row it cannot read (its ValueError then names it)."""

    def compile(self, lp: LinearProgram) -> CompiledProgram:
        """`compile_program(lp)`, its rows compiled by `rows_by_arrays`."""
        index = {name: j for j, name in enumerate(lp.variables)}
        return compile_with_rows(lp, rows_by_arrays(lp, index, tuple(lp.constraints)))


NUMPY_ROWS = NumpyRows()
"""The whole programs' compile (the module text, Whole programs)."""


class CompiledOnce:
    """A program's compile handed to its next compile once (the module text, Handed on):
    `compiled`, compiled from the program as it stands, to the first `compile`, which
    gives the program back its own memo (`memo`); it pickles as that memo (a worker
    compiles its own)."""

    def __init__(self, compiled: CompiledProgram, memo) -> None:
        self.compiled, self.memo = compiled, memo

    def __reduce__(self):
        return _memo_of, (self.memo,)

    def compile(self, lp: LinearProgram) -> CompiledProgram:
        """The compile held, once; then `lp` compiles through its own memo again."""
        lp.rows_memo = self.memo
        compiled, self.compiled = self.compiled, None
        if compiled is None:  # handed on already: compiled anew
            return compile_program(lp)
        return compiled


def _memo_of(memo):
    return memo


def handed_on(lp: LinearProgram) -> CompiledProgram:
    """`compile_program(lp)`, kept for `lp`'s next compile (its backend's, in the same
    pass: `CompiledOnce`), which then compiles nothing; `lp` must not change between."""
    compiled = compile_program(lp)
    lp.rows_memo = CompiledOnce(compiled, lp.rows_memo)
    return compiled
