"""Pool math, in one place: the capacity curve q(n), the pooling ladder, the largest
useful pool and the tiers the program credits.

A pool is the replicas of one candidate serving one workload in one region, behind one
router: their prompts share one queue (M/G/c, `models.serving.capacity`, "Pools"), so the
capacity per replica q(n) rises with the pool size n, towards the ceiling q(inf) of an
unlimited pool. What survives a failure (n - 1, n - ceil(n / Z)) is a world rule and
lives in `models.serving.pooling`.

The physics is asked here only, at two moments of the pipeline, and tabulated:

- at enumeration (`tabulate_curve`): q(1), the ceiling, and q at the sizes the program
  can use: the ladder's sizes P_k and their survivors P_k - 1 and P_k - ceil(P_k / Z)
  for the instance's zone counts Z;
- after the solve (`assess_pools`): q at the chosen pools' real sizes and their
  survivors, for the plan's report.

Between tabulated sizes a `PoolCurve` answers with the largest tabulated size at or
below n: q never falls as n grows, so that is a lower bound, and at the sizes the
program uses it is exact.

The ladder (`pool_ladder`): every pool size 2, 4, 8, ... up to the largest pool worth
having (`largest_pool`), whatever q there, when an unlimited pool lifts q(1) by at least
`POOL_STEP_GAIN`: which sizes are credited does not depend on the gains between them, so
a looser target, which never lowers q, never credits a pool less (but where it closes
that gate, by less than the gain). The
tiers (`pool_tiers`): the ladder's steps a pool in one region can use, each with its
gain at full strength, less one replica and less a zone
(solver.program.families.pooling credits them).
"""

import math
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import cached_property, partial

from models.operations.scenarios import failover_targets
from models.operations.site import demand_factor
from models.operations.slo import zone_loss_overprovision_factor
from models.physics.efficiency import Efficiency, efficiency_for
from models.physics.error_bands import margin_factor
from models.schema.instance import Instance
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.capacity import (
    UNLIMITED_POOL,
    holds_at_tighter_ttft,
    pooling_can_lift,
    replica_capacity,
)
from models.serving.edge_search import smallest_passing
from models.serving.pooling import planning_capacity, spare_survivors, zone_survivors
from models.serving.replica import (
    LatencyTargets,
    ReplicaCapacity,
    ReplicaConfig,
    ServingContext,
    TrafficMix,
)
from models.serving.replica_layout import ReplicaFit, fit_replica

POOL_LADDER_MAX_REPLICAS = 4096
"""Largest pool size the ladder looks at (a power of two)."""
SHARED_KEPT = 20_000
"""Pool sizes `shared_physics` keeps (the oldest dropped beyond): chat-3region's table asks
about 1,100, each about 2.7 KB held, so the levers' 16 tables fit in about 50 MB."""

POOL_STEP_GAIN = 0.02
"""A candidate gets a pool ladder only when an unlimited pool lifts its capacity per
replica by at least this fraction over a lone replica's (smaller lifts are not worth the
binaries: an H200 at tests.synthetic.FLAT_SLO lifts 0.2%)."""

Physics = dict[tuple, ReplicaCapacity]
"""What `shared_physics` holds: a configuration's physics by its inputs and pool size."""

_SHARED: Physics | None = None
"""The physics shared across candidate tables (`shared_physics`); None: not shared."""
_SHARED_LOCK = threading.Lock()
"""Held while `_SHARED` grows or drops its oldest."""


@dataclass(frozen=True)
class PoolStep:
    """A pool size and the capacity per replica at the SLO of a pool that large."""

    replicas: int
    requests_per_s: float


