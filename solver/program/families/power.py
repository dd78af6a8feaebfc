"""Power and rack space per region: what the site can feed, not only what money buys.

    power[r]:       sum_g kw[r,g] x purchased[r,g] <= power_kw[r] - sum_g kw[r,g] x existing[r,g]
    rack_space[r]:  sum_g racks_g x purchased[r,g] <= racks[r]    - sum_g racks_g x existing[r,g]

kw[r,g] = tdp_w / 1000 x server power factor x PUE[r] is the facility power of one GPU
in service, racks_g the racks one GPU takes in whole servers (models.operations.site: the factor
1.82 is DGX H100's 10.2 kW over 8 x 700 W, an assumption for other servers). Every GPU
installed draws power and takes space, the existing fleet as well as what is bought:
the plan sizes for the peak. A row exists only for a region that states `power_kw`
(`racks` with `kw_per_rack`).

power's dual is d(cost)/d(power_kw): the $/month one more kW in the region would save
(<= 0), nonzero exactly when power, not money, binds the plan; rack_space's is the same
per rack. In the elastic program (solver.program.elastic) each row gets a priced slack column
(extra_kw[r], extra_racks[r]), so that a diagnosis can name a power cap in conflict.
"""

import math
from dataclasses import dataclass
from typing import ClassVar

from models.operations.site import gpu_kw, racks_per_gpu
from solver.errors import Problem
from solver.program.families import add_row, register
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import LinearProgram, Sense
from solver.program.row_names import Index, PowerRow, RackSpaceRow
from solver.program.sets import ProgramSets


@dataclass(frozen=True)
class ExtraKwColumn(Index):
    """extra_kw[r]: kW drawn in r beyond its power_kw (elastic program only)."""

    family: ClassVar[str] = "extra_kw"
    region: str


@dataclass(frozen=True)
class ExtraRacksColumn(Index):
    """extra_racks[r]: racks used in r beyond its racks (elastic program only)."""

    family: ClassVar[str] = "extra_racks"
    region: str


POWER = register(
    PowerRow,
    "GPUs installed in the region (existing and bought) draw no more than its power_kw",
    "$/month per kW",
)
RACK_SPACE = register(
    RackSpaceRow,
    "servers installed in the region (existing and bought) fit in its racks",
    "$/month per rack",
)


def add_power_within_site(lp: LinearProgram, sets: ProgramSets) -> None:
    """One power row per region with power_kw, one rack_space row per region with racks."""
    instance = sets.instance
    for region in instance.regions:
        offers = [(g, offer) for (r, g), offer in sets.offers.items() if r == region.name]
        if not offers:
            continue
        if region.power_kw is not None:
            kw = {g: gpu_kw(instance, region.name, g) for g, _ in offers}
            _add_site_row(
                lp,
                sets,
                PowerRow(region.name),
                kw,
                region.power_kw - sum(kw[g] * offer.existing for g, offer in offers),
                ExtraKwColumn(region.name),
            )
        if region.racks is not None and region.kw_per_rack is not None:
            racks = {g: racks_per_gpu(instance, g, region.kw_per_rack) for g, _ in offers}
            _add_site_row(
                lp,
                sets,
                RackSpaceRow(region.name),
                racks,
                region.racks - sum(racks[g] * offer.existing for g, offer in offers),
                ExtraRacksColumn(region.name),
            )


def _add_site_row(
    lp: LinearProgram,
    sets: ProgramSets,
    index: PowerRow | RackSpaceRow,
    per_gpu: dict[str, float],
    room: float,
    extra: ExtraKwColumn | ExtraRacksColumn,
) -> None:
    """sum_g per_gpu[g] x purchased[r,g] <= room (elastic: less a priced slack column
    whose unit costs the supply penalty per GPU it would hold)."""
    r = index.region
    terms = {PurchasedColumn(r, g).name(): amount for g, amount in per_gpu.items()}
    if sets.slack:
        name = lp.add_variable(extra.name())
        terms[name] = -1.0
        lp.add_objective({name: sets.slack.supply_penalty / min(per_gpu.values())})
    add_row(lp, index, terms, Sense.LE, room)


def site_conflicts(sets: ProgramSets, values: dict[str, float]) -> list[Problem]:
    """The power and rack rows the elastic program had to stretch (solver.analysis.diagnose)."""
    problems = []
    for region in sets.instance.regions:
        extra_kw = values.get(ExtraKwColumn(region.name).name(), 0.0)
        if region.power_kw is not None and extra_kw > 1e-6:
            needed = region.power_kw + extra_kw
            problems.append(
                Problem(
                    PowerRow(region.name).name(),
                    f"the GPUs {region.name} needs draw {needed:,.1f} kW; power_kw is "
                    f"{region.power_kw:,.1f}",
                    f"raise power_kw of {region.name} to at least {needed:,.1f}, or move "
                    "demand to other regions",
                )
            )
        extra_racks = values.get(ExtraRacksColumn(region.name).name(), 0.0)
        if region.racks is not None and extra_racks > 1e-6:
            needed_racks = math.ceil(region.racks + extra_racks - 1e-6)
            problems.append(
                Problem(
                    RackSpaceRow(region.name).name(),
                    f"the servers {region.name} needs take {region.racks + extra_racks:,.2f} "
                    f"racks; it has {region.racks}",
                    f"raise racks of {region.name} to {needed_racks}, or kw_per_rack",
                )
            )
    return problems
