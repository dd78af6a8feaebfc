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

A program asks for it through `LinearProgram.rows_memo`; `compile_program` then goes
through it. A memo is safe to share between threads (each program's entry is replaced
whole) and pickles empty (a worker compiles its own).
"""

from solver.backends.base import CompiledProgram, compile_with_rows
from solver.program.lp import Constraint, LinearProgram

RowsSaid = tuple[tuple[str, float, dict[str, float]], ...]
"""Each row's sense, right-hand side and coefficients as they were compiled."""


def _said(rows: list[Constraint]) -> RowsSaid:
    return tuple((row.sense, row.rhs, dict(row.coefficients)) for row in rows)


def _still_says(rows: list[Constraint], said: RowsSaid) -> bool:
    return all(
        row.sense == sense and row.rhs == rhs and row.coefficients == coefficients
        for row, (sense, rhs, coefficients) in zip(rows, said, strict=True)
    )


class CompileMemo:
    """The rows' arrays of the programs compiled so far (the module text)."""

    def __init__(self) -> None:
        self._rows: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[RowsSaid, tuple]] = {}
        self.reused = 0
        """Compiles that took their rows' arrays from the memo (a count for benches and
        tests; threads may miss an increment)."""

    def __reduce__(self):
        return CompileMemo, ()

    def compile(self, lp: LinearProgram) -> CompiledProgram:
        """`compile_program(lp)`, its rows' arrays the memo's where they still hold."""
        key = (tuple(lp.variables), tuple(lp.constraints))
        rows = [lp.constraints[name] for name in key[1]]
        kept = self._rows.get(key)
        if kept is not None and _still_says(rows, kept[0]):
            self.reused += 1
            return compile_with_rows(lp, kept[1])
        compiled = compile_with_rows(lp, None)
        arrays = (
            compiled.row_start,
            compiled.col_index,
            compiled.coef,
            compiled.row_lower,
            compiled.row_upper,
        )
        self._rows[key] = (_said(rows), arrays)
        return compiled
