"""A solver-neutral linear program: named variables, named constraints in families.

The program builder writes into a `LinearProgram`; each backend translates it into its
own library's objects and back into a `SolveResult`. No PuLP or OR-Tools object leaves
a backend module.

Conventions:
- Minimisation always.
- `Constraint.coefficients` maps variable names to coefficients; the row reads
  sum(coef x var) SENSE rhs.
- Duals in `SolveResult.duals` are d(objective) / d(rhs) for each constraint: the
  change of the optimal objective per unit increase of the right-hand side. Only LPs
  (or a MIP with its integers fixed) have them.
"""

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, Protocol


class RowsMemo(Protocol):
    """A compile of programs that share their rows (solver.backends.compile_memo)."""

    def compile(self, lp: "LinearProgram") -> Any:
        """`lp` compiled (solver.backends.base.CompiledProgram), its rows' arrays reused
        where a program of the same columns and rows was compiled before."""


class Sense(StrEnum):
    """Direction of a constraint row."""

    LE = "<="
    GE = ">="
    EQ = "=="


@dataclass(frozen=True)
class Variable:
    """A decision variable with bounds; `upper=None` is unbounded above."""

    name: str
    lower: float = 0.0
    upper: float | None = None
    integer: bool = False


FEASIBILITY_TOLERANCE = 1e-6
"""Relative violation of a row tolerated in a plan put together outside a solver
(`Constraint.broken_by`)."""


@dataclass(frozen=True)
class Constraint:
    """One named row; `family` is the constraint family it belongs to."""

    name: str
    family: str
    coefficients: dict[str, float]
    sense: Sense
    rhs: float

    def activity(self, values: dict[str, float]) -> float:
        """sum(coef x value) for a solution."""
        return sum(coef * values.get(var, 0.0) for var, coef in self.coefficients.items())

    def slack(self, values: dict[str, float]) -> float:
        """How far the row is from binding; negative when violated.

        <=: rhs - activity; >=: activity - rhs; ==: -|activity - rhs|.
        """
        activity = self.activity(values)
        if self.sense is Sense.LE:
            return self.rhs - activity
        if self.sense is Sense.GE:
            return activity - self.rhs
        return -abs(activity - self.rhs)

    def broken_by(self, values: dict[str, float]) -> bool:
        """Whether `values` break the row by more than `FEASIBILITY_TOLERANCE` of its
        terms (1 + the sum of |coefficient x value|): the test of a plan put together
        outside a solver (a join of parts, merged neighbourhoods)."""
        scale = 1.0 + sum(abs(c * values.get(v, 0.0)) for v, c in self.coefficients.items())
        return self.slack(values) < -FEASIBILITY_TOLERANCE * scale


@dataclass
class LinearProgram:
    """A minimisation program under construction; names are unique."""

    name: str
    variables: dict[str, Variable] = field(default_factory=dict)
    constraints: dict[str, Constraint] = field(default_factory=dict)
    objective: dict[str, float] = field(default_factory=dict)
    objective_constant: float = 0.0
    rows_memo: "RowsMemo | None" = field(default=None, repr=False, compare=False)
    """Where its rows' arrays may have been compiled already, for a program built again
    and again over the same rows with other bounds or costs (a period block in each
    round: solver.backends.compile_memo); not part of the program."""

    def add_variable(
        self, name: str, lower: float = 0.0, upper: float | None = None, integer: bool = False
    ) -> str:
        """Declare a variable and return its name."""
        if name in self.variables:
            raise ValueError(f"duplicate variable {name}")
        self.variables[name] = Variable(name, lower, upper, integer)
        return name

    def add_constraint(
        self, name: str, family: str, coefficients: dict[str, float], sense: Sense, rhs: float
    ) -> Constraint:
        """Add a row; zero coefficients are dropped. Every variable must be declared."""
        if name in self.constraints:
            raise ValueError(f"duplicate constraint {name}")
        declared = list(map(self.variables.get, coefficients))
        if None in declared:
            pairs = zip(coefficients, declared, strict=True)
            unknown = [var for var, known in pairs if known is None]
            raise ValueError(f"constraint {name} uses undeclared variables {unknown[:3]}")
        # Keyed by the declared names themselves: a compile's lookups of them then match
        # by identity before comparing text (solver.backends.base._rows_by_arrays).
        kept = {
            known.name: c
            for known, c in zip(declared, coefficients.values(), strict=True)
            if c != 0.0
        }
        row = Constraint(name, family, kept, sense, rhs)
        self.constraints[name] = row
        return row

    def add_objective(self, terms: dict[str, float]) -> None:
        """Add terms to the (minimised) objective."""
        for var, coef in terms.items():
            self.objective[var] = self.objective.get(var, 0.0) + coef

    @property
    def integer_variables(self) -> list[str]:
        """Names of the integer variables."""
        return [v.name for v in self.variables.values() if v.integer]

    def is_mip(self) -> bool:
        """Whether any variable is integer."""
        return any(v.integer for v in self.variables.values())

    def with_integers_fixed(self, values: dict[str, float]) -> "LinearProgram":
        """The LP left when every integer variable is fixed at its (rounded) value.

        Its duals are the shadow prices of the plan the MIP chose.
        """
        fixed = LinearProgram(self.name + "-fixed", objective=dict(self.objective))
        fixed.objective_constant = self.objective_constant
        fixed.constraints = dict(self.constraints)
        for var in self.variables.values():
            if var.integer:
                level = float(round(values.get(var.name, 0.0)))
                fixed.variables[var.name] = replace(var, lower=level, upper=level, integer=False)
            else:
                fixed.variables[var.name] = var
        return fixed

    def objective_value(self, values: dict[str, float]) -> float:
        """The objective at a solution."""
        return self.objective_constant + sum(
            coef * values.get(var, 0.0) for var, coef in self.objective.items()
        )

    def size(self) -> dict[str, int]:
        """Counts for reports: variables, integer variables, constraints, nonzeros."""
        return {
            "variables": len(self.variables),
            "integer_variables": len(self.integer_variables),
            "constraints": len(self.constraints),
            "nonzeros": sum(len(row.coefficients) for row in self.constraints.values()),
        }


