"""The independent verifier: does a fleet meet the instance's requirements?

Why one module over 500 lines: the verifier is kept whole and apart from the planner on
purpose (it imports only models/, the plan schema and its parts verify_totals and
verify_hours), so that one reading shows every requirement it checks; the shared-group
checks are its next seam to split.

It reads only the instance and the plan's replica pools, never the program or a solver:

1. Each pool's configuration is one the instance allows (workload, region, GPU,
   precision, TP dividing the heads), and its capacity at the SLO is recomputed from
   scratch with the physics (`models.capacity.replica_capacity`): it must fit and meet
   the SLO at some load. A capacity or limit the plan states is never the verdict: the
   requirements are judged on the recomputed physics (step 4), so a stated figure that
   differs from it (a plan solved before the efficiency was re-tuned) is a warning, and
   the plan fails only when the recomputed capacity no longer carries the load. A pool
   is every replica of one configuration (GPU, precision, KV precision, TP, PP, role)
   serving one workload in
   one region, however many plan entries list them: they sit behind one router and
   share one prompt queue, so the capacity per replica is that of a pool of the
   replicas that actually serve
   (`pool_replicas` = the pool's surviving count in each scenario), never an assumption
   the program made.
2. GPUs used per region and type stay within the existing fleet plus the supply.
3. The cost is recomputed: sum over (r, g) of bought x price x hours, bought =
   max(0, used - existing) in whole servers with policy.buy_unit: node
   (models.site.gpus_bought); the plan's stated cost, GPU total and servers, when
   given, must match (`whole_servers[r,g]`). The GPUs installed (existing and bought)
   stay within each region's power_kw and racks (`power[r]`, `rack_space[r]`), and no
   (workload, region, phase) mixes more dedicated configurations than
   policy.max_configs_per_pool (`configs_per_pool[w,d,phase]`; shared groups not counted).
4. Every scenario the policy names is served. For `none`, region and zone loss: a
   max-flow per workload (networkx) on

       source -> origin o          capacity D[w,o]
       origin o -> destination d   when the latency policy allows d for o's users in f
       destination d -> sink       capacity U_d + sum_p min(P_d,p, D_d,p)

   with U, P, D the unified, prefill and decode capacity of the replicas that survive
   f, each pool n x q(n) at its n survivors (q at the TTFT target less the longest
   round trip of the users f may reroute to d, when any may come:
   `models.scenarios.rerouted_rtt_ms`) (a prefill pool pairs with a decode pool of
   the same weight precision). Every request/s of demand must reach the sink. Replica
   loss: for every pool, each region's own demand is still within its capacity with one
   replica of that pool gone (that pool n - 1 replicas at q(n - 1)). Demand is the
   peak times `demand_growth`; every capacity counts at policy.max_utilization of it.

5. Shared groups (entries with `members`, policy.colocation): each group is recomputed
   on its own with `models.colocation.evaluate_group` at the loads the plan may route to
   one group replica, its members' stated a[w] (routing is by capacity, so in every
   scenario the flow above sends each replica at most a[w] of member w, and the group's
   feasible loads are down-closed: if it holds at a[w] it holds at anything below). It
   must fit in HBM (weights + activations + reserves + p99 KV of every member) and meet
   every member's p99 TTFT and TPOT with the others' interference; otherwise it is a
   violation named `groups[t,r]` and credits nothing. A group that holds credits n x a[w]
   to member w in the flows, and its loss is one of the single replica losses. A group
   served by one engine (`shared_engine`: multi-LoRA adapters of one base, or a
   same-model merge) is recomputed with `models.engine_group.engine_group` instead: one
   base (adapters only with policy.multi_lora), and the engine's capacity along the
   stated a[w], at the strictest SLO with the members' envelope mix, at least sum a[w].
   A swapped group (`swapped_weights`: one weight slot, the others paged in from host
   memory) is recomputed with `models.swap_group.evaluate_swapped_group`: the largest
   weights plus every engine's KV and reserve in HBM, at most 5% of the GPU's time
   swapping, and every member's warm p99 TTFT plus its swap wait within its target.

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
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from models.capacity import holds_at_tighter_ttft, replica_capacity
from models.efficiency import Efficiency, efficiency_for
from models.instance import Instance
from models.memory import kv_precision_for
from models.pooling import planning_capacity
from models.precision import Precision
from models.prefix_kv import pool_kv
from models.replica import LatencyTargets, ReplicaCapacity, ReplicaConfig, Role, TrafficMix
from models.scenarios import (
    RegionGraph,
    Scenario,
    ScenarioKind,
    failover_targets,
    failure_scenarios,
    rerouted_rtt_ms,
)
from models.site import demand_factor, gpu_kw, gpus_bought, node_gpus, racks_per_gpu
from models.warm_cold import warm_cold_instance
from solver.plan import Plan, ReplicaPool
from solver.row_names import (
    ConfigsPerPoolRow,
    DemandRow,
    GpuSupplyRow,
    GroupsColumn,
    GroupSpareRow,
    PowerRow,
    RackSpaceRow,
    ReplicasColumn,
    ReplicaSpareRow,
    WholeServersRow,
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
ENGINE_TOLERANCE = 1e-6
"""Relative excess of a shared engine's stated capacity over the recomputed one allowed."""
COST_TOLERANCE = 0.01
"""USD per month by which a stated cost may differ from the recomputed one."""

