"""What a `cpsat` solve reports (step 6): a status from the best true solution and the
best valid bound, and a message that says what stopped it.

    gap = |upper - lower| / max(|upper|, 1e-9)        (`relative_gap`)

with upper the best polished objective (a true solution) and lower the best valid bound
(the LP relaxation's, the grid relaxations' minus their rounding allowance). OPTIMAL
when gap <= max(mip_gap, GRID_GAP_TOLERANCE); FEASIBLE with that gap when the time limit
or the grid stops the search first; TIME_LIMIT, recommending highs, when the time limit
comes before any true solution; ERROR, never a guess, when the answer would depend on
the artificial box around a variable without bounds.
"""

import math
from dataclasses import dataclass

import numpy as np

from solver.backends import _mathopt
from solver.backends.base import Answer, SolveOptions, relative_gap
from solver.backends.cpsat.grid import Grid
from solver.program.lp import Termination

GRID_GAP_TOLERANCE = 1e-6
"""A relative gap this small from the grid alone still counts as optimal."""

USE_HIGHS = (
    "the highs backend (LP-based branch and cut) is the one for programs with many "
    "continuous variables"
)
"""What a result that ran out of time recommends."""

BEYOND_THE_BOX = (
    "CP-SAT needs a finite domain for every variable and could derive no bound for at "
    "least one; {what} inside the artificial box put around it, which says nothing about "
    "the program beyond the box: give every variable a finite bound, or use the highs "
    "backend"
)
"""Why an answer that would depend on the artificial box is refused."""


@dataclass
class Progress:
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

    def closed(self, options: SolveOptions) -> bool:
        """Whether the gap is within max(mip_gap, GRID_GAP_TOLERANCE)."""
        gap = self.gap()
        return gap is not None and gap <= max(options.mip_gap, GRID_GAP_TOLERANCE)


def answer(
    relaxation: _mathopt.Outcome | None,
    progress: Progress,
    options: SolveOptions,
    notes: list[str],
) -> Answer:
    """OPTIMAL when the gap to the best bound closes, else FEASIBLE."""
    gap = progress.gap()
    values, objective = progress.values, progress.objective
    if progress.closed(options):
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


def stopped(
    relaxation: _mathopt.Outcome,
    grid: Grid,
    progress: Progress,
    options: SolveOptions,
    notes: list[str],
) -> Answer:
    """The relaxation ended without a point: infeasible, or out of time."""
    if relaxation.termination is Termination.INFEASIBLE:
        if grid.has_artificial_bounds:
            message = BEYOND_THE_BOX.format(what="it found no point")
            return Answer(Termination.ERROR, message=message, notes=tuple(notes))
        # The cuts hold for every feasible point: the program is infeasible too.
        return Answer(Termination.INFEASIBLE, message=relaxation.detail, notes=tuple(notes))
    if progress.objective is not None and relaxation.termination is Termination.TIME_LIMIT:
        return answer(relaxation, progress, options, notes)
    message = relaxation.detail
    if relaxation.termination is Termination.TIME_LIMIT:
        message += f"; CP-SAT found no plan within the time limit; {USE_HIGHS}"
    return Answer(relaxation.termination, message=message, notes=tuple(notes))


def out_of_time(notes: list[str]) -> Answer:
    """The time limit came before any true solution."""
    return Answer(
        Termination.TIME_LIMIT,
        message=f"CP-SAT found no plan within the time limit; {USE_HIGHS}",
        notes=tuple(notes),
    )


def level_note(relative_step: float, rounds: int, repaired: bool) -> str:
    """What happened on a grid level whose relaxation's integers were infeasible."""
    note = f"grid {relative_step:g}: the relaxation's integers are infeasible"
    if rounds:
        plural = "s" if rounds > 1 else ""
        outcome = "repaired" if repaired else "not repaired"
        note += f"; {rounds} round{plural} of feasibility cuts from the exact LP, {outcome}"
    return note
