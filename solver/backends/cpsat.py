"""The `cpsat` backend: CP-SAT through OR-Tools MathOpt, continuous variables on a grid.

CP-SAT searches over integers in finite domains only. Handed a continuous variable it
silently treats it as an integer (min 3x + 2y, x + y >= 4.5, x >= 1 comes back as 11,
not 10), and it clamps every domain to `mip_max_bound`. This backend instead:

1. Bounds. Activity-based bound propagation derives bounds every feasible point obeys
   (l_j <= x_j <= u_j); a bound still infinite after it gets an artificial one,
   +-1000 x the largest number in the program / the variable's smallest coefficient.
2. Grid. A continuous x_j becomes h_j * z_j with z_j integer, the step
   h_j = 10^floor(log10(1e-6 * magnitude of x_j)).
3. Relaxation, solved by CP-SAT. Rounding any feasible x to its nearest grid point
   moves row i's activity by at most
       delta_i = 1/2 * sum_{j continuous} |a_ij| * h_j
   and the objective by at most 1/2 * sum_{j continuous} |c_j| * h_j. So the grid
   program with every row loosened by delta_i (z_j in [floor(l_j/h_j), ceil(u_j/h_j)])
   contains a rounded copy of every feasible point, and
       lower bound = CP-SAT's bound on it - 1/2 * sum_j |c_j| * h_j
   is a valid bound on the true optimum. If it is infeasible, so is the program
   (within the artificial bounds, if any were needed). CP-SAT itself scales each
   row's real coefficients to integers at 1e-6 relative precision, like any MIP
   solver's feasibility tolerance.
4. Polish, solved by GLOP (OR-Tools' simplex): fix the integer variables at the
   relaxation's values and solve the LP in the continuous ones exactly. Its optimum
   is a true solution and an upper bound. If the loosening let the integers squeeze
   through (the fixed LP is infeasible: s >= 100.0002, s <= 10n, s <= 1000 has step
   1e-3 and rounds to n = 10),
   steps 2-4 run again on a grid a hundred times finer. If that fails too, CP-SAT
   solves the restriction (exact rows, z_j in [ceil(l_j/h_j), floor(u_j/h_j)]), whose
   points are feasible as they stand, and its integers are polished the same way.
5. Status. OPTIMAL when CP-SAT proved the relaxation and
   (upper - lower) / |upper| <= max(mip_gap, 1e-6); otherwise FEASIBLE with that gap.

A program without continuous variables skips 2-4: CP-SAT solves it as it stands. One
without integer variables has nothing for CP-SAT to decide and goes to GLOP. A
solution sitting on an artificial bound triggers an LP-relaxation check for
unboundedness (a feasible MIP with rational data is unbounded exactly when its LP
relaxation is); otherwise the result holds within those bounds, and the message says so.

- Duals: none (`capabilities.duals` False; callers use `highs`).
- Time limit: shared by every step; the polish LPs are quick next to the search.
- Gap: CP-SAT's `relative_gap_limit`, reported as computed in step 5.
- Threads: CP-SAT's `num_workers` (1 by default: one worker, no portfolio).
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
"""Grid step of a continuous variable as a fraction of its magnitude (rounded down to
a power of ten): the first, then the finer one when the first relaxation's integers
turn out infeasible (the loosening shrinks a hundredfold)."""

ARTIFICIAL_BOUND_FACTOR = 1e3
"""An unbounded variable is boxed at this many times the program's largest number."""

GRID_GAP_TOLERANCE = 1e-6
"""A relative gap this small from the grid alone still counts as optimal."""

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


@dataclass(frozen=True)
class Grid:
    """The box, the grid steps and the two integer programs built on them."""

    lower: np.ndarray
    upper: np.ndarray
    artificial_lower: np.ndarray
    artificial_upper: np.ndarray
    step: np.ndarray
    """h_j for continuous variables, 1 for integer ones."""
    row_slack: np.ndarray
    """delta_i."""
    objective_slack: float
    """1/2 sum_j |c_j| h_j."""

    def arrays(self, program: CompiledProgram, relaxed: bool) -> _mathopt.Arrays:
        """The relaxation (loosened rows, outward domains) or the restriction."""
        continuous = ~program.integer
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


