"""Read-back of what the plan asks of the sites: servers to buy, power and rack space.

Computed from the plan's GPU use with the arithmetic of models.operations.site (the verifier
recomputes the same from the instance alone), and the power rows' shadow prices from
the pricing LP (solver.readback.pricing).

A power cap binds in whole units (solver.plan.binding) where the kW it leaves is less
than the least unit a region could add, one server of its offers (a GPU with buy_unit:
gpu): min_g gpu_kw(r, g) x node_gpus(g). It is read from the GPUs installed (in an
hourly plan, its busiest hour's), not from the program's row: in the periods program a
period's `purchased` is not priced and may stand above what the hour runs. A rack limit
binds in whole units alike, where the racks it leaves are fewer than one more server of
the region's offers takes (min_g racks_per_gpu(g) x node_gpus(g)).
"""

from models.operations.site import gpu_kw, node_gpus, racks_per_gpu
from solver.plan.binding import Binding
from solver.plan.records import GpuUse, RegionPower, ServerPurchase
from solver.program.families import Family
from solver.program.families.power import POWER, RACK_SPACE
from solver.program.row_names import PowerRow, RackSpaceRow
from solver.program.sets import ProgramSets


def server_purchases(sets: ProgramSets, uses: tuple[GpuUse, ...]) -> tuple[ServerPurchase, ...]:
    """Whole servers bought per region and GPU type: purchased / gpus_per_node, for
    offers bought in servers of more than one GPU (policy.buy_unit: node)."""
    servers = []
    for use in uses:
        n = node_gpus(sets.instance, use.gpu)
        if n > 1 and use.purchased:
            servers.append(
                ServerPurchase(
                    region=use.region, gpu=use.gpu, count=use.purchased // n, gpus_per_server=n
                )
            )
    return tuple(servers)


def region_power(
    sets: ProgramSets, uses: tuple[GpuUse, ...], duals: dict[str, float]
) -> tuple[RegionPower, ...]:
    """kW (and racks) every GPU installed takes per region, existing and bought, with
    the power row's shadow price where the region states power_kw."""
    instance = sets.instance
    rows = []
    for region in instance.regions:
        mine = [u for u in uses if u.region == region.name and (u.existing or u.purchased)]
        if not mine:
            continue
        kw = sum(gpu_kw(instance, u.region, u.gpu) * (u.existing + u.purchased) for u in mine)
        racks = None
        if region.racks is not None and region.kw_per_rack is not None:
            racks = sum(
                racks_per_gpu(instance, u.gpu, region.kw_per_rack) * (u.existing + u.purchased)
                for u in mine
            )
        limited = region.power_kw is not None
        rows.append(
            RegionPower(
                region=region.name,
                kw=kw,
                limit_kw=region.power_kw,
                shadow_price_per_kw=duals.get(PowerRow(region.name).name(), 0.0)
                if limited
                else None,
                racks=racks,
                limit_racks=region.racks,
            )
        )
    return tuple(rows)


def whole_unit_power(
    sets: ProgramSets, power: tuple[RegionPower, ...], duals: dict[str, float]
) -> tuple[tuple[RegionPower, ...], tuple[Binding, ...]]:
    """The regions' power with `whole_unit_kw` and `slack_kw` stated where the cap binds
    in whole units (see the module text), and a `power[r]` binding row for each (slack
    the kW left, `whole_unit` the kW of one more server; not priced); a `rack_space[r]`
    row where the racks left are fewer than one more server takes and `duals` (the
    site rows' prices, as `region_power` reads them) give the row no price."""
    instance = sets.instance
    rows, found = [], []
    for p in power:
        found += _whole_unit_racks(sets, p, duals)
        if p.limit_kw is None or p.shadow_price_per_kw:
            rows.append(p)
            continue
        units = [
            (gpu_kw(instance, p.region, g) * node_gpus(instance, g), g)
            for g, offer in instance.region(p.region).supply.items()
            if offer.max_gpus
        ]
        slack = p.limit_kw - p.kw
        unit = min(units, default=None)
        margin = 1e-6 * (1.0 + p.limit_kw)
        if unit is None or not margin < slack < unit[0] - margin:
            rows.append(p)
            continue
        rows.append(p.model_copy(update={"whole_unit_kw": unit[0], "slack_kw": slack}))
        found.append(_site_binding(sets, PowerRow(p.region).name(), POWER, slack, unit))
    return tuple(rows), tuple(found)


def _whole_unit_racks(sets: ProgramSets, p: RegionPower, duals: dict[str, float]) -> list[Binding]:
    """The `rack_space[r]` row where the region's rack limit binds in whole units: fewer
    racks left than one more server of its offers takes (and no price); else none."""
    region = sets.instance.region(p.region)
    name = RackSpaceRow(p.region).name()
    if p.racks is None or p.limit_racks is None or region.kw_per_rack is None:
        return []
    if abs(duals.get(name, 0.0)) > 1e-6:
        return []  # priced: the binding report lists it with its price
    units = [
        (racks_per_gpu(sets.instance, g, region.kw_per_rack) * node_gpus(sets.instance, g), g)
        for g, offer in region.supply.items()
        if offer.max_gpus
    ]
    slack = p.limit_racks - p.racks
    unit = min(units, default=None)
    margin = 1e-6 * (1.0 + p.limit_racks)
    if unit is None or not margin < slack < unit[0] - margin:
        return []
    return [_site_binding(sets, name, RACK_SPACE, slack, unit)]


def _site_binding(
    sets: ProgramSets, name: str, family: Family, slack: float, unit: tuple[float, str]
) -> Binding:
    """A site row binding in whole units: `slack` left, less than `unit` (its amount and
    the GPU type of the least server); not priced."""
    n = node_gpus(sets.instance, unit[1])
    return Binding(
        name=name,
        family=family.name,
        description=family.description,
        slack=slack,
        shadow_price=0.0,
        unit=family.dual_unit,
        whole_unit=unit[0],
        whole_unit_of=f"one {n}-GPU {unit[1]} server" if n > 1 else f"one {unit[1]} GPU",
    )
