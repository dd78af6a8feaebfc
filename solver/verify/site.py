"""What the fleet takes (part of solver.verify.fleet, steps 2 and 3): GPUs within the existing
fleet plus the supply per region and type, the cost of the GPUs bought recomputed, the
stated servers, power and racks against the GPUs installed, and the configurations per
(workload, region, phase) within policy.max_configs_per_pool.
"""

from collections import defaultdict
from collections.abc import Callable

from models.operations.site import gpu_kw, gpus_bought, node_gpus, racks_per_gpu
from models.schema.instance import Instance
from models.serving.replica import Role
from solver.plan.records import RegionPower
from solver.plan.schema import Plan
from solver.program.row_names import (
    ConfigsPerPoolRow,
    GpuSupplyRow,
    OnePrecisionRow,
    PowerRow,
    RackSpaceRow,
    WholeServersRow,
    phase_label,
)
from solver.verify.pools import RecomputedPool
from solver.verify.verdict import COST_TOLERANCE, DEMAND_TOLERANCE, Violation, agrees, differs


def check_supply(
    instance: Instance, pools: list[RecomputedPool], violations: list[Violation]
) -> dict[tuple[str, str], int]:
    """GPUs used per (region, type), each entry counted once, within the existing fleet
    plus the purchasable supply (`gpu_supply[r,g]`); returns the GPUs used."""
    used: dict[tuple[str, str], int] = defaultdict(int)
    counted: set[int] = set()
    for pool in pools:
        for e in pool.entries:
            if id(e) not in counted:  # a shared group's entry is in each member's share
                counted.add(id(e))
                used[(e.region, e.gpu)] += e.count * e.replica_gpus
    for (r, g), n in sorted(used.items()):
        region = instance.region(r)
        existing, available = region.existing.get(g, 0), region.available_gpus(g)
        if n > available:
            violations.append(
                Violation(
                    requirement=GpuSupplyRow(r, g).name(),
                    message=f"uses {n} {g} in {r}; available {available} "
                    f"(existing {existing} + purchasable {available - existing})",
                )
            )
    return used


def check_cost(
    instance: Instance,
    plan: Plan,
    used: dict[tuple[str, str], int],
    violations: list[Violation],
) -> float:
    """The cost of the GPUs bought beyond the existing fleet, in whole servers, at the
    instance's prices; the plan's stated cost and GPU total must match. Returns the
    recomputed USD per month."""
    hours = instance.policy.hours_per_month
    cost = 0.0
    for (r, g), n in used.items():
        bought = gpus_bought(n, instance.region(r).existing.get(g, 0), node_gpus(instance, g))
        cost += bought * instance.price_per_gpu_hour(r, g) * hours
    if plan.cost_per_month is not None and abs(plan.cost_per_month - cost) > COST_TOLERANCE:
        violations.append(
            Violation(
                requirement="cost",
                message=f"states ${plan.cost_per_month:,.2f}/month; the GPUs bought cost "
                f"${cost:,.2f}/month at the instance's prices",
            )
        )
    total = sum(used.values())
    if plan.total_gpus is not None and plan.total_gpus != total:
        violations.append(
            Violation(
                requirement="total_gpus",
                message=f"states {plan.total_gpus} GPUs; the pools hold {total}",
            )
        )
    return cost


def check_site(
    instance: Instance,
    plan: Plan,
    used: dict[tuple[str, str], int],
    violations: list[Violation],
) -> None:
    """Stated servers hold the GPUs bought; power and racks hold every GPU installed;
    the stated power rows are the GPUs installed's (`stated_power`)."""
    violations += stated_power(instance, plan, lambda region: installed_kw(instance, plan, region))
    bought: dict[tuple[str, str], int] = {}
    for region in instance.regions:
        gpus = set(region.existing) | {g for r, g in used if r == region.name}
        for g in gpus:
            if g in instance.gpu_specs:
                existing = region.existing.get(g, 0)
                n = node_gpus(instance, g)
                bought[(region.name, g)] = gpus_bought(used.get((region.name, g), 0), existing, n)
    stated = {(s.region, s.gpu): s.count for s in plan.servers}
    for (r, g), count in sorted(stated.items()):
        n = node_gpus(instance, g) if g in instance.gpu_specs else 1
        need = bought.get((r, g), 0) // n
        if count != need:
            violations.append(
                Violation(
                    requirement=WholeServersRow(r, g).name(),
                    message=f"states {count} servers of {g} in {r}; the GPUs used beyond the "
                    f"existing fleet need {need} of {n} GPUs",
                )
            )
    for region in instance.regions:
        installed = {
            g: region.existing.get(g, 0) + bought.get((region.name, g), 0)
            for g in instance.gpu_specs
        }
        if region.power_kw is not None:
            kw = sum(gpu_kw(instance, region.name, g) * n for g, n in installed.items() if n)
            if kw > region.power_kw * (1 + DEMAND_TOLERANCE) + DEMAND_TOLERANCE:
                violations.append(
                    Violation(
                        requirement=PowerRow(region.name).name(),
                        message=f"the GPUs installed in {region.name} draw {kw:,.1f} kW; "
                        f"power_kw is {region.power_kw:,.1f}",
                    )
                )
        if region.racks is not None and region.kw_per_rack is not None:
            racks = sum(
                racks_per_gpu(instance, g, region.kw_per_rack) * n
                for g, n in installed.items()
                if n
            )
            if racks > region.racks * (1 + DEMAND_TOLERANCE) + DEMAND_TOLERANCE:
                violations.append(
                    Violation(
                        requirement=RackSpaceRow(region.name).name(),
                        message=f"the servers installed in {region.name} take {racks:,.2f} "
                        f"racks of {region.kw_per_rack:g} kW; it has {region.racks}",
                    )
                )


