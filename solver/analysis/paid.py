"""What a plan pays for, as against what it uses: the GPUs and servers behind its bill.

A plan prices GPUs bought (in whole servers with `policy.buy_unit: node`, so a pool of 5
GPUs pays for 8) and owned GPUs at nothing (already paid for). A ratio over the bill
divides by what the bill covers, never by GPUs in use:

    gpus_paid = sum over (region, GPU type) of purchased + min(used, existing)

the bought GPUs plus the owned ones the plan runs on (owned GPUs left idle are neither
used nor paid for by this plan). A fleet bought at one price p then blends to exactly p
per GPU-hour, whatever the server rounding.

An hourly plan pays by the hour: its GPU-hours paid a month are

    gpu_hours_paid = hours_per_month / 24 x sum over the day's hours h of
                     (committed GPUs + sum over offers of owned in use + on demand + spot)

every committed GPU every hour (used or not), the rest as each hour holds them, so a
fleet rented at one price p blends to p too (its peak GPUs held all month would not).

A plan of months pays each month's own hours and commitments (`month_gpu_hours_paid`),
and month m's GPUs paid are its offers' at the most GPUs its hours run,
sum of models.operations.site.gpus_paid(ceil(peak need), existing, unit)
(`month_gpus_paid`; month 0's are the plan's own table).
"""

import math

from models.operations.site import gpus_paid as offer_paid
from models.operations.site import node_gpus
from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from solver.plan.schema import Plan
from solver.plan.time_records import Month


def gpus_paid(plan: Plan) -> int:
    """GPUs the plan's bill covers: bought plus owned in use (see the module docstring)."""
    return sum(use.paid for use in plan.gpus)


def gpu_hours_paid(plan: Plan, hours_per_month: float) -> float:
    """GPU-hours a month the plan's bill covers (see the module docstring)."""
    if not plan.hours:
        return gpus_paid(plan) * hours_per_month
    committed = math.fsum(c.committed_gpus for c in plan.committed)
    day = math.fsum(
        committed + math.fsum(g.existing + g.on_demand + g.spot for g in hour.gpus)
        for hour in plan.hours
    )
    return hours_per_month / HOURS_PER_DAY * day


def month_gpu_hours_paid(plan: Plan, month: Month, hours_per_month: float) -> float:
    """GPU-hours month `month` of a plan of months pays (its own hours and commitments;
    month 0's are the plan's)."""
    if not month.hours:
        return gpu_hours_paid(plan, hours_per_month)
    own = plan.model_copy(update={"hours": month.hours, "committed": month.committed})
    return gpu_hours_paid(own, hours_per_month)


def month_gpus_used(month: Month) -> int:
    """GPUs a later month of a plan of months runs at its most: its offers' peak need
    (0 for month 0, whose GPUs are the plan's `total_gpus`)."""
    return sum(math.ceil(o.peak_need_gpus - 1e-9) for o in month.offers) if month.hours else 0


def month_gpus_paid(instance: Instance, plan: Plan, month: Month) -> int:
    """GPUs month `month` of a plan of months pays (see the module docstring)."""
    if not month.hours:
        return gpus_paid(plan)
    paid = 0
    for offer in month.offers:
        region = next((r for r in instance.regions if r.name == offer.region), None)
        if region is None or offer.gpu not in instance.gpu_specs:
            continue
        used = math.ceil(offer.peak_need_gpus - 1e-9)
        existing = region.existing.get(offer.gpu, 0)
        paid += offer_paid(used, existing, node_gpus(instance, offer.gpu))
    return paid


def servers_bought(plan: Plan) -> int:
    """Whole servers the plan buys (0 when it buys single GPUs, `buy_unit: gpu`)."""
    return sum(server.count for server in plan.servers)


def buys_whole_servers(plan: Plan) -> bool:
    """Whether the plan's purchases are whole servers (`policy.buy_unit: node`) of more
    than one GPU, so that a change of GPUs used can round away to no change of bill."""
    return any((server.gpus_per_server or 1) > 1 for server in plan.servers)