_FROZEN = ConfigDict(extra="forbid", frozen=True)

if TYPE_CHECKING:
    from models.colocation import SharedLayout


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
    warnings: tuple[Violation, ...] = ()
    """Stated figures that differ from the recomputed physics without breaking a
    requirement (a per-replica capacity, a limiting factor): the plan still holds."""


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

    headroom: float = 1.0
    """policy.max_utilization: the fraction of the capacity the pool may be loaded to."""
    failover_physics: dict[tuple[int, float], ReplicaCapacity] = field(default_factory=dict)
    """(pool size, rerouted round trip ms) -> the physics at the tighter TTFT target."""

    def carries(self, replicas: int, rerouted_rtt_ms: float = 0.0) -> float:
        """Requests/s the pool may carry with `replicas` replicas: n x q(n) x headroom;
        while it serves users rerouted from `rerouted_rtt_ms` away, q(n) at the TTFT
        target less that round trip (`models.scenarios.failover_targets`)."""
        if rerouted_rtt_ms <= 0:
            return replicas * self.requests_per_s(replicas) * self.headroom
        if replicas < 1 or not self.serves:
            return 0.0
        key = (replicas, rerouted_rtt_ms)
        if key not in self.failover_physics:
            tighter = failover_targets(self.targets, rerouted_rtt_ms)
            normal = self.capacity(replicas)
            self.failover_physics[key] = (
                normal
                if holds_at_tighter_ttft(normal, tighter)
                else replica_capacity(self.config, self.mix, tighter, self.efficiency, replicas)
            )
        return replicas * planning_capacity(self.failover_physics[key]) * self.headroom


def verify(instance: Instance, plan: Plan) -> Verification:
    """Check a plan (or a fleet someone owns) against the instance; list every violation.

    A plan with `warm_cold_split` is checked against the instance with those workloads
    split into their warm and cold halves (`models.warm_cold`), which the instance's
    policy must allow."""
    if plan.warm_cold_split:
        split, refusal = _warm_cold(instance, plan)
        if refusal is not None:
            return Verification(
                ok=False,
                violations=(refusal,),
                cost_per_month=plan.cost_per_month or 0.0,
                total_gpus=plan.total_gpus or 0,
                checks=(),
            )
        instance = split
    violations: list[Violation] = []
    totals = recompute_totals(instance, plan)  # integer sums: no physics yet
    stated = stated_figures(instance, plan, totals)
    beyond, unbounded = over_supply(instance, totals), beyond_bounds(plan)
    if beyond or unbounded:
        return _refused_before_physics(plan, totals, beyond, [*unbounded, *stated])
    warnings: list[Violation] = []
    pools: list = _recompute_pools(instance, plan, violations, warnings)
    pools += _check_groups(instance, plan, violations)
    used = _check_supply(instance, pools, violations)
    cost = _check_cost(instance, plan, used, violations)
    _check_site(instance, plan, used, violations)
    _check_configs_per_pool(instance, [p for p in pools if not isinstance(p, _Share)], violations)
    checks = _check_scenarios(instance, pools, violations)
    violations += [_violation(finding) for finding in stated]
    return Verification(
        ok=not violations,
        violations=tuple(violations),
        cost_per_month=cost,
        total_gpus=sum(used.values()),
        checks=tuple(checks),
        warnings=tuple(warnings),
    )


