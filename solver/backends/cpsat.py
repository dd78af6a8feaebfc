"""The `cpsat` backend: CP-SAT through OR-Tools MathOpt, continuous variables on a grid.

CP-SAT searches over integers in finite domains only. Handed a continuous variable it
silently treats it as an integer (min 3x + 2y, x + y >= 4.5, x >= 1 comes back as 11,
not 10), and it clamps every domain to `mip_max_bound`. This backend instead:

1. Bounds. Activity-based bound propagation derives bounds every feasible point obeys
   (l_j <= x_j <= u_j); a bound still infinite after it gets an artificial one,
   +-1000 x the largest number in the program / the variable's smallest coefficient.
2. Implied integers. A continuous x_j is integral in some optimal solution when it can
   be rounded one way without raising the cost or breaking a row: down when c_j >= 0
   (up when c_j <= 0), its bound on that side integral or absent, and every row in
   which that move heads for a finite row bound has x_j as its only continuous
   variable, with the other coefficients and that bound integer multiples of a_ij.
   Such a row reads x_j >= k (k an integer expression), which floor(x_j) still meets.
   Found in rounds, a variable found counting as an integer in the next round. In a
   fleet program: purchased[r,g] >= GPUs used (a cost, rounds down), pooled[.., P_1]
   <= replicas and then pooled[.., P_k] <= pooled[.., P_k-1] (no cost, round up).
   Rounding each round's variables in turn keeps a feasible point feasible (a row
   holds at most one whose move heads for a finite bound) and costs no more, so they
   join the integers: step 1, no rounding allowance.
3. Grid, level r (GRID_RELATIVE_STEPS: 1e-6, then 1e-8). Every other continuous x_j
   becomes h_j * z_j with z_j integer, h_j = 10^floor(log10(r * magnitude of x_j)) for a
   variable with a cost and FREE_STEP_FACTOR (1000) times coarser for one without
   (routing, loads): a free variable's step never enters the objective allowance below,
   only the rows' loosening, which step 5 repairs with cuts from the exact LP. Fine
   steps on free variables make CP-SAT's search enormous (domains of ~1e6 values per
   routing variable); coarse ones leave it the integer decisions.
4. Relaxation, solved by CP-SAT. Rounding any feasible x to its nearest grid point
   (implied integers rounded as in 2) moves row i's activity by at most
       delta_i = 1/2 * sum_{j on the grid} |a_ij| * h_j
   and the objective by at most 1/2 * sum_{j on the grid} |c_j| * h_j. So the grid
   program with every row loosened by delta_i (z_j in [floor(l_j/h_j), ceil(u_j/h_j)])
   contains a rounded copy of every feasible point, and
       lower bound = CP-SAT's bound on it - 1/2 * sum_j |c_j| * h_j
   is a valid bound on the true optimum. If it is infeasible, so is the program
   (within the artificial bounds, if any were needed). CP-SAT itself scales each
   row's real coefficients to integers at 1e-6 relative precision, like any MIP
   solver's feasibility tolerance.
5. Polish and cuts, by GLOP (OR-Tools' simplex). Fix the declared integer variables at
   the relaxation's values and solve the LP in the others exactly: its optimum is a
   true solution and an upper bound. If that LP is infeasible, the loosening let the
   integers squeeze through (s >= 100.0002, s <= 10n, step 1 for s: n = 10). Then the
   elastic LP (each row with a variable off the integers may be missed at a cost of 1
   per unit; integers and implied integers fixed at the point x^) measures the
   shortfall, and its row duals pi give, for each block of rows linked by shared
   continuous variables (one failure scenario's routing, say), the inequality
       sum_i pi_i A_i^I x_I  >=  sum_i pi_i b_i  -  max_{y in box} (sum_i pi_i B_i) . y
   (A^I the integer columns, B the others, b_i the row's lower bound where pi_i > 0 and
   its upper where pi_i < 0, box the derived bounds of step 1). Every feasible point
   obeys it, whatever pi is, and x^ misses it by the block's shortfall: a Benders
   feasibility cut. The cuts touch integer variables only, so they join the
   relaxation unloosened and keep its bound valid, and step 4 runs again (hinted with
   the last point). When no block gives a violated cut, or a point comes back, the
   level is refined (1e-8). After the last level, CP-SAT solves the restriction (exact
   rows, z_j in [ceil(l_j/h_j), floor(u_j/h_j)]), whose points are feasible as they
   stand, and its integers are polished the same way.
   Before the first search, the same inequality with the LP relaxation's duals as pi
   joins the relaxation once per block ("surrogates"): at the LP optimum those are the
   blocks' binding aggregates (the capacity a failure scenario's rerouted demand
   needs), which the loosening alone lets the integers undercut by a hair
   (chat-3region: a first plan 1.4% cheaper and 0.007 req/s short).
6. Status. OPTIMAL when (upper - lower) / |upper| <= max(mip_gap, 1e-6), upper the
   best polished objective and lower the best bound (the LP relaxation's, the
   relaxations'); FEASIBLE with that gap when the time limit stops the search first;
   TIME_LIMIT, recommending highs, when it stops it before any true solution.

A program without continuous variables skips 2-5: CP-SAT solves it as it stands. One
without integer variables has nothing for CP-SAT to decide and goes to GLOP. A
solution sitting on an artificial bound triggers an LP-relaxation check for
unboundedness (a feasible MIP with rational data is unbounded exactly when its LP
relaxation is); otherwise the result holds within those bounds, and the message says so.

- Duals: none (`capabilities.duals` False; callers use `highs`).
- Time limit: shared by every step; the LPs are quick next to the search.
- Gap: CP-SAT's `relative_gap_limit`, reported as computed in step 6.
- Threads: CP-SAT's `num_workers` (1 by default: one worker, no portfolio). One
  worker gets linearization level 2 where no routing choice exists
  (`CpSatBackend._parameters`), CP-SAT's default level 1 elsewhere.
"""

