"""GPU supply and purchases per region and GPU type.

    used[r,g] = sum_{(w,c) : g(c) = g} gpus(c) x replicas[w,c,r]

    gpu_supply[r,g]:  used[r,g] <= existing[r,g] + max_gpus[r,g]
    purchase[r,g]:    purchased[r,g] - used[r,g] >= -existing[r,g]

The existing fleet is already paid for: only GPUs beyond it are bought (and priced by
the objective). gpu_supply's dual is what one more GPU on offer would save per month
(<= 0). purchase's dual is minus the price of a GPU wherever GPUs are bought, so it is
bookkeeping and left out of the binding list.
"""

from dataclasses import dataclass
from typing import ClassVar

from solver.program.families import add_row, register
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import GpuSupplyRow, Index, ReplicasColumn
from solver.program.sets import ProgramSets


@dataclass(frozen=True)
class PurchaseRow(Index):
    """purchase[r,g]."""

    family: ClassVar[str] = "purchase"
    region: str
    gpu: str


@dataclass(frozen=True)
class ExtraGpusColumn(Index):
    """extra_gpus[r,g]: GPUs of type g used in r beyond what it offers (elastic program
    only, solver.program.elastic)."""

    family: ClassVar[str] = "extra_gpus"
    region: str
    gpu: str


GPU_SUPPLY = register(
    GpuSupplyRow,
    "GPUs of the type used in the region stay within the existing fleet plus what can be had",
    "$/month per GPU of supply",
)
PURCHASE = register(
    PurchaseRow,
    "GPUs used beyond the existing fleet are bought",
    "$/month per GPU already owned",
    reported=False,
)


def add_gpu_supply(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per region and GPU type that some pool could use (elastic: with its
    priced extra_gpus column)."""
    for (r, g), pools in sets.pools_of_gpu.items():
        offer = sets.offers[(r, g)]
        terms = {
            ReplicasColumn(p.workload, p.candidate.key, r).name(): float(p.candidate.gpus)
            for p in pools
        }
        if sets.slack:
            extra = lp.add_variable(ExtraGpusColumn(r, g).name(), upper=float(sets.slack.room_gpus))
            terms[extra] = -1.0
            lp.add_objective({extra: sets.slack.supply_penalty})
        add_row(lp, GpuSupplyRow(r, g), terms, Sense.LE, float(offer.available))


def add_purchase_covers_use(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per region and GPU type that some pool could use."""
    for (r, g), pools in sets.pools_of_gpu.items():
        offer = sets.offers[(r, g)]
        terms = {
            ReplicasColumn(p.workload, p.candidate.key, r).name(): -float(p.candidate.gpus)
            for p in pools
        }
        terms[PurchasedColumn(r, g).name()] = 1.0
        add_row(lp, PurchaseRow(r, g), terms, Sense.GE, -float(offer.existing))
