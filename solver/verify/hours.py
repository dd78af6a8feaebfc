"""The independent verifier in time: every hour and every month of an hourly plan.

Like solver.verify.fleet it reads the instance and the plan only, never the program:

1. The plan has the 24 UTC hours, once each.
2. Each hour: its interactive pools serve the hour's warm demand (demand plus the
   autoscaler's headroom, models.operations.time_demand.warm_grid) in every scenario the policy
   names, checked by the static verifier on the hour's instance
   (models.operations.time_demand.hour_instance): physics recomputed, max-flow per scenario,
   replica loss, supply. Its violations carry the hour (solver.program.row_names.timed_name):
   `demand[none,chat,us-east]@t07`. Steps 2, 6 and 8 are solver.verify.hour_capacity.
3. Each hour's GPUs per offer: the pools' GPUs (batch included) equal `used`;
   used <= existing + max_gpus; existing + reserved + on-demand + spot covers used;
   reserved <= committed (`committed <= use` of the commitment is its own business: a
   committed GPU may idle); on-demand <= max_on_demand_gpus. With policy.buy_unit: node
   committed and on-demand GPUs come in whole servers of gpus_per_node.
4. Cost: each hour's cost recomputed (committed x reserved price + on-demand x price +
   spot x spot price), the month = hours_per_month / 24 x the day's sum.
5. Months (policy.horizon_months): each month m >= 1 is checked by this verifier on its
   own, its hours against month m's grown demand (models.operations.procurement.month_instance);
   committed counts never fall, grow only from month L = lead_time_months on, by GPUs
   ordered in month 0 .. m - L (each month's `ordered_gpus` is what later months
   need); owned = existing + committed; each offer's cost is recomputed from the
   month's hours and the month's cost is its offers' sum.
6. Failover with a start time: where the warm pools of an hour fall short in a region
   loss for a workload with `slo.availability`, the replicas the hour says it starts
   after that loss (`Hour.failover_starts`) must, added to the warm pools, serve the
   whole demand within supply and max_configs_per_pool (static verifier on the sum,
   the on-demand cap apart), and the start window must fit the budget: m x (demand -
   what the warm survivors serve, max-flow within reach) x T_s / (60 a) <= (1 - A) x
   month minutes, with T_s = `policy.failover_start_s` (default the slowest replica
   start), a the workload's average actual rate and m = max(1, the lost region's
   losses per month) (lambda x month / 8,760 from `failure_probability_per_year`; 1
   without it). The plan's stated `error_budget_minutes_used` (worst hour per loss) is
   recomputed.
7. Batch (solver.verify.batch): C_b recomputed, the soaked interactive pools keep their
   warm load, and every batch request meets its deadline in the hours' room.
8. Interactive spot (`Hour.spot_pools`, policy.spot_confidence a): steps 2 and 6 judge
   each pool less Q(n u, a) replicas, its spot replicas down at once with confidence a
   (u = lambda T / (1 + lambda T), T = replica start + scale detection).
9. Every other figure the plan states (every number finite, periods, the peak fleet and
   its `gpus` table, commitments, idle hours, batch placements, headroom, the idle
   share over the GPUs paid, the period and month of each binding row) against its
   recomputation: solver.verify.hour_figures, solver.verify.hour_reports,
   solver.verify.hour_idle and solver.verify.hour_rows. A NaN
   never passes a comparison: costs are compared with `totals.money_close`, which
   refuses a non-finite amount.
10. Each hour's scenario table (`Hour.scenarios`, what `simulate --hour` replays) as a
   static plan's `scenarios`: routes within reach adding up to the hour's warm demand,
   the hour's pool counts (and started replicas), every load within the capacity
   recomputed for the hour's pools; the plan's `scenarios` is the table of the hour it
   names (solver.verify.hour_scenarios).
11. policy.max_configs_per_pool over the whole day, not only hour by hour: at most K
   configurations per (workload, region, phase) over the 24 hours (solver.verify.day_configs).
"""

from collections import defaultdict
from functools import partial