import math
from dataclasses import dataclass, replace

import numpy as np

from solver.backends import _mathopt
from solver.backends.base import (
    Answer,
    Backend,
    Capabilities,
    CompiledProgram,
    Deadline,
    SolveOptions,
    relative_gap,
)
from solver.lp import Termination

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

GRID_GAP_TOLERANCE = 1e-6
"""A relative gap this small from the grid alone still counts as optimal."""

MAX_CUT_ROUNDS = 200
"""Rounds of feasibility cuts on one grid level before it is refined."""

USE_HIGHS = (
    "the highs backend (LP-based branch and cut) is the one for programs with many "
    "continuous variables"
)
"""What a result that ran out of time recommends."""

SURROGATE_CUTS = True
"""Start from the LP relaxation's block cuts (`CpSatBackend._surrogates`)."""

CP_SAT_PARAMETERS: dict = {}
"""SatParameters fields set on every search (besides the time limit, gap and threads);
a `linearization_level` here overrides `CpSatBackend._parameters`' choice."""

IMPLIED_ROUNDS = 20
"""Rounds of implied-integer detection (each may enable the next)."""

INTEGRAL_TOLERANCE = 1e-9
"""Relative distance from an integer that still counts as integral (implied integers)."""

PROPAGATION_ROUNDS = 10


def _round_off(bound: np.ndarray, row_size: np.ndarray, a: np.ndarray) -> np.ndarray:
    """How far to widen a derived bound: 1e-9 of it plus 1e-12 of its row's terms."""
    magnitude = np.where(np.isfinite(bound), np.abs(bound), 0.0)
    return 1e-9 * np.maximum(1.0, magnitude) + 1e-12 * row_size / np.abs(a)


def propagate_bounds(program: CompiledProgram) -> tuple[np.ndarray, np.ndarray]:
    """Variable bounds implied by the rows (activity-based propagation).

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
    """Continuous variables that some optimal solution takes integral (module comment, 2).

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


