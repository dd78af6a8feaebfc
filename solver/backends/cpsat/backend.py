"""The `cpsat` backend class: capabilities, availability and version; the work is in
`solver.backends.cpsat.search`."""

from solver.backends import _mathopt
from solver.backends.base import (
    Answer,
    Backend,
    Capabilities,
    CompiledProgram,
    Deadline,
    SolveOptions,
)
from solver.backends.cpsat import search


class CpSatBackend(Backend):
    """CP-SAT (lazy clause generation + LP relaxations) via OR-Tools MathOpt: a
    cross-check of `highs`, continuous variables on a grid repaired by exact LPs."""

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
        return search.solve(program, options, deadline)
