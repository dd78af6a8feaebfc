"""What an hourly plan's chosen pool is worth: the periods program re-solved without it.

`explain` asks of each interactive pool (workload w, configuration c, region r) of an
hourly plan what the plan would cost without it: the periods program
(solver.time.periods) with every period's replica column of (w, c, r) fixed at 0,

    replicas[w,c,r]@p = 0        for every period p of the day

solved by `optimise_periods` (the periods program's one meeting with the backend:
solver.time.step.resolve_without), and
read back hour by hour as the plan was (solver.time.solve.hourly_plan): its month's cost
and, at the day's peak, the pools of w in r that took the place of c. A re-solve, not a
re-pricing: commitments, batch work, spot and failover starts are chosen again. A plan
with months re-solves its month 0's program (the months after it roll from month 0's
commitments; their cost is not re-solved).
"""

from solver.plan.records import ReplicaPool
from solver.program.lp import SolveResult
from solver.program.row_names import ReplicasColumn
from solver.settings import SolveSettings
from solver.time.periods import TimeProgram
from solver.time.solve import hourly_plan


def without_pool(program: TimeProgram, pool: ReplicaPool) -> dict[str, tuple[float, float]]:
    """The bounds that remove one pool's configuration from its region in every period
    (empty when no period has its column: a batch or shared pool)."""
    bounds = {}
    for part in program.periods:
        name = ReplicasColumn(pool.workload, pool.key, pool.region).at(part.first_hour).name()
        if name in program.lp.variables:
            bounds[name] = (0.0, 0.0)
    return bounds


def cost_without(
    program: TimeProgram, result: SolveResult, settings: SolveSettings, pool: ReplicaPool
) -> tuple[float, tuple[str, ...]]:
    """(the re-solved plan's cost per month, the pools of the workload in the region at
    the day's peak, as `count x label`) from a re-solve with a solution."""
    values = {
        name: round(value) if program.lp.variables[name].integer else value
        for name, value in result.values.items()
        if name in program.lp.variables
    }
    plan = hourly_plan(program, result, values, settings)
    replaced_by = tuple(
        f"{p.count} x {p.label} (at peak)"
        for p in plan.replicas
        if (p.workload, p.region) == (pool.workload, pool.region)
    )
    return plan.cost_per_month or 0.0, replaced_by
