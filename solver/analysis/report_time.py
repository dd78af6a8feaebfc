"""What the HTML report draws for an hourly plan, from the instance and the plan's records:

- the day: per UTC hour, the interactive demand (requests/s, every workload and region,
  `models.operations.time_periods.demand_grid`), the warm capacity the hour's interactive
  pools carry at the SLO (sum of count x requests_per_s_per_replica) and the GPUs in use
  by how they are paid (owned, reserved, on demand, spot: `Hour.gpus`), against the GPUs
  committed;
- the months per region: each month's cost summed over the region's offers
  (`MonthOffer.cost`), with each month's total and the horizon's;
- the cost split of the month (month 0) per region and GPU type: committed GPUs x reserved
  price x hours_per_month, and days x the day's on-demand and spot GPU-hours x their
  prices (days = hours_per_month / 24). The three add up to the plan's cost_per_month.
"""

from dataclasses import dataclass, field

from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from solver.plan.schema import Plan


@dataclass(frozen=True)
class DayChart:
    """The 24 UTC hours of an hourly plan."""

    demand_rps: list[float]
    warm_capacity_rps: list[float]
    owned_gpus: list[float]
    reserved_gpus: list[float]
    on_demand_gpus: list[float]
    spot_gpus: list[float]
    committed_gpus: float


@dataclass(frozen=True)
class MonthsByRegion:
    """$ per month and region over the horizon."""

    regions: list[str]
    months: list[int]
    cost: list[list[float]]
    """cost[i][j]: month months[i], region regions[j]."""
    month_totals: list[float]
    horizon_total: float
    by_region_totals: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class CostSplitRow:
    """One offer's month: reserved, on demand and spot, USD."""

    region: str
    gpu: str
    reserved: float
    on_demand: float
    spot: float


def day_chart(instance: Instance, plan: Plan) -> DayChart | None:
    """The day of an hourly plan (None for a single-period plan)."""
    if not plan.hours:
        return None
    from models.operations.time_periods import demand_grid  # hourly plans only (issue 19)

    interactive = {w.name for w in instance.workloads if not w.is_batch}
    grid = demand_grid(instance)
    hours = sorted(plan.hours, key=lambda h: h.hour)
    demand = [
        sum(rates[h.hour] for (w, _), rates in grid.items() if w in interactive) for h in hours
    ]
    capacity = [
        sum(
            p.count * (p.requests_per_s_per_replica or 0.0)
            for p in h.pools
            if p.workload in interactive
        )
        for h in hours
    ]
    return DayChart(
        demand_rps=demand,
        warm_capacity_rps=capacity,
        owned_gpus=[float(sum(g.existing for g in h.gpus)) for h in hours],
        reserved_gpus=[sum(g.reserved for g in h.gpus) for h in hours],
        on_demand_gpus=[sum(g.on_demand for g in h.gpus) for h in hours],
        spot_gpus=[sum(g.spot for g in h.gpus) for h in hours],
        committed_gpus=sum(c.committed_gpus for c in plan.committed),
    )


def months_by_region(plan: Plan) -> MonthsByRegion | None:
    """The horizon's months per region (None without months)."""
    if not plan.months:
        return None
    regions = list(dict.fromkeys(o.region for m in plan.months for o in m.offers))
    cost = [[sum(o.cost for o in m.offers if o.region == r) for r in regions] for m in plan.months]
    return MonthsByRegion(
        regions=regions,
        months=[m.month for m in plan.months],
        cost=cost,
        month_totals=[m.cost_per_month for m in plan.months],
        horizon_total=plan.horizon_cost
        if plan.horizon_cost is not None
        else sum(m.cost_per_month for m in plan.months),
        by_region_totals=[sum(row[j] for row in cost) for j in range(len(regions))],
    )


def cost_split(instance: Instance, plan: Plan) -> list[CostSplitRow]:
    """The month's cost per offer split reserved / on demand / spot (see the module text)."""
    if not plan.hours:
        return []
    hours_per_month = instance.policy.hours_per_month
    days = hours_per_month / HOURS_PER_DAY
    reserved = {(c.region, c.gpu): c for c in plan.committed}
    keys = list(
        dict.fromkeys([*reserved, *((g.region, g.gpu) for h in plan.hours for g in h.gpus)])
    )
    rows = []
    for region, gpu in keys:
        supply = instance.region(region).supply.get(gpu)
        c = reserved.get((region, gpu))
        committed = c.committed_gpus * c.reserved_price_per_gpu_hour * hours_per_month if c else 0.0
        used = [g for h in plan.hours for g in h.gpus if (g.region, g.gpu) == (region, gpu)]
        on_demand_price = instance.price_per_gpu_hour(region, gpu)
        spot_price = (supply.spot_price_per_gpu_hour if supply else None) or 0.0
        rows.append(
            CostSplitRow(
                region=region,
                gpu=gpu,
                reserved=committed,
                on_demand=days * sum(g.on_demand for g in used) * on_demand_price,
                spot=days * sum(g.spot for g in used) * spot_price,
            )
        )
    return [r for r in rows if r.reserved or r.on_demand or r.spot]