@dataclass(frozen=True)
class PoolCurve:
    """q(n) of one candidate, tabulated: the physics of one replica in a pool of n.

    `points` holds (n, physics) for n = 1 and every size evaluated, increasing; a size
    not tabulated reads the largest tabulated size below it (a lower bound: q never
    falls as n grows)."""

    points: tuple[tuple[int, ReplicaCapacity], ...]
    ceiling_requests_per_s: float
    """q(inf): capacity per replica of an unlimited pool (above every size's)."""

    @classmethod
    def flat(cls, lone: ReplicaCapacity) -> "PoolCurve":
        """The curve of a replica whose capacity pooling cannot lift: q(n) = q(1)."""
        return cls(((1, lone),), planning_capacity(lone))

    @property
    def lone(self) -> ReplicaCapacity:
        """The physics of a lone replica (pool of 1)."""
        return self.points[0][1]

    @property
    def sizes(self) -> tuple[int, ...]:
        """The tabulated pool sizes, increasing."""
        return tuple(n for n, _ in self.points)

    def physics(self, replicas: int) -> ReplicaCapacity:
        """The physics of one replica in a pool of `replicas` (tabulated: exact at a
        tabulated size, the largest tabulated size below it otherwise)."""
        found = self.points[0][1]
        for n, capacity in self.points:
            if n > replicas:
                break
            found = capacity
        return found

    def requests_per_s(self, replicas: int) -> float:
        """q(n): capacity per replica at the SLO in a pool of `replicas` (0 when empty)."""
        if replicas < 1:
            return 0.0
        return planning_capacity(self.physics(replicas))

    def with_points(self, points: dict[int, ReplicaCapacity]) -> "PoolCurve":
        """This curve with more tabulated sizes."""
        merged = dict(self.points) | points
        return PoolCurve(tuple(sorted(merged.items())), self.ceiling_requests_per_s)


@dataclass(frozen=True)
class PoolPhysics:
    """What the physics needs to evaluate one configuration at any pool size."""

    config: ReplicaConfig
    mix: TrafficMix
    targets: LatencyTargets
    efficiency: Efficiency
    credit_tpot: bool = False
    """Whether a TPOT-limited candidate gets a pool ladder (`policy.credit_tpot_pooling`,
    `models.serving.capacity.pooling_can_lift`)."""
    derate: float = 1.0
    """The factor every capacity is multiplied by (`capacity_derate_of`; 1: none)."""
    fitted: dict = field(default_factory=dict, compare=False, repr=False)
    """`fit_replica` of the configuration, mix and efficiency once asked (`fit`), by their
    identities, each kept with the inputs it was worked out from: shared with the copies
    `dataclasses.replace` makes at other targets (the failover curves'), which it does not
    read."""

    @property
    def serving(self) -> ServingContext:
        """The configuration, traffic and efficiency the serving models read together."""
        return ServingContext(self.config, self.mix, self.efficiency)

    @cached_property
    def inputs(self) -> tuple[str, ...]:
        """What `replica_capacity` reads, by value (their reprs: a configuration holds
        unhashable specs), the key of `shared_physics`."""
        return (repr(self.config), repr(self.mix), repr(self.targets), repr(self.efficiency))

    def fit(self) -> ReplicaFit:
        """What the capacity reads at every pool size, worked out once
        (`models.serving.replica_layout.fit_replica`: a pure function of the
        configuration, mix and efficiency)."""
        held = (self.config, self.mix, self.efficiency)
        key = tuple(map(id, held))
        found = self.fitted.get(key)
        if found is None:  # the inputs are kept beside it, so no id is reused while it is
            found = self.fitted[key] = (held, fit_replica(*held))
        return found[1]

    def __getstate__(self) -> dict:
        """Pickled without its fits (a table built in a worker process comes back a third
        smaller: 10x20x6's 1.38 MB with them, 0.90 MB without): worked out again there
        where asked."""
        return {**self.__dict__, "fitted": {}}

    def _capacity(self, replicas: float) -> ReplicaCapacity:
        return replica_capacity(
            self.config, self.mix, self.targets, self.efficiency, replicas, self.fit()
        )

    def at(self, replicas: float) -> ReplicaCapacity:
        """The physics of one replica in a pool of `replicas` behind one queue (read
        again where `shared_physics` holds it)."""
        memo = _SHARED
        if memo is None:
            return derated(self._capacity(replicas), self.derate)
        key = (self.inputs, replicas)
        found = memo.get(key)
        if found is None:
            found = self._capacity(replicas)
            with _SHARED_LOCK:  # a months solve asks from two threads (its held fleet's)
                while len(memo) >= SHARED_KEPT:
                    del memo[next(iter(memo))]
                memo[key] = found
        return derated(found, self.derate)


