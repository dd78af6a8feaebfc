"""Paying for GPUs by the hour: a committed (reserved) base and the on-demand top-up.

Periods p (UTC hours with equal warm demand, weight w_p hours a day, sum_p w_p = 24);
offers (r, g) with existing fleet E, purchasable max_gpus M, on-demand price p_od,
optional reserved price p_res and on-demand cap K (`max_on_demand_gpus`, default M).

    used[r,g,p]   = sum_{(w,c) : g(c) = g} gpus(c) x replicas[w,c,r]@p

    committed[r,g]       0 <= . <= M              (only where p_res is offered)
    on_demand[r,g,p]     0 <= . <= K
    gpu_cover[r,g,p]:    committed[r,g] + on_demand[r,g,p] - used[r,g,p] >= -E

    minimise  days x [ 24 x p_res x committed[r,g] + sum_p w_p x p_od x on_demand[r,g,p] ]
            + epsilon x sum_p (w_p / 24) x used[r,g,p]

days = hours_per_month / 24: the objective is $/month, the sum over the day's hours
repeated over the month. With single GPUs (n = 1: policy.buy_unit gpu, or a one-GPU
server) committed is continuous: the cost is piecewise linear and convex in it with
breakpoints at the hours' integer needs (`models.operations.pricing_tiers`), so an
optimum sits at a whole GPU count.

Whole servers (policy.buy_unit: node, n = gpus_per_node > 1): GPUs are reserved and
rented as whole servers, as the static program buys them (solver.program.families.servers):

    committed_servers[r,g]     integer, 0 <= . <= floor(M / n)
    on_demand_servers[r,g,p]   integer, 0 <= . <= floor(K / n)
    committed_whole[r,g]:      committed[r,g] - n x committed_servers[r,g] = 0
    on_demand_whole[r,g,p]:    on_demand[r,g,p] - n x on_demand_servers[r,g,p] = 0

so on_demand = n x ceil(max(0, used - E - spot - committed) / n) at the optimum, and
with one period of 24 hours and no reserved price the cost is the static program's,
hours_per_month x p_od x n x ceil(max(0, used - E) / n). The existing fleet counts as
it is (any number of GPUs); spot GPUs are rented one replica at a time. Both rows are
bookkeeping (their dual is the price of a GPU in a server) and not reported.

epsilon is the static program's tie-break per GPU (fewer GPUs among equal-cost plans),
weighted by the hours a period stands for.
gpu_cover's shadow price is what one GPU fewer owned in that period would cost per month
(>= 0, $/month per GPU: days x w_p x p_od where the period rents on demand; one more
owned GPU saves as much); the committed column's reduced cost is the newsvendor rule:
commit while the hours above the base cost more on demand than the commitment.

Spot capacity is not offered to interactive pools here: an SLO that holds only in
expectation over independent interruptions is the wrong guarantee for correlated
reclaims. Spot serves dedicated batch replicas (solver.program.families.batch_work), whose lost
work is redone.
"""

import math
from dataclasses import dataclass
from typing import ClassVar

from solver.program.families import add_row, register
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index


@dataclass(frozen=True)
class CommittedColumn(Index):
    """committed[r,g]: reserved GPUs of type g in r, paid every hour."""

    family: ClassVar[str] = "committed"
    region: str
    gpu: str


@dataclass(frozen=True)
class OnDemandColumn(Index):
    """on_demand[r,g]@tPP: GPUs paid by the hour in the period starting at UTC hour p
    (the index's `period`)."""

    family: ClassVar[str] = "on_demand"
    region: str
    gpu: str


@dataclass(frozen=True)
class GpuCoverRow(Index):
    """gpu_cover[r,g]@tPP (p: the index's `period`)."""

    family: ClassVar[str] = "gpu_cover"
    region: str
    gpu: str


@dataclass(frozen=True)
class CommittedServersColumn(Index):
    """committed_servers[r,g]: whole servers reserved (policy.buy_unit: node)."""

    family: ClassVar[str] = "committed_servers"
    region: str
    gpu: str


@dataclass(frozen=True)
class OnDemandServersColumn(Index):
    """on_demand_servers[r,g]@tPP: whole servers rented in the period starting at hour p."""

    family: ClassVar[str] = "on_demand_servers"
    region: str
    gpu: str


@dataclass(frozen=True)
class CommittedWholeRow(Index):
    """committed_whole[r,g]."""

    family: ClassVar[str] = "committed_whole"
    region: str
    gpu: str


