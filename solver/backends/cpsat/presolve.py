"""CP-SAT presolve: bounds every feasible point obeys, and continuous variables that
can be taken integral (steps 1 and 2 of the `cpsat` backend).

Step 1, bounds. Activity-based propagation: for row i and a term a_ij x_j, the other
terms' least activity m_i^-j and greatest M_i^-j give

    a_ij x_j <= row_upper_i - m_i^-j        a_ij x_j >= row_lower_i - M_i^-j

repeated a few rounds, integer bounds rounded inwards, every derived bound widened by a
relative 1e-9 against round-off.

Step 2, implied integers. A continuous x_j is integral in some optimal solution when it
can be rounded one way without raising the cost or breaking a row: down when c_j >= 0
(up when c_j <= 0), its bound on that side integral or absent, and every row in which
that move heads for a finite row bound has x_j as its only continuous variable, with
the other coefficients and that bound integer multiples of a_ij. Such a row reads
x_j >= k (k an integer expression), which floor(x_j) still meets. Found in rounds, a
variable found counting as an integer in the next round. In a fleet program:
purchased[r,g] >= GPUs used (a cost, rounds down), pooled[.., P_1] <= replicas and then
pooled[.., P_k] <= pooled[.., P_k-1] (no cost, round up). Rounding each round's
variables in turn keeps a feasible point feasible (a row holds at most one whose move
heads for a finite bound) and costs no more, so they join the integers: grid step 1,
no rounding allowance.
"""

import math

import numpy as np

from solver.backends.base import CompiledProgram

PROPAGATION_ROUNDS = 10
"""Rounds of bound propagation (it stops earlier once nothing tightens)."""

IMPLIED_ROUNDS = 20
"""Rounds of implied-integer detection (each may enable the next)."""

INTEGRAL_TOLERANCE = 1e-9
"""Relative distance from an integer that still counts as integral (implied integers)."""


def _round_off(bound: np.ndarray, row_size: np.ndarray, a: np.ndarray) -> np.ndarray:
    """How far to widen a derived bound: 1e-9 of it plus 1e-12 of its row's terms."""
    magnitude = np.where(np.isfinite(bound), np.abs(bound), 0.0)
    return 1e-9 * np.maximum(1.0, magnitude) + 1e-12 * row_size / np.abs(a)


def propagate_bounds(program: CompiledProgram) -> tuple[np.ndarray, np.ndarray]:
    """Variable bounds implied by the rows (activity-based propagation, step 1).

    For row i and a term a_ij x_j, the other terms' least activity m_i^-j gives
    a_ij x_j <= row_upper_i - m_i^-j, and their greatest M_i^-j gives
    a_ij x_j >= row_lower_i - M_i^-j. Repeated a few rounds; integer bounds are
    rounded inwards. Every bound is widened by a relative 1e-9 against round-off.

    Args:
        program: The program.

    Returns:
        (lower, upper), each at least as tight as the declared bounds. Propagation
        stops at the last consistent round when the rows contradict each other
        (CP-SAT then proves infeasibility).
    """
    lower, upper = program.lower.copy(), program.upper.copy()
    integer = program.integer
    lower[integer] = np.ceil(lower[integer] - 1e-6)
    upper[integer] = np.floor(upper[integer] + 1e-6)
    if program.coef.size == 0:
        return lower, upper
    rows, cols, a = program.row_of_nonzero(), program.col_index, program.coef
    m = program.num_rows
    for _ in range(PROPAGATION_ROUNDS):
        with np.errstate(invalid="ignore", over="ignore"):
            least = np.where(a > 0, a * lower[cols], a * upper[cols])
            most = np.where(a > 0, a * upper[cols], a * lower[cols])
        least_inf, most_inf = np.isinf(least), np.isinf(most)
        least_sum = np.bincount(rows, np.where(least_inf, 0.0, least), minlength=m)
        most_sum = np.bincount(rows, np.where(most_inf, 0.0, most), minlength=m)
        least_count = np.bincount(rows, least_inf.astype(float), minlength=m)[rows]
        most_count = np.bincount(rows, most_inf.astype(float), minlength=m)[rows]
        size = np.bincount(rows, np.where(least_inf, 0.0, np.abs(least)), minlength=m)
        size += np.bincount(rows, np.where(most_inf, 0.0, np.abs(most)), minlength=m)
        others_least = np.where(
            least_inf,
            np.where(least_count == 1, least_sum[rows], -math.inf),
            np.where(least_count == 0, least_sum[rows] - least, -math.inf),
        )
        others_most = np.where(
            most_inf,
            np.where(most_count == 1, most_sum[rows], math.inf),
            np.where(most_count == 0, most_sum[rows] - most, math.inf),
        )
        with np.errstate(invalid="ignore", over="ignore"):
            room_up = program.row_upper[rows] - others_least  # a x <= room_up
            room_down = program.row_lower[rows] - others_most  # a x >= room_down
            cap_up = np.where(a > 0, room_up / a, room_down / a)
            cap_down = np.where(a > 0, room_down / a, room_up / a)
        cap_up = np.where(np.isnan(cap_up), math.inf, cap_up)
        cap_down = np.where(np.isnan(cap_down), -math.inf, cap_down)
        new_upper, new_lower = upper.copy(), lower.copy()
        np.minimum.at(new_upper, cols, cap_up + _round_off(cap_up, size[rows], a))
        np.maximum.at(new_lower, cols, cap_down - _round_off(cap_down, size[rows], a))
        new_lower[integer] = np.ceil(new_lower[integer] - 1e-6)
        new_upper[integer] = np.floor(new_upper[integer] + 1e-6)
        if np.any(new_lower > new_upper + 1e-6 * np.maximum(1.0, np.abs(new_upper))):
            break  # inconsistent: leave the proof to the solver
        scale = 1e-7 * np.maximum(1.0, np.abs(np.where(np.isinf(upper), 1.0, upper)))
        tighter = (new_upper < upper - scale) | (
            new_lower
            > lower + 1e-7 * np.maximum(1.0, np.abs(np.where(np.isinf(lower), 1.0, lower)))
        )
        upper, lower = np.minimum(upper, new_upper), np.maximum(lower, new_lower)
        if not tighter.any():
            break
    return lower, upper


