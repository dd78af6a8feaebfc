"""Cuts over the integer variables that repair CP-SAT's loosened grid (step 5 of the
`cpsat` backend).

The relaxation's loosening can let the integers squeeze through (s >= 100.0002,
s <= 10n, step 1 for s: n = 10), and the polish then finds the LP with those integers
fixed infeasible. For any row multipliers pi, and the rows i of one block (rows linked
by shared continuous variables y: one failure scenario's routing, say), every feasible
point obeys

    sum_i pi_i A_i^I x_I  >=  sum_i pi_i b_i  -  max_{y in box} (sum_i pi_i B_i) . y

(A^I the integer columns, B the others, b_i the row's lower bound where pi_i > 0 and its
upper where pi_i < 0, box the derived bounds of step 1). Two choices of pi:

- Feasibility (Benders) cuts: the elastic LP at the grid point x^ (each row with a
  continuous variable may be missed at a cost of 1 per unit; the integers, declared and
  implied, fixed at x^) measures the shortfall, and its row duals are pi. x^ misses the
  inequality by its block's shortfall.
- Surrogate cuts: the LP relaxation's duals, before the first search. At the LP optimum
  they are the blocks' binding aggregates (the capacity a scenario's rerouted demand
  needs), which the loosening alone lets the integers undercut by a hair
  (chat-3region: a first plan 1.4% cheaper and 0.007 req/s short).

The cuts touch integer variables only, so they join the relaxation unloosened and keep
its bound valid.
"""

import math
from dataclasses import dataclass, replace

import numpy as np

from solver.backends import _mathopt
from solver.backends.base import CompiledProgram, Deadline
from solver.backends.cpsat.exact import glop
from solver.program.lp import Termination


@dataclass(frozen=True)
class Cut:
    """sum_k coef[k] x[cols[k]] >= rhs over integer (declared or implied) variables."""

    cols: np.ndarray
    coef: np.ndarray
    rhs: float


def blocks(program: CompiledProgram, free: np.ndarray) -> np.ndarray:
    """A block label per variable: free variables sharing a row share a label.

    Args:
        program: The program.
        free: Mask of the variables that link rows (the continuous ones).

    Returns:
        The smallest free variable index of each free variable's block (-1 elsewhere).
    """
    n, m = program.num_variables, program.num_rows
    label = np.where(free, np.arange(n), -1)
    linked = free[program.col_index]
    entry_rows, entry_cols = program.row_of_nonzero()[linked], program.col_index[linked]
    while True:
        row_min = np.full(m, n)
        np.minimum.at(row_min, entry_rows, label[entry_cols])
        new = label.copy()
        np.minimum.at(new, entry_cols, row_min[entry_rows])
        new[free] = new[new[free]]  # pointer jumping
        if np.array_equal(new, label):
            return label
        label = new


def feasibility_cuts(
    program: CompiledProgram,
    integral: np.ndarray,
    point: np.ndarray,
    box: tuple[np.ndarray, np.ndarray],
    deadline: Deadline,
) -> list[Cut]:
    """Benders feasibility cuts that the integer part of `point` violates.

    Args:
        program: The program.
        integral: The variables held at `point` (declared and implied integers).
        point: A relaxation solution; only its `integral` entries are read.
        box: Bounds every feasible point obeys (derived, never artificial).
        deadline: The solve's budget.

    Returns:
        One cut per block of rows whose elastic LP falls short at `point` (module
        comment); empty when the LP with those variables fixed is feasible.
    """
    free = ~integral
    rows, cols, a = program.row_of_nonzero(), program.col_index, program.coef
    m = program.num_rows
    on_free = free[cols]
    touched = np.bincount(rows[on_free], minlength=m) > 0
    fixed_activity = np.bincount(
        rows, np.where(on_free, 0.0, a * np.round(point)[cols]), minlength=m
    )
    chosen = np.flatnonzero(touched)
    if chosen.size == 0:
        return []

    # The elastic LP: the free variables, then one "over" and one "under" per chosen row.
    free_index = np.flatnonzero(free)
    column = np.full(program.num_variables, -1)
    column[free_index] = np.arange(free_index.size)
    row_number = np.full(m, -1)
    row_number[chosen] = np.arange(chosen.size)
    keep = on_free & touched[rows]
    k = chosen.size
    entry_row = np.concatenate([row_number[rows[keep]], np.arange(k), np.arange(k)])
    entry_col = np.concatenate(
        [column[cols[keep]], free_index.size + np.arange(k), free_index.size + k + np.arange(k)]
    )
    entry_coef = np.concatenate([a[keep], np.ones(k), -np.ones(k)])
    order = np.lexsort((entry_col, entry_row))
    row_start = np.zeros(k + 1, dtype=np.int64)
    row_start[1:] = np.cumsum(np.bincount(entry_row, minlength=k))
    elastic = _mathopt.Arrays(
        lower=np.concatenate([program.lower[free_index], np.zeros(2 * k)]),
        upper=np.concatenate([program.upper[free_index], np.full(2 * k, math.inf)]),
        integer=np.zeros(free_index.size + 2 * k, dtype=bool),
        cost=np.concatenate([np.zeros(free_index.size), np.ones(2 * k)]),
        row_start=row_start,
        col_index=entry_col[order],
        coef=entry_coef[order],
        row_lower=program.row_lower[chosen] - fixed_activity[chosen],
        row_upper=program.row_upper[chosen] - fixed_activity[chosen],
    )
    outcome = glop(elastic, deadline, want_duals=True)
    if outcome.termination is not Termination.OPTIMAL or outcome.duals is None:
        return []
    if outcome.objective <= 1e-9:
        return []
    pi = np.zeros(program.num_rows)
    pi[chosen] = outcome.duals
    return lagrangian_cuts(program, integral, pi, box, point)