@contextmanager
def shared_physics() -> Iterator[None]:
    """Within the block, a configuration's physics at a pool size is computed once for
    every candidate table with the same inputs (`PoolPhysics.inputs`), instead of once a
    table: `replica_capacity` is a pure function of them, so what a table reads is what
    it would compute. The levers' re-solves share it: an `allow GPU` lever's table is the
    base's plus one type's configurations; so do a horizon's months (solver.solve), whose
    tables, programs and read-backs ask the same configurations at the same pool sizes
    month after month. Nested blocks share the outer one: `explain --levers` solves its
    base plan within the block its levers run in, so their tables compute only what the
    base's did not (`seeded_share` hands it to their workers)."""
    global _SHARED
    outer = _SHARED
    if outer is None:
        _SHARED = {}
    try:
        yield
    finally:
        _SHARED = outer


def share_physics(seed: Physics | None = None) -> None:
    """`shared_physics` for the rest of this process, starting from `seed`: a lever
    worker's initializer (the worker ends with its lever run)."""
    global _SHARED
    if _SHARED is None:
        _SHARED = dict(seed or {})


def seeded_share() -> Callable[[], None]:
    """`share_physics` seeded with this process's shared physics where a block holds it
    (chat-3region's base table: about 1,100 pool sizes, 0.7-1.4 s of a lever worker's
    first table on the shared 2-core machine), else empty: a lever worker's initializer."""
    return partial(share_physics, None if _SHARED is None else dict(_SHARED))


def capacity_derate_of(instance: Instance, config: ReplicaConfig) -> float:
    """`policy.capacity_margin: auto`: 1 / (1 + e) of the configuration's measured error
    band (`models.physics.error_bands.margin_factor`); 1 with `none`."""
    return margin_factor(
        instance.policy.capacity_margin,
        instance.engine,
        config.gpu,
        config.llm,
        config.ep,
        config.dp,
    )


def derated(capacity: ReplicaCapacity, factor: float) -> ReplicaCapacity:
    """The capacity with its rates (requests/s, output tokens/s) x `factor`."""
    if factor == 1.0:
        return capacity
    return replace(
        capacity,
        requests_per_s=capacity.requests_per_s * factor,
        output_tokens_per_s=capacity.output_tokens_per_s * factor,
    )


def physics_of(instance: Instance, workload: str, config: ReplicaConfig) -> PoolPhysics:
    """The physics inputs of a configuration serving a workload of the instance."""
    entry = instance.workload(workload)
    return PoolPhysics(
        config,
        traffic_mix(entry, instance.policy.prefix_affinity),
        latency_targets(entry.slo),
        efficiency_for(config.gpu, config.weight_precision, instance.efficiency, instance.engine),
        instance.policy.credit_tpot_pooling,
        capacity_derate_of(instance, config),
    )


def failover_curve(physics: PoolPhysics, curve: PoolCurve, rtt_ms: float) -> PoolCurve:
    """The curve of a configuration while it serves users rerouted from `rtt_ms` away:
    q'(n) at every tabulated size, q' the capacity per replica at
    `models.operations.scenarios.failover_targets` (the TTFT target less the round trip). The
    program credits a pool in such a scenario with the same steps on this curve
    (solver.program.families.pooling: q'(P_j) n <= q'(n) n, q' never falling as n grows)."""
    tighter = replace(physics, targets=failover_targets(physics.targets, rtt_ms))
    points = tuple(
        (n, c if holds_at_tighter_ttft(c, tighter.targets) else tighter.at(n))
        for n, c in curve.points
    )
    return PoolCurve(points, max(planning_capacity(c) for _, c in points))


def lone_curve(physics: PoolPhysics, lone: ReplicaCapacity) -> PoolCurve:
    """q(1) and the ceiling q(inf) of a configuration (flat when pooling cannot lift it):
    what pruning compares, before any ladder."""
    if not pooling_can_lift(lone, physics.mix, physics.credit_tpot):
        return PoolCurve.flat(lone)
    ceiling = planning_capacity(physics.at(UNLIMITED_POOL))
    return PoolCurve(((1, lone),), max(ceiling, planning_capacity(lone)))


