"""The independent verifier in time: every hour and every month of an hourly plan.

Like solver.verify it reads the instance and the plan only (models/, the plan schema,
the row names and the static verifier), never the program:

1. The plan has the 24 UTC hours, once each.
2. Each hour: its interactive pools serve the hour's warm demand (demand plus the
   autoscaler's headroom, models.time_demand.warm_grid) in every scenario the policy
   names, checked by the static verifier on the hour's instance
   (models.time_demand.hour_instance): physics recomputed, max-flow per scenario,
   replica loss, supply. Its violations carry the hour: `demand[none,chat,us-east]@t07`.
3. Each hour's GPUs per offer: the pools' GPUs (batch included) equal `used`;
   used <= existing + max_gpus; existing + reserved + on-demand + spot covers used;
   reserved <= committed (`committed <= use` of the commitment is its own business: a
   committed GPU may idle); on-demand <= max_on_demand_gpus.
4. Cost: each hour's cost recomputed (committed x reserved price + on-demand x price +
   spot x spot price), the month = hours_per_month / 24 x the day's sum.
5. Months: committed counts never fall, each month's cost is its offers' sum and each
   offer's cost is days x 24 x reserved x committed + on-demand price x on-demand hours.
"""

import math
from collections import defaultdict

from models.instance import Instance
from models.time_demand import hour_instance, warm_grid
from solver.plan import Hour, Plan
from solver.row_names import GpuSupplyRow
from solver.verify import COST_TOLERANCE, ScenarioCheck, Verification, Violation, verify

HOURS_PER_DAY = 24
GPU_TOLERANCE = 1e-6


def verify_any(instance: Instance, plan: Plan) -> Verification:
    """Hour by hour for an hourly plan, else the static verifier."""
    return verify_hours(instance, plan) if plan.hours else verify(instance, plan)


def verify_hours(instance: Instance, plan: Plan) -> Verification:
    """Check every hour and month of an hourly plan; list every violation."""
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
    peak_gpus = 0
    for hour in plan.hours:
        mark = f"@t{hour.hour:02d}"
        static = _check_hour_capacity(instance, hour, warm)
        violations += [
            Violation(
                requirement=v.requirement + mark, message=f"UTC hour {hour.hour}: {v.message}"
            )
            for v in static.violations
        ]
        checks += [c.model_copy(update={"scenario": c.scenario + mark}) for c in static.checks]
        cost, used = _check_hour_gpus(instance, hour, committed, violations)
        cost_per_day += cost
        peak_gpus = max(peak_gpus, used)
    for (r, g), count in committed.items():
        supply = instance.region(r).supply.get(g)
        if supply is None or supply.reserved_price_per_gpu_hour is None:
            violations.append(
                Violation(requirement=f"committed[{r},{g}]", message="no reserved price on offer")
            )
        elif count > supply.max_gpus + GPU_TOLERANCE:
            violations.append(
                Violation(
                    requirement=f"committed[{r},{g}]",
                    message=f"commits {count:g} GPUs; max_gpus is {supply.max_gpus}",
                )
            )
    cost = instance.policy.hours_per_month / HOURS_PER_DAY * cost_per_day
    if plan.cost_per_month is not None and abs(plan.cost_per_month - cost) > COST_TOLERANCE:
        violations.append(
            Violation(
                requirement="cost",
                message=f"states ${plan.cost_per_month:,.2f}/month; its hours cost "
                f"${cost:,.2f}/month at the instance's prices",
            )
        )
    _check_months(instance, plan, violations)
    return Verification(
        ok=not violations,
        violations=tuple(violations),
        cost_per_month=cost,
        total_gpus=peak_gpus,
        checks=tuple(checks),
    )


def _check_hour_capacity(
    instance: Instance, hour: Hour, warm: dict[tuple[str, str], tuple[float, ...]]
) -> Verification:
    """The static verifier on the hour's instance and its interactive pools."""
    rates = {key: series[hour.hour] for key, series in warm.items()}
    alone = hour_instance(instance, rates)
    serving = {w.name for w in alone.workloads}
    batch = {w.name for w in instance.workloads if w.is_batch}
    stray = [p for p in hour.pools if p.workload not in serving and p.workload not in batch]
    pools = tuple(p for p in hour.pools if p.workload in serving)
    result = verify(alone, Plan(replicas=pools)) if serving else None
    violations = list(result.violations) if result else []
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
        checks=result.checks if result else (),
    )


def _check_hour_gpus(
    instance: Instance,
    hour: Hour,
    committed: dict[tuple[str, str], float],
    violations: list[Violation],
) -> tuple[float, int]:
    """(the hour's recomputed cost, GPUs used) with the per-offer checks of step 3."""
    mark = f"@t{hour.hour:02d}"
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
        existing = region.existing.get(g, 0)
        available = existing + (supply.max_gpus if supply else 0)
        name = f"[{r},{g}]{mark}"
        if n > available:
            violations.append(
                Violation(
                    requirement=GpuSupplyRow(r, g).name() + mark,
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
        cost += row.on_demand * instance.price_per_gpu_hour(r, g)
        if row.spot:
            if supply is None or supply.spot_price_per_gpu_hour is None:
                violations.append(
                    Violation(requirement="spot" + name, message="no spot price on offer")
                )
            else:
                cost += row.spot * supply.spot_price_per_gpu_hour
    if abs(cost - hour.cost_per_hour) > COST_TOLERANCE:
        violations.append(
            Violation(
                requirement=f"cost{mark}",
                message=f"states ${hour.cost_per_hour:,.4f}/hour; recomputed ${cost:,.4f}/hour",
            )
        )
    return cost, sum(used.values())


def _check_months(instance: Instance, plan: Plan, violations: list[Violation]) -> None:
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    previous: dict[tuple[str, str], float] = {}
    for month in plan.months:
        total = math.fsum(offer.cost for offer in month.offers)
        if abs(total - month.cost_per_month) > COST_TOLERANCE:
            violations.append(
                Violation(
                    requirement=f"month[{month.month}]",
                    message=f"states ${month.cost_per_month:,.2f}; its offers sum to ${total:,.2f}",
                )
            )
        for offer in month.offers:
            key = (offer.region, offer.gpu)
            name = f"month[{month.month},{offer.region},{offer.gpu}]"
            if offer.committed_gpus < previous.get(key, 0.0) - GPU_TOLERANCE:
                violations.append(Violation(requirement=name, message="the committed count falls"))
            previous[key] = offer.committed_gpus
            supply = instance.region(offer.region).supply.get(offer.gpu)
            reserved = supply.reserved_price_per_gpu_hour if supply else None
            cost = (
                offer.on_demand_gpu_hours * instance.price_per_gpu_hour(offer.region, offer.gpu)
                + days * HOURS_PER_DAY * (reserved or 0.0) * offer.committed_gpus
            )
            if abs(cost - offer.cost) > COST_TOLERANCE * (1.0 + abs(cost) * 1e-3):
                violations.append(
                    Violation(
                        requirement=name,
                        message=f"states ${offer.cost:,.2f}; recomputed ${cost:,.2f}",
                    )
                )
