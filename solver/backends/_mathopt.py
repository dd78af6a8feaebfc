"""OR-Tools MathOpt plumbing shared by the `scip` and `cpsat` backends.

The program goes to MathOpt as a `ModelProto` filled in bulk (ids 0..n-1 for
variables, 0..m-1 for rows, no names), which is several times faster to build than
MathOpt's Python modelling layer. Only GSCIP, CP_SAT and GLOP are ever asked for:
never MathOpt's HIGHS, whose bundled HiGHS crashes a process that imported highspy.

MathOpt's termination reasons map onto fleetplan's:
OPTIMAL -> OPTIMAL; FEASIBLE (a limit, with a solution) -> FEASIBLE;
NO_SOLUTION_FOUND on the time limit -> TIME_LIMIT; INFEASIBLE; UNBOUNDED;
INFEASIBLE_OR_UNBOUNDED -> undecided (settled by `Backend.solve`);
IMPRECISE, NUMERICAL_ERROR, OTHER_ERROR and other limits -> ERROR.

Row duals (LPs only: GLOP) follow fleetplan's sign: d(objective)/d(row bound), so a
binding `>=` row of a minimisation has a dual >= 0 and a binding `<=` row one <= 0.
A solution hint (CP-SAT) is a full vector of values in the program's index space.
"""

import math
from dataclasses import dataclass
from datetime import timedelta
from functools import cache

import numpy as np

from solver.program.lp import Termination

SOLVER_TYPES = ("GSCIP", "CP_SAT", "GLOP")
"""The only MathOpt solvers fleetplan touches (never HIGHS)."""


@dataclass(frozen=True)
class Arrays:
    """A minimisation in MathOpt's terms: bounds, integrality, costs, CSR rows."""

    lower: np.ndarray
    upper: np.ndarray
    integer: np.ndarray
    cost: np.ndarray
    row_start: np.ndarray
    col_index: np.ndarray
    coef: np.ndarray
    row_lower: np.ndarray
    row_upper: np.ndarray

    @classmethod
    def of(cls, program) -> "Arrays":
        """The arrays of a `CompiledProgram`, as numpy arrays."""
        program = program.numpy()
        return cls(
            program.lower,
            program.upper,
            program.integer,
            program.cost,
            program.row_start,
            program.col_index,
            program.coef,
            program.row_lower,
            program.row_upper,
        )


@dataclass(frozen=True)
class Outcome:
    """A MathOpt solve in index space; objective and bound exclude any constant."""

    termination: Termination | None
    objective: float | None
    bound: float | None
    values: np.ndarray | None
    detail: str
    duals: np.ndarray | None = None
    """Row duals when asked for and the solver gave them (an LP solved to optimality)."""


def unavailable_reason() -> str:
    """Empty when OR-Tools' MathOpt imports."""
    try:
        from ortools.math_opt.python import mathopt  # noqa: F401
    except ImportError as exc:
        return f"OR-Tools is not installed ({exc}): pip install 'ortools>=9.10'"
    return ""


@cache
def ortools_version() -> str:
    """OR-Tools' version, e.g. "9.15.6755"."""
    import ortools

    return str(ortools.__version__)


def _model(arrays: Arrays):
    from ortools.math_opt import model_pb2
    from ortools.math_opt.python import mathopt

    n, m = arrays.lower.size, arrays.row_lower.size
    proto = model_pb2.ModelProto(name="fleetplan")
    proto.variables.ids.extend(range(n))
    proto.variables.lower_bounds.extend(arrays.lower.tolist())
    proto.variables.upper_bounds.extend(arrays.upper.tolist())
    proto.variables.integers.extend(arrays.integer.tolist())
    nonzero = np.flatnonzero(arrays.cost)
    proto.objective.maximize = False
    proto.objective.linear_coefficients.ids.extend(nonzero.tolist())
    proto.objective.linear_coefficients.values.extend(arrays.cost[nonzero].tolist())
    proto.linear_constraints.ids.extend(range(m))
    proto.linear_constraints.lower_bounds.extend(arrays.row_lower.tolist())
    proto.linear_constraints.upper_bounds.extend(arrays.row_upper.tolist())
    rows = np.repeat(np.arange(m), np.diff(arrays.row_start))
    matrix = proto.linear_constraint_matrix
    matrix.row_ids.extend(rows.tolist())
    matrix.column_ids.extend(arrays.col_index.tolist())
    matrix.coefficients.extend(arrays.coef.tolist())
    return mathopt.Model.from_model_proto(proto)


