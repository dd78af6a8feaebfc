"""What an hourly plan's chosen pool is worth: the periods program re-solved without it.

`explain` asks of each interactive pool (workload w, configuration c, region r) of an
hourly plan what the plan would cost without it: the periods program
(solver.time.periods) with every period's replica column of (w, c, r) fixed at 0,

    replicas[w,c,r]@p = 0        for every period p of the day

solved by `optimise_periods` (the periods program's one meeting with the backend:
`resolve_without`); where c dominated candidates the table pruned
(CandidateTable.without), the periods program is built again with them back
(PeriodsStep.without_pools), else a re-solve could not use them and would read "no plan
without it" where one exists; then
read back hour by hour as the plan was (solver.time.solve.hourly_plan): its month's cost
and, at the day's peak, the pools of w in r that took the place of c. A re-solve, not a
re-pricing: commitments, batch work, spot and failover starts are chosen again. A plan
with months re-solves its month 0's program (the months after it roll from month 0's
commitments; their cost is not re-solved).

What the limit on configurations per pool (policy.max_configs_per_pool = K) costs an
hourly plan is asked the same way: the periods program with the limit lifted in every
period, its rows dropped,

    configs_per_pool[w,d,phase]@p   removed       for every period p of the day
    configs_per_day[w,d,phase]      removed       with day_config and config_in_day

(solver.program.families.simplicity; with them goes all that pool_used had to obey, so
the started_open rows of failover starts no longer restrict anything), solved by
`optimise_periods` and read back as the plan was. Dropping rows only relaxes the
program, so the lifted optimum is never dearer; the plan's `simplicity` states

    extra $/month = plan's cost - lifted plan's cost

(>= 0 up to the two solves' gaps), as the static plan's does (solver.solve.simplicity_cost).
"""

from dataclasses import replace

from solver.backends import get_backend
from solver.plan.records import ReplicaPool, SimplicityCost
from solver.plan.schema import Plan
from solver.program.build import with_bounds
from solver.program.families.simplicity import DAY_ROW_FAMILIES
from solver.program.lp import SolveResult
from solver.program.row_names import ConfigsPerDayRow, ConfigsPerPoolRow, ReplicasColumn
from solver.settings import SolveSettings
from solver.time.day_choice import day_columns, optimise_periods, without_day
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
    plan = _read_back(program, result, settings)
    replaced_by = tuple(
        f"{p.count} x {p.label} (at peak)"
        for p in plan.replicas
        if (p.workload, p.region) == (pool.workload, pool.region)
    )
    return plan.cost_per_month or 0.0, replaced_by


def _read_back(program: TimeProgram, result: SolveResult, settings: SolveSettings) -> Plan:
    """The hours of a re-solve with a solution, its integer columns rounded."""
    values = {
        name: round(value) if program.lp.variables[name].integer else value
        for name, value in result.values.items()
        if name in program.lp.variables
    }
    return hourly_plan(program, result, values, settings)


def configs_limit_rows(program: TimeProgram) -> list[str]:
    """The configs_per_pool rows of every period and the day's rows (none: the limit
    binds nothing, each phase has at most K candidates)."""
    families = {ConfigsPerPoolRow.family, *DAY_ROW_FAMILIES}
    return [name for name, row in program.lp.constraints.items() if row.family in families]


def without_configs_limit(program: TimeProgram) -> TimeProgram:
    """The periods program with the limit on configurations per pool lifted in every
    period and over the day: its configs_per_pool rows, the day's rows and columns
    dropped (the module text)."""
    dropped = set(configs_limit_rows(program))
    lp = without_day(program.lp)
    lp.constraints = {name: row for name, row in lp.constraints.items() if name not in dropped}
    return replace(program, lp=lp)


def interactive_pools(program: TimeProgram, plan: Plan) -> int:
    """Interactive pools (workload, configuration, region) the plan runs in some hour of
    the day: its peak fleet less the dedicated batch pools."""
    return sum(
        1 for p in plan.replicas if p.shared or not program.instance.workload(p.workload).is_batch
    )


def limit_row(program: TimeProgram) -> str:
    """The rows that hold the limit in `program`: the day's (configs_per_day), else each
    period's (configs_per_pool)."""
    return ConfigsPerDayRow.family if day_columns(program.lp) else ConfigsPerPoolRow.family


def simplicity_cost(
    program: TimeProgram,
    plan: Plan,
    result: SolveResult | None,
    settings: SolveSettings,
    row: str | None = None,
) -> SimplicityCost:
    """The plan's cost against the lifted program's (`result`: its re-solve; None when
    the program has no configs_per_pool row, so that the lifted program is the plan's
    own and the limit costs nothing; `row`: the plan's program's `limit_row`, where
    `program` is the lifted one). No solution: the unlimited cost is None."""
    limit = program.instance.policy.max_configs_per_pool or 0
    row = row or limit_row(program)
    if result is None:
        unlimited, count = plan.cost_per_month or 0.0, interactive_pools(program, plan)
    elif not result.termination.has_solution:
        return SimplicityCost(
            max_configs_per_pool=limit,
            cost_per_month_unlimited=None,
            extra_cost_per_month=None,
            row=row,
        )
    else:
        lifted = _read_back(program, result, settings)
        unlimited, count = lifted.cost_per_month or 0.0, interactive_pools(program, lifted)
    own = interactive_pools(program, plan)
    found = SimplicityCost.against(limit, plan.cost_per_month or 0.0, own, unlimited, count)
    return found.model_copy(update={"row": row})


def resolve_without(
    program: TimeProgram, settings: SolveSettings, bounds: dict[str, tuple[float, float]]
) -> SolveResult:
    """The periods program re-solved with `bounds` (explain's alternatives: the module
    text; here or in a worker process: one solver thread)."""
    own = replace(program, lp=with_bounds(program.lp, bounds))
    limited = settings.limited(settings.time_limit_s)
    return optimise_periods(own, get_backend(settings.backend), limited).result


def resolve_lifted(
    program: TimeProgram, plan: Plan, settings: SolveSettings
) -> SimplicityCost | None:
    """What policy.max_configs_per_pool costs the plan: the periods program re-solved with
    the limit lifted in every period (the module text; here or in a worker process: one
    solver thread). None without a limit; no re-solve where no row holds it."""
    if program.instance.policy.max_configs_per_pool is None or plan.cost_per_month is None:
        return None
    if not configs_limit_rows(program):
        return simplicity_cost(program, plan, None, settings)
    lifted = without_configs_limit(program)
    limited = settings.limited(settings.time_limit_s)
    result = optimise_periods(lifted, get_backend(settings.backend), limited).result
    return simplicity_cost(lifted, plan, result, settings, limit_row(program))