def _implied_round(program: CompiledProgram, integer: np.ndarray) -> np.ndarray:
    """The continuous variables (not in `integer`) implied integral given `integer`."""
    continuous = ~integer
    if not continuous.any():
        return np.zeros_like(integer)
    rows, cols, a = program.row_of_nonzero(), program.col_index, program.coef
    m = program.num_rows

    def integral(values: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.abs(values - np.round(values)) <= INTEGRAL_TOLERANCE * np.maximum(
                1.0, np.abs(values)
            )

    # Rows with exactly one continuous variable, integral in units of its coefficient.
    on_continuous = continuous[cols]
    alone = np.bincount(rows, on_continuous.astype(float), minlength=m) == 1
    unit = np.ones(m)
    unit[rows[on_continuous & alone[rows]]] = a[on_continuous & alone[rows]]
    entries_integral = np.bincount(rows, ~integral(a / unit[rows]), minlength=m) == 0
    ruled = alone & entries_integral
    lower_ok = np.isinf(program.row_lower) | (ruled & integral(program.row_lower / unit))
    upper_ok = np.isinf(program.row_upper) | (ruled & integral(program.row_upper / unit))

    # Moving x_j down heads for a row's lower bound where a_ij > 0, its upper where < 0.
    down_blocked = np.where(a > 0, ~lower_ok[rows], ~upper_ok[rows]) & on_continuous
    up_blocked = np.where(a > 0, ~upper_ok[rows], ~lower_ok[rows]) & on_continuous
    n = program.num_variables
    down = np.bincount(cols[down_blocked], minlength=n) == 0
    up = np.bincount(cols[up_blocked], minlength=n) == 0
    down &= (program.cost >= 0) & (np.isinf(program.lower) | integral(program.lower))
    up &= (program.cost <= 0) & (np.isinf(program.upper) | integral(program.upper))
    return continuous & (down | up)


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

    def largest_domain(self) -> float:
        """max |z_j| over the box, for CP-SAT's `mip_max_bound`."""
        return float(
            np.max(np.abs(np.concatenate([self.lower, self.upper]) / np.tile(self.step, 2)))
        )

    def valid_box(self) -> tuple[np.ndarray, np.ndarray]:
        """The derived bounds, infinite where only an artificial one exists."""
        return (
            np.where(self.artificial_lower, -math.inf, self.lower),
            np.where(self.artificial_upper, math.inf, self.upper),
        )


def make_grid(
    program: CompiledProgram,
    relative_step: float = GRID_RELATIVE_STEPS[0],
    free_step_factor: float = FREE_STEP_FACTOR,
) -> Grid:
    """Box every variable and choose each continuous variable's grid step.

    Args:
        program: A program with at least one variable.
        relative_step: h_j as a fraction of x_j's magnitude (before rounding down to a
            power of ten) for a variable with a cost.
        free_step_factor: How much coarser the step of a variable without a cost is.

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
    relative = np.where(program.cost != 0.0, relative_step, relative_step * free_step_factor)
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


def _glop(
    program: CompiledProgram,
    lower: np.ndarray,
    upper: np.ndarray,
    deadline: Deadline,
    want_duals: bool = False,
) -> _mathopt.Outcome:
    """The LP over `program`'s rows with other bounds and no integrality, by GLOP."""
    arrays = replace(
        _mathopt.Arrays.of(program),
        lower=lower,
        upper=upper,
        integer=np.zeros_like(program.integer),
    )
    return _mathopt.solve(
        arrays,
        "GLOP",
        time_limit_s=deadline.remaining_s(1.0),
        mip_gap=None,
        threads=1,
        want_duals=want_duals,
    )


@dataclass(frozen=True)
class Cut:
    """sum_k coef[k] x[cols[k]] >= rhs over integer (declared or implied) variables."""

    cols: np.ndarray
    coef: np.ndarray
    rhs: float


def _components(program: CompiledProgram, free: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """A block label per variable: free variables sharing a row share a label.

    Args:
        program: The program.
        free: Mask of the variables that link rows (the continuous ones).
        rows: Row index of every stored coefficient.

    Returns:
        The smallest free variable index of each free variable's block (-1 elsewhere).
    """
    n, m = program.num_variables, program.num_rows
    label = np.where(free, np.arange(n), -1)
    linked = free[program.col_index]
    entry_rows, entry_cols = rows[linked], program.col_index[linked]
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
        One cut per block of rows whose elastic LP falls short at `point` (module comment,
        step 5); empty when the LP with those variables fixed is feasible.
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
    outcome = _mathopt.solve(
        elastic,
        "GLOP",
        time_limit_s=deadline.remaining_s(1.0),
        mip_gap=None,
        threads=1,
        want_duals=True,
    )
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

    label = _components(program, free, rows)
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


@dataclass
class _Progress:
    """What one solve has established so far."""

    lower_bound: float = -math.inf
    objective: float | None = None
    """The best true solution's objective, constant included."""
    values: np.ndarray | None = None

    def offer(self, objective: float, values: np.ndarray) -> None:
        """Keep a true solution if it is the best so far."""
        if self.objective is None or objective < self.objective:
            self.objective, self.values = objective, values

    def gap(self) -> float | None:
        """Relative gap of the best solution to the best bound."""
        if self.objective is None:
            return None
        return relative_gap(self.objective, self.lower_bound)


class CpSatBackend(Backend):
    """CP-SAT (lazy clause generation + LP relaxations) via OR-Tools MathOpt."""

    name = "cpsat"
    capabilities = Capabilities(
        integer=True,
        duals=False,
        time_limit=True,
        mip_gap=True,
        threads=True,
        exact_continuous=False,
    )

    def unavailable_reason(self) -> str:
        """Empty when OR-Tools imports."""
        return _mathopt.unavailable_reason()

    def version(self) -> str:
        """CP-SAT's version, which is OR-Tools'."""
        return f"CP-SAT (ortools {_mathopt.ortools_version()})"

    def _solve(self, program: CompiledProgram, options: SolveOptions, deadline: Deadline) -> Answer:
        if not program.is_mip:
            return self._solve_lp(program, deadline)
        notes: list[str] = []
        progress = _Progress()
        tolerance = max(options.mip_gap, GRID_GAP_TOLERANCE)
        cuts: list[Cut] = []
        grid = relaxation = None
        parameters: dict = {}
        for relative_step in GRID_RELATIVE_STEPS:
            grid = make_grid(program, relative_step)
            if relative_step == GRID_RELATIVE_STEPS[0]:
                parameters = self._parameters(program, grid, options)
                if not program.integer.all():
                    cuts.extend(self._surrogates(program, grid, progress, deadline))
            base = grid.arrays(program, relaxed=True)
            empty = empty_integer_row(base)
            if empty is not None:  # the relaxation has no integer point: nor the program
                name = program.constraint_names[empty]
                return Answer(
                    Termination.INFEASIBLE, message=f"constraint {name} has no integer point"
                )
            seen: set[bytes] = set()
            hint = None
            rounds = 0
            squeezed = False
            while True:
                relaxation = self._search(
                    with_cuts(base, cuts), grid, options, deadline, hint, parameters
                )
                if relaxation.termination is None or not relaxation.termination.has_solution:
                    if squeezed:
                        notes.append(self._level_note(relative_step, rounds, repaired=False))
                    return self._stopped(relaxation, grid, progress, options, notes)
                if relaxation.bound is not None:
                    bound = relaxation.bound - grid.objective_slack + program.objective_constant
                    progress.lower_bound = max(progress.lower_bound, bound)
                point = relaxation.values * grid.step
                unbounded = self._check_artificial(program, grid, point, deadline, notes)
                if unbounded is not None:
                    return unbounded
                if program.integer.all():  # no grid: CP-SAT solved the program itself
                    objective = relaxation.objective + program.objective_constant
                    gap = relative_gap(objective, progress.lower_bound)
                    proven = relaxation.termination is Termination.OPTIMAL
                    message = "" if proven else relaxation.detail
                    return Answer(
                        relaxation.termination, objective, point, None, gap, message, tuple(notes)
                    )
                polished = self._polish(program, point, deadline)
                if polished is not None and polished.termination is Termination.UNBOUNDED:
                    return Answer(
                        Termination.UNBOUNDED, message="unbounded with the integers fixed"
                    )
                if polished is not None and polished.termination is Termination.OPTIMAL:
                    progress.offer(polished.objective + program.objective_constant, polished.values)
                    if squeezed:
                        notes.append(self._level_note(relative_step, rounds, repaired=True))
                    closed = (gap := progress.gap()) is not None and gap <= tolerance
                    if closed or relaxation.termination is not Termination.OPTIMAL:
                        return self._answer(relaxation, progress, options, notes)
                    break  # the grid's allowance leaves a gap: a finer level
                squeezed = True
                key = np.round(point[grid.integral]).tobytes()
                if deadline.expired() or key in seen or rounds >= MAX_CUT_ROUNDS:
                    notes.append(self._level_note(relative_step, rounds, repaired=False))
                    break
                seen.add(key)
                found = feasibility_cuts(program, grid.integral, point, grid.valid_box(), deadline)
                if not found:
                    notes.append(self._level_note(relative_step, rounds, repaired=False))
                    break
                cuts.extend(found)
                rounds += 1
                hint = relaxation.values
            if deadline.expired():
                break

        if progress.objective is not None:
            return self._answer(relaxation, progress, options, notes)
        if deadline.expired():
            return Answer(
                Termination.TIME_LIMIT,
                message=f"CP-SAT found no plan within the time limit; {USE_HIGHS}",
                notes=tuple(notes),
            )
        # The loosening still lets the integers squeeze through: the restriction's points
        # are feasible as they stand (the bound stays the relaxation's).
        restriction = self._search(
            with_cuts(grid.arrays(program, relaxed=False), cuts),
            grid,
            options,
            deadline,
            parameters=parameters,
        )
        polished = None
        if restriction.termination is not None and restriction.termination.has_solution:
            polished = self._polish(program, restriction.values * grid.step, deadline)
        if polished is None or polished.termination is not Termination.OPTIMAL:
            return Answer(
                Termination.TIME_LIMIT if deadline.expired() else Termination.ERROR,
                message="CP-SAT found no point of its grid feasible for the program; "
                "use the highs or scip backend",
                notes=tuple(notes),
            )
        progress.offer(polished.objective + program.objective_constant, polished.values)
        return self._answer(relaxation, progress, options, notes)

    @staticmethod
    def _surrogates(
        program: CompiledProgram, grid: Grid, progress: _Progress, deadline: Deadline
    ) -> list[Cut]:
        """Cuts from the LP relaxation's duals, one per block of rows, before any search.

        At the LP optimum they are the blocks' binding aggregates (in a fleet program,
        the capacity a scenario's routing needs), which the grid's loosening would
        otherwise let the integers undercut; the LP's value is a lower bound too.
        """
        if not SURROGATE_CUTS:
            return []
        relaxed = _glop(program, program.lower, program.upper, deadline, want_duals=True)
        if relaxed.termination is not Termination.OPTIMAL or relaxed.duals is None:
            return []
        progress.lower_bound = max(
            progress.lower_bound, relaxed.objective + program.objective_constant
        )
        return lagrangian_cuts(program, grid.integral, relaxed.duals, grid.valid_box())

    @staticmethod
    def _level_note(relative_step: float, rounds: int, repaired: bool) -> str:
        """What happened on a grid level whose relaxation's integers were infeasible."""
        note = f"grid {relative_step:g}: the relaxation's integers are infeasible"
        if rounds:
            plural = "s" if rounds > 1 else ""
            outcome = "repaired" if repaired else "not repaired"
            note += f"; {rounds} round{plural} of feasibility cuts from the exact LP, {outcome}"
        return note

    @staticmethod
    def _parameters(program: CompiledProgram, grid: Grid, options: SolveOptions) -> dict:
        """CP-SAT parameters for this program's searches.

        One worker on a program whose continuous variables leave no routing choice (no
        block of rows shares two of them: a fleet without failover, or all integers)
        gets CP-SAT's full linearization (level 2, with its cut families): the program
        is then integer covering at heart, and measured on the scaling benchmark's
        workloads without failover (10 x 20 x 6) it solved them in 1.0 s instead of
        11.5 s, none slower. With routing choices the default level (1) measured faster
        (the 5 x 5 x 3 region-loss program: 2.3 s against 15 s). More workers run
        CP-SAT's own portfolio, which mixes the levels.
        """
        parameters = dict(CP_SAT_PARAMETERS)
        if options.threads == 1 and "linearization_level" not in parameters:
            free = ~grid.integral
            blocks = _components(program, free, program.row_of_nonzero())[free]
            if blocks.size == 0 or np.bincount(blocks).max() <= 1:
                parameters["linearization_level"] = 2
        return parameters

    @staticmethod
    def _search(
        arrays: _mathopt.Arrays,
        grid: Grid,
        options: SolveOptions,
        deadline: Deadline,
        hint: np.ndarray | None = None,
        parameters: dict | None = None,
    ) -> _mathopt.Outcome:
        """CP-SAT on one all-integer program of the grid."""
        if empty_integer_row(arrays) is not None:
            return _mathopt.Outcome(Termination.INFEASIBLE, None, None, None, "no integer point")
        return _mathopt.solve(
            arrays,
            "CP_SAT",
            time_limit_s=deadline.remaining_s(),
            mip_gap=options.mip_gap,
            threads=options.threads,
            cp_sat={"mip_max_bound": max(1e7, 2.0 * grid.largest_domain()), **(parameters or {})},
            hint=hint,
        )

    @staticmethod
    def _stopped(
        relaxation: _mathopt.Outcome,
        grid: Grid,
        progress: _Progress,
        options: SolveOptions,
        notes: list[str],
    ) -> Answer:
        """The relaxation ended without a point: infeasible, or out of time."""
        if relaxation.termination is Termination.INFEASIBLE:
            # The cuts hold for every feasible point: the program is infeasible too.
            if grid.artificial_lower.any() or grid.artificial_upper.any():
                notes.append("within the finite box CP-SAT needs around unbounded variables")
            return Answer(Termination.INFEASIBLE, message=relaxation.detail, notes=tuple(notes))
        if progress.objective is not None and relaxation.termination is Termination.TIME_LIMIT:
            return CpSatBackend._answer(relaxation, progress, options, notes)
        message = relaxation.detail
        if relaxation.termination is Termination.TIME_LIMIT:
            message += f"; CP-SAT found no plan within the time limit; {USE_HIGHS}"
        return Answer(relaxation.termination, message=message, notes=tuple(notes))

    @staticmethod
    def _check_artificial(
        program: CompiledProgram,
        grid: Grid,
        point: np.ndarray,
        deadline: Deadline,
        notes: list[str],
    ) -> Answer | None:
        """On an artificial bound: UNBOUNDED if the LP relaxation is, else a note."""
        on_artificial = (grid.artificial_upper & (point >= grid.upper - grid.step)) | (
            grid.artificial_lower & (point <= grid.lower + grid.step)
        )
        if not on_artificial.any():
            return None
        relaxed_lp = _glop(program, program.lower, program.upper, deadline)
        if relaxed_lp.termination in (Termination.UNBOUNDED, None):
            return Answer(relaxed_lp.termination, message=relaxed_lp.detail)
        note = "a variable sits on its artificial CP-SAT bound; optimal within it"
        if note not in notes:
            notes.append(note)
        return None

    @staticmethod
    def _answer(
        relaxation: _mathopt.Outcome | None,
        progress: _Progress,
        options: SolveOptions,
        notes: list[str],
    ) -> Answer:
        """OPTIMAL when the gap to the best bound closes, else FEASIBLE."""
        gap = progress.gap()
        values, objective = progress.values, progress.objective
        if gap is not None and gap <= max(options.mip_gap, GRID_GAP_TOLERANCE):
            return Answer(Termination.OPTIMAL, objective, values, None, gap, "", tuple(notes))
        proven = relaxation is not None and relaxation.termination is Termination.OPTIMAL
        if proven:
            message = (
                f"CP-SAT proved its grid relaxation optimal; the grid leaves a gap of "
                f"{gap if gap is None else format(gap, '.2g')} > mip_gap {options.mip_gap:g}"
            )
        else:
            detail = relaxation.detail if relaxation is not None else "CP-SAT"
            message = f"{detail}; the time limit came before the gap closed; {USE_HIGHS}"
        return Answer(Termination.FEASIBLE, objective, values, None, gap, message, tuple(notes))

    @staticmethod
    def _polish(
        program: CompiledProgram, point: np.ndarray, deadline: Deadline
    ) -> _mathopt.Outcome | None:
        """The exact LP in the continuous variables with the integers fixed at `point`."""
        fixed = np.round(point)
        lower = np.where(program.integer, fixed, program.lower)
        upper = np.where(program.integer, fixed, program.upper)
        if np.any(lower > upper):
            return None
        return _glop(program, lower, upper, deadline)

    @staticmethod
    def _solve_lp(program: CompiledProgram, deadline: Deadline) -> Answer:
        """No integer variables: nothing for CP-SAT to decide, GLOP solves the LP."""
        outcome = _glop(program, program.lower, program.upper, deadline)
        note = "no integer variables: solved by GLOP (CP-SAT has no LP algorithm)"
        if outcome.termination is None or not outcome.termination.has_solution:
            return Answer(outcome.termination, message=outcome.detail, notes=(note,))
        objective = outcome.objective + program.objective_constant
        return Answer(outcome.termination, objective, outcome.values, None, None, "", (note,))