def _warm_cold(instance: Instance, plan: Plan) -> tuple[Instance, Violation | None]:
    """The instance with the plan's warm/cold split applied, or why it cannot be."""
    if not instance.policy.warm_cold_split:
        return instance, Violation(
            requirement="warm_cold_split",
            message=f"splits {list(plan.warm_cold_split)} into warm and cold pools; the "
            "instance's policy.warm_cold_split is off",
        )
    try:
        return warm_cold_instance(instance, plan.warm_cold_split), None
    except ValueError as error:
        return instance, Violation(requirement="warm_cold_split", message=str(error))


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


def _recompute_pools(
    instance: Instance, plan: Plan, violations: list[Violation], warnings: list[Violation]
) -> list[_Pool]:
    """The plan's pools with their physics recomputed; a configuration that cannot serve
    is a violation, a stated capacity or limit that differs from the physics a warning
    (the scenario checks judge the recomputed capacity against the load)."""
    add = violations.append
    workloads = {w.name: w for w in instance.workloads}
    regions = {r.name for r in instance.regions}
    pools: dict[tuple, _Pool] = {}
    physics: dict[tuple, dict[int, ReplicaCapacity]] = defaultdict(dict)
    for entry in plan.replicas:
        if entry.members:
            continue  # a shared group: _check_groups
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
        speculation = instance.speculations.get(entry.speculative or "")
        if entry.speculative is not None and speculation is None:
            add(
                Violation(
                    requirement=name,
                    message=f"decodes with speculative option {entry.speculative!r}, which "
                    f"policy.speculative does not declare "
                    f"(declared: {', '.join(instance.speculations) or 'none'})",
                )
            )
            continue
        kv = entry.kv_precision or kv_precision_for(Precision(entry.precision), model.kv_precision)
        key = (entry.workload, entry.region, entry.label, kv)
        if key not in pools:
            config = ReplicaConfig(
                gpu,
                llm,
                entry.precision,
                kv,
                entry.tp,
                entry.pp,
                entry.role,
                entry.ep,
                entry.dp,
                speculation if entry.role is not Role.PREFILL else None,
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
                efficiency=efficiency_for(
                    gpu, entry.precision, instance.efficiency, instance.engine
                ),
                serves=True,
                physics=physics[(entry.workload, entry.label, kv)],
                headroom=instance.policy.max_utilization,
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
            if stated is not None and stated < 0:
                add(
                    Violation(
                        requirement=ReplicasColumn(entry.workload, entry.key, entry.region).name(),
                        message=f"states {stated:.4g} requests/s per replica; a capacity is "
                        "never negative",
                    )
                )
            elif stated is not None and not _close(stated, rate):
                routed = stated * _peak_utilisation(plan, entry)
                overloaded = routed > rate and not _close(routed, rate)
                (violations if overloaded else warnings).append(
                    Violation(
                        requirement=ReplicasColumn(entry.workload, entry.key, entry.region).name(),
                        message=f"states {stated:.4g} requests/s per replica; the physics "
                        f"gives {rate:.4g} in a pool of {size} behind one router"
                        + (
                            f", and the plan's routing loads it with {routed:.4g}"
                            if overloaded
                            else " (the scenario checks use the physics)"
                        ),
                    )
                )
            limit = pool.capacity(size).limit
            if entry.limit is not None and entry.limit != limit:
                warnings.append(
                    Violation(
                        requirement=ReplicasColumn(entry.workload, entry.key, entry.region).name(),
                        message=f"states limit {entry.limit}; the physics says {limit} limits "
                        f"a replica in a pool of {size}",
                    )
                )
            for message in _prefix_cache_problems(pool, entry, size):
                add(
                    Violation(
                        requirement=ReplicasColumn(entry.workload, entry.key, entry.region).name(),
                        message=message,
                    )
                )
    return list(pools.values())


def _prefix_cache_problems(pool: _Pool, entry: ReplicaPool, size: int) -> list[str]:
    """A stated hit rate above the one the pool's real size gives (affinity needs
    `affinity_min_replicas`; the spill of hot prefixes is taken off), or a stated KV tier
    the replica does not use, recomputed with `models.prefix_kv.pool_kv`."""
    if entry.prefix_hit_rate is None and entry.kv_tiers_used is None:
        return []
    kv = pool_kv(pool.config, pool.mix, pool.efficiency, size)
    hit = 0.0 if kv is None else kv.hit_rate
    used = set() if kv is None else {tier.value for tier in kv.tiers_used}
    problems = []
    stated = entry.prefix_hit_rate
    if stated is not None and stated > hit and not _close(stated, hit):
        problems.append(
            f"states a prefix hit rate of {stated:.4g}; a pool of {size} replicas gets "
            f"{hit:.4g} (recomputed from where its prefixes live under its router)"
        )
    extra = sorted(set(entry.kv_tiers_used or ()) - used)
    if extra:
        problems.append(
            f"states KV tiers {extra} that its replicas do not use (used: {sorted(used)})"
        )
    return problems


def _check_supply(
    instance: Instance, pools: list[_Pool], violations: list[Violation]
) -> dict[tuple[str, str], int]:
    used: dict[tuple[str, str], int] = defaultdict(int)
    counted: set[int] = set()
    for pool in pools:
        for e in pool.entries:
            if id(e) not in counted:  # a shared group's entry is in each member's share
                counted.add(id(e))
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


def _check_site(
    instance: Instance,
    plan: Plan,
    used: dict[tuple[str, str], int],
    violations: list[Violation],
) -> None:
    """Stated servers hold the GPUs bought; power and racks hold every GPU installed."""
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


def _check_configs_per_pool(
    instance: Instance, pools: list[_Pool], violations: list[Violation]
) -> None:
    """No (workload, region, phase) mixes more dedicated configurations than the policy
    allows (shared groups are co-location's choice and are not counted, as in the
    program's configs_per_pool rows)."""
    limit = instance.policy.max_configs_per_pool
    if limit is None:
        return
    grouped: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for pool in pools:
        if pool.count > 0:
            split = (
                len(
                    {
                        p.precision
                        for p in pools
                        if p.workload == pool.workload and p.role is not Role.UNIFIED
                    }
                )
                > 1
            )
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


def _check_scenarios(
    instance: Instance, pools: list[_Pool], violations: list[Violation]
) -> list[ScenarioCheck]:
    graph = RegionGraph.of(instance)
    zones = {region.name: region.zones for region in instance.regions}
    checks = []
    for scenario in failure_scenarios(instance):
        for workload in instance.workloads:
            growth = demand_factor(instance)
            demand = {o: level.peak_rps * growth for o, level in workload.demand.items()}
            mine = [p for p in pools if p.workload == workload.name]
            if scenario.kind is ScenarioKind.REPLICA:
                checks += _check_replica_loss(workload.name, demand, mine, violations)
                continue
            origins = [o for o, rate in demand.items() if rate > 0]
            rerouted = rerouted_rtt_ms(graph, scenario, origins, workload.slo.max_failover_rtt_ms)
            capacity = {
                d: _capacity(
                    [
                        (p, scenario.surviving_replicas(d, p.count, zones[d]))
                        for p in mine
                        if p.region == d
                    ],
                    rerouted.get(d, 0.0),
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


def _capacity(alive: list[tuple[_Pool, int]], rerouted_rtt_ms: float = 0.0) -> float:
    """U + sum_p min(P_p, D_p) of surviving replicas (pool, count) in one region, in
    requests/s: unified capacity plus each prefill/decode pair of the same precision;
    each pool carries n x q(n) at its n survivors, at the TTFT target less
    `rerouted_rtt_ms` when users may be rerouted there from that far."""
    unified = 0.0
    halves: dict[tuple[Role, str], float] = defaultdict(float)
    for pool, count in alive:
        rate = pool.carries(count, rerouted_rtt_ms)
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
    reach = {o: graph.destinations(scenario, o, max_rtt_ms) for o in demand}
    total = sum(demand.values())
    if len(reach) == 1 and all(
        len(places) == 1 and set(places) <= set(capacity) for places in reach.values()
    ):
        # One origin that can reach one region: the flow is its one path's narrowest
        # edge, and the origin is on the source side of the cut exactly when it is short.
        ((o, places),) = reach.items()
        (d,) = places
        served = 0 + min(demand[o], capacity[d])
        source_side = {("origin", o)} if served < demand[o] else set()
    else:
        served, source_side = _max_flow(demand, capacity, reach)
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


def _max_flow(
    demand: dict[str, float], capacity: dict[str, float], reach: dict[str, dict[str, float]]
) -> tuple[float, set]:
    """Max flow from the origins' demand to the regions' capacity along `reach`, with the
    source side of a minimum cut (networkx, imported only when several regions meet)."""
    import networkx as nx
    from networkx.algorithms.flow import edmonds_karp

    network = nx.DiGraph()
    for o, rate in demand.items():
        network.add_edge("source", ("origin", o), capacity=rate)
        for d in reach[o]:
            network.add_edge(("origin", o), ("destination", d))
    for d, rate in capacity.items():
        network.add_edge(("destination", d), "sink", capacity=rate)
    served, (source_side, _) = nx.minimum_cut(network, "source", "sink", flow_func=edmonds_karp)
    return served, source_side


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
            requirement = (
                GroupSpareRow(workload, o, lost.key).name()
                if isinstance(lost, _Share)
                else ReplicaSpareRow(workload, o, phase, lost.entries[0].key).name()
            )
            violations.append(
                Violation(
                    requirement=requirement,
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


def _peak_utilisation(plan: Plan, entry: ReplicaPool) -> float:
    """The largest utilisation the plan states for the entry's phase in any scenario.

    The plan routes by stated capacity (routing_weight), so every replica of a phase is
    loaded to the phase's utilisation of its stated figure: stated x utilisation is what
    the router sends one replica. A plan without scenarios (a fleet written by hand)
    states no routing: 0, and the max-flow alone judges it.
    """
    return max(
        (
            load.utilisation
            for scenario in plan.scenarios
            for load in scenario.pools
            if load.workload == entry.workload
            and load.region == entry.region
            and load.phase.split("-")[0] == str(entry.role)
        ),
        default=0.0,
    )


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a), abs(b))


@dataclass
class _Share:
    """One member's share of a shared group entry: what the flows credit to it."""

    workload: str
    region: str
    entry: ReplicaPool
    rate: float
    """a[w] per group replica when the group holds, else 0."""
    role: Role = Role.UNIFIED
    precision: str = ""

    @property
    def entries(self) -> list[ReplicaPool]:
        """The group's entry (counted once for supply and cost)."""
        return [self.entry]

    @property
    def count(self) -> int:
        """Group replicas."""
        return self.entry.count

    @property
    def key(self) -> str:
        """`a+b@h100-sxm.bf16.tp1pp1`: the template key the program names it by."""
        e = self.entry
        engine = ".engine" if e.shared_engine else ""
        swap = ".swap" if e.swapped_weights else ""
        return f"{'+'.join(e.workloads)}@{e.gpu}.{e.precision}.tp{e.tp}pp{e.pp}{engine}{swap}"

    @property
    def label(self) -> str:
        """`shared group a+b on h100-sxm bf16 tp1xpp1`."""
        return f"shared group {'+'.join(self.entry.workloads)} on {self.entry.label}"

    def carries(self, replicas: int, rerouted_rtt_ms: float = 0.0) -> float:
        """n x a[w] (a shared group is not charged the failover round trip, as in the
        program: `rerouted_rtt_ms` is not used)."""
        del rerouted_rtt_ms
        return replicas * self.rate


def _check_groups(instance: Instance, plan: Plan, violations: list[Violation]) -> list[_Share]:
    """Recompute every shared group at its members' stated capacities (see 5. above)."""
    workloads = {w.name: w for w in instance.workloads}
    shares: list[_Share] = []
    for entry in plan.replicas:
        if not entry.members:
            continue
        name = GroupsColumn(_Share("", "", entry, 0.0).key, entry.region).name()
        problems = _group_problems(instance, entry, workloads)
        for problem in problems:
            violations.append(Violation(requirement=name, message=problem))
        for m in entry.members:
            rate = 0.0 if problems else m.requests_per_s_per_replica
            shares.append(_Share(m.workload, entry.region, entry, rate))
    return shares


def _group_problems(instance: Instance, entry: ReplicaPool, workloads: dict) -> list[str]:
    # shared groups load their physics here: a plan without one never imports it
    from models.colocation import Member, SharedLayout, evaluate_group
    from models.swap_group import evaluate_swapped_group

    gpu = instance.gpu_specs.get(entry.gpu)
    unknown = [m.workload for m in entry.members if m.workload not in workloads]
    if gpu is None or unknown or entry.region not in {r.name for r in instance.regions}:
        return [f"unknown GPU, region or workloads in a shared group: {unknown or entry.gpu}"]
    if entry.role is not Role.UNIFIED:
        return ["a shared group serves unified replicas only"]
    problems = []
    members = []
    for m in entry.members:
        workload = workloads[m.workload]
        model = instance.model_entry(workload.model)
        if entry.precision not in model.weight_precisions:
            problems.append(
                f"{m.workload}: weight precision {entry.precision} is not allowed for "
                f"{workload.model}"
            )
        members.append(
            Member(
                m.workload,
                instance.llm_specs[workload.model],
                TrafficMix.of(workload, instance.policy.prefix_affinity),
                LatencyTargets.of(workload.slo),
                m.requests_per_s_per_replica,
            )
        )
    expected_gpus = entry.count * entry.replica_gpus
    if entry.gpus is not None and entry.gpus != expected_gpus:
        problems.append(f"states {entry.gpus} GPUs, but {entry.count} x {entry.replica_gpus}")
    kv = entry.kv_precision or entry.precision
    layout = SharedLayout(gpu, Precision(entry.precision), Precision(kv), entry.tp, entry.pp)
    efficiency = efficiency_for(gpu, entry.precision, instance.efficiency, instance.engine)
    if entry.shared_engine:
        return problems + _engine_problems(instance, entry, workloads, layout, efficiency)
    if entry.swapped_weights:
        if len(members) < 2:
            return [*problems, "a swapped group needs at least two members"]
        swapped = evaluate_swapped_group(layout, members, efficiency)
        return problems + list(swapped.problems)
    group = evaluate_group(layout, members, efficiency)
    return problems + list(group.problems)


def _engine_problems(
    instance: Instance, entry: ReplicaPool, workloads: dict, layout: "SharedLayout", efficiency
) -> list[str]:
    """One engine serving every member (multi-LoRA or a same-model merge): the members
    must share one base, and the engine's capacity along the stated rates, at the
    strictest SLO with the members' envelope mix, must cover their sum
    (`models.engine_group`)."""
    from models.engine_group import EngineMember, engine_group

    entries = {m.workload: instance.model_entry(workloads[m.workload].model) for m in entry.members}
    roots = {e.base if e.base else e.name for e in entries.values()}
    if len(roots) != 1:
        return [f"one engine serves one base model, but the members use {sorted(roots)}"]
    if any(e.base for e in entries.values()) and not instance.policy.multi_lora:
        return ["LoRA adapters share an engine only with policy.multi_lora"]
    root = next(iter(roots))
    llm = instance.llm_specs.get(root)
    llm = llm or instance.llm_specs[workloads[entry.members[0].workload].model]
    stated = [
        EngineMember(
            m.workload,
            workloads[m.workload].model if entries[m.workload].base else None,
            entries[m.workload].rank,
            TrafficMix.of(workloads[m.workload], instance.policy.prefix_affinity),
            LatencyTargets.of(workloads[m.workload].slo),
            m.requests_per_s_per_replica,
        )
        for m in entry.members
    ]
    if sum(m.requests_per_s for m in stated) <= 0:
        return ["a shared engine states no capacity"]
    found = engine_group(layout.config(llm), stated, efficiency)
    if found.problems:
        return list(found.problems)
    claimed = sum(m.requests_per_s for m in stated)
    if claimed > found.total_requests_per_s * (1 + ENGINE_TOLERANCE):
        return [
            f"the shared engine states {claimed:.3f} requests/s per replica for its members "
            f"together, but carries {found.total_requests_per_s:.3f} within the strictest SLO"
        ]
    return []
