"""The `scip` backend: SCIP through OR-Tools MathOpt (GSCIP), in process.

- Duals: none. MathOpt's SCIP interface returns no dual solution even for an LP, so
  `capabilities.duals` is False and callers take shadow prices from `highs`.
- Time limit and relative gap are MathOpt parameters; the gap reported is recomputed
  from SCIP's primal and dual bounds (fleetplan's definition, not SCIP's).
- Threads: SCIP solves on one thread whatever is asked (`capabilities.threads` False).
- "Infeasible or unbounded" is settled by `Backend.solve`.
"""

from functools import cache

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
from solver.program.lp import Termination


@cache
def _scip_version() -> str:
    """ "SCIP 10.0.0 [LP solver: SoPlex 8.0.0] (ortools 9.15.6755)"."""
    from ortools.linear_solver import pywraplp

    solver = pywraplp.Solver.CreateSolver("SCIP")
    scip = solver.SolverVersion() if solver is not None else "SCIP"
    return f"{scip} (ortools {_mathopt.ortools_version()})"


class ScipBackend(Backend):
    """SCIP (LP-based branch and cut, SoPlex for the LPs) via OR-Tools MathOpt."""

    name = "scip"
    capabilities = Capabilities(
        integer=True, duals=False, time_limit=True, mip_gap=True, threads=False
    )

    def unavailable_reason(self) -> str:
        """Empty when OR-Tools imports."""
        return _mathopt.unavailable_reason()

    def version(self) -> str:
        """SCIP's and OR-Tools' versions."""
        return _scip_version()

    def _solve(self, program: CompiledProgram, options: SolveOptions, deadline: Deadline) -> Answer:
        outcome = _mathopt.solve(
            _mathopt.Arrays.of(program),
            "GSCIP",
            time_limit_s=deadline.remaining_s(),
            mip_gap=options.mip_gap,
            threads=None,
        )
        if outcome.termination is None or not outcome.termination.has_solution:
            return Answer(outcome.termination, message=outcome.detail)
        objective = outcome.objective + program.objective_constant
        gap = None
        if program.is_mip and outcome.bound is not None:
            gap = relative_gap(objective, outcome.bound + program.objective_constant)
        message = "" if outcome.termination is Termination.OPTIMAL else outcome.detail
        return Answer(outcome.termination, objective, outcome.values, None, gap, message)
