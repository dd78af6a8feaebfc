"""The independent verifier in time: every hour and every month of an hourly plan.

Like solver.verify.fleet it reads the instance and the plan only, never the program:

1. The plan has the 24 UTC hours, once each.
2. Each hour: its interactive pools serve the hour's warm demand (demand plus the
   autoscaler's headroom, models.operations.time_demand.warm_grid) in every scenario the policy
   names, checked by the static verifier on the hour's instance
   (models.operations.time_demand.hour_instance): physics recomputed, max-flow per scenario,
   replica loss, supply. Its violations carry the hour (solver.program.row_names.timed_name):
   `demand[none,chat,us-east]@t07`.
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

from models.operations.failover_budget import (
    budget_minutes_per_month,
    budgeted_losses,
    expected_burn_minutes_per_year,
)
from models.operations.pricing_tiers import poisson_quantile, spot_down_fraction
from models.operations.scenarios import ScenarioKind, failure_scenarios
from models.operations.site import node_gpus
from models.operations.time_demand import (
    failover_window_s,
    hour_instance,
    interactive_grid,
    warm_grid,
)
from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.plan.time_records import Hour
from solver.program.row_names import ConfigsPerPoolRow, DemandRow, GpuSupplyRow, timed_name
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
from solver.verify.hour_figures import peak_fleet, stated_hour_figures, stop_before_arithmetic
from solver.verify.hour_idle import check_idle_fraction
from solver.verify.hour_reports import stated_report_figures
from solver.verify.hour_rows import check_binding_times, with_binding_times
from solver.verify.hour_scenarios import check_hour_table, check_peak_table
from solver.verify.months import check_months, hour_checks, unmatched_time
from solver.verify.totals import money_close
from solver.verify.verdict import agrees

GPU_TOLERANCE = 1e-6


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
        static = _check_hour_capacity(instance, hour, warm, cache, budget_used)
        violations += check_hour_table(instance, hour, index, warm, cache)
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
    violations += check_months(instance, plan, partial(verify_hours, walked=True), checks)
    _check_stated_budgets(instance, plan, budget_used, violations)
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
        gpus_bought=bought,
    )


def _static(alone: Instance, pools: tuple[ReplicaPool, ...], cache: dict) -> Verification:
    """The static verifier on one hour's instance and pools (hours with the same pools
    and rates are checked once)."""
    key = (tuple(sorted((w.name, str(w.demand)) for w in alone.workloads)), pools)
    if key not in cache:
        cache[key] = verify(alone, Plan(replicas=pools))
    return cache[key]


def _serving(hour: Hour, serving: set[str]) -> tuple[ReplicaPool, ...]:
    """The hour's pools serving `serving` (a group's `workload` is 'a+b': it serves each)."""
    return tuple(p for p in hour.pools if serving & set(p.workloads))


def warm_shortfalls(
    instance: Instance, hour: Hour, cache: dict | None = None
) -> dict[tuple[str, str], tuple[float, float]]:
    """(scenario, workload) -> (warm-rate demand, requests/s the warm pools serve within
    reach) for every region loss, in one hour."""
    rates = {key: series[hour.hour] for key, series in warm_grid(instance).items()}
    alone = hour_instance(instance, rates)
    serving = {w.name for w in alone.workloads}
    if not serving:
        return {}
    pools = _less_spot_down(instance, hour, _serving(hour, serving), [])
    result = _static(alone, pools, {} if cache is None else cache)
    regions = {f.name for f in failure_scenarios(instance) if f.kind is ScenarioKind.REGION}
    return {
        (c.scenario, c.workload): (c.demand_requests_per_s, c.servable_requests_per_s)
        for c in result.checks
        if c.scenario in regions
    }


def _check_hour_capacity(
    instance: Instance,
    hour: Hour,
    warm: dict[tuple[str, str], tuple[float, ...]],
    cache: dict,
    budget_used: dict[tuple[str, str], list[tuple[int, float, float]]],
) -> Verification:
    """The static verifier on the hour's instance and its interactive pools; region
    losses of workloads with an availability target may lean on started replicas and
    the error budget (step 6)."""
    rates = {key: series[hour.hour] for key, series in warm.items()}
    alone = hour_instance(instance, rates)
    serving = {w.name for w in alone.workloads}
    batch = {w.name for w in instance.workloads if w.is_batch}
    stray = [p for p in hour.pools if not serving & set(p.workloads) and p.workload not in batch]
    spot_problems: list[Violation] = []
    pools = _less_spot_down(instance, hour, _serving(hour, serving), spot_problems)
    result = _static(alone, pools, cache) if serving else None
    violations = list(result.violations) if result else []
    if result is not None:
        violations = _failover_checks(instance, alone, hour, pools, result, cache, budget_used)
    violations += spot_problems
    violations += [
        Violation(
            requirement=f"replicas[{p.workload},{p.key},{p.region}]",
            message=f"{p.count} replicas run for a workload with no demand this hour",
        )
        for p in stray
        if p.count
    ]
    return Verification(
        ok=not violations,
        violations=tuple(violations),
        cost_per_month=0.0,
        total_gpus=result.total_gpus if result else 0,
        checks=_after_starts(alone, hour, pools, result, cache) if result else (),
    )


def _after_starts(
    alone: Instance,
    hour: Hour,
    pools: tuple[ReplicaPool, ...],
    warm: Verification,
    cache: dict,
) -> tuple[ScenarioCheck, ...]:
    """The hour's checks, each region loss's servable counted with the replicas the hour
    starts after it (warm + started, as the plan's utilisation table counts them; the
    budget of step 6 is charged on the warm survivors' shortfall alone)."""
    checks = list(warm.checks)
    for scenario in dict.fromkeys(s.scenario for s in hour.failover_starts):
        started = tuple(s.pool for s in hour.failover_starts if s.scenario == scenario)
        helped = {p.workload for p in started}
        after = {(c.scenario, c.workload): c for c in _static(alone, pools + started, cache).checks}
        checks = [
            after.get((c.scenario, c.workload), c)
            if c.scenario == scenario and c.workload in helped
            else c
            for c in checks
        ]
    return tuple(checks)


def _less_spot_down(
    instance: Instance,
    hour: Hour,
    pools: tuple[ReplicaPool, ...],
    violations: list[Violation],
) -> tuple[ReplicaPool, ...]:
    """The pools less their spot replicas down at once with the policy's confidence
    (step 8): u = lambda T / (1 + lambda T), T = replica start + scale detection, and
    Q(n u, a) replicas down (Poisson quantile), recomputed here."""
    if not hour.spot_pools:
        return pools
    confidence = instance.policy.spot_confidence
    down: dict[tuple[str, str, str], int] = {}
    for entry in hour.spot_pools:
        key = (entry.workload, entry.region, entry.configuration)
        pool = next((p for p in pools if (p.workload, p.region, p.key) == key), None)
        offer = instance.region(entry.region).supply.get(pool.gpu) if pool else None
        name = timed_name(f"spot[{entry.workload},{entry.configuration},{entry.region}]", hour.hour)
        if confidence is None or pool is None or offer is None or not offer.spot_price_per_gpu_hour:
            violations.append(
                Violation(
                    requirement=name,
                    message="spot replicas for an interactive pool need policy.spot_confidence, "
                    "a running pool and a spot price on offer",
                )
            )
            continue
        if entry.replicas > pool.count:
            violations.append(
                Violation(
                    requirement=name,
                    message=f"{entry.replicas} spot replicas in a pool of {pool.count}",
                )
            )
        restart_s = instance.replica_start_s(pool.gpu) + instance.policy.scale_detection_s
        u = spot_down_fraction(offer.spot_interruptions_per_hour, restart_s)
        down[key] = poisson_quantile(min(entry.replicas, pool.count) * u, confidence)
    thinned = {(w, r) for (w, r, _), lost in down.items() if lost}  # weights: full strength
    reduced = []
    for p in pools:
        lost = down.get((p.workload, p.region, p.key), 0)
        if (p.workload, p.region) in thinned and not lost:
            p = p.model_copy(update={"routing_weight": None})
        if lost:
            count = max(p.count - lost, 0)
            p = p.model_copy(
                update={
                    "count": count,
                    "gpus": count * p.replica_gpus,
                    "requests_per_s_per_replica": None,
                    "cost_per_month": None,
                    "routing_weight": None,
                    "capacity_units_per_replica": None,
                    "limit": None,
                }
            )
        reduced.append(p)
    return tuple(reduced)


def _failover_checks(
    instance: Instance,
    alone: Instance,
    hour: Hour,
    pools: tuple[ReplicaPool, ...],
    warm: Verification,
    cache: dict,
    budget_used: dict[tuple[str, str], list[tuple[int, float, float]]],
) -> list[Violation]:
    """The warm verification's violations, with each region loss of a workload with an
    availability target judged after the start (warm + started pools) and by its
    budget instead (step 6)."""
    window_s = failover_window_s(instance)
    months = instance.policy.hours_per_month
    actual = interactive_grid(instance)
    risk = {r.name: r.failure_probability_per_year for r in instance.regions}
    violations = list(warm.violations)
    for f in failure_scenarios(instance):
        if f.kind is not ScenarioKind.REGION or f.lost_region is None:
            continue
        started = tuple(s.pool for s in hour.failover_starts if s.scenario == f.name)
        violations += _started_within_cap(instance, hour, f.name, started)
        for workload in alone.workloads:
            w = workload.name
            if workload.slo.availability is None:
                continue
            prefix = DemandRow(f.name, w, "").name()[:-1]
            mine = [v for v in violations if v.requirement.startswith(prefix)]
            check = next((c for c in warm.checks if (c.scenario, c.workload) == (f.name, w)), None)
            if check is None:
                continue
            average = sum(sum(r) for k, r in actual.items() if k[0] == w) / 24
            shortfall = max(check.demand_requests_per_s - check.servable_requests_per_s, 0.0)
            minutes = shortfall * window_s / (60.0 * average) if average > 0 else 0.0
            budget_used.setdefault((f.name, w), []).append((hour.hour, shortfall, minutes))
            if not mine:
                continue
            violations = [v for v in violations if v not in mine]
            m = budgeted_losses(risk[f.lost_region], months)
            budget = budget_minutes_per_month(workload.slo.availability, months)
            if m * minutes > budget * (1 + 1e-6) + 1e-9:
                violations.append(
                    Violation(
                        requirement=f"error_budget[{f.name},{w}]",
                        message=f"the warm survivors fall {shortfall:.2f} requests/s short "
                        f"for {window_s:g} s: {m:g} x {minutes:.2f} budget minutes; the "
                        f"month's budget is {budget:.2f}",
                    )
                )
            after = _static(alone, pools + started, cache)
            for v in after.violations:
                if v.requirement.startswith(prefix) or (
                    v.requirement.startswith((GpuSupplyRow.family, ConfigsPerPoolRow.family))
                    and v not in warm.violations
                ):
                    violations.append(
                        Violation(
                            requirement=v.requirement,
                            message=f"{v.message} (with the {sum(p.count for p in started)} "
                            f"replicas started after {f.name})",
                        )
                    )
    return violations


def _started_within_cap(
    instance: Instance, hour: Hour, scenario: str, started: tuple[ReplicaPool, ...]
) -> list[Violation]:
    """Started GPUs are paid on demand: with the hour's own on-demand GPUs they stay
    within `max_on_demand_gpus` where it is given."""
    gpus: dict[tuple[str, str], int] = defaultdict(int)
    for pool in started:
        gpus[(pool.region, pool.gpu)] += pool.count * pool.replica_gpus
    found = []
    for (r, g), n in gpus.items():
        supply = instance.region(r).supply.get(g)
        cap = supply.max_on_demand_gpus if supply else None
        row = next((x for x in hour.gpus if (x.region, x.gpu) == (r, g)), None)
        in_use = row.on_demand if row else 0.0
        if cap is not None and n + in_use > cap + GPU_TOLERANCE:
            found.append(
                Violation(
                    requirement=timed_name(f"start_on_demand[{scenario},{r},{g}]", hour.hour),
                    message=f"{n} GPUs started after {scenario} and {in_use:g} on demand; "
                    f"max_on_demand_gpus is {cap}",
                )
            )
    return found


def _check_stated_budgets(
    instance: Instance,
    plan: Plan,
    budget_used: dict[tuple[str, str], list[tuple[int, float, float]]],
    violations: list[Violation],
) -> None:
    """Each stated error-budget row against its recomputation (step 6): the worst hour
    (most minutes, the earliest on a tie), its shortfall and minutes, the start window,
    the month's budget, m, the replicas started then, and lambda x the mean minutes."""
    months = instance.policy.hours_per_month
    workloads = {w.name: w for w in instance.workloads}
    risk = {r.name: r.failure_probability_per_year for r in instance.regions}
    for index, row in enumerate(plan.error_budget_minutes_used):
        hours = budget_used.get((row.scenario, row.workload))
        where = f"error_budget_minutes_used[{index}]"
        if not hours:
            violations.append(
                Violation(
                    requirement=f"error_budget[{row.scenario},{row.workload}]",
                    message=f"states {row.budget_minutes_used:.4f} budget minutes used at "
                    "its worst hour; recomputed none",
                )
            )
            continue
        worst, shortfall, minutes = max(hours, key=lambda h: (h[2], -h[0]))
        lost = row.scenario.removeprefix("lose=")
        probability = risk.get(lost)
        started = sum(
            start.pool.count
            for hour in plan.hours
            if hour.hour == worst
            for start in hour.failover_starts
            if (start.scenario, start.pool.workload) == (row.scenario, row.workload)
        )
        availability = workloads[row.workload].slo.availability
        burn = (
            None
            if probability is None
            else expected_burn_minutes_per_year(probability, [h[2] for h in hours])
        )
        recomputed = {
            "worst_hour": worst,
            "shortfall_rps": shortfall,
            "budget_minutes_used": minutes,
            "failover_start_s": failover_window_s(instance),
            "budget_minutes": budget_minutes_per_month(availability, months)
            if availability is not None
            else None,
            "losses_per_month": budgeted_losses(probability, months),
            "started_replicas": started,
            "expected_burn_minutes_per_year": burn,
        }
        for name, value in recomputed.items():
            stated = getattr(row, name)
            if not agrees(stated, value):
                violations.append(
                    Violation(
                        requirement=f"{where}.{name}",
                        message=f"error budget of {row.workload} after {row.scenario}: "
                        f"states {stated}; recomputed {value}",
                    )
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
