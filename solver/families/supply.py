"""GPU supply and purchases per region and GPU type.

    used[r,g] = sum_{(w,c) : g(c) = g} gpus(c) x replicas[w,c,r]

    gpu_supply[r,g]:  used[r,g] <= existing[r,g] + max_gpus[r,g]
    purchase[r,g]:    purchased[r,g] - used[r,g] >= -existing[r,g]

The existing fleet is already paid for: only GPUs beyond it are bought (and priced by
the objective). gpu_supply's dual is what one more GPU on offer would save per month
(<= 0). purchase's dual is minus the price of a GPU wherever GPUs are bought, so it is
bookkeeping and left out of the binding list.
"""

from solver.families import register
from solver.lp import LinearProgram, Sense
from solver.sets import ProgramSets

GPU_SUPPLY = register(
    "gpu_supply",
    "[region,gpu]",
    "GPUs of the type used in the region stay within the existing fleet plus what can be had",
    "$/month per GPU of supply",
)
PURCHASE = register(
    "purchase",
    "[region,gpu]",
    "GPUs used beyond the existing fleet are bought",
    "$/month per GPU already owned",
    reported=False,
)


def add_gpu_supply(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per region and GPU type that some pool could use."""
    for (r, g), pools in sets.pools_of_gpu.items():
        offer = sets.offers[(r, g)]
        terms = {sets.replicas(p.workload, p.candidate, r): float(p.candidate.gpus) for p in pools}
        lp.add_constraint(
            f"gpu_supply[{r},{g}]", GPU_SUPPLY.name, terms, Sense.LE, float(offer.available)
        )


def add_purchase_covers_use(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per region and GPU type that some pool could use."""
    for (r, g), pools in sets.pools_of_gpu.items():
        offer = sets.offers[(r, g)]
        terms = {sets.replicas(p.workload, p.candidate, r): -float(p.candidate.gpus) for p in pools}
        terms[sets.purchased(r, g)] = 1.0
        lp.add_constraint(
            f"purchase[{r},{g}]", PURCHASE.name, terms, Sense.GE, -float(offer.existing)
        )
