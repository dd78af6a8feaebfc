"""The verifier's pools (part of solver.verify.fleet, step 1): the plan's dedicated replicas
grouped into pools (one configuration serving one workload in one region, however many
plan entries list it), each pool's configuration checked against the instance and its
capacity recomputed from scratch with the physics at any pool size. A stated capacity,
limit, prefix hit rate or KV tier that differs from the physics is a warning, or a
violation when the plan's routing loads a replica beyond what the physics carries.
"""

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from models.operations.scenarios import failover_targets
from models.physics.catalog import closest_name
from models.physics.efficiency import Efficiency, efficiency_for
from models.physics.error_bands import band_for, margin_factor
from models.physics.overlap import engine_layout_problem
from models.physics.precision import Precision
from models.schema.errors import shown_name
from models.schema.instance import Instance
from models.schema.serving_inputs import (
    latency_targets,
    pool_replica,
    traffic_mix,
    workload_prefix_cache,
)
from models.serving.capacity import holds_at_tighter_ttft, replica_capacity
from models.serving.pooling import planning_capacity
from models.serving.replica import (
    LatencyTargets,
    ReplicaCapacity,
    ReplicaConfig,
    Role,
    ServingContext,
    TrafficMix,
    pool_kv_precision,
)
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.program.row_names import ReplicasColumn
from solver.verify.verdict import Violation, close


def did_you_mean(name: str, known: list[str]) -> str:
    """ "; did you mean 'chat'?" for a name the instance spells otherwise ('Chat',
    'us-east '), or "" when none is close."""
    nearest = closest_name(name, known)
    return f"; did you mean {nearest!r}?" if nearest else ""


@dataclass
class RecomputedPool:
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
    def serving(self) -> ServingContext:
        """The configuration, traffic and efficiency the serving models read together."""
        return ServingContext(self.config, self.mix, self.efficiency)

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
        return planning_capacity(self.capacity(replicas)) * self.derate

    headroom: float = 1.0
    """policy.max_utilization: the fraction of the capacity the pool may be loaded to."""
    derate: float = 1.0
    """policy.capacity_margin: auto: 1 / (1 + e) of the configuration's measured error
    band (`margin_of`), what every capacity of the pool is multiplied by; 1 with none."""
    failover_physics: dict[tuple[int, float], ReplicaCapacity] = field(default_factory=dict)
    """(pool size, rerouted round trip ms) -> the physics at the tighter TTFT target."""

    def carries(self, replicas: int, rerouted_rtt_ms: float = 0.0) -> float:
        """Requests/s the pool may carry with `replicas` replicas: n x q(n) x headroom;
        while it serves users rerouted from `rerouted_rtt_ms` away, q(n) at the TTFT
        target less that round trip (`models.operations.scenarios.failover_targets`)."""
        return self.table_capacity(replicas, rerouted_rtt_ms) * self.headroom

    def table_capacity(self, replicas: int, rerouted_rtt_ms: float = 0.0) -> float:
        """n x q(n), q at the TTFT target less `rerouted_rtt_ms` where users may be
        rerouted from that far: the capacity of `replicas` survivors at full use, as a
        scenario table states it (its utilisation = load / it; `carries` is it x
        headroom)."""
        return replicas * self.rerouted_requests_per_s(replicas, rerouted_rtt_ms)

    def rerouted_requests_per_s(self, replicas: int, rerouted_rtt_ms: float) -> float:
        """q(n) while the pool serves users rerouted from `rerouted_rtt_ms` away: capacity
        per replica at the TTFT target less that round trip (`requests_per_s` where it is
        0 or less), 0 for an empty pool."""
        if rerouted_rtt_ms <= 0:
            return self.requests_per_s(replicas)
        if replicas < 1 or not self.serves:
            return 0.0
        return planning_capacity(self.rerouted_physics(replicas, rerouted_rtt_ms)) * self.derate

    def rerouted_physics(self, replicas: int, rerouted_rtt_ms: float) -> ReplicaCapacity:
        """The physics of one replica in a pool of `replicas` at the TTFT target less
        `rerouted_rtt_ms` (> 0; computed once per size and round trip; the target's own
        where that already holds at the tighter one)."""
        key = (replicas, rerouted_rtt_ms)
        if key not in self.failover_physics:
            tighter = failover_targets(self.targets, rerouted_rtt_ms)
            normal = self.capacity(replicas)
            if holds_at_tighter_ttft(normal, tighter):
                self.failover_physics[key] = normal
            else:  # shared by every pool, hour and month of these inputs (`shared_physics`)
                sizes = shared_physics(self.config, self.mix, tighter, self.efficiency)
                if replicas not in sizes:
                    sizes[replicas] = replica_capacity(
                        self.config, self.mix, tighter, self.efficiency, replicas
                    )
                self.failover_physics[key] = sizes[replicas]
        return self.failover_physics[key]