from models.operations.site import node_gpus
from models.operations.time_demand import (
    warm_grid,
)
from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from solver.plan.schema import Plan
from solver.plan.time_records import Hour
from solver.program.row_names import GpuSupplyRow, timed_name
from solver.verify.attribution import check_attribution
from solver.verify.batch import check_batch
from solver.verify.day_configs import check_day_configs
from solver.verify.fleet import (
    ScenarioCheck,
    Verification,
    Violation,
    verify,
)
from solver.verify.fleet import stated_display as shown
from solver.verify.hour_capacity import check_hour_capacity, check_stated_budgets
from solver.verify.hour_figures import peak_fleet, stated_hour_figures, stop_before_arithmetic
from solver.verify.hour_idle import check_idle_fraction
from solver.verify.hour_reports import stated_report_figures
from solver.verify.hour_rows import check_binding_times, with_binding_times
from solver.verify.hour_scenarios import check_hour_table, check_peak_table
from solver.verify.months import GPU_TOLERANCE, check_months, hour_checks, unmatched_time
from solver.verify.totals import money_close


def verify_any(instance: Instance, plan: Plan) -> Verification:
    """Hour by hour for an hourly plan, else the static verifier; with what the plan's
    hours and months do not match in the instance's (`months.unmatched_time`)."""
    verdict = verify_hours(instance, plan) if plan.hours else verify(instance, plan)
    return unmatched_time(instance, plan, with_binding_times(verdict, plan))


def verify_hours(instance: Instance, plan: Plan, walked: bool = False) -> Verification:
    """Check every hour and month of an hourly plan; list every violation. A plan with a
    number that is not finite is judged on that alone (every later check does arithmetic
    on the stated numbers). `walked`: a month's hours (`check_months`: walked before)."""
    stop = stop_before_arithmetic(instance, plan, walked)
    if stop is not None:
        return Verification.stopped_at(*stop)
    violations: list[Violation] = []
    warnings: list[Violation] = []  # hour tables' rows stating less than they carry
    checks: list[ScenarioCheck] = []
    found = sorted(hour.hour for hour in plan.hours)
    if found != list(range(HOURS_PER_DAY)):
        violations.append(
            Violation(requirement="hours", message=f"needs UTC hours 0-23 once each, got {found}")
        )
    warm = warm_grid(instance)
    committed = {(c.region, c.gpu): c.committed_gpus for c in plan.committed}
    cost_per_day = 0.0
    cache = {} if walked else hour_checks(instance)  # month 0 verified alone first: kept
    budget_used: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    for index, hour in enumerate(plan.hours):
        at = hour.hour
        static = check_hour_capacity(instance, hour, warm, cache, budget_used)
        violations += check_hour_table(instance, hour, index, warm, cache, warnings)
        violations += [
            Violation(
                requirement=timed_name(v.requirement, at), message=f"UTC hour {at}: {v.message}"
            )
            for v in static.violations
        ]
        checks += [
            c.model_copy(update={"scenario": timed_name(c.scenario, at)}) for c in static.checks
        ]
        cost, _ = _check_hour_gpus(instance, hour, committed, violations)
        cost_per_day += cost
    for (r, g), count in committed.items():
        supply = instance.region(r).supply.get(g)
        if supply is None or supply.reserved_price_per_gpu_hour is None:
            violations.append(
                Violation(requirement=f"committed[{r},{g}]", message="no reserved price on offer")
            )
        elif not _whole_servers(instance, g, count):
            violations.append(
                Violation(
                    requirement=f"committed[{r},{g}]",
                    message=f"commits {count:g} GPUs: not whole servers of "
                    f"{node_gpus(instance, g)}",
                )
            )
        elif count > supply.max_gpus + GPU_TOLERANCE:
            violations.append(
                Violation(
                    requirement=f"committed[{r},{g}]",
                    message=f"commits {count:g} GPUs; max_gpus is {supply.max_gpus}",
                )
            )
    cost = instance.policy.hours_per_month / HOURS_PER_DAY * cost_per_day
    if plan.cost_per_month is not None and not money_close(plan.cost_per_month, cost):
        violations.append(
            Violation(
                requirement="cost",
                message=f"states ${plan.cost_per_month:,.2f}/month; its hours cost "
                f"${cost:,.2f}/month at the instance's prices",
            )
        )
    violations += [
        Violation(requirement=f.requirement, message=f.message) for f in shown(instance, plan)
    ]
    violations += check_peak_table(plan)
    violations += check_months(instance, plan, partial(verify_hours, walked=True), checks, warnings)
    check_stated_budgets(instance, plan, budget_used, violations)
    violations += [*stated_hour_figures(instance, plan), *stated_report_figures(instance, plan)]
    violations += check_idle_fraction(instance, plan)
    violations += check_attribution(instance, plan)
    violations += check_binding_times(plan)
    violations += check_batch(instance, plan.hours, warm)
    violations += check_day_configs(instance, plan)
    bought, used = peak_fleet(instance, plan)
    return Verification(
        ok=not violations,
        violations=tuple(violations),
        cost_per_month=cost,
        total_gpus=used,
        checks=tuple(checks),
        warnings=tuple(warnings),
        gpus_bought=bought,
    )


