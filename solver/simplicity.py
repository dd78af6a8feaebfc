"""What policy.max_configs_per_pool costs a static plan: the same instance solved with the
limit lifted (`simplicity_cost`, which `explain` reports; solver.solve names it too).

Imports: models.schema; solver.candidates, solver.program, solver.backends,
solver.decompose, solver.readback, solver.plan, solver.settings."""

from models.schema.instance import Instance
from solver.backends import get_backend
from solver.candidates.table import CandidateTable, build_candidates
from solver.decompose.by_workload import optimise
from solver.plan.records import SimplicityCost
from solver.plan.schema import Plan
from solver.program.build import build_program
from solver.readback.assign import gpu_use, integral, replica_counts
from solver.settings import SolveSettings


def simplicity_cost(
    instance: Instance,
    plan: Plan,
    settings: SolveSettings,
    table: CandidateTable | None = None,
) -> SimplicityCost | None:
    """What policy.max_configs_per_pool costs: the same instance solved with the limit
    lifted (None when there is no limit); `explain` reports it (a second solve, kept out
    of `solve`). The unlimited plan is not verified or priced;
    only its cost and its number of pools are read. Not found within the time limit:
    its cost is None."""
    limit = instance.policy.max_configs_per_pool
    if limit is None or plan.cost_per_month is None:
        return None
    policy = instance.policy.model_copy(update={"max_configs_per_pool": None})
    lifted = instance.model_copy(update={"policy": policy})
    # The candidates do not depend on the limit: reuse the plan's table when given.
    table = build_candidates(lifted, settings) if table is None else table
    program = build_program(lifted, table, settings=settings)
    result = optimise(program, get_backend(settings.backend), settings).result
    if not result.termination.has_solution:
        return SimplicityCost(
            max_configs_per_pool=limit, cost_per_month_unlimited=None, extra_cost_per_month=None
        )
    values = integral(program, result.values)
    counts = replica_counts(program.sets, values)
    unlimited = sum(use.cost_per_month for use in gpu_use(program.sets, counts))
    return SimplicityCost.against(
        limit, plan.cost_per_month, len(plan.replicas), unlimited, len(counts)
    )