def check_configs_per_pool(
    instance: Instance, pools: list[RecomputedPool], violations: list[Violation]
) -> None:
    """No (workload, region, phase) mixes more dedicated configurations than the policy
    allows (shared groups are co-location's choice and are not counted, as in the
    program's configs_per_pool rows)."""
    limit = instance.policy.max_configs_per_pool
    if limit is None:
        return
    grouped: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    precisions: dict[str, set[str]] = defaultdict(set)  # a workload's prefill/decode ones
    for p in pools:
        if p.role is not Role.UNIFIED:
            precisions[p.workload].add(p.precision)
    for pool in pools:
        if pool.count > 0:
            split = len(precisions[pool.workload]) > 1
            phase = phase_label(pool.role, pool.precision, split)
            grouped[(pool.workload, pool.region, phase)].append(pool.label)
    for (w, d, phase), labels in sorted(grouped.items()):
        if len(labels) > limit:
            violations.append(
                Violation(
                    requirement=ConfigsPerPoolRow(w, d, phase).name(),
                    message=f"{len(labels)} configurations ({'; '.join(labels)}); "
                    f"policy.max_configs_per_pool is {limit}",
                )
            )


def check_one_precision(
    instance: Instance, pools: list[RecomputedPool], violations: list[Violation]
) -> None:
    """With policy.one_precision_per_workload, every dedicated pool of a workload serves
    one weight precision (shared groups are not counted, as in the program's rows)."""
    if not instance.policy.one_precision_per_workload:
        return
    used: dict[str, set[str]] = defaultdict(set)
    for pool in pools:
        if pool.count > 0:
            used[pool.workload].add(pool.precision)
    for w, precisions in sorted(used.items()):
        if len(precisions) > 1:
            violations.append(
                Violation(
                    requirement=OnePrecisionRow(w).name(),
                    message=f"serves {w} at {' and '.join(sorted(precisions))}; "
                    "policy.one_precision_per_workload asks for one weight precision",
                )
            )


def installed_kw(instance: Instance, plan: Plan, region: str) -> float:
    """kW every GPU of the plan's `gpus` table installed in `region` draws, existing and
    bought: sum of (existing + purchased) x the GPU's kW (solver.readback.site)."""
    return sum(
        gpu_kw(instance, row.region, row.gpu) * (row.existing + row.purchased)
        for row in plan.gpus
        if row.region == region and row.gpu in instance.gpu_specs
    )


def stated_power(
    instance: Instance,
    plan: Plan,
    kw_of: Callable[[str], float],
    racks_of: Callable[[str], float] | None = None,
) -> list[Violation]:
    """Each stated power row against its region: kW (`kw_of` the region: the GPUs
    installed for a static plan, its busiest hour for an hourly one, whose cap binds per
    hour), racks (`racks_of`, where the region states racks: an hourly plan's busiest
    hour; default from the `gpus` table, existing + purchased x racks a GPU takes), and
    the region's own limits (a power row's shadow price is held finite only). A static
    plan's rows were not checked: 99 kW for one 10.2 kW server verified ok."""
    known = {r.name for r in instance.regions}
    rows = [row for row in plan.gpus if row.region in known and row.gpu in instance.gpu_specs]
    found = []
    for index, power in enumerate(plan.power_kw):
        where = f"power_kw[{index}]"
        if power.region not in known:
            found.append(Violation(requirement=where, message=f"unknown region {power.region}"))
            continue
        region = instance.region(power.region)
        mine = [r for r in rows if r.region == power.region]
        racks = None
        if region.racks is not None and region.kw_per_rack is not None:
            racks = (
                racks_of(power.region)
                if racks_of is not None
                else sum(
                    racks_per_gpu(instance, r.gpu, region.kw_per_rack) * (r.existing + r.purchased)
                    for r in mine
                )
            )
        unit_kw, slack_kw = whole_unit_kw(instance, power.region, power.kw, power)
        checks = (
            ("kw", power.kw, kw_of(power.region)),
            ("racks", power.racks, racks),
            ("limit_kw", power.limit_kw, region.power_kw),
            ("limit_racks", power.limit_racks, region.racks),
            ("whole_unit_kw", power.whole_unit_kw, unit_kw),
            ("slack_kw", power.slack_kw, slack_kw),
        )
        for name, stated_value, value in checks:
            if not agrees(stated_value, value):
                found.append(
                    differs(f"{where}.{name}", stated_value, value, "the GPUs installed give")
                )
    return found


def whole_unit_kw(
    instance: Instance, region: str, kw: float, stated: RegionPower
) -> tuple[float, float]:
    """(kW of the least server the region could add, kW left under its cap) where an
    unpriced cap leaves less than that server at `kw` (the cap binds in whole units:
    min_g gpu_kw x node_gpus over the region's offers); (0, 0) elsewhere."""
    cap = instance.region(region).power_kw
    if cap is None or stated.shadow_price_per_kw:
        return 0.0, 0.0
    units = [
        gpu_kw(instance, region, g) * node_gpus(instance, g)
        for g, offer in instance.region(region).supply.items()
        if offer.max_gpus
    ]
    slack, margin = cap - kw, 1e-6 * (1.0 + cap)
    if units and margin < slack < min(units) - margin:
        return min(units), slack
    return 0.0, 0.0
