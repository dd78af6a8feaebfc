"""A program's rows as the index arrays of `solver.backends.base.CompiledProgram`: row
starts, column indices and coefficients (each row's columns in order, zeros dropped),
and each row's bounds from its sense.

Two ways to the same arrays: a loop over the rows (`rows_by_loop`, no numpy: a
one-model solve never needs it) and numpy over every coefficient at once
(`rows_by_arrays`, for programs of more than `ARRAYS_FROM_NONZEROS` coefficients: on the
30 x 30 x 6 region-loss program, 1.7 million coefficients, 0.45 s of CPU against the
loop's 1.2 s). Either raises or defers the same ValueError naming the bad row.
"""

import math
from array import array
from itertools import chain

from solver.program.lp import LinearProgram, Sense


def zeros(typecode: str, count: int) -> array:
    """`count` zeros as an `array.array` of `typecode` (all-zero bytes are 0 and 0.0)."""
    return array(typecode, bytes(array(typecode).itemsize * count))


def rows_by_loop(lp: LinearProgram, index: dict[str, int], row_names: tuple[str, ...]) -> tuple:
    """The rows as arrays (row_start, col_index, coef, row_lower, row_upper), row by row;
    raises the ValueError `compile_program` names."""
    row_start = zeros("q", len(row_names) + 1)
    col_index = array("q")
    coef = array("d")
    row_lower = zeros("d", len(row_names))
    row_upper = zeros("d", len(row_names))
    for i, row_name in enumerate(row_names):
        row = lp.constraints[row_name]
        if not math.isfinite(row.rhs):
            raise ValueError(f"constraint {row_name} has right-hand side {row.rhs}")
        terms = []
        for var, value in row.coefficients.items():
            if var not in index:
                raise ValueError(f"constraint {row_name} uses undeclared variable {var}")
            if not math.isfinite(value):
                raise ValueError(f"constraint {row_name} has coefficient {value} on {var}")
            if value != 0.0:
                terms.append((index[var], float(value)))
        terms.sort()
        col_index.extend(j for j, _ in terms)
        coef.extend(a for _, a in terms)
        row_start[i + 1] = len(col_index)
        sense = Sense(row.sense)
        row_lower[i] = row.rhs if sense in (Sense.GE, Sense.EQ) else -math.inf
        row_upper[i] = row.rhs if sense in (Sense.LE, Sense.EQ) else math.inf

    return row_start, col_index, coef, row_lower, row_upper


ARRAYS_FROM_NONZEROS = 50_000
"""Programs with more stored coefficients than this have their rows compiled by numpy
(`rows_by_arrays`, several times faster than the loop on the region-loss bench's
programs of a million or more); smaller ones by the loop, which needs no numpy."""


def worth_arrays(lp: LinearProgram, row_names: tuple[str, ...]) -> bool:
    """Whether the program's rows hold more than `ARRAYS_FROM_NONZEROS` coefficients."""
    total = 0
    for name in row_names:
        total += len(lp.constraints[name].coefficients)
        if total > ARRAYS_FROM_NONZEROS:
            return True
    return False


def rows_by_arrays(
    lp: LinearProgram, index: dict[str, int], row_names: tuple[str, ...]
) -> tuple | None:
    """The same arrays as `rows_by_loop`, each step over every coefficient at once: the
    column indices and values in row order, zeros dropped, each row's columns sorted
    (one sort by row x columns + column). None where some name is undeclared or some
    number is not finite (or not a number): the loop then finds the first and names it."""
    import numpy as np

    rows = [lp.constraints[name] for name in row_names]
    coefficients = [row.coefficients for row in rows]
    counts = np.fromiter(map(len, coefficients), dtype=np.int64, count=len(rows))
    total = int(counts.sum())
    try:
        names = chain.from_iterable(coefficients)
        columns = np.array([index[var] for var in names], dtype=np.int64)
        values = np.fromiter(
            chain.from_iterable(map(dict.values, coefficients)), dtype=float, count=total
        )
        rhs = np.fromiter((row.rhs for row in rows), dtype=float, count=len(rows))
        senses = [Sense(row.sense) for row in rows]
    except (KeyError, TypeError, ValueError):
        return None
    if not (np.isfinite(values).all() and np.isfinite(rhs).all()):
        return None
    row_of = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    kept = values != 0.0
    columns, values, row_of = columns[kept], values[kept], row_of[kept]
    order = np.argsort(row_of * len(index) + columns, kind="stable")
    row_start = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_of, minlength=len(rows)), out=row_start[1:])
    at_least = np.fromiter((sense in (Sense.GE, Sense.EQ) for sense in senses), dtype=bool)
    at_most = np.fromiter((sense in (Sense.LE, Sense.EQ) for sense in senses), dtype=bool)
    return (
        _as_array("q", row_start),
        _as_array("q", columns[order]),
        _as_array("d", values[order]),
        _as_array("d", np.where(at_least, rhs, -math.inf)),
        _as_array("d", np.where(at_most, rhs, math.inf)),
    )


def _as_array(typecode: str, values) -> array:
    """A numpy array as an `array.array` of `typecode` (the program's arrays are the
    standard library's, whichever path compiled them)."""
    out = array(typecode)
    out.frombytes(values.astype("int64" if typecode == "q" else "float64").tobytes())
    return out
