"""zone_survivors[w,c,r]: a pool spread evenly over Z zones keeps n - ceil(n / Z).

    Z x zone_survivors[w,c,r] - (Z - 1) x replicas[w,c,r] <= 0     (survive: zone)

With zone_survivors integer this is exact, not an approximation: the largest integer
s <= n (Z - 1) / Z is floor(n (Z - 1) / Z) = n - ceil(n / Z), the replicas left after
losing the fullest zone. Every pool of the region is assumed to lose its fullest zone at
once (the worst placement), so the row holds whatever the scheduler does.
"""

from dataclasses import dataclass
from typing import ClassVar

from solver.program.families import add_row, register
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index, ReplicasColumn
from solver.program.sets import ProgramSets


@dataclass(frozen=True)
class ZoneSurvivorsIndex(Index):
    """zone_survivors[w,c,r]: the row, and the column of the pool's survivors."""

    family: ClassVar[str] = "zone_survivors"
    workload: str
    candidate: str
    region: str


ZONE_SURVIVORS = register(
    ZoneSurvivorsIndex,
    "a pool spread evenly over the region's zones keeps n - ceil(n / zones) replicas "
    "when its fullest zone is lost",
    "$/month per replica",
    reported=False,
)


def add_zone_survivors(lp: LinearProgram, sets: ProgramSets) -> None:
    """One row per pool in a region whose zone loss is a scenario."""
    for r in sets.zone_regions:
        zones = sets.zones[r]
        for pool in sets.pools:
            if pool.region != r:
                continue
            index = ZoneSurvivorsIndex(pool.workload, pool.candidate.key, r)
            add_row(
                lp,
                index,
                {
                    index.name(): float(zones),
                    ReplicasColumn(*index.values()).name(): -(zones - 1.0),
                },
                Sense.LE,
                0.0,
            )