def solve(
    arrays: Arrays,
    solver: str,
    *,
    time_limit_s: float | None,
    mip_gap: float | None,
    threads: int | None,
    cp_sat: dict | None = None,
    hint: np.ndarray | None = None,
    want_duals: bool = False,
) -> Outcome:
    """Solve with one of `SOLVER_TYPES` and map the termination.

    Args:
        arrays: The program.
        solver: "GSCIP", "CP_SAT" or "GLOP".
        time_limit_s: Wall-clock limit, None for none.
        mip_gap: Relative gap tolerance (MIP solvers), None for the solver's default.
        threads: Thread count, None to leave the solver's default.
        cp_sat: Extra CP-SAT parameters (SatParameters fields).
        hint: A value per variable to start the search from (a MIP solver may ignore it).
        want_duals: Return the row duals of an optimal LP.

    Returns:
        The outcome; values are indexed like `arrays`.
    """
    if solver not in SOLVER_TYPES:
        raise ValueError(f"MathOpt solver {solver} is not one fleetplan uses")
    from ortools.math_opt.python import mathopt

    params = mathopt.SolveParameters(enable_output=False)
    if time_limit_s is not None:
        params.time_limit = timedelta(seconds=time_limit_s)
    if mip_gap is not None:
        params.relative_gap_tolerance = mip_gap
    if threads is not None:
        params.threads = threads
    for key, value in (cp_sat or {}).items():
        setattr(params.cp_sat, key, value)

    reasons = mathopt.TerminationReason
    model = _model(arrays)
    model_params = None
    if hint is not None:
        variables = [model.get_variable(j) for j in range(arrays.lower.size)]
        hinted = dict(zip(variables, np.asarray(hint, dtype=float).tolist(), strict=True))
        model_params = mathopt.ModelSolveParameters(
            solution_hints=[mathopt.SolutionHint(variable_values=hinted)]
        )
    try:
        result = mathopt.solve(
            model, getattr(mathopt.SolverType, solver), params=params, model_params=model_params
        )
    except AttributeError as exc:  # pragma: no cover - depends on OR-Tools' version
        # OR-Tools 9.15 loses its own error while converting it ("'StatusNotOk' object
        # has no attribute 'canonical_code'"); the original is the context.
        if exc.__context__ is None:
            raise
        raise RuntimeError(f"MathOpt {solver}: {exc.__context__}") from exc.__context__
    termination = result.termination
    detail = f"{solver}: {termination.reason.name.lower()}"
    limited = termination.reason in (reasons.FEASIBLE, reasons.NO_SOLUTION_FOUND)
    timed_out = False
    if limited:  # CP-SAT reports its time limit as UNDETERMINED
        timed_out = termination.limit == mathopt.Limit.TIME or (
            termination.limit == mathopt.Limit.UNDETERMINED and time_limit_s is not None
        )
        detail += " on the time limit" if timed_out else f", {termination.limit.name.lower()}"
    if termination.detail:
        detail += f" ({termination.detail})"

    values = objective = duals = None
    if result.has_primal_feasible_solution():
        solution = result.to_proto().solutions[0]
        sparse = solution.primal_solution.variable_values
        values = np.zeros(arrays.lower.size)
        values[np.asarray(sparse.ids, dtype=np.int64)] = np.asarray(sparse.values, dtype=float)
        objective = float(result.objective_value())
        if want_duals and solution.HasField("dual_solution"):
            sparse = solution.dual_solution.dual_values
            duals = np.zeros(arrays.row_lower.size)
            duals[np.asarray(sparse.ids, dtype=np.int64)] = np.asarray(sparse.values, dtype=float)
    bound = termination.objective_bounds.dual_bound
    bound = float(bound) if bound is not None and math.isfinite(bound) else None

    reason = termination.reason
    if reason == reasons.OPTIMAL:
        mapped = Termination.OPTIMAL
    elif reason == reasons.FEASIBLE and values is not None:
        mapped = Termination.FEASIBLE
    elif limited and timed_out:
        mapped = Termination.TIME_LIMIT
    elif reason == reasons.INFEASIBLE:
        mapped = Termination.INFEASIBLE
    elif reason == reasons.UNBOUNDED:
        mapped = Termination.UNBOUNDED
    elif reason == reasons.INFEASIBLE_OR_UNBOUNDED:
        mapped = None
    else:
        mapped = Termination.ERROR
    if mapped is not None and not mapped.has_solution:
        values = objective = None
    if mapped is not Termination.OPTIMAL:
        duals = None
    return Outcome(mapped, objective, bound, values, detail, duals)
