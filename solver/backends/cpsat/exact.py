"""The exact linear programs of the `cpsat` backend, solved by GLOP (OR-Tools' simplex).

CP-SAT has no continuous variables; these LPs give it exact ones back:

- the LP relaxation (integrality dropped): a lower bound, its row duals for the
  surrogate cuts, and the unboundedness test (a feasible MIP with rational data is
  unbounded exactly when its LP relaxation is);
- the polish (step 5): the declared integers fixed at a grid point x^ and the LP
  solved in the continuous variables, exactly: its optimum is a true solution and an
  upper bound, whatever grid found x^;
- a program without integer variables, which leaves CP-SAT nothing to decide.
"""

from dataclasses import replace

import numpy as np

from solver.backends import _mathopt
from solver.backends.base import Answer, CompiledProgram, Deadline

LP_TIME_FLOOR_S = 1.0
"""An LP gets at least this long, even when the search has spent the budget."""


def glop(arrays: _mathopt.Arrays, deadline: Deadline, want_duals: bool = False) -> _mathopt.Outcome:
    """GLOP on an LP (integrality in `arrays` is ignored by the simplex).

    Args:
        arrays: The LP.
        deadline: The solve's budget; the LP gets at least LP_TIME_FLOOR_S.
        want_duals: Return the row duals of an optimal LP.

    Returns:
        GLOP's outcome.
    """
    return _mathopt.solve(
        arrays,
        "GLOP",
        time_limit_s=deadline.remaining_s(LP_TIME_FLOOR_S),
        mip_gap=None,
        threads=1,
        want_duals=want_duals,
    )


def linear_relaxation(
    program: CompiledProgram,
    deadline: Deadline,
    lower: np.ndarray | None = None,
    upper: np.ndarray | None = None,
    want_duals: bool = False,
) -> _mathopt.Outcome:
    """The LP over `program`'s rows, without integrality, within other bounds if given.

    Args:
        program: The program.
        deadline: The solve's budget.
        lower: Variable lower bounds; the program's when None.
        upper: Variable upper bounds; the program's when None.
        want_duals: Return the row duals of an optimal LP.

    Returns:
        GLOP's outcome; its objective excludes the program's constant.
    """
    arrays = replace(
        _mathopt.Arrays.of(program),
        lower=program.lower if lower is None else lower,
        upper=program.upper if upper is None else upper,
        integer=np.zeros_like(program.integer),
    )
    return glop(arrays, deadline, want_duals)


def polish(
    program: CompiledProgram, point: np.ndarray, deadline: Deadline
) -> _mathopt.Outcome | None:
    """The exact LP in the continuous variables with the integers fixed at `point`.

    Args:
        program: The program.
        point: A grid point; its declared integer entries are rounded and fixed.
        deadline: The solve's budget.

    Returns:
        GLOP's outcome, or None when the fixed values break a variable's bounds.
    """
    fixed = np.round(point)
    lower = np.where(program.integer, fixed, program.lower)
    upper = np.where(program.integer, fixed, program.upper)
    if np.any(lower > upper):
        return None
    return linear_relaxation(program, deadline, lower, upper)


def solve_without_integers(program: CompiledProgram, deadline: Deadline) -> Answer:
    """No integer variables: nothing for CP-SAT to decide, GLOP solves the LP."""
    outcome = linear_relaxation(program, deadline)
    note = "no integer variables: solved by GLOP (CP-SAT has no LP algorithm)"
    if outcome.termination is None or not outcome.termination.has_solution:
        return Answer(outcome.termination, message=outcome.detail, notes=(note,))
    objective = outcome.objective + program.objective_constant
    return Answer(outcome.termination, objective, outcome.values, None, None, "", (note,))
