"""What a plan pays for, as against what it uses: the GPUs and servers behind its bill.

A plan prices GPUs bought (in whole servers with `policy.buy_unit: node`, so a pool of 5
GPUs pays for 8) and owned GPUs at nothing (already paid for). A ratio over the bill
divides by what the bill covers, never by GPUs in use:

    gpus_paid = sum over (region, GPU type) of purchased + min(used, existing)

the bought GPUs plus the owned ones the plan runs on (owned GPUs left idle are neither
used nor paid for by this plan). A fleet bought at one price p then blends to exactly p
per GPU-hour, whatever the server rounding.
"""

from solver.plan.schema import Plan


def gpus_paid(plan: Plan) -> int:
    """GPUs the plan's bill covers: bought plus owned in use (see the module docstring)."""
    return sum(use.paid for use in plan.gpus)


def servers_bought(plan: Plan) -> int:
    """Whole servers the plan buys (0 when it buys single GPUs, `buy_unit: gpu`)."""
    return sum(server.count for server in plan.servers)


def buys_whole_servers(plan: Plan) -> bool:
    """Whether the plan's purchases are whole servers (`policy.buy_unit: node`) of more
    than one GPU, so that a change of GPUs used can round away to no change of bill."""
    return any((server.gpus_per_server or 1) > 1 for server in plan.servers)
