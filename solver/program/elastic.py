"""The elastic program: the fleet program with priced slack, always feasible.

`build_program(..., elastic=True)` builds it; solver.analysis.diagnose reads its slack to name
the requirements in conflict. As it builds, two families add a slack column per row:

    unserved[f,w,o] >= 0     in demand[f,w,o]:      served + unserved = D
    extra_gpus[r,g] >= 0     in gpu_supply[r,g]:    used - extra <= available

priced far above any real plan: an extra GPU at SUPPLY_PENALTY_FACTOR times the dearest
GPU-month on offer, a request/s left unserved at DEMAND_PENALTY_FACTOR times what extra
GPUs would cost to serve it. So that extra GPUs can be used, every pool may hold
`room_gpus` more GPUs than its region offers (solver.program.sets: the replica bound, the
big-M of pool_open and of the pooling steps widen with it; the tiers stay), and
purchases lose their upper bound.
"""

import math
from collections.abc import Iterable
from dataclasses import dataclass

SUPPLY_PENALTY_FACTOR = 10.0
"""An extra GPU costs this many times the dearest GPU-month on offer."""
DEMAND_PENALTY_FACTOR = 10.0
"""A request/s left unserved costs this many times serving it with extra GPUs."""


@dataclass(frozen=True)
class ElasticSlack:
    """How far the elastic program may go beyond the offer, and at what price."""

    room_gpus: int
    """Extra GPUs a region may use of each type (the bound of extra_gpus[r,g])."""
    supply_penalty: float
    """$/month per extra GPU."""
    demand_penalty: float
    """$/month per request/s left unserved."""


def elastic_slack(
    gpu_month_prices: Iterable[float],
    gpus_per_request_per_s: Iterable[float],
    total_demand_rps: float,
    largest_replica_gpus: int,
) -> ElasticSlack:
    """Room and penalties of the elastic program.

        supply_penalty = SUPPLY_PENALTY_FACTOR x max price per GPU-month
        demand_penalty = DEMAND_PENALTY_FACTOR x supply_penalty x 2 x worst GPUs per request/s
        room_gpus      = ceil(2 x total demand x worst GPUs per request/s) + largest replica

    The worst GPUs per request/s (of a lone replica of any candidate) with a factor 2 of
    margin is more than any region needs to serve all the demand, so the room never
    binds before the penalties do, and leaving a request/s unserved always costs more
    than buying the GPUs to serve it.

    Args:
        gpu_month_prices: $/month of one GPU, per offer.
        gpus_per_request_per_s: gpus(c) / q_c per candidate.
        total_demand_rps: Peak requests/s of every workload in every region.
        largest_replica_gpus: GPUs of the largest replica with a pool somewhere.
    """
    worst_gpus_per_rps = max(gpus_per_request_per_s, default=1.0)
    supply_penalty = SUPPLY_PENALTY_FACTOR * max(gpu_month_prices)
    return ElasticSlack(
        room_gpus=math.ceil(2 * total_demand_rps * worst_gpus_per_rps) + largest_replica_gpus,
        supply_penalty=supply_penalty,
        demand_penalty=DEMAND_PENALTY_FACTOR * supply_penalty * 2 * worst_gpus_per_rps,
    )
