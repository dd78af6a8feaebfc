"""The backend interface: one solve signature, one status vocabulary, index space inside.

A backend never sees a fleetplan name. `compile_program` turns a `LinearProgram` into
arrays over variables 0..n-1 and rows 0..m-1:

    minimise    cost . x + objective_constant
    subject to  row_lower[i] <= sum_j A[i, j] x_j <= row_upper[i]      (i = 0..m-1)
                lower[j] <= x_j <= upper[j],  x_j integer where integer[j]

with a row's bounds from its sense: `>= b` -> [b, +inf], `<= b` -> [-inf, b],
`== b` -> [b, b]. The backend hands those arrays to its library and returns an
`Answer` in index space; `Backend.solve` maps it back onto names. So names with `[`,
`]`, `=`, `,`, `-`, `.` or spaces never reach a solver, and no library object leaves
a backend module.

Shared rules, applied here once for every backend:
- Gap: |objective - bound| / max(|objective|, 1e-9), HiGHS's definition, whatever the
  library reports natively.
- Duals: d(objective)/d(rhs) per row, only for a program without integer variables.
  A MIP gets none (fix its integers with `LinearProgram.with_integers_fixed` and
  re-solve the LP for shadow prices).
- Unbounded claims are checked: a backend's "unbounded" or "infeasible or unbounded"
  is settled by re-solving with a zero objective (feasible -> UNBOUNDED, infeasible
  -> INFEASIBLE), because an LP-based MIP solver that sees an unbounded relaxation
  has not shown that an integer point exists.
- A library exception during a solve becomes `Termination.ERROR` with a message;
  only invalid arguments (a negative time limit, say) raise.

The arrays are the standard library's `array.array`, not numpy's: a one-model solve
never needs numpy (importing it is a fifth of that command's time, issue 19). A backend
that computes with numpy (cbc, scip, cpsat) takes `program.numpy()`, the same program with
numpy arrays.
"""

import math
from abc import ABC, abstractmethod
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from solver.backends.row_arrays import rows_by_arrays, rows_by_loop, worth_arrays, zeros
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.settings import MIN_CALL_S, Deadline, SolveSettings, machine_threads

DEFAULT_MIP_GAP = 1e-4
"""Relative MIP gap every backend stops at unless told otherwise (HiGHS's default)."""

GAP_DENOMINATOR_FLOOR = 1e-9
"""Smallest |objective| the relative gap divides by."""

_LIBRARY_CALLED: list[bool] = []
"""Holds True once a solver library has been handed a program in this process."""


def library_called() -> bool:
    """Whether any backend has handed a program to its solver library in this process:
    HiGHS and OR-Tools then hold thread pools and global state that a forked child
    inherits half-alive (solver.decompose.parallel starts workers by `fork` only before that)."""
    return bool(_LIBRARY_CALLED)


