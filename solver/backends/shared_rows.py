"""A month's rows compiled once, the rounds' programs' rows sliced out of it (issue 33).

The period rounds (solver.decompose.by_period) hand the backend programs whose rows are
rows of one periods program: each block's program (solver.decompose.period_split
.BlockPrograms: a block's rows, and a priced block's whole-server links), the LP
relaxation of each day's choice (the blocks' prices: period_passes.lp_prices) and of the
program without its day rows (solver.time.day_choice.relaxed_choice). Each was compiled
on its own: a block's rows row by row (solver.backends.row_arrays.rows_by_loop: 1,150
of them over procurement-3region's 12 months), a relaxation's by numpy (`rows_by_arrays`:
34 of them, 5,400 rows each). Timed on month 0's program (the 126 block programs of
its 63 blocks, at levels and priced, three repetitions, CPU): the blocks' rows 45-52 ms
by the loop, 19-24 ms sliced; a relaxation 13-15 ms by numpy, 6-8 ms sliced, after the
month's one compile (12-14 ms). Over the 12 months that is about 0.3 s of CPU.

`SharedRows` compiles the rows of one program, the month's (`rows_by_arrays`, once),
and gives any program whose rows are among them its rows' arrays by slicing: each row's
terms taken from the month's compile by position, its columns re-indexed to the
program's own and sorted within the row, its bounds worked out from its own sense and
right-hand side where they are not the month's. So a day's choice, whose config_in_day
rows differ only in their right-hand sides, slices the same compile (the month's at no
choice, as the split reads it). A row sliced must have the coefficients the month's had
when it was compiled (kept as a copy, as solver.backends.compile_memo keeps them) and
every column it names must be the program's; otherwise, or where a right-hand side is
not finite or a sense is not one, `rows_for` gives None and the program is compiled as
before (whose ValueError then names what is wrong). The arrays
are those `rows_by_loop` builds, to the value: zeros dropped (the month's compile drops
them), each row's columns in order, the same bounds (tests/solver/decompose
/test_shared_rows.py compares them on every block of a month).

It is a rows memo (`compile`: a whole program, a relaxation, compiled with its rows
sliced; NUMPY_ROWS where they cannot be), and the rounds' compile memo asks it for the
rows of a block program it has not compiled before (solver.backends.compile_memo,
`CompileMemo.rows_from`).
"""

import itertools
import math
import threading
from array import array

from solver.backends.base import CompiledProgram, compile_with_rows
from solver.backends.compile_memo import NUMPY_ROWS
from solver.backends.row_arrays import rows_by_arrays
from solver.program.lp import LinearProgram, Sense

_BOUNDS = {Sense.GE: (True, False), Sense.LE: (False, True), Sense.EQ: (True, True)}
"""Per sense, whether the right-hand side is the row's lower bound, its upper bound."""

_MISSING = itertools.repeat(-1)


class SharedRows:
    """The rows of `lp` compiled once, sliced for programs over them (the module text)."""

    def __init__(self, lp: LinearProgram) -> None:
        self._lp = lp
        self._lock = threading.Lock()
        self._whole: tuple | None = None
        self._failed = False
        self.sliced = 0
        """Programs given their rows by slicing (a count for benches and tests)."""

    def __reduce__(self):
        return _numpy_rows, ()

    def _compiled(self) -> tuple | None:
        """(row index by name, what each row said (its sense, right-hand side and
        coefficients, copied: a row changed since is seen), column index by name, row_start,
        col_index, coef, row_lower, row_upper as numpy arrays), or None where numpy
        cannot read the rows (the loop then names what is wrong)."""
        with self._lock:
            if self._whole is None and not self._failed:
                import numpy as np

                lp = self._lp
                names = tuple(lp.constraints)
                columns = {name: j for j, name in enumerate(lp.variables)}
                rows = rows_by_arrays(lp, columns, names)  # every right-hand side finite
                if rows is None:
                    self._failed = True
                    return None
                arrays = (np.frombuffer(a, dtype=a.typecode) for a in rows)
                at = {name: i for i, name in enumerate(names)}
                said = [(r.sense, r.rhs, dict(r.coefficients)) for r in lp.constraints.values()]
                self._whole = (at, said, columns, *arrays)
            return self._whole

    def rows_for(self, lp: LinearProgram) -> tuple | None:
        """`lp`'s rows' arrays (row_start, col_index, coef, row_lower, row_upper) over
        its columns, as `rows_by_loop` builds them, sliced from the month's compile;
        None where a row is not the month's or does not slice (the module text)."""
        whole = self._compiled()
        if whole is None:
            return None
        import numpy as np

        at, said, columns, row_start, col_index, coef, row_lower, row_upper = whole
        chosen = [at.get(name) for name in lp.constraints]
        if None in chosen:
            return None
        rows = list(lp.constraints.values())
        chosen = np.array(chosen, dtype=np.int64)
        lower, upper = row_lower[chosen], row_upper[chosen]
        for i, k in enumerate(chosen.tolist()):
            row = rows[i]
            sense, rhs, terms = said[k]
            if row.coefficients != terms:
                return None
            if row.rhs == rhs and row.sense == sense:
                continue  # the month's bounds
            bounds = _BOUNDS.get(row.sense)
            if bounds is None or not math.isfinite(row.rhs):
                return None
            lower[i] = row.rhs if bounds[0] else -math.inf
            upper[i] = row.rhs if bounds[1] else math.inf
        own = np.full(len(columns), -1, dtype=np.int64)
        found = np.fromiter(map(columns.get, lp.variables, _MISSING), np.int64, len(lp.variables))
        named = found >= 0
        own[found[named]] = np.flatnonzero(named)
        starts = row_start[chosen]
        lengths = row_start[chosen + 1] - starts
        ends = np.cumsum(lengths)
        total = int(ends[-1]) if len(ends) else 0
        at_term = np.arange(total) + np.repeat(starts - ends + lengths, lengths)
        terms = own[col_index[at_term]]
        if (terms < 0).any():
            return None  # a column the program does not have
        row_of = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
        order = np.lexsort((terms, row_of))
        self.sliced += 1
        return (
            _as("q", np.concatenate(([0], ends))),
            _as("q", terms[order]),
            _as("d", coef[at_term][order]),
            _as("d", lower),
            _as("d", upper),
        )

    def compile(self, lp: LinearProgram) -> CompiledProgram:
        """`compile_program(lp)` of a whole program (a relaxation), its rows sliced
        where they are the month's, else compiled by numpy (`NUMPY_ROWS`)."""
        rows = self.rows_for(lp)
        return NUMPY_ROWS.compile(lp) if rows is None else compile_with_rows(lp, rows)


def _as(typecode: str, values) -> array:
    out = array(typecode)
    out.frombytes(values.astype("int64" if typecode == "q" else "float64").tobytes())
    return out


def _numpy_rows():
    return NUMPY_ROWS