def margin_of(instance: Instance, config: ReplicaConfig) -> float:
    """The verifier's own reading of `policy.capacity_margin` for a configuration
    (`models.physics.error_bands.margin_factor`): with `auto`, 1 / (1 + e) of its band."""
    return margin_factor(
        instance.policy.capacity_margin,
        instance.engine,
        config.gpu,
        config.llm,
        config.ep,
        config.dp,
    )


PHYSICS_KEPT = 256
"""Configurations whose physics `shared_physics` keeps (the oldest dropped beyond)."""

_PHYSICS: dict[tuple[str, ...], dict[int, ReplicaCapacity]] = {}


def shared_physics(
    config: ReplicaConfig, mix: TrafficMix, targets: LatencyTargets, efficiency: Efficiency
) -> dict[int, ReplicaCapacity]:
    """Pool size -> physics of one configuration, traffic, SLO and efficiency, shared by
    every pool, hour and month the verifier checks with the same inputs: `replica_capacity`
    is a pure function of them, so a size computed once is read again. Keyed by the
    inputs' values (their reprs: a configuration holds unhashable specs), not by names a
    plan or an instance could reuse for other values."""
    key = (repr(config), repr(mix), repr(targets), repr(efficiency))
    while key not in _PHYSICS and _PHYSICS and len(_PHYSICS) >= PHYSICS_KEPT:
        del _PHYSICS[next(iter(_PHYSICS))]
    return _PHYSICS.setdefault(key, {})


def recompute_pools(
    instance: Instance, plan: Plan, violations: list[Violation], warnings: list[Violation]
) -> list[RecomputedPool]:
    """The plan's pools with their physics recomputed; a configuration that cannot serve
    is a violation, a stated capacity or limit that differs from the physics a warning,
    and so is a layout the profile's engine would start as another
    (`models.physics.overlap.engine_layout_problem`: vLLM's TP8 x EP4 runs as EP8; the
    planner never offers one, deploy refuses it, a fleet one owns may state one); the
    scenario checks judge the recomputed capacity against the load."""
    pools = _grouped(instance, plan, violations.append, None)
    _stated_pool_figures(instance, plan, pools, violations, warnings)
    for pool in pools.values():  # a layout its engine starts as another: a warning
        engine = pool.efficiency.overlap_engine  # a fleet one owns may state what it runs
        for entry in pool.entries:
            if (problem := engine_layout_problem(engine, entry.tp, entry.dp, entry.ep)) is not None:
                name = ReplicasColumn(entry.workload, entry.key, entry.region).name()
                warnings.append(
                    Violation(requirement=name, message=f"timed as laid out, but {problem}")
                )
    return list(pools.values())


def pool_physics(
    instance: Instance, entries: tuple[ReplicaPool, ...], memo: dict
) -> list[RecomputedPool]:
    """The pools of `entries` with their physics, no stated figure checked (what
    `recompute_pools` finds in them is its caller's). `memo` keeps each configuration's
    pool, its physics with it, for later calls on the same instance's workloads and
    policy (their rates may differ: a pool reads none): an hour's pools are those of
    the hour before, give or take a few replicas."""
    return list(_grouped(instance, Plan(replicas=entries), lambda _: None, memo).values())