@dataclass(frozen=True)
class OnDemandWholeRow(Index):
    """on_demand_whole[r,g]@tPP."""

    family: ClassVar[str] = "on_demand_whole"
    region: str
    gpu: str


GPU_COVER = register(
    GpuCoverRow,
    "GPUs used in the period are owned, committed or paid on demand",
    "$/month per GPU",
)
COMMITTED_WHOLE = register(
    CommittedWholeRow,
    "reserved GPUs come in whole servers of gpus_per_node",
    "$/month per GPU",
    reported=False,
)
ON_DEMAND_WHOLE = register(
    OnDemandWholeRow,
    "on-demand GPUs are rented in whole servers of gpus_per_node",
    "$/month per GPU",
    reported=False,
)


@dataclass(frozen=True)
class OfferTerms:
    """One (region, GPU type) offer as the pricing rows read it."""

    region: str
    gpu: str
    existing: int
    max_gpus: int
    available: int
    """Existing plus purchasable (`Region.available_gpus`)."""
    on_demand_price_per_gpu_hour: float
    reserved_price_per_gpu_hour: float | None
    max_on_demand_gpus: int
    spot_price_per_gpu_hour: float | None = None
    """Where spot is offered (dedicated batch replicas only)."""
    gpus_per_server: int = 1
    """n: GPUs reserved and rented together (gpus_per_node with policy.buy_unit: node)."""

    def paid_on_demand(self, need_gpus: float) -> float:
        """GPUs rented on demand for a need beyond what is owned, committed and on spot:
        n x ceil(max(0, need) / n) (the program's on_demand at its optimum)."""
        n = self.gpus_per_server
        if need_gpus <= 1e-9:
            return 0.0
        if n == 1:
            return need_gpus
        return float(n * math.ceil(need_gpus / n - 1e-9))

    def hour_bill(
        self, committed_gpus: float, on_demand_gpus: float, spot_gpus: float
    ) -> tuple[float, float, float]:
        """USD of one hour of this offer: every committed GPU at the reserved price (used
        or not), the on-demand GPUs at theirs, the spot GPUs at theirs."""
        return (
            committed_gpus * (self.reserved_price_per_gpu_hour or 0.0),
            on_demand_gpus * self.on_demand_price_per_gpu_hour,
            spot_gpus * (self.spot_price_per_gpu_hour or 0.0),
        )


def add_pricing(
    lp: LinearProgram,
    offers: tuple[OfferTerms, ...],
    used_terms: dict[tuple[str, str, int], dict[str, float]],
    weight_hours: dict[int, int],
    hours_per_month: float,
    tie_break_per_gpu: float,
) -> None:
    """committed, on_demand and gpu_cover for every offer and period, and the objective.

    Args:
        used_terms: (r, g, period) -> {replica column: GPUs per replica}.
        weight_hours: period -> hours per day it stands for.
    """
    days = hours_per_month / 24
    for offer in offers:
        r, g = offer.region, offer.gpu
        n = offer.gpus_per_server
        committed = None
        if offer.reserved_price_per_gpu_hour is not None:
            committed = lp.add_variable(CommittedColumn(r, g).name(), upper=float(offer.max_gpus))
            lp.add_objective({committed: days * 24 * offer.reserved_price_per_gpu_hour})
            if n > 1:
                servers = lp.add_variable(
                    CommittedServersColumn(r, g).name(), upper=offer.max_gpus // n, integer=True
                )
                add_row(
                    lp, CommittedWholeRow(r, g), {committed: 1.0, servers: -float(n)}, Sense.EQ, 0
                )
        for period, weight in weight_hours.items():
            used = used_terms.get((r, g, period))
            if not used:
                continue
            on_demand = lp.add_variable(
                OnDemandColumn(r, g, period=period).name(), upper=float(offer.max_on_demand_gpus)
            )
            lp.add_objective({on_demand: days * weight * offer.on_demand_price_per_gpu_hour})
            if n > 1:
                servers = lp.add_variable(
                    OnDemandServersColumn(r, g, period=period).name(),
                    upper=offer.max_on_demand_gpus // n,
                    integer=True,
                )
                add_row(
                    lp,
                    OnDemandWholeRow(r, g, period=period),
                    {on_demand: 1.0, servers: -float(n)},
                    Sense.EQ,
                    0.0,
                )
            lp.add_objective({var: tie_break_per_gpu * weight / 24 * n for var, n in used.items()})
            terms = {var: -n for var, n in used.items()}
            terms[on_demand] = 1.0
            if committed is not None:
                terms[committed] = 1.0
            add_row(lp, GpuCoverRow(r, g, period=period), terms, Sense.GE, -float(offer.existing))
