"""Solution read-back: solver values -> the Plan (PyPSA's `assign_solution`).

One place turns a backend's values into results: replica counts, GPUs used and bought,
cost, routing and the utilisation of every phase in every scenario, at the physics of
each chosen pool's real size (tabulated by solver.candidates.pools.assess_pools, never asked
here). `explain` reads its counts and costs through the same functions.
"""

from collections import defaultdict
from collections.abc import Callable

from models.operations.scenarios import LOSE_REPLICA, Scenario
from models.operations.site import gpus_bought, node_gpus
from models.serving.pooling import spare_survivors, zone_survivors
from models.serving.replica import ReplicaConfig
from solver.analysis.cost_attribution import cost_attribution
from solver.candidates.pool_kv import pool_kv_fields
from solver.candidates.pools import PoolCurve, failover_curve, physics_of
from solver.candidates.table import Candidate
from solver.plan.records import (
    GpuUse,
    PoolLoad,
    ReplicaPool,
    Route,
    ScenarioResult,
    SolverRun,
    layout_label,
    moves_of,
)
from solver.plan.schema import NO_SHADOW_PRICES, SHADOW_PRICE_NOTE, Plan, plan_status
from solver.program.build import FleetProgram
from solver.program.families.split import load_terms
from solver.program.families.variables import ServedColumn
from solver.program.lp import Termination
from solver.program.optimised import Optimised
from solver.program.row_names import ReplicasColumn
from solver.program.sets import Mode, ProgramSets
from solver.readback.gap import plan_gap
from solver.readback.groups import group_counts, group_gpus, group_pools, with_routing
from solver.readback.pricing import binding_constraints
from solver.readback.site import region_power, server_purchases, whole_unit_power
from solver.settings import SolveSettings

ROUTE_EPSILON = 1e-7
"""Requests/s below which a route counts as unused."""


def integral(program: FleetProgram, values: dict[str, float]) -> dict[str, float]:
    """The solution with integer variables rounded (solvers return 2.9999999)."""
    rounded = dict(values)
    for name in program.lp.integer_variables:
        rounded[name] = float(round(values.get(name, 0.0)))
    return rounded


def chosen_sizes(
    sets: ProgramSets, counts: dict[tuple[str, str, str], int]
) -> dict[tuple[str, str], tuple[ReplicaConfig, PoolCurve, set[int]]]:
    """(workload, candidate key) -> the candidate and the pool sizes the report needs:
    each chosen pool's real size, less one replica, and less its fullest zone."""
    chosen: dict[tuple[str, str], tuple[ReplicaConfig, PoolCurve, set[int]]] = {}
    for pool in sets.pools:
        count = counts.get((pool.workload, pool.candidate.key, pool.region), 0)
        if not count:
            continue
        c = pool.candidate
        _, _, sizes = chosen.setdefault((pool.workload, c.key), (c.config, c.curve, set()))
        sizes |= {count, spare_survivors(count), zone_survivors(count, sets.zones[pool.region])}
    return chosen