def make_grid(program: CompiledProgram, relative_step: float = GRID_RELATIVE_STEPS[0]) -> Grid:
    """Box every variable and choose each continuous variable's grid step.

    Args:
        program: A program with at least one variable.
        relative_step: h_j as a fraction of x_j's magnitude (before rounding down to a
            power of ten).

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
    lower[program.integer] = np.ceil(lower[program.integer])
    upper[program.integer] = np.floor(upper[program.integer])

    continuous = ~program.integer
    magnitude = np.where(known_magnitude > 0, known_magnitude, scale)
    step = np.where(continuous, 10.0 ** np.floor(np.log10(magnitude * relative_step)), 1.0)
    term_slack = np.where(continuous[program.col_index], np.abs(program.coef), 0.0)
    term_slack *= step[program.col_index]
    row_slack = 0.5 * np.bincount(program.row_of_nonzero(), term_slack, minlength=program.num_rows)
    objective_slack = 0.5 * float(np.sum(np.abs(program.cost[continuous]) * step[continuous]))
    return Grid(lower, upper, artificial_lower, artificial_upper, step, row_slack, objective_slack)


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
    program: CompiledProgram, lower: np.ndarray, upper: np.ndarray, deadline: Deadline
) -> _mathopt.Outcome:
    """The LP over `program`'s rows with other bounds and no integrality, by GLOP."""
    arrays = replace(
        _mathopt.Arrays.of(program),
        lower=lower,
        upper=upper,
        integer=np.zeros_like(program.integer),
    )
    return _mathopt.solve(
        arrays, "GLOP", time_limit_s=deadline.remaining_s(1.0), mip_gap=None, threads=1
    )


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
        lower_bound = -math.inf
        for relative_step in GRID_RELATIVE_STEPS:
            grid = make_grid(program, relative_step)
            relaxed = grid.arrays(program, relaxed=True)
            empty = empty_integer_row(relaxed)
            if empty is not None:  # the relaxation has no integer point: nor the program
                name = program.constraint_names[empty]
                return Answer(
                    Termination.INFEASIBLE, message=f"constraint {name} has no integer point"
                )
            relaxation = self._search(relaxed, grid, options, deadline)
            if relaxation.termination is None or not relaxation.termination.has_solution:
                boxed = grid.artificial_lower.any() or grid.artificial_upper.any()
                if relaxation.termination is Termination.INFEASIBLE and boxed:
                    notes.append("within the finite box CP-SAT needs around unbounded variables")
                return Answer(relaxation.termination, message=relaxation.detail, notes=tuple(notes))
            if relaxation.bound is not None:
                bound = relaxation.bound - grid.objective_slack + program.objective_constant
                lower_bound = max(lower_bound, bound)
            point = relaxation.values * grid.step
            unbounded = self._check_artificial(program, grid, point, deadline, notes)
            if unbounded is not None:
                return unbounded
            if program.integer.all():  # no grid: CP-SAT solved the program itself
                objective = relaxation.objective + program.objective_constant
                gap = relative_gap(objective, lower_bound)
                proven = relaxation.termination is Termination.OPTIMAL
                message = "" if proven else relaxation.detail
                return Answer(
                    relaxation.termination, objective, point, None, gap, message, tuple(notes)
                )
            polished = self._polish(program, point, deadline)
            if polished is not None and polished.termination is Termination.UNBOUNDED:
                return Answer(Termination.UNBOUNDED, message="unbounded with the integers fixed")
            if polished is not None and polished.termination is Termination.OPTIMAL:
                objective = polished.objective + program.objective_constant
                return self._answer(
                    relaxation, objective, polished.values, lower_bound, options, notes
                )
            notes.append(f"grid {relative_step:g}: the relaxation's integers are infeasible")
            if deadline.expired():
                break

        # The loosening still lets the integers squeeze through: the restriction's points
        # are feasible as they stand (the bound stays the relaxation's).
        restriction = self._search(grid.arrays(program, relaxed=False), grid, options, deadline)
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
        objective = polished.objective + program.objective_constant
        return self._answer(relaxation, objective, polished.values, lower_bound, options, notes)

    @staticmethod
    def _search(
        arrays: _mathopt.Arrays, grid: Grid, options: SolveOptions, deadline: Deadline
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
            cp_sat={"mip_max_bound": max(1e7, 2.0 * grid.largest_domain())},
        )

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
        notes.append("a variable sits on its artificial CP-SAT bound; optimal within it")
        return None

    @staticmethod
    def _answer(
        relaxation: _mathopt.Outcome,
        objective: float,
        values: np.ndarray,
        lower_bound: float,
        options: SolveOptions,
        notes: list[str],
    ) -> Answer:
        """OPTIMAL when the relaxation was proved and the gap closes, else FEASIBLE."""
        gap = relative_gap(objective, lower_bound)
        proven = relaxation.termination is Termination.OPTIMAL
        if proven and gap is not None and gap <= max(options.mip_gap, GRID_GAP_TOLERANCE):
            return Answer(Termination.OPTIMAL, objective, values, None, gap, "", tuple(notes))
        message = relaxation.detail
        if proven:
            message = (
                f"CP-SAT proved its grid relaxation optimal; the grid leaves a gap of "
                f"{gap if gap is None else format(gap, '.2g')} > mip_gap {options.mip_gap:g}"
            )
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