def _whole_servers(instance: Instance, gpu: str, gpus: float) -> bool:
    """Whether `gpus` reserved or rented are whole servers (any count with buy_unit gpu)."""
    n = node_gpus(instance, gpu)
    return abs(gpus / n - round(gpus / n)) * n <= GPU_TOLERANCE


def _check_hour_gpus(
    instance: Instance,
    hour: Hour,
    committed: dict[tuple[str, str], float],
    violations: list[Violation],
) -> tuple[float, int]:
    """(the hour's recomputed cost, GPUs used) with the per-offer checks of step 3."""
    used: dict[tuple[str, str], int] = defaultdict(int)
    for pool in hour.pools:
        used[(pool.region, pool.gpu)] += pool.count * pool.replica_gpus
    stated = {(g.region, g.gpu): g for g in hour.gpus}
    cost = 0.0
    for (r, g), count in committed.items():
        supply = instance.region(r).supply.get(g)
        if supply is not None and supply.reserved_price_per_gpu_hour is not None:
            cost += count * supply.reserved_price_per_gpu_hour
    for (r, g), n in sorted(used.items()):
        region = instance.region(r)
        supply = region.supply.get(g)
        existing, available = region.existing.get(g, 0), region.available_gpus(g)
        name = timed_name(f"[{r},{g}]", hour.hour)
        if n > available:
            violations.append(
                Violation(
                    requirement=GpuSupplyRow(r, g).at(hour.hour).name(),
                    message=f"UTC hour {hour.hour}: uses {n} {g} in {r}; available {available}",
                )
            )
        row = stated.get((r, g))
        if row is None or row.used != n:
            violations.append(
                Violation(
                    requirement="gpus" + name,
                    message=f"the pools hold {n} GPUs; the hour states "
                    f"{row.used if row else 'none'}",
                )
            )
            continue
        paid = min(existing, n) + row.reserved + row.on_demand + row.spot
        if paid < n - GPU_TOLERANCE:
            violations.append(
                Violation(
                    requirement="gpu_cover" + name,
                    message=f"{n} GPUs used; owned, reserved, on-demand and spot cover {paid:g}",
                )
            )
        if row.reserved > committed.get((r, g), 0.0) + GPU_TOLERANCE:
            violations.append(
                Violation(
                    requirement="reserved" + name,
                    message=f"{row.reserved:g} reserved GPUs in use; "
                    f"{committed.get((r, g), 0.0):g} committed",
                )
            )
        cap = (
            supply.max_on_demand_gpus if supply and supply.max_on_demand_gpus is not None else None
        )
        if cap is not None and row.on_demand > cap + GPU_TOLERANCE:
            violations.append(
                Violation(
                    requirement="on_demand" + name,
                    message=f"{row.on_demand:g} on-demand GPUs; max_on_demand_gpus is {cap}",
                )
            )
        if not _whole_servers(instance, g, row.on_demand):
            violations.append(
                Violation(
                    requirement="on_demand" + name,
                    message=f"{row.on_demand:g} on-demand GPUs: not whole servers of "
                    f"{node_gpus(instance, g)}",
                )
            )
        cost += row.on_demand * instance.price_per_gpu_hour(r, g)
        if row.spot:
            if supply is None or supply.spot_price_per_gpu_hour is None:
                violations.append(
                    Violation(requirement="spot" + name, message="no spot price on offer")
                )
            else:
                cost += row.spot * supply.spot_price_per_gpu_hour
    if not money_close(hour.cost_per_hour, cost):
        violations.append(
            Violation(
                requirement=timed_name("cost", hour.hour),
                message=f"states ${hour.cost_per_hour:,.4f}/hour; recomputed ${cost:,.4f}/hour",
            )
        )
    return cost, sum(used.values())