def relative_gap(objective: float, bound: float | None) -> float | None:
    """|objective - bound| / max(|objective|, 1e-9); None without a finite bound.

    Args:
        objective: The incumbent's objective value.
        bound: The best proven bound on the optimum (a lower bound: we minimise).

    Returns:
        The relative gap, or None when there is no finite bound to measure against.
    """
    if bound is None or not math.isfinite(bound) or not math.isfinite(objective):
        return None
    return abs(objective - bound) / max(abs(objective), GAP_DENOMINATOR_FLOOR)


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do; callers route around what it cannot."""

    integer: bool
    """Solves programs with integer variables."""
    duals: bool
    """Returns row duals for programs without integer variables."""
    time_limit: bool
    """Honours `time_limit_s`."""
    mip_gap: bool
    """Honours `mip_gap` and reports the gap it reached."""
    threads: bool
    """Honours `threads` (a backend that is single-threaded anyway says False)."""
    exact_continuous: bool = True
    """Continuous variables are solved as such, not on a grid (False for CP-SAT)."""
    warm_start: bool = False
    """Starts a MIP from a given feasible solution (`start`); others ignore one."""
    node_limit: bool = False
    """Honours `node_limit` (branch-and-bound nodes, a deterministic work limit)."""


SolveOptions = SolveSettings
"""The arguments of one backend call: the pipeline's one settings object
(solver.settings); the name stays for the backends that read it."""


Vector = Any
"""A one-dimensional array of numbers: `array.array` as `compile_program` makes it, a
numpy array after `CompiledProgram.numpy()`. Both index, slice, `len` and `tolist()`."""


@dataclass(frozen=True, eq=False)
class CompiledProgram:
    """A `LinearProgram` as arrays; rows in CSR form with column indices sorted per row.

    Float arrays are `array("d")`, `row_start` and `col_index` `array("q")`, `integer`
    `array("b")` (0 or 1); `numpy()` gives the numpy version for backends that compute
    on whole arrays."""

    variable_names: tuple[str, ...]
    constraint_names: tuple[str, ...]
    lower: Vector
    upper: Vector
    integer: Vector
    cost: Vector
    objective_constant: float
    row_start: Vector
    col_index: Vector
    coef: Vector
    row_lower: Vector
    row_upper: Vector
    start: Vector | None = None
    """A feasible solution to start a MIP from (a backend with `warm_start` uses it)."""

    @property
    def num_variables(self) -> int:
        """n."""
        return len(self.variable_names)

    @property
    def num_rows(self) -> int:
        """m."""
        return len(self.constraint_names)

    @property
    def num_nonzeros(self) -> int:
        """Stored coefficients of the rows."""
        return len(self.coef)

    @property
    def is_mip(self) -> bool:
        """Whether any variable is integer."""
        return bool(1 in self.integer)

    def numpy(self) -> "CompiledProgram":
        """The same program with numpy arrays (float64, int64 indices, a bool `integer`),
        for the backends that compute on whole arrays. The arrays may share memory with
        this program's: treat them as read-only, as every backend does."""
        import numpy as np

        return replace(
            self,
            lower=np.asarray(self.lower, dtype=float),
            upper=np.asarray(self.upper, dtype=float),
            integer=np.asarray(self.integer, dtype=bool),
            cost=np.asarray(self.cost, dtype=float),
            row_start=np.asarray(self.row_start, dtype=np.int64),
            col_index=np.asarray(self.col_index, dtype=np.int64),
            coef=np.asarray(self.coef, dtype=float),
            row_lower=np.asarray(self.row_lower, dtype=float),
            row_upper=np.asarray(self.row_upper, dtype=float),
            start=None if self.start is None else np.asarray(self.start, dtype=float),
        )

    def row_of_nonzero(self) -> Vector:
        """The row index of every stored coefficient (a numpy array)."""
        import numpy as np

        return np.repeat(np.arange(self.num_rows), np.diff(self.row_start))

    def row(self, i: int) -> tuple[Vector, Vector]:
        """Column indices and coefficients of row i."""
        lo, hi = self.row_start[i], self.row_start[i + 1]
        return self.col_index[lo:hi], self.coef[lo:hi]

    def with_cost(self, cost: Vector, objective_constant: float = 0.0) -> "CompiledProgram":
        """The same rows and variables under another objective."""
        return replace(self, cost=cost, objective_constant=objective_constant)

    def with_bounds(self, lower: Vector, upper: Vector) -> "CompiledProgram":
        """The same program with other variable bounds."""
        return replace(self, lower=lower, upper=upper)


def compile_program(lp: LinearProgram) -> CompiledProgram:
    """Turn a named program into index arrays (through its `rows_memo` where it has one:
    solver.backends.compile_memo, the same arrays with rows compiled once).

    Args:
        lp: The program; every name in its objective and rows must be declared.

    Returns:
        The arrays, variables and rows in the program's insertion order.

    Raises:
        ValueError: A coefficient, bound or right-hand side is not a number, a bound is
            infinite on the wrong side, or a name is undeclared.
    """
    if lp.rows_memo is not None:
        return lp.rows_memo.compile(lp)
    return compile_with_rows(lp, None)


