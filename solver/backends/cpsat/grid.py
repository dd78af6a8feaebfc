"""CP-SAT's grid: continuous variables as integer multiples of a step, and the two
all-integer programs built on it (steps 3 and 4 of the `cpsat` backend).

Step 3, grid at level r (GRID_RELATIVE_STEPS: 1e-6, then 1e-8). Every continuous x_j
that is not an implied integer becomes h_j * z_j with z_j integer,

    h_j = 10^floor(log10(r * magnitude of x_j))

for a variable with a cost, FREE_STEP_FACTOR (1000) times coarser for one without
(routing, loads): a free variable's step never enters the objective allowance below,
only the rows' loosening, which the cuts repair. Fine steps on free variables make
CP-SAT's search enormous (domains of ~1e6 values per routing variable); coarse ones
leave it the integer decisions. Declared and implied integers keep step 1. A bound
that propagation leaves infinite gets an artificial one, +-ARTIFICIAL_BOUND_FACTOR
(1000) x the largest number in the program / the variable's smallest coefficient.

Step 4, relaxation and restriction. Rounding any feasible x to its nearest grid point
moves row i's activity by at most

    delta_i = 1/2 * sum_{j on the grid} |a_ij| * h_j

and the objective by at most 1/2 * sum_{j on the grid} |c_j| * h_j. So the relaxation
(every row loosened by delta_i, z_j in [floor(l_j/h_j), ceil(u_j/h_j)]) contains a
rounded copy of every feasible point within the box, and

    lower bound = CP-SAT's bound on it - 1/2 * sum_j |c_j| * h_j

is a valid bound on the true optimum within the box. The restriction (exact rows,
z_j in [ceil(l_j/h_j), floor(u_j/h_j)]) has only points that are feasible as they
stand. CP-SAT itself scales each row's real coefficients to integers at 1e-6 relative
precision, like any MIP solver's feasibility tolerance.
"""

import math
from dataclasses import dataclass

import numpy as np

from solver.backends import _mathopt
from solver.backends.base import CompiledProgram
from solver.backends.cpsat.presolve import implied_integers, propagate_bounds

GRID_RELATIVE_STEPS = (1e-6, 1e-8)
"""Grid levels: the step of a continuous variable with a cost as a fraction of its
magnitude (rounded down to a power of ten), the first level, then the finer one when
the first cannot be repaired (the loosening shrinks a hundredfold)."""

FREE_STEP_FACTOR = 1e3
"""A continuous variable without a cost gets a step this many times coarser than the
level's: it adds nothing to the objective allowance, and the loosening of its rows is
repaired by feasibility cuts."""

ARTIFICIAL_BOUND_FACTOR = 1e3
"""An unbounded variable is boxed at this many times the program's largest number."""

SMALLEST_MIP_MAX_BOUND = 1e7
"""CP-SAT's `mip_max_bound` is at least its default, 1e7."""

LARGEST_MIP_MAX_BOUND = 1e17
"""The largest `mip_max_bound` CP-SAT accepts (OR-Tools 9.15): no integer beyond it."""


@dataclass(frozen=True)
class Grid:
    """The box, the grid steps and the two integer programs built on them."""

    lower: np.ndarray
    upper: np.ndarray
    artificial_lower: np.ndarray
    artificial_upper: np.ndarray
    step: np.ndarray
    """h_j for continuous variables, 1 for integer and implied integer ones."""
    row_slack: np.ndarray
    """delta_i."""
    objective_slack: float
    """1/2 sum_j |c_j| h_j."""
    integral: np.ndarray
    """Declared and implied integer variables: step 1, no rounding allowance."""

    @property
    def has_artificial_bounds(self) -> bool:
        """Whether any variable is boxed by an artificial bound."""
        return bool(self.artificial_lower.any() or self.artificial_upper.any())

    def arrays(self, program: CompiledProgram, relaxed: bool) -> _mathopt.Arrays:
        """The relaxation (loosened rows, outward domains) or the restriction."""
        continuous = ~self.integral
        low, high = self.lower / self.step, self.upper / self.step
        if relaxed:
            lower, upper = np.floor(low), np.ceil(high)
        else:  # inwards, forgiving round-off: l / h = 1234499.9999999998 means 1234500
            lower = np.ceil(low - 1e-9 * np.maximum(1.0, np.abs(low)))
            upper = np.floor(high + 1e-9 * np.maximum(1.0, np.abs(high)))
        lower = np.where(continuous, lower, self.lower)
        upper = np.where(continuous, upper, self.upper)
        slack = self.row_slack if relaxed else np.zeros_like(self.row_slack)
        return _mathopt.Arrays(
            lower=lower,
            upper=upper,
            integer=np.ones_like(program.integer),
            cost=program.cost * self.step,
            row_start=program.row_start,
            col_index=program.col_index,
            coef=program.coef * self.step[program.col_index],
            row_lower=program.row_lower - slack,
            row_upper=program.row_upper + slack,
        )

    def domains(self) -> np.ndarray:
        """max(|l_j|, |u_j|) / h_j: how far each z_j reaches from 0."""
        return np.maximum(np.abs(self.lower), np.abs(self.upper)) / self.step

    def mip_max_bound(self) -> float:
        """CP-SAT's `mip_max_bound` for this grid: twice the widest domain, at least 1e7."""
        return max(SMALLEST_MIP_MAX_BOUND, 2.0 * float(np.max(self.domains())))

    def too_wide(self, program: CompiledProgram) -> str:
        """Why CP-SAT cannot hold this grid's integers; empty when it can.

        Args:
            program: The program the grid was made for (for the variable's name).

        Returns:
            A message naming the widest variable, its box and step, and what to do.
        """
        if self.mip_max_bound() <= LARGEST_MIP_MAX_BOUND:
            return ""
        j = int(np.argmax(self.domains()))
        artificial = bool(self.artificial_lower[j] or self.artificial_upper[j])
        box = " (an artificial box: no bound was derived)" if artificial else ""
        return (
            f"variable {program.variable_names[j]} spans [{self.lower[j]:g}, "
            f"{self.upper[j]:g}]{box} at a step of {self.step[j]:g}: "
            f"{self.domains()[j]:.3g} integers, beyond the "
            f"{LARGEST_MIP_MAX_BOUND / 2:g} CP-SAT can hold; give it a tighter bound or "
            "use the highs backend"
        )

    def valid_box(self) -> tuple[np.ndarray, np.ndarray]:
        """The derived bounds, infinite where only an artificial one exists."""
        return (
            np.where(self.artificial_lower, -math.inf, self.lower),
            np.where(self.artificial_upper, math.inf, self.upper),
        )


