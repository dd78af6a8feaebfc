"""The gap a static plan states: the solver's, measured at the plan read back.

A solve stopped by its limit may end on values that buy more GPUs than its pools use:
purchased[r,g] above what the purchase and whole_servers rows need (the search had not
yet lowered them). The read-back buys only what the pools use
(solver.readback.assign.gpu_use: max(0, used - existing), in whole servers), so the
plan costs less than the incumbent's objective, and the gap the solver states,
(objective - bound) / objective, is the incumbent's, not the plan's. The plan's values are
the incumbent's with those purchases lowered, x'_purchased[r,g] the plan's purchase and
x'_servers[r,g] = x'_purchased[r,g] / n_g: lowering a purchase to what the pools use keeps
every row (purchase and whole_servers hold with equality or above, gpu_supply and the
site's power and rack rows only loosen), so they are a plan of the same program, bounded
by the same proven bound L = objective x (1 - gap), and

    saved = sum over purchased and servers columns j of c_j (x_j - x'_j)
    gap'  = (objective - saved - L) / (objective - saved)

Where nothing is saved (every optimal plan, and any plan that bought what it used) the
solver's gap stands.
"""

from models.operations.site import node_gpus
from solver.plan.records import GpuUse
from solver.program.families.servers import ServersColumn
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import LinearProgram, SolveResult
from solver.program.sets import ProgramSets

SAVED_FLOOR = 0.01
"""Dollars per month below which nothing counts as saved (round-off in the values)."""


def plan_gap(
    lp: LinearProgram,
    sets: ProgramSets,
    result: SolveResult,
    values: dict[str, float],
    uses: tuple[GpuUse, ...],
) -> float | None:
    """The gap of the plan read back from `values` (the module docstring), over every
    offer of `sets` (one the plan does not use buys 0); the solver's where it states none
    or the plan saves nothing on its purchases."""
    bound = result.bound
    if bound is None or result.objective is None:
        return result.mip_gap
    bought = {(use.region, use.gpu): use.purchased for use in uses}
    saved = 0.0
    for region, gpu in sets.offers:
        plan = bought.get((region, gpu), 0)
        name = PurchasedColumn(region, gpu).name()
        saved += lp.objective.get(name, 0.0) * (values.get(name, 0.0) - plan)
        name = ServersColumn(region, gpu).name()
        if name in lp.variables:
            servers = plan / node_gpus(sets.instance, gpu)
            saved += lp.objective.get(name, 0.0) * (values.get(name, 0.0) - servers)
    if saved < SAVED_FLOOR:
        return result.mip_gap
    objective = result.objective - saved
    return max(0.0, (objective - bound) / max(abs(objective), 1e-9))
