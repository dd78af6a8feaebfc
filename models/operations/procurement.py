"""Procurement over months: demand growth, commitments ordered a lead time ahead, and
the on-demand top-up, as pure arithmetic over a given GPU need per month.

Growth. Demand in month m (0 = the instance as written) is d x (1 + g)^m, g the
monthly growth of the workload (`workloads[].monthly_growth`, else
`policy.monthly_growth`). GPU need is not linear in demand (replicas are whole and
pools queue less as they grow), so the program sizes each month's need; this module
takes that need, per month and hour of the representative day, as given.
(`month_instance` is the grown instance itself: solver.time.months plans every month's
need with the program, and the verifier checks each month against it.)

Commitments. A committed GPU, once it serves, is held to the end of the horizon (terms
are a year or more), so the committed count c_m never falls. It is ordered
`lead_time_months` = L earlier: months m < L keep the count already committed
(`initial_committed_gpus`), and the order placed in month m - L is c_m - c_(m-1).
Month m costs

    f_m(c) = days_m x [r c W + p sum_h w_h max(n_(m,h) - c, 0)]       (convex in c)

(`models.operations.pricing_tiers.daily_cost`). Minimising sum_m f_m(c_m) over non-decreasing c
with c_m >= l_m (l_m = initial commitment, and the peak less `max_on_demand_gpus`) is
a separable convex problem on a chain: pool-adjacent-violators solves it exactly.
Each month alone takes its newsvendor base (`pricing_tiers.committed_base`); where an
earlier month wants more than a later one the two are merged into one block whose
base is the newsvendor of their hours together, until the sequence rises. With growing
demand no merge happens and each month takes its own base. (`procurement_plan` is the
arithmetic of a given need; the solver now plans months by re-solving, solver.time.months.)
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.operations.pricing_tiers import committed_base, daily_cost
from models.schema.instance import Instance
from models.schema.quantities import HOURS_PER_MONTH, counted
from models.schema.traffic import HOURS_PER_DAY


def growth_factors(monthly_growth: float, horizon_months: int) -> tuple[float, ...]:
    """(1 + g)^m for months m = 0 .. horizon - 1.

    Raises:
        ValueError: g <= -1 or a horizon below one month.
    """
    if monthly_growth <= -1:
        raise ValueError(f"monthly_growth must be > -1, got {monthly_growth}")
    if horizon_months < 1:
        raise ValueError(f"horizon_months must be >= 1, got {horizon_months}")
    return tuple((1 + monthly_growth) ** month for month in range(horizon_months))


def month_factors(instance: Instance, month: int) -> dict[str, float]:
    """Workload -> (1 + g_w)^month (g_w > -1, checked by the schema)."""
    return {w.name: (1 + instance.monthly_growth(w.name)) ** month for w in instance.workloads}


def grown_instance(instance: Instance, factors: dict[str, float]) -> Instance:
    """The instance with each workload's demand times its factor (requests_per_day or
    peak_requests_per_s per region; profile, tokens and SLOs unchanged)."""
    workloads = []
    for workload in instance.workloads:
        factor = factors.get(workload.name, 1.0)
        demand = {}
        for region, rate in workload.demand.items():
            if rate.requests_per_day is not None:
                update = {"requests_per_day": rate.requests_per_day * factor}
            else:
                update = {"peak_requests_per_s": rate.peak_requests_per_s * factor}
            demand[region] = rate.model_copy(update=update)
        workloads.append(workload.model_copy(update={"demand": demand}))
    return instance.model_copy(update={"workloads": workloads})


def month_instance(instance: Instance, month: int) -> Instance:
    """Month `month` of the horizon: every workload grown by its monthly growth."""
    return grown_instance(instance, month_factors(instance, month))


@dataclass(frozen=True)
class MonthPlan:
    """One month of one GPU offer: what is committed, ordered and bought on demand."""

    month: int
    peak_need_gpus: float
    committed_gpus: float
    """c_m: committed GPUs serving this month."""
    ordered_gpus: float
    """Ordered this month, to serve from month + lead time."""
    on_demand_gpu_hours: float
    """GPU-hours above the commitment this month."""
    cost: float
    """f_m(c_m): commitment plus on demand, USD for the month."""


def procurement_plan(
    need_gpus_by_month: Sequence[Sequence[float]],
    reserved_price_per_gpu_hour: float,
    on_demand_price_per_gpu_hour: float,
    lead_time_months: int = 0,
    hours_per_month: float = HOURS_PER_MONTH,
    initial_committed_gpus: float = 0.0,
    weight_hours: Sequence[float] | None = None,
    max_on_demand_gpus: float | None = None,
) -> tuple[MonthPlan, ...]:
    """Committed counts, orders and monthly cost (see the module text).

    Args:
        need_gpus_by_month: per month, GPUs needed in each hour (or period) of its
            representative day.
        reserved_price_per_gpu_hour, on_demand_price_per_gpu_hour: r and p.
        lead_time_months: L, months from order to service.
        hours_per_month: month length (days_m = hours_per_month / 24).
        initial_committed_gpus: committed before month 0 (still held).
        weight_hours: hours each entry of a day stands for; default 1 each.
        max_on_demand_gpus: at most this many GPUs above the commitment in any hour.

    Raises:
        ValueError: no months, a negative lead time or initial commitment, or a cap that
            the months before the lead time cannot meet with the initial commitment.
    """
    if not need_gpus_by_month:
        raise ValueError("need_gpus_by_month is empty")
    if lead_time_months < 0 or initial_committed_gpus < 0:
        raise ValueError(
            "lead_time_months and initial_committed_gpus must be >= 0, got "
            f"{lead_time_months}, {initial_committed_gpus}"
        )
    months = len(need_gpus_by_month)
    weights = [
        list(weight_hours) if weight_hours is not None else [1.0] * len(needs)
        for needs in need_gpus_by_month
    ]
    lower = [
        max(
            initial_committed_gpus,
            max(needs, default=0.0) - max_on_demand_gpus if max_on_demand_gpus is not None else 0,
        )
        for needs in need_gpus_by_month
    ]
    frozen = min(lead_time_months, months)
    for month in range(frozen):
        if lower[month] > initial_committed_gpus:
            raise ValueError(
                f"month {month}: the peak needs {lower[month]:g} committed GPUs under the "
                f"on-demand cap, but orders take {counted(lead_time_months, 'month')} and only "
                f"{initial_committed_gpus:g} are committed"
            )
    committed = [initial_committed_gpus] * frozen + _pool_adjacent(
        need_gpus_by_month[frozen:],
        weights[frozen:],
        lower[frozen:],
        reserved_price_per_gpu_hour,
        on_demand_price_per_gpu_hour,
    )
    orders = [0.0] * months
    for month in range(frozen, months):
        previous = committed[month - 1] if month > 0 else initial_committed_gpus
        orders[month - lead_time_months] = float(committed[month] - previous)
    days = hours_per_month / HOURS_PER_DAY
    return tuple(
        MonthPlan(
            month=month,
            peak_need_gpus=max(needs, default=0.0),
            committed_gpus=committed[month],
            ordered_gpus=orders[month],
            on_demand_gpu_hours=days
            * math.fsum(
                w * max(n - committed[month], 0.0)
                for n, w in zip(needs, weights[month], strict=True)
            ),
            cost=days
            * daily_cost(
                committed[month],
                needs,
                reserved_price_per_gpu_hour,
                on_demand_price_per_gpu_hour,
                weights[month],
            ),
        )
        for month, needs in enumerate(need_gpus_by_month)
    )


def _pool_adjacent(
    needs: Sequence[Sequence[float]],
    weights: Sequence[Sequence[float]],
    lower: Sequence[float],
    reserved: float,
    on_demand: float,
) -> list[float]:
    """Non-decreasing c minimising sum_m f_m(c_m) with c_m >= lower_m (PAV)."""
    blocks: list[tuple[list[int], float]] = []

    def base(members: list[int]) -> float:
        hours = [n for m in members for n in needs[m]]
        hour_weights = [w for m in members for w in weights[m]]
        level = committed_base(hours, reserved, on_demand, hour_weights).committed_gpus
        return max(level, max(lower[m] for m in members))

    for month in range(len(needs)):
        blocks.append(([month], base([month])))
        while len(blocks) > 1 and blocks[-2][1] > blocks[-1][1]:
            last = blocks.pop()
            first = blocks.pop()
            members = first[0] + last[0]
            blocks.append((members, base(members)))
    return [level for members, level in blocks for _ in members]