def tabulate_curve(
    physics: PoolPhysics, curve: PoolCurve, largest: int, zone_counts: tuple[int, ...]
) -> tuple[PoolCurve, tuple[PoolStep, ...]]:
    """A candidate's curve and ladder, from the physics, once.

    Evaluates the ladder's sizes 2, 4, 8, ... (up to `largest`), then the survivors of
    every step (P - 1, and P - ceil(P / Z) for each zone count in
    `zone_counts`), so that the program never needs another size.
    """
    if not pooling_can_lift(curve.lone, physics.mix, physics.credit_tpot):
        return curve, ()
    points: dict[int, ReplicaCapacity] = dict(curve.points)

    def q(replicas: int) -> float:
        if replicas not in points:
            points[replicas] = physics.at(replicas)
        return planning_capacity(points[replicas])

    ladder = pool_ladder(q, q(1), curve.ceiling_requests_per_s, largest)
    for step in ladder:
        q(max(spare_survivors(step.replicas), 1))
        for zones in zone_counts:
            q(max(zone_survivors(step.replicas, zones), 1))
    return curve.with_points(points), ladder


def pool_ladder(
    q, lone_requests_per_s: float, ceiling_requests_per_s: float, max_replicas: int
) -> tuple[PoolStep, ...]:
    """The pool sizes worth crediting a candidate with: every power of two 2, 4, 8, ...
    up to `max_replicas`, each with its capacity per replica `q(size)`; none when an
    unlimited pool lifts q(1) by less than `POOL_STEP_GAIN` (the wait hardly binds).

    Which sizes are kept does not depend on q between them: a looser target raises q at
    every size (never lowers it), and with the same sizes the credit of a pool of n, q
    at the largest size at or below n, in full and of its survivors (n - 1,
    n - ceil(n / Z)), never falls when a target loosens. A ladder kept by gain (a size
    only when it lifted q 2% over the last one kept) dropped a size whose gain a looser
    target shrank below 2%: a lone H200 serving Llama 3.1 8B at TPOT 70 ms kept 2 (q
    9.789 -> 9.991 requests/s, +2.06%), at 77.1 ms dropped it (9.893 -> 10.054, +1.62%)
    and credited a pool of 2 or 3 at 9.893 < 9.991, so 19.8 requests/s took 3 replicas,
    not 2 ($4,380 a month, not $2,920; tests/solver/test_monotone_properties.py). Every
    size is kept even where q is flat: its survivors (P - 1) may still rise.

    The gate on the whole lift is the one place the targets still choose: a candidate
    whose ceiling is within the gain of q(1) at the looser target only (and above it at
    the tighter one) is credited q(1), at least q_tight(n) / (1 + gain) at every n."""
    if ceiling_requests_per_s <= lone_requests_per_s * (1 + POOL_STEP_GAIN):
        return ()
    steps: list[PoolStep] = []
    size = 2
    while size <= max_replicas:
        steps.append(PoolStep(size, q(size)))
        size *= 2
    return tuple(steps)


