"""The independent verifier: does a fleet meet the instance's requirements?

It reads only the instance and the plan's replica pools, never the program or a solver:

1. Each pool's configuration is one the instance allows (workload, region, GPU,
   precision, TP dividing the heads), and its capacity at the SLO is recomputed from
   scratch with the physics (`models.capacity.replica_capacity`): it must fit and meet
   the SLO at some load. A pool is every replica of one configuration (GPU, precision,
   KV precision, TP, PP, role) serving one workload in one region, however many plan
   entries list them: they sit behind one router and share one prompt queue, so the
   capacity per replica is that of a pool of the replicas that actually serve
   (`pool_replicas` = the pool's surviving count in each scenario), never an assumption
   the program made. A stated capacity per replica must match the physics at the pool's
   full size.
2. GPUs used per region and type stay within the existing fleet plus the supply.
3. The cost is recomputed: sum over (r, g) of max(0, used - existing) x price x hours;
   the plan's stated cost and GPU total, when given, must match.
4. Every scenario the policy names is served. For `none`, region and zone loss: a
   max-flow per workload (networkx) on

       source -> origin o          capacity D[w,o]
       origin o -> destination d   when the latency policy allows d for o's users in f
       destination d -> sink       capacity U_d + sum_p min(P_d,p, D_d,p)

   with U, P, D the unified, prefill and decode capacity of the replicas that survive
   f, each pool n x q(n) at its n survivors (a prefill pool pairs with a decode pool of
   the same weight precision). Every request/s of demand must reach the sink. Replica
   loss: for every pool, each region's own demand is still within its capacity with one
   replica of that pool gone (that pool n - 1 replicas at q(n - 1)).

5. Every other figure the plan states (the `gpus` table, each entry's cost, its routing,
   every number finite) against its recomputation: solver.verify_totals. Replicas that
   need more GPUs than their regions have are named there before any physics runs, and
   the verifier stops: a count of 10^12 never reaches the pool queueing.

The max-flow does not take routing from the plan, so a fleet a user owns today (a file holding only
`{"replicas": [...]}`) is verified the same way.

Violations are named with the program's row names (solver.row_names, the plan's
vocabulary): `replicas[w,c,r]`, `gpu_supply[r,g]`, `demand[f,w,o]` (one per origin the
flow cannot serve; the message names the whole stuck group) and
`replica_spare[w,d,phase,c]` for the worst single loss. The phase is told by precision
(`decode-fp8`) when the plan's disaggregated pools of the workload come in more than one
precision; the program decides that on its candidate table, so the two differ only for
a plan that uses one of several precisions offered.
"""

from collections import defaultdict
from dataclasses import dataclass, field

import networkx as nx
from networkx.algorithms.flow import edmonds_karp
from pydantic import BaseModel, ConfigDict

from models.capacity import replica_capacity
from models.efficiency import Efficiency, efficiency_for
from models.instance import Instance
from models.memory import kv_precision_for
from models.pooling import planning_capacity
from models.precision import Precision
from models.replica import LatencyTargets, ReplicaCapacity, ReplicaConfig, Role, TrafficMix
from models.scenarios import RegionGraph, Scenario, ScenarioKind, failure_scenarios
from solver.plan import Plan, ReplicaPool
from solver.row_names import (
    DemandRow,
    GpuSupplyRow,
    ReplicasColumn,
    ReplicaSpareRow,
    phase_label,
)
from solver.verify_totals import (
    Finding,
    Totals,
    beyond_bounds,
    over_supply,
    recompute_totals,
    stated_figures,
    stated_totals,
)

DEMAND_TOLERANCE = 1e-6
"""Relative shortfall of served demand tolerated (solver feasibility tolerance)."""
COST_TOLERANCE = 0.01
"""USD per month by which a stated cost may differ from the recomputed one."""

_FROZEN = ConfigDict(extra="forbid", frozen=True)


class Violation(BaseModel):
    """One requirement the fleet breaks, with the numbers."""

    model_config = _FROZEN

    requirement: str
    message: str

    def __str__(self) -> str:
        return f"{self.requirement}: {self.message}"


class ScenarioCheck(BaseModel):
    """Demand against what the fleet can serve in one scenario, for one workload."""

    model_config = _FROZEN

    scenario: str
    workload: str
    demand_requests_per_s: float
    servable_requests_per_s: float


class Verification(BaseModel):
    """The verifier's verdict and the figures it recomputed."""

    model_config = _FROZEN

    ok: bool
    violations: tuple[Violation, ...]
    cost_per_month: float
    total_gpus: int
    checks: tuple[ScenarioCheck, ...]