def implied_integers(program: CompiledProgram) -> np.ndarray:
    """Continuous variables that some optimal solution takes integral (step 2).

    Found in rounds: a variable found in one round counts as an integer in the next
    (pooled[k] <= pooled[k-1] once pooled[k-1] is known integral), and rounding the
    rounds' variables in turn keeps a feasible point feasible.

    Args:
        program: The program.

    Returns:
        A mask over the variables; False for the declared integer ones.
    """
    found = np.zeros_like(program.integer)
    for _ in range(IMPLIED_ROUNDS):
        more = _implied_round(program, program.integer | found)
        if not more.any():
            break
        found |= more
    return found


def _integral(values: np.ndarray) -> np.ndarray:
    """Whether each value is within INTEGRAL_TOLERANCE (relative) of an integer."""
    with np.errstate(invalid="ignore"):
        return np.abs(values - np.round(values)) <= INTEGRAL_TOLERANCE * np.maximum(
            1.0, np.abs(values)
        )


def _implied_round(program: CompiledProgram, integer: np.ndarray) -> np.ndarray:
    """The continuous variables (not in `integer`) implied integral given `integer`."""
    continuous = ~integer
    if not continuous.any():
        return np.zeros_like(integer)
    rows, cols, a = program.row_of_nonzero(), program.col_index, program.coef
    m = program.num_rows

    # Rows with exactly one continuous variable, integral in units of its coefficient.
    on_continuous = continuous[cols]
    alone = np.bincount(rows, on_continuous.astype(float), minlength=m) == 1
    unit = np.ones(m)
    unit[rows[on_continuous & alone[rows]]] = a[on_continuous & alone[rows]]
    entries_integral = np.bincount(rows, ~_integral(a / unit[rows]), minlength=m) == 0
    ruled = alone & entries_integral
    lower_ok = np.isinf(program.row_lower) | (ruled & _integral(program.row_lower / unit))
    upper_ok = np.isinf(program.row_upper) | (ruled & _integral(program.row_upper / unit))

    # Moving x_j down heads for a row's lower bound where a_ij > 0, its upper where < 0.
    down_blocked = np.where(a > 0, ~lower_ok[rows], ~upper_ok[rows]) & on_continuous
    up_blocked = np.where(a > 0, ~upper_ok[rows], ~lower_ok[rows]) & on_continuous
    n = program.num_variables
    down = np.bincount(cols[down_blocked], minlength=n) == 0
    up = np.bincount(cols[up_blocked], minlength=n) == 0
    down &= (program.cost >= 0) & (np.isinf(program.lower) | _integral(program.lower))
    up &= (program.cost <= 0) & (np.isinf(program.upper) | _integral(program.upper))
    return continuous & (down | up)