def largest_pool(instance: Instance, workload: str, gpu: str, gpus: int, lone: float) -> int:
    """The largest pool of a candidate worth crediting anywhere: no more replicas than
    one region's supply holds, nor than q(1) replicas need to carry all of the
    workload's demand (with a zone lost and a replica down), which a larger pool could
    shed and still carry."""
    per_region = [region.available_gpus(gpu) // gpus for region in instance.regions]
    entry = instance.workload(workload)
    demand = sum(level.peak_rps for level in entry.demand.values())
    demand *= demand_factor(instance) / instance.policy.max_utilization  # as planned
    zones = max((region.zones for region in instance.regions), default=1)
    spread = zone_loss_overprovision_factor(zones) if zones > 1 else 1.0
    worth = math.ceil(demand * spread / lone) + 1
    return min(max(per_region, default=0), worth, POOL_LADDER_MAX_REPLICAS)


@dataclass(frozen=True)
class Tier:
    """One pooling step of a pool: credited when the pool holds at least `replicas`.

    Each gain is a difference of capacities per replica between this step and the one
    below (q(1) below the first), so that the credited steps telescope to the capacity
    per replica of the largest one (solver.program.families.pooling)."""

    replicas: int
    gain: float
    """q(P_k) - q(P_{k-1}): the pool at full strength."""
    spare_gain: float
    """q(R_k) - q(R_{k-1}), R = max(1, P - 1): the pool less one replica."""
    zone_gain: float
    """q(S_k) - q(S_{k-1}), S = max(1, P - ceil(P / zones)): the pool less its fullest
    zone (0 where the region's zone loss is not a scenario)."""


def largest_useful_pool(
    curve: PoolCurve, ladder: tuple[PoolStep, ...], load: float, zones: int | None, spare: bool
) -> int:
    """n_max: the smallest pool that alone carries `load` (the most its region may be
    sent) in every scenario, credited as the program credits it (the ladder's step at or
    below its size): n q(t(n)) >= L at full strength; with its fullest zone lost (`zones`
    given), (n - ceil(n / Z)) q(S(t(n))) >= L; with one replica lost (`spare`),
    (n - 1) q(R(t(n))) >= L. A larger pool could shed replicas down to n_max and still
    carry every load in every row, so no pooling step above it, nor credit on more
    replicas, is ever needed. Each side grows with n, so a bisection between 1 and the
    pool that carries L at q(1) finds it."""
    spread = zone_loss_overprovision_factor(zones) if zones else 1.0
    sizes = [1, *(step.replicas for step in ladder)]

    def q(replicas: int) -> float:
        return curve.requests_per_s(max(replicas, 1))

    def carries(n: int) -> bool:
        step = max(size for size in sizes if size <= n)
        if n * q(step) < load:
            return False
        if zones and zone_survivors(n, zones) * q(zone_survivors(step, zones)) < load:
            return False
        return not (spare and spare_survivors(n) * q(spare_survivors(step)) < load)

    high = math.ceil(load * spread / curve.lone.requests_per_s) + 1
    if not ladder:
        return high  # no pooling step to credit: the bound is never used
    return smallest_passing(carries, 0, high)  # no replica carries nothing


def pool_tiers(
    curve: PoolCurve, ladder: tuple[PoolStep, ...], largest: int, zones: int | None, spare: bool
) -> tuple[Tier, ...]:
    """The steps of the candidate's ladder a pool can use: sizes up to `largest` (its
    supply and its load: see `largest_useful_pool`), with their gains at full strength,
    less one replica (`spare`) and less its fullest zone (`zones` given)."""

    def q(replicas: int) -> float:  # capacity per replica of a pool that large
        return curve.requests_per_s(max(replicas, 1))

    tiers = []
    below = 1
    for step in ladder:
        size = step.replicas
        if size > largest:
            break
        tiers.append(
            Tier(
                replicas=size,
                gain=q(size) - q(below),
                spare_gain=q(spare_survivors(size)) - q(spare_survivors(below)) if spare else 0.0,
                zone_gain=q(zone_survivors(size, zones)) - q(zone_survivors(below, zones))
                if zones
                else 0.0,
            )
        )
        below = size
    return tuple(tiers)


def assess_pools(
    instance: Instance, chosen: dict[tuple[str, str], tuple[ReplicaConfig, PoolCurve, set[int]]]
) -> dict[tuple[str, str], PoolCurve]:
    """The chosen pools' curves, with the physics at the sizes the plan's report needs
    (each pool's real size and its survivors): (workload, candidate key) -> curve.

    The one place the physics is asked after the solve: the program credited the
    tabulated steps (a TPOT-limited candidate, with `policy.credit_tpot_pooling` off, the
    lone replica's capacity at every size), the report states what the pools carry at
    their real sizes."""
    curves = {}
    for (w, key), (config, curve, sizes) in chosen.items():
        missing = sorted(n for n in sizes if n > 1 and n not in curve.sizes)
        physics = physics_of(instance, w, config)
        if missing and pooling_can_lift(curve.lone, physics.mix, tpot=True):
            curve = curve.with_points({n: physics.at(n) for n in missing})
        curves[(w, key)] = curve
    return curves