def _grouped(
    instance: Instance,
    plan: Plan,
    add: Callable[[Violation], None],
    memo: dict | None,
) -> dict[tuple, RecomputedPool]:
    """The plan's dedicated entries grouped into pools, each configuration checked
    against the instance and its physics asked at one replica."""
    workloads = {w.name: w for w in instance.workloads}
    regions = {r.name for r in instance.regions}
    pools: dict[tuple, RecomputedPool] = {}
    # a configuration's physics is the same in every region: built once per workload
    # (10,000 pools in 100 regions: 100 configurations, not 10,000 keyed by their reprs)
    twins: dict[tuple, RecomputedPool] = {}
    for entry in plan.replicas:
        if entry.members:
            continue  # a shared group: check_groups
        name = ReplicasColumn(entry.workload, entry.key, entry.region).name()
        workload = workloads.get(entry.workload)
        gpu = instance.gpu_specs.get(entry.gpu)
        if workload is None or gpu is None or entry.region not in regions:
            unknown = [
                f"unknown {kind} {value!r}" + did_you_mean(value, list(known))
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
        if entry.speculative is not None and entry.speculative not in instance.speculations:
            add(
                Violation(
                    requirement=name,
                    message=f"decodes with speculative option {entry.speculative!r}, which "
                    f"policy.speculative does not declare "
                    f"(declared: {', '.join(map(shown_name, instance.speculations)) or 'none'})",
                )
            )
            continue
        kv = pool_kv_precision(  # the verifier's own reading of the entry's KV rule
            Precision(entry.precision), entry.kv_precision, model.kv_precision
        )
        key = (entry.workload, entry.region, entry.label, kv)
        known = memo.get(("pool", key)) if memo is not None else None
        if key not in pools and known is not None:
            pools[key] = replace(known, entries=[])
            if not known.serves:
                reason = known.capacity(1).reason
                message = f"cannot serve {entry.workload} within its SLO: {reason}"
                add(Violation(requirement=name, message=message))
        twin = twins.get((entry.workload, entry.label, kv))
        if key not in pools and twin is not None:
            pools[key] = replace(twin, region=entry.region, entries=[])
            if not twin.serves:
                reason = twin.capacity(1).reason
                message = f"cannot serve {entry.workload} within its SLO: {reason}"
                add(Violation(requirement=name, message=message))
        if key not in pools:
            config = pool_replica(instance, entry)  # built once per distinct layout
            mix = traffic_mix(workload, instance.policy.prefix_affinity)
            targets = latency_targets(workload.slo)
            efficiency = efficiency_for(gpu, entry.precision, instance.efficiency, instance.engine)
            pool = RecomputedPool(
                workload=entry.workload,
                region=entry.region,
                role=entry.role,
                precision=str(entry.precision),
                label=entry.label,
                entries=[],
                config=config,
                mix=mix,
                targets=targets,
                efficiency=efficiency,
                serves=True,
                physics=shared_physics(config, mix, targets, efficiency),
                headroom=instance.policy.max_utilization,
                derate=margin_of(instance, config),
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
            twins[(entry.workload, entry.label, kv)] = pool
            if memo is not None:
                memo[("pool", key)] = pool
        pools[key].entries.append(entry)
    return pools


def _stated_pool_figures(
    instance: Instance,
    plan: Plan,
    pools: dict[tuple, RecomputedPool],
    violations: list[Violation],
    warnings: list[Violation],
) -> None:
    """Each entry's stated capacity, limit, error band, prefix hit rate and KV tiers
    against its pool's physics."""
    add = violations.append
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
            elif stated is not None and not close(stated, rate):
                routed = stated * _peak_utilisation(plan, entry)
                overloaded = routed > rate and not close(routed, rate)
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
            stated_band = _band_problem(instance, pool, entry)
            if stated_band:
                warnings.append(
                    Violation(
                        requirement=ReplicasColumn(entry.workload, entry.key, entry.region).name(),
                        message=stated_band,
                    )
                )
            for message in _prefix_cache_problems(instance, pool, entry, size):
                add(
                    Violation(
                        requirement=ReplicasColumn(entry.workload, entry.key, entry.region).name(),
                        message=message,
                    )
                )
    return list(pools.values())


def _band_problem(instance: Instance, pool: RecomputedPool, entry: ReplicaPool) -> str:
    """A stated `capacity_band` other than the calibration's for the configuration
    (`models.physics.error_bands.band_for`) or a capacity factor other than the
    verifier's `margin_of`: a warning (the band describes the capacity, the scenario
    checks judge it)."""
    stated = entry.capacity_band
    if stated is None:
        return ""
    config = pool.config
    found = band_for(instance.engine, config.gpu, config.llm, config.ep, config.dp)
    if found is None:
        return f"states a model error band ({stated.text}); the calibration measures none"
    same = (
        (stated.family, stated.regime, stated.rows, stated.flag)
        == (found.family, found.regime, found.rows, found.flag)
        and all(
            close(a, round(b, 4))
            for a, b in zip(
                (stated.p10, stated.median, stated.p90),
                (found.p10, found.median, found.p90),
                strict=True,
            )
        )
        and close(stated.capacity_factor, pool.derate)
    )
    if same:
        return ""
    return (
        f"states model error band {stated.text} x {stated.capacity_factor:.4g}; the "
        f"calibration gives {found.describe()} x {pool.derate:.4g}"
    )


def _prefix_cache_problems(
    instance: Instance, pool: RecomputedPool, entry: ReplicaPool, size: int
) -> list[str]:
    """A stated hit rate above the one the pool's real size gives (affinity needs
    `affinity_min_replicas`; the spill of hot prefixes is taken off), or a stated KV tier
    the replica does not use, recomputed with
    `models.schema.serving_inputs.workload_prefix_cache` (what the simulator replays)."""
    if entry.prefix_hit_rate is None and entry.kv_tiers_used is None:
        return []
    kv = workload_prefix_cache(instance, pool.workload, pool.config, size)
    hit = kv.hit_rate
    used = {tier.value for tier in kv.tiers_used}
    problems = []
    stated = entry.prefix_hit_rate
    if stated is not None and stated > hit and not close(stated, hit):
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
