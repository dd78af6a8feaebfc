"""The `cpsat` search loop: CP-SAT on the grid relaxation, GLOP's polish, cuts until
the integers hold, then a finer grid (steps 4 to 6 of the backend).

    lower <- LP relaxation's optimum;  cuts <- surrogate cuts (LP duals)
    for each grid level r in (1e-6, 1e-8):
        repeat:
            x^ <- CP-SAT on the relaxation at level r, plus cuts (hinted with the last x^)
            lower <- max(lower, CP-SAT's bound - 1/2 sum_j |c_j| h_j)
            polish x^: the exact LP with the declared integers fixed at x^
            if it is feasible: keep the true solution; stop if the gap closed or the
                search was cut short, else refine the level
            else: add the feasibility cuts x^ violates; refine the level when none
                cut, x^ repeats or MAX_CUT_ROUNDS pass
    no true solution yet: CP-SAT on the restriction (exact rows, inward domains)
    at the last level, polished the same way

A program whose variables are all integer skips the grid: CP-SAT solves it as it
stands, once. Solver parameters: CP-SAT's `num_workers` is the thread count (1 by
default: one worker, no portfolio); `mip_max_bound` is the grid's widest domain.
"""

import numpy as np

from solver.backends import _mathopt
from solver.backends.base import Answer, CompiledProgram, Deadline, SolveOptions, relative_gap
from solver.backends.cpsat.cuts import (
    Cut,
    blocks,
    feasibility_cuts,
    lagrangian_cuts,
    with_cuts,
)
from solver.backends.cpsat.exact import linear_relaxation, polish, solve_without_integers
from solver.backends.cpsat.grid import GRID_RELATIVE_STEPS, Grid, empty_integer_row, make_grid
from solver.backends.cpsat.status import (
    BEYOND_THE_BOX,
    Progress,
    answer,
    level_note,
    out_of_time,
    stopped,
)
from solver.program.lp import Termination

MAX_CUT_ROUNDS = 200
"""Rounds of feasibility cuts on one grid level before it is refined."""

SURROGATE_CUTS = True
"""Start from the LP relaxation's block cuts (`_surrogates`)."""


def solve(program: CompiledProgram, options: SolveOptions, deadline: Deadline) -> Answer:
    """Minimise `program` with CP-SAT (see the module comment).

    Args:
        program: The program, already past `Backend.solve`'s trivial checks.
        options: Gap and threads.
        deadline: The budget shared by every search and LP.

    Returns:
        The answer in index space; ERROR with the reason where CP-SAT cannot answer.
    """
    program = program.numpy()
    if not program.is_mip:
        return solve_without_integers(program, deadline)
    grid = make_grid(program, GRID_RELATIVE_STEPS[0])
    refusal = grid.too_wide(program)
    if refusal:
        return Answer(Termination.ERROR, message=refusal)
    parameters = _parameters(program, grid, options)
    if program.integer.all():
        return _solve_integers(program, grid, options, deadline, parameters)
    return _solve_mixed(program, grid, options, deadline, parameters)


def _solve_integers(
    program: CompiledProgram,
    grid: Grid,
    options: SolveOptions,
    deadline: Deadline,
    parameters: dict,
) -> Answer:
    """No continuous variable: no grid, CP-SAT solves the program as it stands."""
    arrays = grid.arrays(program, relaxed=True)
    empty = _no_integer_point(program, arrays)
    if empty is not None:
        return empty
    outcome = _search(arrays, grid, options, deadline, parameters=parameters)
    if outcome.termination is None or not outcome.termination.has_solution:
        return stopped(outcome, grid, Progress(), options, [])
    point = outcome.values * grid.step
    refused = _check_artificial(program, grid, point, deadline)
    if refused is not None:
        return refused
    objective = outcome.objective + program.objective_constant
    bound = None if outcome.bound is None else outcome.bound + program.objective_constant
    message = "" if outcome.termination is Termination.OPTIMAL else outcome.detail
    gap = relative_gap(objective, bound)
    return Answer(outcome.termination, objective, point, None, gap, message)