def read_plan(
    program: FleetProgram,
    optimised: Optimised,
    values: dict[str, float],
    duals: dict[str, float] | Callable[[], dict[str, float]],
    settings: SolveSettings,
    curves: dict[tuple[str, str], PoolCurve],
    period: bool = False,
) -> Plan:
    """Read a solution back into a Plan (counts, GPUs, cost, routing, utilisation).

    `duals`: the pricing LP's, or a function giving them, called once the parts of the
    plan that need none are read (the pricing solve may still be running meanwhile).
    `curves`: the chosen pools' capacity curves at their real sizes
    (solver.candidates.pools.assess_pools of `chosen_sizes`). `period`: the plan is one
    period of a plan of periods (solver.time.solve.period_plans), which states the
    binding rows and the cost attribution itself, from its own rows and hours: the
    period's are left empty (`binding`, `cost_attribution`; read, they were dropped)."""
    sets = program.sets
    table = sets.table
    result = optimised.result
    hours = sets.hours_per_month
    counts = replica_counts(sets, values)
    pools = []
    for pool in sets.pools:
        count = counts.get((pool.workload, pool.candidate.key, pool.region), 0)
        if not count:
            continue
        c = pool.candidate
        price = sets.offers[(pool.region, c.gpu)].price_per_gpu_hour
        curve = curves[(pool.workload, c.key)]
        physics = curve.physics(count)  # per replica in a pool of `count` behind one queue
        pools.append(
            ReplicaPool(
                workload=pool.workload,
                region=pool.region,
                **c.layout_fields,
                count=count,
                gpus=count * c.gpus,
                limit=physics.limit,
                requests_per_s_per_replica=curve.requests_per_s(count),
                cost_per_month=count * c.gpus * price * hours,
                **pool_kv_fields(sets.instance, pool.workload, c.config, count),
            )
        )
    pools += group_pools(program, values)
    region_order = {r: i for i, r in enumerate(sets.regions)}
    pools.sort(key=lambda p: region_order[p.region])
    gpu_uses = gpu_use(sets, counts, group_gpus(program, values))
    size = program.lp.size()
    shared = _shared_credit(program, values)
    scenarios = scenario_results(sets, values, counts, curves, shared)
    if callable(duals):
        duals = duals()
    gap = plan_gap(program.lp, sets, result, values, gpu_uses)
    proven = result.termination is Termination.OPTIMAL or (
        gap is not None and gap != result.mip_gap and gap <= settings.mip_gap
    )
    power, power_rows = whole_unit_power(sets, region_power(sets, gpu_uses, duals), duals)
    plan = Plan(
        instance=sets.instance.name,
        status=plan_status(proven, gap, settings.mip_gap),
        cost_per_month=sum(use.cost_per_month for use in gpu_uses),
        total_gpus=sum(use.used for use in gpu_uses),
        gpus=tuple(gpu_uses),
        replicas=tuple(pools),
        binding=() if period else binding_constraints(program, values, duals) + power_rows,
        scenarios=scenarios,
        solver=SolverRun(
            name=result.solver,
            version=result.solver_version,
            termination=str(result.termination),
            runtime_s=result.runtime_s,
            mip_gap=gap,
            requested_gap=settings.mip_gap,
            time_limit_s=settings.time_limit_s,
            threads=settings.threads,
            variables=size["variables"],
            integer_variables=size["integer_variables"],
            constraints=size["constraints"],
            candidates=sum(len(table.of(w)) for w in sets.workloads),
            method=optimised.description,
        ),
        servers=server_purchases(sets, gpu_uses),
        power_kw=power,
        demand_growth=sets.demand_factor,
        max_utilization=sets.instance.policy.max_utilization,
        shadow_price_note=SHADOW_PRICE_NOTE
        if duals
        else f"{NO_SHADOW_PRICES}: the backend returned no duals for the pricing LP",
        notes=(*program.groups.notes, *mixed_precision_notes(tuple(pools))),
    )
    plan = with_routing(plan)  # the groups' member loads, which their attribution needs
    if period:
        return plan
    groups = tuple(entry for entry in plan.replicas if entry.shared)
    attribution = cost_attribution(
        sets, counts, curves, scenarios[0].routing if scenarios else (), gpu_uses, groups
    )
    return plan.model_copy(update={"cost_attribution": attribution})


def mixed_precision_notes(pools: tuple[ReplicaPool, ...]) -> tuple[str, ...]:
    """One note per workload whose dedicated pools run more than one weight precision (a
    choice the program makes silently where it is cheaper: users routed to different
    regions or pools get different weights), naming where each precision runs and the
    policy option that forbids it."""
    where: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for pool in pools:
        if pool.count > 0 and not pool.shared:
            where[pool.workload][str(pool.precision)].add(pool.region)
    return tuple(
        f"{w} is served at {' and '.join(sorted(by))} at once ("
        + "; ".join(f"{p}: {', '.join(sorted(regions))}" for p, regions in sorted(by.items()))
        + "): its users get different weights depending on where they are routed; "
        "policy.one_precision_per_workload: true asks for one"
        for w, by in sorted(where.items())
        if len(by) > 1
    )


SharedCredit = dict[tuple[str, str], list[tuple[int, float]]]
"""(workload, region) -> (group replicas, a[w,t]) of every shared group serving it."""


def _shared_credit(program: FleetProgram, values: dict[str, float]) -> SharedCredit:
    templates = {t.key: t for t in program.groups.templates}
    credit: SharedCredit = defaultdict(list)
    for (key, r), count in group_counts(program, values).items():
        t = templates[key]
        for w, a in zip(t.members, t.capacity_requests_per_s, strict=True):
            credit[(w, r)].append((count, a))
    return dict(credit)


