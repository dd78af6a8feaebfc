"""The objective: fleet cost per month, ties broken by fewer GPUs.

    minimise  sum_{r,g} price[r,g] x hours_per_month x purchased[r,g]
            + epsilon x sum_{w,c,r} gpus(c) x replicas[w,c,r]

epsilon = 1 / (1 + every GPU that could exist) $/month per GPU, so the tie-break stays
below $1/month in all and cannot outweigh a real difference in cost. The reported cost
is the first sum alone.
"""

from solver.program.families.variables import PurchasedColumn
from solver.program.lp import LinearProgram
from solver.program.row_names import ReplicasColumn
from solver.program.sets import ProgramSets


def add_fleet_cost(lp: LinearProgram, sets: ProgramSets) -> None:
    """Price every purchased GPU; add the tie-break on every GPU used."""
    lp.add_objective(
        {
            PurchasedColumn(r, g).name(): offer.price_per_gpu_hour * sets.hours_per_month
            for (r, g), offer in sets.offers.items()
        }
    )
    lp.add_objective(
        {
            ReplicasColumn(p.workload, p.candidate.key, p.region).name(): sets.tie_break_per_gpu
            * p.candidate.gpus
            for p in sets.pools
        }
    )