def make_grid(program: CompiledProgram, relative_step: float = GRID_RELATIVE_STEPS[0]) -> Grid:
    """Box every variable and choose each continuous variable's grid step.

    Args:
        program: A program with at least one variable.
        relative_step: h_j as a fraction of x_j's magnitude (before rounding down to a
            power of ten) for a variable with a cost; FREE_STEP_FACTOR times that for
            one without.

    Returns:
        The grid; see the module comment for the arithmetic.
    """
    lower, upper = propagate_bounds(program)
    finite = np.concatenate(
        [
            np.abs(program.row_lower[np.isfinite(program.row_lower)]),
            np.abs(program.row_upper[np.isfinite(program.row_upper)]),
            np.abs(lower[np.isfinite(lower)]),
            np.abs(upper[np.isfinite(upper)]),
            [1.0],
        ]
    )
    scale = float(finite.max())
    smallest = np.ones(program.num_variables)
    if program.coef.size:
        np.minimum.at(smallest, program.col_index, np.abs(program.coef))
    reach = ARTIFICIAL_BOUND_FACTOR * scale / smallest
    artificial_lower, artificial_upper = np.isinf(lower), np.isinf(upper)
    known_magnitude = np.maximum(
        np.where(artificial_lower, 0.0, np.abs(lower)),
        np.where(artificial_upper, 0.0, np.abs(upper)),
    )
    lower = np.where(artificial_lower, np.minimum(upper, 0.0) - reach, lower)
    upper = np.where(artificial_upper, np.maximum(lower, 0.0) + reach, upper)
    integral = program.integer | implied_integers(program)
    # An implied integer's derived bounds were widened against round-off (3.0000000004
    # still means 3); propagation already rounded the declared integers' bounds.
    widen = np.where(program.integer, 0.0, 1e-6)
    lower[integral] = np.ceil(lower - widen * np.maximum(1.0, np.abs(lower)))[integral]
    upper[integral] = np.floor(upper + widen * np.maximum(1.0, np.abs(upper)))[integral]

    continuous = ~integral
    magnitude = np.where(known_magnitude > 0, known_magnitude, scale)
    relative = np.where(program.cost != 0.0, relative_step, relative_step * FREE_STEP_FACTOR)
    step = np.where(continuous, 10.0 ** np.floor(np.log10(magnitude * relative)), 1.0)
    term_slack = np.where(continuous[program.col_index], np.abs(program.coef), 0.0)
    term_slack *= step[program.col_index]
    row_slack = 0.5 * np.bincount(program.row_of_nonzero(), term_slack, minlength=program.num_rows)
    objective_slack = 0.5 * float(np.sum(np.abs(program.cost[continuous]) * step[continuous]))
    return Grid(
        lower,
        upper,
        artificial_lower,
        artificial_upper,
        step,
        row_slack,
        objective_slack,
        integral,
    )


def empty_integer_row(arrays: _mathopt.Arrays) -> int | None:
    """A row with integral coefficients whose bounds hold no multiple of their gcd.

    Such a row has no integer point (2x - 2y = 1), so the program is infeasible.
    CP-SAT's MIP conversion turns it into an empty domain and answers MODEL_INVALID
    (OR-Tools 9.15), so it is caught here first.

    Args:
        arrays: An all-integer program.

    Returns:
        The first such row's index, or None.
    """
    rows = np.repeat(np.arange(arrays.row_lower.size), np.diff(arrays.row_start))
    integral = np.abs(arrays.coef - np.round(arrays.coef)) <= 1e-9
    bounded = np.isfinite(arrays.row_lower) & np.isfinite(arrays.row_upper)
    for i in np.unique(rows[bounded[rows]]):
        lo, hi = arrays.row_start[i], arrays.row_start[i + 1]
        if not integral[lo:hi].all():
            continue
        g = math.gcd(*(int(abs(c)) for c in np.round(arrays.coef[lo:hi]).tolist()))
        low, high = arrays.row_lower[i] / g, arrays.row_upper[i] / g
        if math.ceil(low - 1e-9) > math.floor(high + 1e-9):
            return int(i)
    return None