def gpu_use(
    sets: ProgramSets,
    counts: dict[tuple[str, str, str], int],
    shared_gpus: dict[tuple[str, str], int] | None = None,
) -> tuple[GpuUse, ...]:
    """GPUs used, owned and bought per region and type (shared groups' GPUs included),
    with what they cost per month: bought x price x hours, bought = max(0, used -
    existing) in whole servers with policy.buy_unit: node (models.operations.site.gpus_bought)."""
    used: dict[tuple[str, str], int] = defaultdict(int, shared_gpus or {})
    for pool in sets.pools:
        count = counts.get((pool.workload, pool.candidate.key, pool.region), 0)
        used[(pool.region, pool.candidate.gpu)] += count * pool.candidate.gpus
    uses = []
    for (r, g), offer in sets.offers.items():
        n = used.get((r, g), 0)
        if not n and not offer.existing:
            continue
        bought = gpus_bought(n, offer.existing, node_gpus(sets.instance, g))
        uses.append(
            GpuUse(
                region=r,
                gpu=g,
                used=n,
                existing=offer.existing,
                purchased=bought,
                available=offer.available,
                price_per_gpu_hour=offer.price_per_gpu_hour,
                cost_per_month=bought * offer.price_per_gpu_hour * sets.hours_per_month,
            )
        )
    return tuple(uses)


def replica_counts(sets: ProgramSets, values: dict[str, float]) -> dict[tuple[str, str, str], int]:
    """(workload, candidate key, region) -> replicas, for pools in use."""
    counts = {}
    for pool in sets.pools:
        name = ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name()
        count = round(values.get(name, 0.0))
        if count > 0:
            counts[(pool.workload, pool.candidate.key, pool.region)] = count
    return counts


def scenario_results(
    sets: ProgramSets,
    values: dict[str, float],
    counts: dict[tuple[str, str, str], int],
    curves: dict[tuple[str, str], PoolCurve],
    shared: SharedCredit | None = None,
) -> tuple[ScenarioResult, ...]:
    """Routing and utilisation of every phase in every scenario (shared groups credited
    to their members' unified phase)."""
    shared = shared or {}
    at_failover = FailoverCurves(sets, curves)
    results = []
    for f in sets.routing_scenarios:
        routes = tuple(
            Route(workload=w, origin=o, destination=d, requests_per_s=rate, rtt_ms=rtt)
            for (f_name, w), pairs in sets.routes.items()
            if f_name == f.name
            for o, d, rtt in pairs
            if (rate := values.get(ServedColumn(f.name, w, o, d).name(), 0.0)) > ROUTE_EPSILON
        )
        results.append(
            ScenarioResult(
                name=f.name,
                description=f.description,
                routing=routes,
                pools=_phase_loads(sets, f, values, counts, at_failover, shared=shared),
                moves=moves_of(routes, f.lost_region),
            )
        )
    if sets.survives_replica_loss:
        none = results[0]
        results.append(
            ScenarioResult(
                name=LOSE_REPLICA.name,
                description=LOSE_REPLICA.description
                + " (capacity: each phase less its largest replica)",
                routing=none.routing,
                pools=_phase_loads(sets, LOSE_REPLICA, values, counts, at_failover, "none", shared),
                moves=none.moves,
            )
        )
    return tuple(results)