def lagrangian_cuts(
    program: CompiledProgram,
    integral: np.ndarray,
    pi: np.ndarray,
    box: tuple[np.ndarray, np.ndarray],
    point: np.ndarray | None = None,
) -> list[Cut]:
    """One valid inequality per block of rows from row multipliers `pi`.

    For the rows i of a block (rows linked by shared continuous variables y), every
    feasible point obeys
        sum_i pi_i A_i^I x_I  >=  sum_i pi_i b_i  -  max_{y in box} (sum_i pi_i B_i) . y
    whatever pi is (b_i the lower bound where pi_i > 0, the upper where pi_i < 0; a
    side without a bound takes no multiplier of its sign).

    Args:
        program: The program.
        integral: The integer (declared and implied) variables, x_I.
        pi: A multiplier per row.
        box: Bounds every feasible point obeys (derived, never artificial).
        point: Keep only the cuts this point's integer part violates; None keeps all.

    Returns:
        The cuts, over integer variables only.
    """
    free = ~integral
    rows, cols, a = program.row_of_nonzero(), program.col_index, program.coef
    m, n = program.num_rows, program.num_variables
    on_free = free[cols]
    pi = np.where((pi > 0) & np.isinf(program.row_lower), 0.0, pi)
    pi = np.where((pi < 0) & np.isinf(program.row_upper), 0.0, pi)
    with np.errstate(invalid="ignore"):
        side = np.where(
            pi > 0, pi * program.row_lower, np.where(pi < 0, pi * program.row_upper, 0.0)
        )

    label = blocks(program, free)
    row_block = np.full(m, -1)
    row_block[rows[on_free]] = label[cols[on_free]]
    weight = pi[rows] * a  # pi_i a_ij per stored coefficient

    # max over the box of w . y, per variable: +inf where the box is open in w's direction.
    w = np.bincount(cols[on_free], weight[on_free], minlength=n)
    lower, upper = box
    with np.errstate(invalid="ignore"):
        reach = np.where(w > 0, w * upper, np.where(w < 0, w * lower, 0.0))
    reach = np.where(free, reach, 0.0)

    cuts = []
    for block in np.unique(row_block[row_block >= 0]):
        block_rows = row_block == block
        if not np.any(pi[block_rows]):
            continue
        top = reach[free & (label == block)]
        if not np.all(np.isfinite(top)):
            continue
        entries = block_rows[rows] & ~on_free & (weight != 0.0)
        cut_cols, where = np.unique(cols[entries], return_inverse=True)
        cut_coef = np.bincount(where, weight[entries], minlength=cut_cols.size)
        rhs = float(np.sum(side[block_rows]) - np.sum(top))
        size = np.abs(cut_coef) * np.maximum(np.abs(lower[cut_cols]), np.abs(upper[cut_cols]))
        scale = float(
            np.sum(np.abs(side[block_rows]))
            + np.sum(np.abs(top))
            + np.sum(np.where(np.isfinite(size), size, 0.0))
        )
        rhs -= 1e-9 * max(1.0, scale)  # round-off: a cut may only be loosened
        # Negligible coefficients leave the row with their worst case.
        tiny = np.abs(cut_coef) <= 1e-9 * np.max(np.abs(cut_coef), initial=0.0)
        if tiny.any():
            low, high = lower[cut_cols[tiny]], upper[cut_cols[tiny]]
            worst = np.maximum(cut_coef[tiny] * low, cut_coef[tiny] * high)
            if not np.all(np.isfinite(worst)):
                continue
            rhs -= float(np.sum(worst))
            cut_cols, cut_coef = cut_cols[~tiny], cut_coef[~tiny]
        if cut_cols.size == 0:
            continue
        if point is not None:
            violation = rhs - float(np.dot(cut_coef, np.round(point[cut_cols])))
            if violation <= 1e-9 * max(1.0, scale):
                continue
        elif rhs <= -1e-9 * max(1.0, scale) + float(
            np.sum(np.minimum(cut_coef * lower[cut_cols], cut_coef * upper[cut_cols]))
        ):
            continue  # holds for every point of the box: no use
        cuts.append(Cut(cut_cols, cut_coef, rhs))
    return cuts


def with_cuts(arrays: _mathopt.Arrays, cuts: list[Cut]) -> _mathopt.Arrays:
    """The arrays with the cuts appended as `>=` rows."""
    if not cuts:
        return arrays
    counts = np.array([cut.cols.size for cut in cuts])
    return replace(
        arrays,
        row_start=np.concatenate([arrays.row_start, arrays.row_start[-1] + np.cumsum(counts)]),
        col_index=np.concatenate([arrays.col_index, *(cut.cols for cut in cuts)]),
        coef=np.concatenate([arrays.coef, *(cut.coef for cut in cuts)]),
        row_lower=np.concatenate([arrays.row_lower, [cut.rhs for cut in cuts]]),
        row_upper=np.concatenate([arrays.row_upper, np.full(len(cuts), math.inf)]),
    )