@dataclass
class _Pool:
    """The replicas of one configuration serving one workload in one region (one or more
    plan entries), and the physics to ask at any pool size."""

    workload: str
    region: str
    role: Role
    precision: str
    label: str
    entries: list[ReplicaPool]
    config: ReplicaConfig
    mix: TrafficMix
    targets: LatencyTargets
    efficiency: Efficiency
    serves: bool
    """Whether the configuration fits and meets the SLO at some load."""
    physics: dict[int, ReplicaCapacity] = field(default_factory=dict)
    """Pool size -> the physics (shared by the pools of one configuration and workload)."""

    @property
    def count(self) -> int:
        """Replicas in the pool, all entries together."""
        return sum(entry.count for entry in self.entries)

    def capacity(self, replicas: int) -> ReplicaCapacity:
        """The physics of one replica in a pool of `replicas` (computed once per size)."""
        if replicas not in self.physics:
            self.physics[replicas] = replica_capacity(
                self.config, self.mix, self.targets, self.efficiency, max(replicas, 1)
            )
        return self.physics[replicas]

    def requests_per_s(self, replicas: int) -> float:
        """Capacity per replica at the SLO in a pool of `replicas` (0 when empty)."""
        if replicas < 1 or not self.serves:
            return 0.0
        return planning_capacity(self.capacity(replicas))

    def carries(self, replicas: int) -> float:
        """Requests/s the pool carries with `replicas` replicas: n x q(n)."""
        return replicas * self.requests_per_s(replicas)


def verify(instance: Instance, plan: Plan) -> Verification:
    """Check a plan (or a fleet someone owns) against the instance; list every violation."""
    violations: list[Violation] = []
    totals = recompute_totals(instance, plan)  # integer sums: no physics yet
    stated = stated_figures(instance, plan, totals)
    beyond, unbounded = over_supply(instance, totals), beyond_bounds(plan)
    if beyond or unbounded:
        return _refused_before_physics(plan, totals, beyond, [*unbounded, *stated])
    pools = _recompute_pools(instance, plan, violations)
    used = _check_supply(instance, pools, violations)
    cost = _check_cost(instance, plan, used, violations)
    checks = _check_scenarios(instance, pools, violations)
    violations += [_violation(finding) for finding in stated]
    return Verification(
        ok=not violations,
        violations=tuple(violations),
        cost_per_month=cost,
        total_gpus=sum(used.values()),
        checks=tuple(checks),
    )


def _refused_before_physics(
    plan: Plan,
    totals: Totals,
    beyond: dict[tuple[str, str], str],
    findings: list[Finding],
) -> Verification:
    """A fleet that needs more GPUs than its regions have (or a layout beyond bounds)
    cannot be built: say so without asking the physics, whose pool queueing costs time in
    proportion to the replica count (10^12 replicas would never return)."""
    skipped = "; the physics and scenario checks run once the fleet fits the supply"
    violations = [
        Violation(requirement=GpuSupplyRow(r, g).name(), message=message + skipped)
        for (r, g), message in beyond.items()
    ]
    violations += [_violation(f) for f in (*findings, *stated_totals(plan, totals))]
    return Verification(
        ok=False,
        violations=tuple(violations),
        cost_per_month=totals.cost_per_month,
        total_gpus=totals.total_gpus,
        checks=(),
    )


def _violation(finding: Finding) -> Violation:
    return Violation(requirement=finding.requirement, message=finding.message)