def _phase_loads(
    sets: ProgramSets,
    f: Scenario,
    values: dict[str, float],
    counts: dict[tuple[str, str, str], int],
    curves: "FailoverCurves",
    none_scenario: str | None = None,
    shared: SharedCredit | None = None,
) -> tuple[PoolLoad, ...]:
    loads_from = none_scenario or f.name
    shared = shared or {}
    rows = []
    for (w, d), modes in sets.modes.items():
        if d == f.lost_region or (loads_from, w, d) not in sets.inflow:
            continue
        for mode in modes:
            load = _mode_load(sets, loads_from, w, d, mode, values)
            for phase in mode.phases:
                alive = []
                for pool in sets.phase_pools(w, d, phase):
                    count = counts.get((w, pool.candidate.key, d), 0)
                    if count:
                        keep = f.surviving_replicas(d, count, sets.zones[d])
                        alive.append(
                            (keep, pool.candidate, curves.of(f.name, w, pool.candidate, d))
                        )
                groups = shared.get((w, d), []) if phase.label == "unified" else []
                groups = [(f.surviving_replicas(d, n, sets.zones[d]), a) for n, a in groups]
                if not alive and not groups and load <= ROUTE_EPSILON:
                    continue
                capacity = _phase_capacity(alive, less_one=none_scenario is not None)
                if groups:
                    capacity = _with_groups(alive, groups, capacity, none_scenario is not None)
                rows.append(
                    PoolLoad(
                        workload=w,
                        region=d,
                        phase=phase.label,
                        load_requests_per_s=load,
                        capacity_requests_per_s=capacity,
                        utilisation=load / capacity if capacity > 0 else 0.0,
                        pools=tuple(f"{n} x {_pool_label(c)}" for n, c, _ in alive)
                        + tuple(f"{n} x shared group" for n, _ in groups),
                    )
                )
    return tuple(rows)


class FailoverCurves:
    """The chosen pools' curves as a scenario credits them: q(n) at their real sizes, and
    where the scenario may reroute users to the region, q'(n) at the TTFT target less the
    longest such round trip (`solver.candidates.pools.failover_curve` on the assessed
    curve, so exact at the real sizes), as the capacity rows credit and the verifier
    checks them (solver.program.families.capacity, "Failover round trip"). The tighter
    target's physics is asked here, once per pool and round trip, only where it binds."""

    def __init__(self, sets: ProgramSets, curves: dict[tuple[str, str], PoolCurve]):
        self.sets = sets
        self.curves = curves
        self.memo: dict[tuple[str, str, float], PoolCurve] = {}

    def of(self, f: str, w: str, candidate: Candidate, d: str) -> PoolCurve:
        """The curve of `candidate` serving `w` in region `d` under scenario `f`."""
        curve = self.curves[(w, candidate.key)]
        rtt_ms = self.sets.rerouted_rtt.get((f, w, d), 0.0)
        if rtt_ms <= 0:
            return curve
        key = (w, candidate.key, rtt_ms)
        if key not in self.memo:
            physics = physics_of(self.sets.instance, w, candidate.config)
            self.memo[key] = failover_curve(physics, curve, rtt_ms)
        return self.memo[key]


def _pool_label(candidate: Candidate) -> str:
    """The plan pool's label of a candidate (`layout_label`), as its `ReplicaPool` spells it."""
    fields = candidate.layout_fields
    return layout_label(
        fields["gpu"],
        fields["precision"],
        fields["tp"],
        fields["pp"],
        fields["role"],
        fields["ep"],
        fields["dp"],
        fields["speculative"],
        fields["redundant_experts"],
    )


def _phase_capacity(alive: list[tuple[int, Candidate, PoolCurve]], less_one: bool = False) -> float:
    """Requests/s the pools of a phase carry at the physics of their real sizes:
    sum n x q_c(n), each pool behind its own queue. `less_one`: the smallest such sum
    with one replica of one pool gone (its pool then a replica smaller)."""
    whole = [n * q.requests_per_s(n) for n, _, q in alive]
    if not less_one or not alive:
        return sum(whole)
    return min(
        sum(whole) - whole[i] + spare_survivors(n) * q.requests_per_s(spare_survivors(n))
        for i, (n, _, q) in enumerate(alive)
        if n
    )


def _with_groups(
    alive: list[tuple[int, Candidate, PoolCurve]],
    groups: list[tuple[int, float]],
    dedicated: float,
    less_one: bool,
) -> float:
    """The phase's capacity with its shared groups, sum_t n_t a[w,t] on top; with
    `less_one`, the worse of one dedicated replica lost (`dedicated` is then that) and
    one replica of the group with the largest a[w,t] lost."""
    shared = sum(n * a for n, a in groups)
    if not less_one:
        return dedicated + shared
    whole = _phase_capacity(alive) + shared
    worst_group = whole - max((a for n, a in groups if n), default=0.0)
    return min(dedicated + shared, worst_group) if alive else worst_group


def _mode_load(
    sets: ProgramSets, f: str, w: str, d: str, mode: Mode, values: dict[str, float]
) -> float:
    return sum(values.get(var, 0.0) for var in load_terms(sets, f, w, d, mode))