def _solve_mixed(
    program: CompiledProgram,
    first: Grid,
    options: SolveOptions,
    deadline: Deadline,
    parameters: dict,
) -> Answer:
    """Integer and continuous variables: the grid levels, then the restriction."""
    notes: list[str] = []
    progress = Progress()
    cuts = _surrogates(program, first, progress, deadline)
    grid, relaxation = first, None
    for relative_step in GRID_RELATIVE_STEPS:
        level = (
            first if relative_step == GRID_RELATIVE_STEPS[0] else make_grid(program, relative_step)
        )
        if level.too_wide(program):
            notes.append(f"grid {relative_step:g}: beyond CP-SAT's integers, not tried")
            break
        grid = level
        final, relaxation = _run_level(
            program, grid, relative_step, cuts, progress, options, deadline, parameters, notes
        )
        if final is not None:
            return final
        if deadline.expired():
            break

    if progress.objective is not None:
        return answer(relaxation, progress, options, notes)
    if deadline.expired():
        return out_of_time(notes)
    # The loosening still lets the integers squeeze through: the restriction's points
    # are feasible as they stand (the bound stays the relaxation's).
    restriction = with_cuts(grid.arrays(program, relaxed=False), cuts)
    polished = None
    if empty_integer_row(restriction) is None:
        found = _search(restriction, grid, options, deadline, parameters=parameters)
        if found.termination is not None and found.termination.has_solution:
            polished = polish(program, found.values * grid.step, deadline)
    if polished is None or polished.termination is not Termination.OPTIMAL:
        return Answer(
            Termination.TIME_LIMIT if deadline.expired() else Termination.ERROR,
            message="CP-SAT found no point of its grid feasible for the program; "
            "use the highs or scip backend",
            notes=tuple(notes),
        )
    progress.offer(polished.objective + program.objective_constant, polished.values)
    return answer(relaxation, progress, options, notes)


def _run_level(
    program: CompiledProgram,
    grid: Grid,
    relative_step: float,
    cuts: list[Cut],
    progress: Progress,
    options: SolveOptions,
    deadline: Deadline,
    parameters: dict,
    notes: list[str],
) -> tuple[Answer | None, _mathopt.Outcome | None]:
    """Search, polish and cut on one grid level; `cuts` and `progress` grow in place.

    Returns:
        (the final answer, or None to go on to a finer level; the last relaxation).
    """
    base = grid.arrays(program, relaxed=True)
    empty = _no_integer_point(program, base)
    if empty is not None:  # the relaxation has no integer point: nor the program
        return empty, None
    seen: set[bytes] = set()
    hint = None
    rounds = 0
    squeezed = False
    while True:
        relaxation = _search(with_cuts(base, cuts), grid, options, deadline, hint, parameters)
        if relaxation.termination is None or not relaxation.termination.has_solution:
            if squeezed:
                notes.append(level_note(relative_step, rounds, repaired=False))
            return stopped(relaxation, grid, progress, options, notes), relaxation
        if relaxation.bound is not None:
            bound = relaxation.bound - grid.objective_slack + program.objective_constant
            progress.lower_bound = max(progress.lower_bound, bound)
        point = relaxation.values * grid.step
        refused = _check_artificial(program, grid, point, deadline)
        if refused is not None:
            return refused, relaxation
        polished = polish(program, point, deadline)
        if polished is not None and polished.termination is Termination.UNBOUNDED:
            return Answer(
                Termination.UNBOUNDED, message="unbounded with the integers fixed"
            ), relaxation
        if polished is not None and polished.termination is Termination.OPTIMAL:
            progress.offer(polished.objective + program.objective_constant, polished.values)
            if squeezed:
                notes.append(level_note(relative_step, rounds, repaired=True))
            if progress.closed(options) or relaxation.termination is not Termination.OPTIMAL:
                return answer(relaxation, progress, options, notes), relaxation
            return None, relaxation  # the grid's allowance leaves a gap: a finer level
        squeezed = True
        key = np.round(point[grid.integral]).tobytes()
        if deadline.expired() or key in seen or rounds >= MAX_CUT_ROUNDS:
            notes.append(level_note(relative_step, rounds, repaired=False))
            return None, relaxation
        seen.add(key)
        found = feasibility_cuts(program, grid.integral, point, grid.valid_box(), deadline)
        if not found:
            notes.append(level_note(relative_step, rounds, repaired=False))
            return None, relaxation
        cuts.extend(found)
        rounds += 1
        hint = relaxation.values