def compile_with_rows(lp: LinearProgram, rows: tuple | None) -> CompiledProgram:
    """`compile_program` with `lp`'s rows' arrays (row_start, col_index, coef, row_lower,
    row_upper) given where compiled already, from a program of the same columns in the
    same order and the same rows (solver.backends.compile_memo); None: compiled here.
    Raises `compile_program`'s ValueError."""
    names = tuple(lp.variables)
    index = {name: j for j, name in enumerate(names)}
    variables = [lp.variables[name] for name in names]
    lower = array("d", [v.lower for v in variables])
    upper = array("d", [math.inf if v.upper is None else v.upper for v in variables])
    integer = array("b", [bool(v.integer) for v in variables])
    for name, lo, up in zip(names, lower, upper, strict=True):
        if math.isnan(lo) or math.isnan(up) or lo == math.inf or up == -math.inf:
            raise ValueError(f"variable {name} has bounds [{lo}, {up}]")

    cost = zeros("d", len(names))
    for name, value in lp.objective.items():
        if name not in index:
            raise ValueError(f"objective uses undeclared variable {name}")
        cost[index[name]] += value
    if not all(map(math.isfinite, cost)) or not math.isfinite(lp.objective_constant):
        raise ValueError("objective has a coefficient that is not a finite number")

    row_names = tuple(lp.constraints)
    if rows is None:
        rows = compile_rows(lp, index, row_names)
    row_start, col_index, coef, row_lower, row_upper = rows

    return CompiledProgram(
        variable_names=names,
        constraint_names=row_names,
        lower=lower,
        upper=upper,
        integer=integer,
        cost=cost,
        objective_constant=float(lp.objective_constant),
        row_start=row_start,
        col_index=col_index,
        coef=coef,
        row_lower=row_lower,
        row_upper=row_upper,
    )


def compile_rows(lp: LinearProgram, index: dict[str, int], row_names: tuple[str, ...]) -> tuple:
    """`lp`'s rows as arrays (row_start, col_index, coef, row_lower, row_upper) over the
    column `index`: by numpy where the program is large (solver.backends.row_arrays),
    else row by row; raises the ValueError `compile_program` names."""
    rows = rows_by_arrays(lp, index, row_names) if worth_arrays(lp, row_names) else None
    return rows_by_loop(lp, index, row_names) if rows is None else rows


@dataclass(frozen=True)
class Answer:
    """What a backend's `_solve` returns, in index space.

    `termination=None` means "infeasible or unbounded, cannot tell": `Backend.solve`
    settles it with a zero-objective re-solve.
    """

    termination: Termination | None
    objective: float | None = None
    """Including the program's objective constant."""
    values: Sequence[float] | None = None
    """One per variable (a list, an `array.array` or a numpy array)."""
    duals: Sequence[float] | None = None
    mip_gap: float | None = None
    message: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)


def _trivial_answer(program: CompiledProgram) -> Answer | None:
    """Settle what needs no solver: inconsistent bounds, violated empty rows, no variables."""
    bad = [
        j for j, (lo, up) in enumerate(zip(program.lower, program.upper, strict=True)) if lo > up
    ]
    if bad:
        j = bad[0]
        return Answer(
            Termination.INFEASIBLE,
            message=f"variable {program.variable_names[j]} has lower bound "
            f"{program.lower[j]:g} above its upper bound {program.upper[j]:g}",
        )
    starts = program.row_start
    empty = (i for i in range(program.num_rows) if starts[i] == starts[i + 1])
    for i in empty:
        if program.row_lower[i] > 0.0 or program.row_upper[i] < 0.0:
            return Answer(
                Termination.INFEASIBLE,
                message=f"constraint {program.constraint_names[i]} has no terms, so its "
                f"activity is 0, outside [{program.row_lower[i]:g}, {program.row_upper[i]:g}]",
            )
    if program.num_variables == 0:
        return Answer(
            Termination.OPTIMAL,
            objective=program.objective_constant,
            values=[],
            duals=[0.0] * program.num_rows,
            mip_gap=0.0,
        )
    return None


