"""The tiering report of a co-location plan: who shares, who pays the bills, what it saved.

Per workload: `dedicated` (pools of its own only), `shared` (groups only) or `both`, and
its utilisation at peak with no failure, u = load / what every replica serving it
carries at the SLO (`PoolLoad.utilisation` of its unified phase). For the fleet: the idle
fraction (GPU-hours idle / GPU-hours paid at peak, `Plan.idle_fraction`) of this plan and
of the same instance solved with colocation off, and the cost difference.

The dedicated tier "pays the bills": its workloads run on pools of their own, so no
other engine shares their GPUs and their p99s are those of the dedicated physics,
untouched by the tail (the tail rule of solver.colocation.groups keeps any workload whose peak
fills a lone replica out of every co-resident group; a one-engine group of its own model
or LoRA base, `solver.colocation.engine_templates`, may take it, and it is then reported as shared).
"""

from solver.colocation.groups import MAX_GROUP_SIZE, GroupTable
from solver.plan.records import ColocationSearch, Tiering, WorkloadTier
from solver.plan.schema import Plan


def search_report(groups: GroupTable) -> ColocationSearch | None:
    """The plan's account of column generation (None when there was no tail to pack)."""
    found = groups.search
    if found is None:
        return None
    state = (
        "proven optimal for the packing"
        if found.proven
        else "converged"
        if found.converged
        else "stopped early (tailing off, budget or deadline)"
    )
    return ColocationSearch(
        lp_bound=found.lp_bound_per_month,
        packing_cost=found.integer_per_month,
        gap=found.gap,
        converged=found.converged,
        rounds=found.rounds,
        groups_checked=found.evaluated,
        templates=len(groups.templates),
        note=(
            "the integer program over the generated group templates is a heuristic over all "
            "groups: the tail's packing into co-resident groups at peak costs at least "
            f"lp_bound (LP bound over every group of up to {MAX_GROUP_SIZE} members passing "
            f"the pre-filters; one-engine templates are added beside it); {state}"
        ),
    )


def tiering_report(
    plan: Plan, dedicated: Plan | None, templates: int, enumeration_s: float
) -> Tiering:
    """The report of `plan` (co-location on) against `dedicated` (the same instance with
    colocation off; None when that has no plan)."""
    none = next((s for s in plan.scenarios if s.name == "none"), None)
    loads: dict[str, list[tuple[float, float]]] = {}
    for load in none.pools if none else ():
        loads.setdefault(load.workload, []).append(
            (load.load_requests_per_s, load.capacity_requests_per_s)
        )
    rows = []
    names = list(dict.fromkeys(w for e in plan.replicas for w in e.workloads))
    for w in names:
        own = any(not e.shared and e.workload == w for e in plan.replicas)
        groups = tuple(
            "+".join(e.workloads) for e in plan.replicas if e.shared and w in e.workloads
        )
        tier = "both" if own and groups else "shared" if groups else "dedicated"
        served = loads.get(w, [])
        load = sum(x for x, _ in served)
        capacity = sum(c for _, c in served)
        rows.append(
            WorkloadTier(
                workload=w,
                tier=tier,
                peak_requests_per_s=load,
                utilisation=load / capacity if capacity > 0 else 0.0,
                groups=groups,
            )
        )
    idle = plan.idle_fraction or 0.0
    saving = None
    if dedicated is not None and dedicated.cost_per_month is not None:
        saving = dedicated.cost_per_month - (plan.cost_per_month or 0.0)
    bills = tuple(r.workload for r in rows if r.tier == "dedicated")
    note = (
        f"the dedicated tier ({', '.join(bills) or 'none'}) runs on pools of its own: no "
        "other engine shares its GPUs, so its p99s are those of the dedicated physics, "
        "untouched by the tail"
    )
    return Tiering(
        workloads=tuple(rows),
        idle_fraction=idle,
        idle_fraction_dedicated=dedicated.idle_fraction if dedicated else None,
        cost_per_month_dedicated=dedicated.cost_per_month if dedicated else None,
        gpus_dedicated=dedicated.total_gpus if dedicated else None,
        saving_per_month=saving,
        pays_the_bills=bills,
        templates=templates,
        enumeration_s=enumeration_s,
        note=note,
    )
