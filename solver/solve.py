"""The pipeline: instance -> candidates -> pre-solve checks -> program -> backend ->
read-back -> verified Plan. Each arrow is one function of its own module; this one only
sequences them.

`solve` returns a Plan that the independent verifier has accepted, or raises
`Infeasible` (with a diagnosis naming the requirements in conflict) or `NoSolution`
(time limit or solver failure). It never returns None.
"""

from dataclasses import dataclass

from models.instance import Instance
from solver.backends import get_backend
from solver.candidates import build_candidates
from solver.decompose import Optimised, optimise
from solver.diagnose import diagnose_infeasible, presolve_problems
from solver.errors import BackendUnavailable, Infeasible, NoSolution, PlanRejected
from solver.lp import LinearProgram, SolveResult, Termination
from solver.plan import Plan
from solver.pools import PoolCurve, assess_pools
from solver.pricing import priced_rows, pricing_program
from solver.program import FleetProgram, build_program
from solver.readback import chosen_sizes, integral, read_plan, replica_counts
from solver.settings import SolveSettings
from solver.size_check import check_configurations, check_program_size
from solver.verify import verify

PRICING_BACKEND = "highs"
"""Backend that prices the plan when the chosen one gives no duals (scip, cpsat)."""

__all__ = ["PRICING_BACKEND", "SolveSettings", "Solved", "solve", "solve_program"]


@dataclass(frozen=True)
class Solved:
    """A solved program with its plan (what `explain` works from)."""

    program: FleetProgram
    optimised: Optimised
    plan: Plan
    settings: SolveSettings
    curves: dict[tuple[str, str], PoolCurve]
    """(workload, candidate key) -> the chosen pools' curves at their real sizes."""

    @property
    def result(self) -> SolveResult:
        """The backend's result."""
        return self.optimised.result


def solve(instance: Instance, settings: SolveSettings | None = None) -> Plan:
    """The cheapest fleet that meets every requirement of the instance.

    Raises:
        Infeasible: no plan exists; its diagnosis names the requirements in conflict.
        NoSolution: the backend found no plan within the time limit, or failed.
        PlanRejected: the verifier rejected the solver's plan (a bug, never an answer).
    """
    return solve_program(instance, settings).plan


def solve_program(instance: Instance, settings: SolveSettings | None = None) -> Solved:
    """`solve`, keeping the program and the raw result for explanations."""
    settings = settings or SolveSettings.of(instance)
    backend = get_backend(settings.backend)
    reason = backend.unavailable_reason()
    if reason:
        raise BackendUnavailable(f"backend {settings.backend!r} cannot run here: {reason}")
    check_configurations(instance)  # refused with the numbers before work that cannot end
    table = build_candidates(instance)
    check_program_size(instance, table, settings.time_limit_s)
    program = build_program(instance, table)
    problems = [*table.problems, *presolve_problems(program.sets)]
    if problems:
        raise Infeasible.from_problems(problems)
    optimised = optimise(program, backend, settings)
    result = optimised.result
    if result.termination is Termination.INFEASIBLE:
        raise Infeasible(diagnose_infeasible(program, backend, settings))
    if not result.termination.has_solution:
        raise NoSolution(
            f"{result.solver} found no plan ({result.termination}) within "
            f"{settings.time_limit_s:g} s for a program of {_size_text(program.lp)}"
            + (f": {result.message}" if result.message else "")
            + "; raise --time-limit or loosen the MIP gap",
            str(result.termination),
        )
    values = integral(program, result.values)
    pricer = backend if backend.capabilities.duals else get_backend(PRICING_BACKEND)
    pricing = pricer.run(pricing_program(program, values), settings.with_duals())
    counts = replica_counts(program.sets, values)
    curves = assess_pools(instance, chosen_sizes(program.sets, counts))
    plan = read_plan(program, optimised, values, priced_rows(pricing), settings, curves)
    check = verify(instance, plan)
    if not check.ok:
        raise PlanRejected(
            "the solver's plan fails the independent verifier:\n"
            + "\n".join(f"  - {v}" for v in check.violations)
        )
    return Solved(program, optimised, plan, settings, curves)


def _size_text(lp: LinearProgram) -> str:
    size = lp.size()
    return (
        f"{size['variables']} variables ({size['integer_variables']} integer) and "
        f"{size['constraints']} constraints"
    )
