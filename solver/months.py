"""Procurement over `policy.horizon_months`: the hourly plan's GPU need grown month by
month, committed a lead time ahead (models.procurement.procurement_plan).

Need. Month m scales every pool of workload w in every hour by its growth
(1 + g_w)^m (models.procurement.growth_factors) and rounds up to whole replicas:
n_(m,h) = ceil(count_h x (1 + g_w)^m) x GPUs per replica, summed per GPU offer. This
scales the month-0 layout instead of re-solving each month (the configurations chosen
stay; pooling gains of larger pools are not taken, so later months are slightly
over-provisioned: an upper bound on their cost).

Commitments per offer with a reserved price: the non-decreasing committed counts that
minimise the horizon's cost, each ordered `lead_time_months` before it serves (pool
adjacent violators over the months' newsvendor bases). Offers without a reserved price
pay on demand for every GPU-hour. Dedicated batch GPUs grow the same way.
"""

import math

from models.instance import Instance
from models.procurement import growth_factors, procurement_plan
from solver.backends import Backend
from solver.periods import TimeProgram
from solver.plan import Month, MonthOffer, Plan
from solver.settings import SolveSettings

HOURS_PER_DAY = 24


def monthly_need(instance: Instance, plan: Plan, month: int) -> dict[tuple[str, str], list[float]]:
    """(region, gpu) -> GPUs needed in each UTC hour of month `month`."""
    growth = {w.name: instance.monthly_growth(w.name) for w in instance.workloads}
    horizon = month + 1
    need: dict[tuple[str, str], list[float]] = {}
    for hour in plan.hours:
        for pool in hour.pools:
            factor = growth_factors(growth[pool.workload], horizon)[month]
            gpus = math.ceil(round(pool.count * factor, 9)) * pool.replica_gpus
            row = need.setdefault((pool.region, pool.gpu), [0.0] * HOURS_PER_DAY)
            row[hour.hour] += gpus
    return need


def with_months(
    instance: Instance,
    program: TimeProgram,
    plan: Plan,
    backend: Backend,
    settings: SolveSettings,
) -> Plan:
    """The plan with `months` filled in when the instance gives a horizon."""
    del backend, settings  # scaled, not re-solved (see the module text)
    horizon = instance.policy.horizon_months
    if horizon is None:
        return plan
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    needs = [monthly_need(instance, plan, m) for m in range(horizon)]
    offers = {(o.region, o.gpu): o for o in program.offers}
    rows: list[list[MonthOffer]] = [[] for _ in range(horizon)]
    for key in sorted({k for need in needs for k in need}):
        offer = offers[key]
        series = [need.get(key, [0.0] * HOURS_PER_DAY) for need in needs]
        owned = [[max(n - offer.existing, 0.0) for n in hours] for hours in series]
        if offer.reserved_price_per_gpu_hour is not None:
            months = procurement_plan(
                owned,
                offer.reserved_price_per_gpu_hour,
                offer.on_demand_price_per_gpu_hour,
                instance.policy.lead_time_months,
                instance.policy.hours_per_month,
                max_on_demand_gpus=float(offer.max_on_demand_gpus),
            )
            for m, month in enumerate(months):
                rows[m].append(
                    MonthOffer(
                        region=key[0],
                        gpu=key[1],
                        peak_need_gpus=month.peak_need_gpus,
                        committed_gpus=month.committed_gpus,
                        ordered_gpus=month.ordered_gpus,
                        on_demand_gpu_hours=month.on_demand_gpu_hours,
                        cost=month.cost,
                    )
                )
            continue
        for m, hours in enumerate(owned):
            gpu_hours = days * math.fsum(hours)
            rows[m].append(
                MonthOffer(
                    region=key[0],
                    gpu=key[1],
                    peak_need_gpus=max(hours),
                    committed_gpus=0.0,
                    ordered_gpus=0.0,
                    on_demand_gpu_hours=gpu_hours,
                    cost=gpu_hours * offer.on_demand_price_per_gpu_hour,
                )
            )
    factors = growth_factors(instance.policy.monthly_growth, horizon)
    months = tuple(
        Month(
            month=m,
            growth_factor=factors[m],
            cost_per_month=math.fsum(row.cost for row in rows[m]),
            offers=tuple(rows[m]),
        )
        for m in range(horizon)
    )
    return plan.model_copy(update={"months": months})
