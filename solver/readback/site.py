"""Read-back of what the plan asks of the sites: servers to buy, power and rack space.

Computed from the plan's GPU use with the arithmetic of models.operations.site (the verifier
recomputes the same from the instance alone), and the power rows' shadow prices from
the pricing LP (solver.readback.pricing).
"""

from models.operations.site import gpu_kw, node_gpus, racks_per_gpu
from solver.plan.records import GpuUse, RegionPower, ServerPurchase
from solver.program.row_names import PowerRow
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
