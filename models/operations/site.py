"""What a site holds: the GPU types each region offers, whole servers, power and rack
space (arithmetic, no solver).

Offers. A region offers a GPU type when it has a `supply` entry for it (more can be
bought) or already owns at least one (`existing`); every other (region, GPU type) pair
holds nothing and has no pool, purchase or price (`offered`).

Whole servers. With `policy.buy_unit: node` GPUs are bought as whole servers of
`gpus_per_node` GPUs; the existing fleet counts as it is (any number of GPUs):

    bought(used, existing, n) = n x ceil(max(0, used - existing) / n)

A replica straddles servers only where its layout says so: tensor parallelism stays
within one server (tp <= gpus_per_node, `solver.candidates.layouts`), pipeline stages may
sit on different servers, and so may the attention data-parallel groups of a stage whose
tp x dp GPUs fill whole servers (wide expert parallelism: the groups meet only in the
experts' all-to-all, which crosses the NICs, as DeepEP deployments run it and
`models.physics.alltoall` charges it). So a stage of tp x dp GPUs must divide
`gpus_per_node` or be a multiple of it (`stage_problem`): stages then tile servers
exactly, a stage of whole servers taking its servers alone, and any GPU count of such
replicas packs into ceil(GPUs / n) servers, which is what `bought` assumes.

Power. A GPU in service draws, at the site's meter,

    kW per GPU = tdp_w / 1000 x server_power_factor x pue

`server_power_factor` is the server's power over its GPUs' board power (CPUs, memory,
NICs, fans): NVIDIA's DGX H100 datasheet gives ~10.2 kW maximum system power for
8 x 700 W GPUs, 10.2 / 5.6 = 1.82 (SERVER_POWER_FACTOR, used for every GPU type as an
assumption; `policy.server_power_factor` overrides it). `pue` (power usage
effectiveness, facility over IT power) is the region's, else the policy's, else 1.0
(then `power_kw` is read as IT power). Every GPU installed draws it, the existing
fleet as well as what is bought: the plan sizes for the peak.

Racks. A rack feeds `kw_per_rack` of IT power (no PUE inside the rack), so it holds

    servers_per_rack = floor(kw_per_rack / (gpus_per_node x tdp_w / 1000 x factor))

whole servers of one type (a server drawing more than a rack feeds takes
ceil(server kW / kw_per_rack) racks); GPU types share a region's racks in proportion
(exact when each type fills whole racks, otherwise up to one rack per type optimistic).
"""

import math

from models.schema.instance import Instance, Region
from models.schema.policy import BuyUnit
from models.schema.quantities import counted

SERVER_POWER_FACTOR = 10.2 / (8 * 0.700)
"""1.82: NVIDIA DGX H100 datasheet, 'System power usage ~10.2 kW max' for 8 H100 SXM at
700 W each; an assumption for other servers (override: policy.server_power_factor)."""


def offered(instance: Instance) -> tuple[tuple[Region, str], ...]:
    """Every (region, GPU type) the region offers (a supply entry or an existing GPU):
    regions in the file's order, GPU types in `gpus` order within each."""
    return tuple(
        (region, gpu)
        for region in instance.regions
        for gpu in instance.gpu_specs
        if region.offers(gpu)
    )


def node_gpus(instance: Instance, gpu: str) -> int:
    """GPUs per unit bought: `gpus_per_node` with buy_unit node, else 1."""
    if instance.policy.buy_unit is BuyUnit.GPU:
        return 1
    return instance.gpu_specs[gpu].gpus_per_node


def gpus_bought(used: int, existing: int, unit_gpus: int) -> int:
    """GPUs to buy: what the use needs beyond the existing fleet, in whole units,
    unit_gpus x ceil(max(0, used - existing) / unit_gpus)."""
    need = max(0, used - existing)
    return unit_gpus * -(-need // unit_gpus)  # integer ceiling: exact for any count


def installed_gpus(instance: Instance, region: str, gpu: str, used: int) -> int:
    """GPUs of `gpu` standing in `region` when `used` of them run: the existing fleet plus
    those bought beyond it in whole units (`gpus_bought`), what the power row counts."""
    existing = instance.region(region).existing.get(gpu, 0)
    return existing + gpus_bought(used, existing, node_gpus(instance, gpu))


def gpus_paid(used: int, existing: int, unit_gpus: int) -> int:
    """GPUs a plan's bill covers: the GPUs bought plus the owned ones it runs on,
    gpus_bought(used, existing, unit_gpus) + min(used, existing). Owned GPUs left idle are
    neither used nor paid for by the plan; a server bought for 3 busy GPUs pays for 8."""
    return gpus_bought(used, existing, unit_gpus) + min(used, existing)


def stage_problem(tp: int, dp: int, gpus_per_node: int) -> str | None:
    """Why a stage of tp x dp GPUs cannot tile whole servers of `gpus_per_node` (it must
    divide the server, or fill whole servers: attention DP groups across servers), or
    None."""
    stage = tp * dp
    if gpus_per_node % stage and stage % gpus_per_node:
        return (
            f"a stage of tp {tp} x dp {dp} = {stage} GPUs neither divides a server of "
            f"{counted(gpus_per_node, 'GPU')} nor fills whole servers"
        )
    return None


def server_factor(instance: Instance) -> float:
    """Server power over GPU board power (policy override, else SERVER_POWER_FACTOR)."""
    factor = instance.policy.server_power_factor
    return SERVER_POWER_FACTOR if factor is None else factor


def pue(instance: Instance, region: str) -> float:
    """The region's PUE, else the policy's, else 1.0 (power_kw is then IT power)."""
    own = instance.region(region).pue
    if own is not None:
        return own
    return instance.policy.pue if instance.policy.pue is not None else 1.0


def gpu_kw(instance: Instance, region: str, gpu: str) -> float:
    """Facility kW one GPU in service draws: tdp_w / 1000 x server factor x PUE."""
    return instance.gpu_specs[gpu].tdp_w / 1000 * server_factor(instance) * pue(instance, region)


def racks_per_gpu(instance: Instance, gpu: str, kw_per_rack: float) -> float:
    """Racks one GPU of type `gpu` takes, in whole servers of its type: with
    k = floor(kw_per_rack / server IT kW) servers per rack, 1 / (gpus_per_node x k); a
    server drawing more than one rack feeds takes ceil(server kW / kw_per_rack) racks,
    ceil(...) / gpus_per_node per GPU."""
    spec = instance.gpu_specs[gpu]
    server_kw = spec.gpus_per_node * spec.tdp_w / 1000 * server_factor(instance)
    per_rack = math.floor(kw_per_rack / server_kw + 1e-9)
    if per_rack >= 1:
        return 1.0 / (spec.gpus_per_node * per_rack)
    return math.ceil(server_kw / kw_per_rack - 1e-9) / spec.gpus_per_node


def demand_factor(instance: Instance) -> float:
    """The factor on every demand (`Instance.demand_factor`)."""
    return instance.demand_factor