def _recompute_pools(instance: Instance, plan: Plan, violations: list[Violation]) -> list[_Pool]:
    add = violations.append
    workloads = {w.name: w for w in instance.workloads}
    regions = {r.name for r in instance.regions}
    pools: dict[tuple, _Pool] = {}
    physics: dict[tuple, dict[int, ReplicaCapacity]] = defaultdict(dict)
    for entry in plan.replicas:
        name = ReplicasColumn(entry.workload, entry.key, entry.region).name()
        workload = workloads.get(entry.workload)
        gpu = instance.gpu_specs.get(entry.gpu)
        if workload is None or gpu is None or entry.region not in regions:
            unknown = [
                f"unknown {kind} {value!r}"
                for kind, value, known in (
                    ("workload", entry.workload, workloads),
                    ("region", entry.region, regions),
                    ("GPU", entry.gpu, instance.gpu_specs),
                )
                if value not in known
            ]
            add(Violation(requirement=name, message="; ".join(unknown)))
            continue
        model = instance.model_entry(workload.model)
        llm = instance.llm_specs[workload.model]
        if entry.precision not in model.weight_precisions:
            add(
                Violation(
                    requirement=name,
                    message=f"weight precision {entry.precision} is not among "
                    f"{[str(p) for p in model.weight_precisions]} allowed for {llm.name}",
                )
            )
        expected_gpus = entry.count * entry.replica_gpus
        if entry.gpus is not None and entry.gpus != expected_gpus:
            dp = f" x DP {entry.dp}" if entry.dp > 1 else ""
            add(
                Violation(
                    requirement=name,
                    message=f"states {entry.gpus} GPUs, but {entry.count} replicas x TP "
                    f"{entry.tp} x PP {entry.pp}{dp} = {expected_gpus}",
                )
            )
        kv = entry.kv_precision or kv_precision_for(Precision(entry.precision), model.kv_precision)
        key = (entry.workload, entry.region, entry.label, kv)
        if key not in pools:
            config = ReplicaConfig(
                gpu, llm, entry.precision, kv, entry.tp, entry.pp, entry.role, entry.ep, entry.dp
            )
            pool = _Pool(
                workload=entry.workload,
                region=entry.region,
                role=entry.role,
                precision=str(entry.precision),
                label=entry.label,
                entries=[],
                config=config,
                mix=TrafficMix.of(workload, instance.policy.prefix_affinity),
                targets=LatencyTargets.of(workload.slo),
                efficiency=efficiency_for(gpu.name, entry.precision, instance.efficiency),
                serves=True,
                physics=physics[(entry.workload, entry.label, kv)],
            )
            lone = pool.capacity(1)  # fits and meets the SLO alike at every pool size
            pool.serves = planning_capacity(lone) > 0
            if not pool.serves:
                add(
                    Violation(
                        requirement=name,
                        message=f"cannot serve {entry.workload} within its SLO: {lone.reason}",
                    )
                )
            pools[key] = pool
        pools[key].entries.append(entry)
    for pool in pools.values():
        if not pool.serves:
            continue
        size = max(pool.count, 1)
        rate = pool.requests_per_s(size)
        for entry in pool.entries:
            stated = entry.requests_per_s_per_replica
            if stated is not None and not _close(stated, rate):
                add(
                    Violation(
                        requirement=ReplicasColumn(entry.workload, entry.key, entry.region).name(),
                        message=f"states {stated:.4g} requests/s per replica; the physics "
                        f"gives {rate:.4g} in a pool of {size} behind one router",
                    )
                )
            limit = pool.capacity(size).limit
            if entry.limit is not None and entry.limit != limit:
                add(
                    Violation(
                        requirement=ReplicasColumn(entry.workload, entry.key, entry.region).name(),
                        message=f"states limit {entry.limit}; the physics says {limit} limits "
                        f"a replica in a pool of {size}",
                    )
                )
    return list(pools.values())


def _check_supply(
    instance: Instance, pools: list[_Pool], violations: list[Violation]
) -> dict[tuple[str, str], int]:
    used: dict[tuple[str, str], int] = defaultdict(int)
    for pool in pools:
        for e in pool.entries:
            used[(e.region, e.gpu)] += e.count * e.replica_gpus
    for (r, g), n in sorted(used.items()):
        region = instance.region(r)
        supply = region.supply.get(g)
        existing = region.existing.get(g, 0)
        available = existing + (supply.max_gpus if supply else 0)
        if n > available:
            violations.append(
                Violation(
                    requirement=GpuSupplyRow(r, g).name(),
                    message=f"uses {n} {g} in {r}; available {available} "
                    f"(existing {existing} + purchasable {available - existing})",
                )
            )
    return used


def _check_cost(
    instance: Instance,
    plan: Plan,
    used: dict[tuple[str, str], int],
    violations: list[Violation],
) -> float:
    hours = instance.policy.hours_per_month
    cost = 0.0
    for (r, g), n in used.items():
        bought = max(0, n - instance.region(r).existing.get(g, 0))
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


def _check_scenarios(
    instance: Instance, pools: list[_Pool], violations: list[Violation]
) -> list[ScenarioCheck]:
    graph = RegionGraph.of(instance)
    zones = {region.name: region.zones for region in instance.regions}
    checks = []
    for scenario in failure_scenarios(instance):
        for workload in instance.workloads:
            demand = {o: level.peak_rps for o, level in workload.demand.items()}
            mine = [p for p in pools if p.workload == workload.name]
            if scenario.kind is ScenarioKind.REPLICA:
                checks += _check_replica_loss(workload.name, demand, mine, violations)
                continue
            capacity = {
                d: _capacity(
                    [
                        (p, scenario.surviving_replicas(d, p.count, zones[d]))
                        for p in mine
                        if p.region == d
                    ]
                )
                for d in zones
            }
            checks.append(
                _check_flow(
                    scenario,
                    workload.name,
                    demand,
                    capacity,
                    graph,
                    workload.slo.max_failover_rtt_ms,
                    violations,
                )
            )
    return checks