class Termination(StrEnum):
    """One status vocabulary for every backend."""

    OPTIMAL = "optimal"
    """Proven optimal (within the requested MIP gap)."""
    FEASIBLE = "feasible"
    """A solution, stopped by the time limit before the gap closed."""
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    TIME_LIMIT = "time_limit"
    """The time limit passed with no solution at all."""
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        """Whether `values` holds a usable solution."""
        return self in (Termination.OPTIMAL, Termination.FEASIBLE)


@dataclass(frozen=True)
class SolveResult:
    """What a backend returns; never None."""

    termination: Termination
    solver: str
    solver_version: str
    runtime_s: float
    objective: float | None = None
    values: dict[str, float] = field(default_factory=dict)
    duals: dict[str, float] = field(default_factory=dict)
    mip_gap: float | None = None
    """Relative gap between the solution and the best bound, when the backend reports it."""
    message: str = ""

    @property
    def bound(self) -> float | None:
        """Its proven lower bound, objective x (1 - gap) as the gap is defined
        (objective - bound) / |objective|; None without a solution or a stated gap."""
        if not self.termination.has_solution or self.objective is None or self.mip_gap is None:
            return None
        return self.objective - self.mip_gap * max(abs(self.objective), 1e-9)

    def lower_bound(self, gap: float) -> float:
        """`bound`; where the backend states no gap (CBC proving within its -ratio), the
        objective less the `gap` it was asked for when it ended OPTIMAL, else 0: nothing
        is proven, and the programs read this way (the period blocks and their master)
        never cost less than 0."""
        if self.bound is not None:
            return self.bound
        objective = self.objective or 0.0
        if self.termination is Termination.OPTIMAL:
            return objective - gap * abs(objective)
        return 0.0

    def within(self, lower: float | None, gap: float) -> "SolveResult":
        """This result judged against `lower`, another proven lower bound of the same
        program (another method's): its gap to the best of the two bounds, and OPTIMAL
        once that is within `gap`."""
        own = self.bound
        if lower is None or self.objective is None or not self.termination.has_solution:
            return self
        best = lower if own is None else max(own, lower)
        reached = max(0.0, (self.objective - best) / max(abs(self.objective), 1e-9))
        if self.mip_gap is not None and reached >= self.mip_gap:
            return self
        proved = Termination.OPTIMAL if reached <= gap else self.termination
        return replace(self, mip_gap=reached, termination=proved)


def plan_of(lp: LinearProgram, values: dict[str, float]) -> bool:
    """Whether `values` (columns not named: 0) are a plan of `lp`: every column named is
    `lp`'s (or 0), within its bounds, integral where it is an integer (each within
    `FEASIBILITY_TOLERANCE`), and no row broken (`Constraint.broken_by`)."""
    tolerance = FEASIBILITY_TOLERANCE
    if any(abs(v) > tolerance for n, v in values.items() if n not in lp.variables):
        return False
    for name, var in lp.variables.items():
        value = values.get(name, 0.0)
        if value < var.lower - tolerance or (
            var.upper is not None and value > var.upper + tolerance
        ):
            return False
        if var.integer and abs(value - round(value)) > tolerance:
            return False
    return not any(row.broken_by(values) for row in lp.constraints.values())
