"""Why a month's fallback has no plan: the caps its fleet passes, named in the run's
exit 4 (solver.time.step.PeriodsStep.optimise).

A month whose share ends without a plan answers with a fleet held every hour
(solver.decompose.by_period): its own peak plan's, else the month before's, each pool at
its busiest period's count grown to this month's demand, ceil(n (1 + g)^k)
(solver.time.held.grown_fleet), and where the caps refuse it, each period re-planned with
its pools free at the commitment it inherits, and last the month's program solved whole
past the limit (solver.time.day_choice). Where even that finds no plan, the run ends
with exit 4, and the message names the caps the held fleet passes.
Held all day, every pool runs in every period at once:

    GPUs[r,g] = sum over the pools of (r, g) of n x GPUs per replica
    kW[r]     = sum_g kw[r,g] x (existing[r,g] + bought(GPUs[r,g]))     (the power row)

bought in whole servers as the power row counts them (models.operations.site.installed_gpus),
against `power_kw[r]`; GPUs[r,g] against what the region can field (existing +
`max_gpus`), and what it rents beyond its owned and committed GPUs against
`max_on_demand_gpus`.
"""

from models.operations.site import gpu_kw, installed_gpus
from models.schema.instance import Instance
from solver.candidates.table import CandidateTable
from solver.decompose.period_split import Held
from solver.program.families.pricing import CommittedColumn
from solver.program.row_names import ReplicasColumn, family_of


def fleet_gpus(table: CandidateTable, held: Held) -> dict[tuple[str, str], int]:
    """(region, GPU) -> the GPUs the held fleet's pools (`late_layout`) run at once."""
    gpus: dict[tuple[str, str], int] = {}
    for name, count in held.late_layout.items():
        if family_of(name) != ReplicasColumn.family or count < 1:
            continue
        pool = ReplicasColumn.parse(name)
        candidate = next((c for c in table.of(pool.workload) if c.key == pool.candidate), None)
        if candidate is None:  # not this table's: nothing to count
            continue
        key = (pool.region, candidate.gpu)
        gpus[key] = gpus.get(key, 0) + round(count) * candidate.gpus
    return gpus


def refusals(instance: Instance, table: CandidateTable, held: Held) -> list[str]:
    """The caps the held fleet passes (the module text), each with its numbers."""
    gpus = fleet_gpus(table, held)
    committed = {
        (c.region, c.gpu): value
        for c, value in ((CommittedColumn.parse(n), v) for n, v in held.committed.items())
    }
    found = []
    for region in instance.regions:
        kw = 0.0
        for (name, gpu), used in sorted(gpus.items()):
            if name != region.name:
                continue
            owned = region.existing.get(gpu, 0)
            kw += gpu_kw(instance, name, gpu) * installed_gpus(instance, name, gpu, used)
            offered = region.available_gpus(gpu)
            if used > offered:
                found.append(
                    f"{used:,} {gpu} GPUs in {name}, over the {offered:,} it offers "
                    f"(regions[{name}].supply.{gpu}.max_gpus)"
                )
            supply = region.supply.get(gpu)
            cap = supply.max_on_demand_gpus if supply is not None else None
            rented = used - owned - committed.get((name, gpu), 0.0)
            if cap is not None and rented > cap:
                found.append(
                    f"{rented:,.0f} {gpu} GPUs rented on demand in {name}, over its "
                    f"max_on_demand_gpus {cap:,}"
                )
        if region.power_kw is not None and kw > region.power_kw + 1e-9:
            found.append(f"{kw:,.1f} kW in {region.name}, over its power_kw {region.power_kw:g}")
    return found


def refused_message(
    instance: Instance, table: CandidateTable, held: Held, month: int, months: int
) -> str:
    """Exit 4's advice where the fallback of month `month` (of `months`; 0: a day
    without months) has no plan: which fleet it held, the caps that fleet passes, and
    what to change."""
    which = (
        f"month {held.month}'s fleet grown to month {month}'s demand"
        if held.month < month
        else "the day's peak fleet"
    )
    whose = f"month {month}'s" if months else "the day's"
    caps = refusals(instance, table, held)
    commitment = "the commitment it inherits" if month else "its commitment"
    tried = (
        f"neither its periods re-planned under the caps at {commitment} nor its program "
        "solved whole past the limit found one"
    )
    if not caps:  # the time ran out, not a cap: there is no cap to loosen
        return (
            f"{whose} fallback ({which}, held every hour) has no plan within the time limit: "
            f"that fleet passes every power and supply cap, but {tried}; raise --time-limit "
            "(or solver.time_limit_s)"
        )
    return (
        f"{whose} fallback ({which}, held every hour) has no plan: it needs "
        f"{'; '.join(caps)}, and {tried}; raise --time-limit (or solver.time_limit_s), or "
        "loosen that cap"
    )