def _capacity(alive: list[tuple[_Pool, int]]) -> float:
    """U + sum_p min(P_p, D_p) of surviving replicas (pool, count) in one region, in
    requests/s: unified capacity plus each prefill/decode pair of the same precision;
    each pool carries n x q(n) at its n survivors."""
    unified = 0.0
    halves: dict[tuple[Role, str], float] = defaultdict(float)
    for pool, count in alive:
        rate = pool.carries(count)
        if pool.role is Role.UNIFIED:
            unified += rate
        else:
            halves[(pool.role, pool.precision)] += rate
    precisions = {p for _, p in halves}
    return unified + sum(
        min(halves[(Role.PREFILL, p)], halves[(Role.DECODE, p)]) for p in precisions
    )


def _check_flow(
    scenario: Scenario,
    workload: str,
    demand: dict[str, float],
    capacity: dict[str, float],
    graph: RegionGraph,
    max_rtt_ms: float | None,
    violations: list[Violation],
) -> ScenarioCheck:
    network = nx.DiGraph()
    reach: dict[str, dict[str, float]] = {}
    for o, rate in demand.items():
        network.add_edge("source", ("origin", o), capacity=rate)
        reach[o] = graph.destinations(scenario, o, max_rtt_ms)
        for d in reach[o]:
            network.add_edge(("origin", o), ("destination", d))
    for d, rate in capacity.items():
        network.add_edge(("destination", d), "sink", capacity=rate)
    total = sum(demand.values())
    served, (source_side, _) = nx.minimum_cut(network, "source", "sink", flow_func=edmonds_karp)
    if served < total * (1 - DEMAND_TOLERANCE) - DEMAND_TOLERANCE:
        # Min cut: the origins left on the source side can reach only destinations on
        # the source side, and those cannot carry them (Hall's condition fails there).
        stuck = [o for o in demand if ("origin", o) in source_side]
        places = sorted(
            {d for o in stuck for d in reach[o]},
            key=lambda d: min(reach[o].get(d, 1e9) for o in stuck),
        )
        who = " + ".join(f"{o} {demand[o]:.2f}" for o in stuck)
        where = (
            "only in " + ", ".join(f"{d} (capacity {capacity[d]:.2f})" for d in places)
            if places
            else "nowhere within reach"
        )
        message = (
            f"{total - served:.2f} requests/s cannot be served ({scenario.description}): "
            f"users of {who} requests/s may be served {where}"
        )
        violations += [
            Violation(requirement=DemandRow(scenario.name, workload, o).name(), message=message)
            for o in stuck
        ]
    return ScenarioCheck(
        scenario=scenario.name,
        workload=workload,
        demand_requests_per_s=total,
        servable_requests_per_s=served,
    )


def _check_replica_loss(
    workload: str, demand: dict[str, float], pools: list[_Pool], violations: list[Violation]
) -> list[ScenarioCheck]:
    checks = []
    split = len({p.precision for p in pools if p.role is not Role.UNIFIED}) > 1
    for o, rate in demand.items():
        here = [p for p in pools if p.region == o and p.count > 0]
        losses = [(lost, _capacity([(p, p.count - (p is lost)) for p in here])) for lost in here]
        # With no pool at all there is no replica to lose: the `none` check names it.
        lost, left = min(losses, key=lambda item: item[1], default=(None, 0.0))
        if lost is not None and left < rate * (1 - DEMAND_TOLERANCE) - DEMAND_TOLERANCE:
            phase = phase_label(lost.role, lost.precision, split)
            violations.append(
                Violation(
                    requirement=ReplicaSpareRow(workload, o, phase, lost.entries[0].key).name(),
                    message=f"{o} serves {rate:.2f} requests/s of {workload}; without "
                    f"one replica of {lost.label} it carries {left:.2f}",
                )
            )
        checks.append(
            ScenarioCheck(
                scenario="lose=replica",
                workload=workload,
                demand_requests_per_s=rate,
                servable_requests_per_s=min(rate, left),
            )
        )
    return checks


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))
