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
"""

import math

from models.schema.traffic import HOURS_PER_DAY
from solver.plan.schema import Plan


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


def servers_bought(plan: Plan) -> int:
    """Whole servers the plan buys (0 when it buys single GPUs, `buy_unit: gpu`)."""
    return sum(server.count for server in plan.servers)


def buys_whole_servers(plan: Plan) -> bool:
    """Whether the plan's purchases are whole servers (`policy.buy_unit: node`) of more
    than one GPU, so that a change of GPUs used can round away to no change of bill."""
    return any((server.gpus_per_server or 1) > 1 for server in plan.servers)