class Backend(ABC):
    """A solver library behind the one interface.

    Subclasses set `name` and `capabilities` and implement `unavailable_reason`,
    `version` and `_solve`; `solve` adds validation, the deadline, the unbounded check,
    error mapping and the mapping back onto names.
    """

    name: str
    capabilities: Capabilities

    @abstractmethod
    def unavailable_reason(self) -> str:
        """Why the backend cannot run here and how to fix it; empty when it can."""

    def is_available(self) -> bool:
        """Whether the backend can solve in this environment."""
        return not self.unavailable_reason()

    @abstractmethod
    def version(self) -> str:
        """The solver library's version, e.g. "1.16.0"."""

    def prepare(self, lp: LinearProgram) -> None:
        """Load what solving `lp` will need, ahead of the solve, where the caller has time
        to spare (a decomposed solve waits on its workers; the plan's pricing LP is then
        the whole program). Nothing to load by default."""
        del lp  # nothing to load ahead by default

    @abstractmethod
    def _solve(self, program: CompiledProgram, options: SolveOptions, deadline: Deadline) -> Answer:
        """Solve in index space; may raise, `solve` maps exceptions to ERROR."""

    def solve(
        self,
        lp: LinearProgram,
        *,
        time_limit_s: float | None = None,
        mip_gap: float = DEFAULT_MIP_GAP,
        threads: int = 1,
        want_duals: bool = False,
        start: dict[str, float] | None = None,
        node_limit: int | None = None,
    ) -> SolveResult:
        """Minimise `lp`; never returns None, never raises for a solver failure.

        Args:
            lp: The program.
            time_limit_s: Wall-clock budget for the whole call; None for no limit.
            mip_gap: Relative gap at which a MIP counts as solved.
            threads: Solver threads; keep 1 when several solves share a machine.
            want_duals: Return row duals (d objective / d rhs) if the program is an LP
                and the backend can.
            start: Values of a feasible solution (missing names: 0) the MIP search may
                start from (`Capabilities.warm_start`; other backends ignore it).
            node_limit: Branch-and-bound nodes the MIP search may take; None for no
                limit (`Capabilities.node_limit`; other backends ignore it). Reached
                with a solution: FEASIBLE; without one: TIME_LIMIT (no plan within the
                limits).

        Returns:
            The result, in the program's names.

        Raises:
            ValueError: An argument is out of range (not a solver failure).
        """
        if isinstance(threads, int) and threads > machine_threads():
            threads = machine_threads()  # more only oversubscribe; 100000 hangs HiGHS
        options = SolveSettings(
            self.name, time_limit_s, mip_gap, threads, want_duals, node_limit=node_limit
        )
        deadline = Deadline.starting_now(time_limit_s)
        program: CompiledProgram | None = None
        try:
            reason = self.unavailable_reason()
            if reason:
                answer = Answer(Termination.ERROR, message=reason)
            else:
                program = compile_program(lp)
                if start and self.capabilities.warm_start and program.is_mip:
                    vector = array("d", [start.get(n, 0.0) for n in program.variable_names])
                    program = replace(program, start=vector)
                answer = _trivial_answer(program)
                if answer is None:
                    _LIBRARY_CALLED[:] = [True]
                    answer = self._solve(program, options, deadline)
                if answer.termination in (None, Termination.UNBOUNDED):
                    answer = self._settle_unbounded(program, options, deadline, answer)
        except Exception as exc:  # a library failure is an answer, not a crash
            answer = Answer(Termination.ERROR, message=f"{type(exc).__name__}: {exc}")
        runtime_s = deadline.elapsed_s()
        result = self._result(lp, program, options, answer, runtime_s)
        if start and _misread(lp, result) and not deadline.expired():
            # HiGHS, given a start to a MIP its presolve solves outright, returns the
            # start's values with the optimum's objective: the values are not the answer
            left = None if time_limit_s is None else max(time_limit_s - runtime_s, MIN_CALL_S)
            return self.solve(
                lp, time_limit_s=left, mip_gap=mip_gap, threads=threads, want_duals=want_duals
            )
        return result

    def run(
        self, lp: LinearProgram, settings: SolveSettings, start: dict[str, float] | None = None
    ) -> SolveResult:
        """`solve` with the pipeline's settings (their backend name is not checked:
        the caller chose this backend from it, or priced with another), in what is left
        of the run's deadline (`SolveSettings.remaining_s`), from `start` if given."""
        return self.solve(
            lp,
            time_limit_s=settings.remaining_s(),
            mip_gap=settings.mip_gap,
            threads=settings.threads,
            want_duals=settings.want_duals,
            start=start,
            node_limit=settings.node_limit,
        )

    def _settle_unbounded(
        self, program: CompiledProgram, options: SolveOptions, deadline: Deadline, answer: Answer
    ) -> Answer:
        """Decide "unbounded" by whether any feasible point exists (zero objective)."""
        if deadline.expired():
            return Answer(
                Termination.TIME_LIMIT,
                message="infeasible or unbounded; no time left to tell which",
            )
        feasibility = self._solve(
            program.with_cost(zeros("d", program.num_variables)),
            replace(options, want_duals=False),
            deadline,
        )
        if feasibility.termination is not None and feasibility.termination.has_solution:
            return Answer(Termination.UNBOUNDED, message="unbounded: a feasible point exists")
        if feasibility.termination is Termination.INFEASIBLE:
            return Answer(Termination.INFEASIBLE, message=feasibility.message)
        status = feasibility.termination or "infeasible or unbounded"
        return Answer(
            Termination.TIME_LIMIT if status is Termination.TIME_LIMIT else Termination.ERROR,
            message=f"infeasible or unbounded; the feasibility check ended {status}",
        )

    def _result(
        self,
        lp: LinearProgram,
        program: CompiledProgram | None,
        options: SolveOptions,
        answer: Answer,
        runtime_s: float,
    ) -> SolveResult:
        """Map an index-space answer onto the program's names."""
        try:
            version = self.version() if self.is_available() else "unavailable"
        except Exception as exc:
            version = f"unknown ({type(exc).__name__})"
        termination = answer.termination or Termination.ERROR
        messages = [answer.message, *answer.notes]
        values: dict[str, float] = {}
        duals: dict[str, float] = {}
        objective = None
        if program is not None and termination.has_solution and answer.values is not None:
            pairs = zip(_floats(answer.values), program.integer, strict=True)
            snapped = [_snapped(value, integer) for value, integer in pairs]
            values = dict(zip(program.variable_names, snapped, strict=True))
            objective = answer.objective
            if options.want_duals:
                if program.is_mip:
                    messages.append(
                        "no duals for a program with integer variables: fix them "
                        "(LinearProgram.with_integers_fixed) and re-solve the LP"
                    )
                elif answer.duals is not None:
                    duals = dict(
                        zip(
                            program.constraint_names,
                            (dual + 0.0 for dual in _floats(answer.duals)),
                            strict=True,
                        )
                    )
                else:
                    messages.append(f"{self.name} gives no duals; use the highs backend")
        return SolveResult(
            termination=termination,
            solver=self.name,
            solver_version=version,
            runtime_s=runtime_s,
            objective=objective,
            values=values,
            duals=duals,
            mip_gap=answer.mip_gap if termination.has_solution else None,
            message="; ".join(m for m in messages if m),
        )


def _floats(values: Sequence[float]) -> list[float]:
    """`values` as Python floats (a numpy array's `tolist()` gives them at C speed)."""
    return values.tolist() if hasattr(values, "tolist") else [float(v) for v in values]


def _snapped(value: float, integer: int) -> float:
    """An integer variable's value rounded to the nearest integer (half to even, as
    numpy's `round`), a continuous one's as it is; -0.0 written 0.0."""
    if integer and math.isfinite(value):
        value = float(round(value))
    return value + 0.0


MISREAD_TOLERANCE = 1e-6
"""Relative difference between a result's objective and its values' cost that marks the
values as not the ones the objective was found with."""


def _misread(lp: LinearProgram, result: SolveResult) -> bool:
    """Whether a result's values cost more than the objective it reports (a solver that
    kept a start's values beside the optimum's objective)."""
    if not result.termination.has_solution or result.objective is None or not result.values:
        return False
    cost = lp.objective_value(result.values)
    return cost > result.objective + MISREAD_TOLERANCE * max(1.0, abs(result.objective))