def _no_integer_point(program: CompiledProgram, arrays: _mathopt.Arrays) -> Answer | None:
    """INFEASIBLE, naming the row, when a row of `arrays` holds no integer point."""
    empty = empty_integer_row(arrays)
    if empty is None:
        return None
    name = program.constraint_names[empty]
    return Answer(Termination.INFEASIBLE, message=f"constraint {name} has no integer point")


def _surrogates(
    program: CompiledProgram, grid: Grid, progress: Progress, deadline: Deadline
) -> list[Cut]:
    """Cuts from the LP relaxation's duals, one per block of rows, before any search.

    At the LP optimum they are the blocks' binding aggregates (in a fleet program,
    the capacity a scenario's routing needs), which the grid's loosening would
    otherwise let the integers undercut; the LP's value is a lower bound too.
    """
    if not SURROGATE_CUTS:
        return []
    relaxed = linear_relaxation(program, deadline, want_duals=True)
    if relaxed.termination is not Termination.OPTIMAL or relaxed.duals is None:
        return []
    progress.lower_bound = max(progress.lower_bound, relaxed.objective + program.objective_constant)
    return lagrangian_cuts(program, grid.integral, relaxed.duals, grid.valid_box())


def _parameters(program: CompiledProgram, grid: Grid, options: SolveOptions) -> dict:
    """CP-SAT parameters for this program's searches.

    One worker on a program whose continuous variables leave no routing choice (no
    block of rows shares two of them: a fleet without failover, or all integers) gets
    CP-SAT's full linearization (level 2, with its cut families): the program is then
    integer covering at heart, and level 2 solves such programs several times faster,
    none slower. With routing choices the default level (1) is the faster (the README's
    speed notes). More workers run CP-SAT's own portfolio, which mixes the levels.
    """
    if options.threads == 1:
        free = ~grid.integral
        labels = blocks(program, free)[free]
        if labels.size == 0 or np.bincount(labels).max() <= 1:
            return {"linearization_level": 2}
    return {}


def _search(
    arrays: _mathopt.Arrays,
    grid: Grid,
    options: SolveOptions,
    deadline: Deadline,
    hint: np.ndarray | None = None,
    parameters: dict | None = None,
) -> _mathopt.Outcome:
    """CP-SAT on one all-integer program of the grid (no row without an integer point)."""
    return _mathopt.solve(
        arrays,
        "CP_SAT",
        time_limit_s=deadline.remaining_s(),
        mip_gap=options.mip_gap,
        threads=options.threads,
        cp_sat={"mip_max_bound": grid.mip_max_bound(), **(parameters or {})},
        hint=hint,
    )


def _check_artificial(
    program: CompiledProgram, grid: Grid, point: np.ndarray, deadline: Deadline
) -> Answer | None:
    """A point on an artificial bound: UNBOUNDED if the LP relaxation is, else refused.

    A feasible MIP with rational data is unbounded exactly when its LP relaxation is.
    Otherwise the optimum may lie beyond the box, and only a program without costs
    (every feasible point optimal) can still be answered.
    """
    on_artificial = (grid.artificial_upper & (point >= grid.upper - grid.step)) | (
        grid.artificial_lower & (point <= grid.lower + grid.step)
    )
    if not on_artificial.any():
        return None
    relaxed_lp = linear_relaxation(program, deadline)
    if relaxed_lp.termination in (Termination.UNBOUNDED, None):
        return Answer(relaxed_lp.termination, message=relaxed_lp.detail)
    if not program.cost.any():
        return None
    return Answer(
        Termination.ERROR, message=BEYOND_THE_BOX.format(what="its best point lies on the edge")
    )
