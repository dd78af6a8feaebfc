"""The index sets of the fleet program.

Everything the constraint families need is computed here once, from the instance, the
candidate table and the scenarios, so that each family reads as its math:

    R            regions
    W            workloads; D[w,o] peak requests/s of w's users in region o
    C_w          candidates of w (solver.candidates.table)
    pools        (w, c, r) with r offering c's GPU type: where replicas[w,c,r] exists
    tiers        the pooling steps P_1 < P_2 < ... of a pool: sizes from c's ladder that
                 r's supply can hold and r's load could use (solver.program.families.pooling)
    F            routing scenarios (none, lose=<r>, lose=<r>/zone); lose=replica is
                 checked on the `none` loads by its own family; with `scenario_rows:
                 cuts` only `none` has routing rows (`routed_scenarios`), the others
                 Hall rows (solver.program.families.hall)
    routes       (f, w, o, d): d may serve o's users of w in f (models.operations.scenarios)
    modes        (w, d): how region d serves w: `unified`, and `disagg[-p]` (a prefill
                 pool plus a decode pool of weight precision p) where both halves exist
    phases       what each mode asks capacity of: unified -> unified;
                 disagg[-p] -> prefill[-p] and decode[-p]

Names of rows and columns are written by the index types of solver.program.row_names and of
each family (solver.program.families); the terms a family writes (a pool's capacity, a mode's
load) live beside the family that uses them.

With `elastic`, the sets are those of the elastic program (solver.program.elastic): every pool
may hold `room_gpus` more GPUs than its region offers, the same pools and tiers.
"""

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

from models.operations.pricing_tiers import spot_down_fraction, spot_margin
from models.operations.scenarios import RegionGraph, Scenario, ScenarioKind, rerouted_rtt_ms
from models.operations.site import demand_factor, offered
from models.schema.instance import Instance
from models.serving.replica import Role
from solver.candidates.pools import PoolStep, Tier, largest_useful_pool, pool_tiers
from solver.candidates.table import Candidate, CandidateTable
from solver.program.elastic import ElasticSlack, elastic_slack
from solver.program.row_names import phase_label


@dataclass(frozen=True)
class Offer:
    """GPUs of one type in one region: owned, purchasable, and the price of more."""

    region: str
    gpu: str
    existing: int
    max_gpus: int
    available: int
    """Existing fleet plus what can be bought (`Region.available_gpus`)."""
    price_per_gpu_hour: float


SPOT_ROUNDS = 4
"""Rounds of n_max = f(L + q_top (u n + beta)) for a spot pool (u is a few percent: the
second round rarely moves it)."""


@dataclass(frozen=True)
class Pool:
    """Where a replica variable exists: candidate c of workload w in region r."""

    workload: str
    candidate: Candidate
    region: str
    max_replicas: int
    tiers: tuple[Tier, ...] = ()
    """Pooling steps above one replica (empty: the pool is credited q(1) per replica)."""
    largest_useful: int = 0
    """n_max: the largest pool worth having in its region
    (solver.candidates.pools.largest_useful_pool)."""

    @property
    def credit_replicas(self) -> int:
        """Most replicas a pooling step is credited on: min(max_replicas, n_max)."""
        return min(self.max_replicas, self.largest_useful)


@dataclass(frozen=True)
class Phase:
    """One capacity requirement of a serving mode: the role and, for a disaggregated
    mode, the weight precision its halves share."""

    role: Role
    precision: str | None
    label: str
    """`unified`, `prefill`, `decode`, or `prefill-fp8` when precisions must be told apart."""


@dataclass(frozen=True)
class Mode:
    """A way region d serves workload w: unified replicas, or a prefill/decode pair."""

    name: str
    """`unified`, `disagg`, or `disagg-fp8`."""
    phases: tuple[Phase, ...]


@dataclass(frozen=True)
class ProgramSets:
    """Index sets for one instance, candidate table and scenario list."""

    instance: Instance
    table: CandidateTable
    scenarios: tuple[Scenario, ...]
    elastic: bool = False
    """The sets of the elastic program: pools widened by `slack.room_gpus` GPUs."""
    scenario_rows: str = "routing"
    """How the rerouting scenarios (region and zone loss) enter the program: `routing`,
    each with its own routing and capacity rows; `cuts`, none of them, their transport
    problems left to the Hall rows solver.decompose.scenario_cuts adds (`routed_scenarios`)."""
    deadline: Callable[[], None] | None = field(default=None, compare=False, repr=False)
    """The run's deadline check (raises TimeLimitReached), called once per scenario by
    the sets that visit every scenario, workload and origin (`on_time`): on 100 regions
    joined pairwise with 100 workloads they took minutes past a 60 s limit. None: none."""

    def on_time(self) -> None:
        """Stop here when the run's deadline has passed (`deadline`)."""
        if self.deadline is not None:
            self.deadline()

    # --- data -----------------------------------------------------------------------

    @cached_property
    def graph(self) -> RegionGraph:
        """Region graph for failover routing."""
        return RegionGraph.of(self.instance)

    @cached_property
    def regions(self) -> tuple[str, ...]:
        """R, in instance order."""
        return tuple(region.name for region in self.instance.regions)

    @cached_property
    def workloads(self) -> tuple[str, ...]:
        """W, in instance order."""
        return tuple(workload.name for workload in self.instance.workloads)

    @cached_property
    def demand(self) -> dict[tuple[str, str], float]:
        """D[w,o]: peak requests/s (regions with positive demand only)."""
        return {
            (workload.name, region): level.peak_rps * self.demand_factor
            for workload in self.instance.workloads
            for region, level in workload.demand.items()
            if level.peak_rps > 0
        }

    @cached_property
    def demand_factor(self) -> float:
        """`demand_growth`, the factor on every demand (models.operations.site.demand_factor)."""
        return demand_factor(self.instance)

    @cached_property
    def load_per_capacity(self) -> float:
        """1 / policy.max_utilization: capacity rows ask this much capacity per request/s
        of load, so that no pool is planned above that fraction of its capacity."""
        return 1.0 / self.instance.policy.max_utilization

    @cached_property
    def needs_pool_used(self) -> bool:
        """Whether pool_used[w,c,r] exists: survive: replica, or a limit on the
        configurations of a pool (solver.program.families.simplicity)."""
        return self.survives_replica_loss or self.instance.policy.max_configs_per_pool is not None

    @cached_property
    def hours_per_month(self) -> float:
        """Hours billed per month."""
        return self.instance.policy.hours_per_month

    @cached_property
    def offers(self) -> dict[tuple[str, str], Offer]:
        """(r, g) -> what region r has of GPU type g, for every pair it offers
        (`models.operations.site.offered`: a supply entry or an existing fleet)."""
        offers = {}
        for region, gpu in offered(self.instance):
            supply = region.supply.get(gpu)
            offers[(region.name, gpu)] = Offer(
                region.name,
                gpu,
                region.existing.get(gpu, 0),
                supply.max_gpus if supply else 0,
                region.available_gpus(gpu),
                self.instance.price_per_gpu_hour(region.name, gpu),
            )
        return offers

    @cached_property
    def pools(self) -> tuple[Pool, ...]:
        """Every (w, c, r) where r can hold at least one replica of c, with its tiers
        (elastic: the replica bound widened by the slack's room; the same tiers)."""
        if self.slack is None:
            return self._offered_pools
        widened = []
        for pool in self._offered_pools:
            gpus = self.offers[(pool.region, pool.candidate.gpu)].available + self.slack.room_gpus
            widened.append(replace(pool, max_replicas=gpus // pool.candidate.gpus))
        return tuple(widened)

    @cached_property
    def _offered_pools(self) -> tuple[Pool, ...]:
        """The pools and their tiers within what each region offers."""
        pools = []
        for w in self.workloads:
            for candidate in self.table.of(w):
                for r in self.regions:
                    offer = self.offers.get((r, candidate.gpu))
                    if offer is None:
                        continue
                    most = offer.available // candidate.gpus
                    if most >= 1:
                        worth = self._largest_useful(w, candidate, r)
                        tiers = self._tiers(candidate, r, min(most, worth))
                        pools.append(Pool(w, candidate, r, most, tiers, worth))
        return tuple(pools)

    @cached_property
    def slack(self) -> ElasticSlack | None:
        """The elastic program's room and penalties (None: the program itself)."""
        if not self.elastic:
            return None
        return elastic_slack(
            [offer.price_per_gpu_hour * self.hours_per_month for offer in self.offers.values()],
            [c.gpus / c.requests_per_s for w in self.workloads for c in self.table.of(w)],
            sum(self.demand.values()),
            max((pool.candidate.gpus for pool in self._offered_pools), default=1),
        )

    @cached_property
    def max_load(self) -> dict[tuple[str, str], float]:
        """L[w,d]: the most requests/s of w that may be routed to d in any scenario (its
        own users and every origin that may fail over to it), over the routes the latency
        policy allows (whether or not d can host w)."""
        load: dict[tuple[str, str], float] = defaultdict(float)
        for f in self.routing_scenarios:
            self.on_time()
            here: dict[tuple[str, str], float] = defaultdict(float)
            for (w, o), rate in self.demand.items():
                for d in self.graph.destinations(f, o, self.max_failover_rtt_ms(w)):
                    here[(w, d)] += rate
            for key, rate in here.items():
                load[key] = max(load[key], rate)
        return dict(load)

    def _largest_useful(self, w: str, c: Candidate, r: str) -> int:
        """n_max of c's pool in r (solver.candidates.pools.largest_useful_pool) for the most r may
        be sent, L[w,r], under this program's scenarios."""
        load = self.max_load.get((w, r), 0.0) * self.load_per_capacity
        zones, spare = self._zone_hit(r), self.survives_replica_loss
        largest = largest_useful_pool(c.curve, c.ladder, load, zones, spare)
        # Serving rerouted users (a tighter TTFT target) may take a larger pool.
        for rtt_ms in self.rerouted_rtts_at.get((w, r), ()):
            curve = c.failover_curve(rtt_ms)
            if curve is None:
                continue
            if not c.ladder or curve.requests_per_s(1) <= 0:
                largest = max(largest, *(step.replicas for step in c.ladder), 1)
                continue
            ladder = tuple(PoolStep(s.replicas, curve.requests_per_s(s.replicas)) for s in c.ladder)
            largest = max(largest, largest_useful_pool(curve, ladder, load, zones, spare))
        return self._spot_grown(c, r, largest, load)

    def _spot_grown(self, c: Candidate, r: str, largest: int, load: float) -> int:
        """n_max of a pool that may run on spot (policy.spot_confidence, a spot price in
        r): its spot replicas cost it q_top (u n + beta) of capacity
        (solver.program.families.spot_pools), so the smallest pool that carries L alone
        is the one that carries L + q_top (u n + beta); without the steps up to it, a
        low-load period's spot pool was credited less per replica than a larger pool
        earns, and buying more for the margin cost more than the margin (a plan with
        survive: none dearer than with survive: region, whose failover load kept the
        steps)."""
        offer = self.instance.region(r).supply.get(c.gpu)
        confidence = self.instance.policy.spot_confidence
        if (
            confidence is None
            or not c.ladder
            or c.role is not Role.UNIFIED
            or offer is None
            or offer.spot_price_per_gpu_hour is None
        ):
            return largest
        restart_s = self.instance.replica_start_s(c.gpu) + self.instance.policy.scale_detection_s
        u = spot_down_fraction(offer.spot_interruptions_per_hour, restart_s)
        most = self.offers[(r, c.gpu)].available // c.gpus
        beta = spot_margin(u, most, confidence)
        q_top = max(c.requests_per_s, c.ceiling)
        zones, spare = self._zone_hit(r), self.survives_replica_loss
        for _ in range(SPOT_ROUNDS):  # n on both sides: a few rounds settle it
            margin = q_top * (u * largest + beta)
            grown = largest_useful_pool(c.curve, c.ladder, load + margin, zones, spare)
            if grown <= largest:
                break
            largest = grown
        return largest

    def _tiers(self, c: Candidate, r: str, largest: int) -> tuple[Tier, ...]:
        """The steps of c's ladder a pool in r can use (solver.candidates.pools.pool_tiers)."""
        return pool_tiers(c.curve, c.ladder, largest, self._zone_hit(r), self.survives_replica_loss)

    def _zone_hit(self, r: str) -> int | None:
        """Zones of r when its zone loss is a scenario (and it has more than one)."""
        zones = self.zones[r]
        return zones if r in self.zone_regions and zones > 1 else None

    @cached_property
    def pools_at(self) -> dict[tuple[str, str], tuple[Pool, ...]]:
        """(w, r) -> pools of w in r."""
        grouped: dict[tuple[str, str], list[Pool]] = defaultdict(list)
        for pool in self.pools:
            grouped[(pool.workload, pool.region)].append(pool)
        return {key: tuple(value) for key, value in grouped.items()}

    @cached_property
    def pools_of_gpu(self) -> dict[tuple[str, str], tuple[Pool, ...]]:
        """(r, g) -> pools of every workload using GPU type g in r."""
        grouped: dict[tuple[str, str], list[Pool]] = defaultdict(list)
        for pool in self.pools:
            grouped[(pool.region, pool.candidate.gpu)].append(pool)
        return {key: tuple(value) for key, value in grouped.items()}

    @cached_property
    def zones(self) -> dict[str, int]:
        """Zones per region."""
        return {region.name: region.zones for region in self.instance.regions}

    # --- serving modes --------------------------------------------------------------

    @cached_property
    def _split_precisions(self) -> dict[str, bool]:
        """Whether w's disaggregated candidates come in more than one precision."""
        return {
            w: len({c.precision for c in self.table.of(w) if c.role is not Role.UNIFIED}) > 1
            for w in self.workloads
        }

    @cached_property
    def modes(self) -> dict[tuple[str, str], tuple[Mode, ...]]:
        """(w, d) -> the serving modes region d can offer w (absent: none)."""
        modes = {}
        for (w, d), pools in self.pools_at.items():
            roles = {(p.candidate.role, p.candidate.precision) for p in pools}
            found = []
            if any(role is Role.UNIFIED for role, _ in roles):
                found.append(Mode("unified", (Phase(Role.UNIFIED, None, "unified"),)))
            precisions = sorted(
                {str(p) for role, p in roles if role is Role.PREFILL}
                & {str(p) for role, p in roles if role is Role.DECODE}
            )
            for precision in precisions:
                split = self._split_precisions[w]
                suffix = f"-{precision}" if split else ""
                found.append(
                    Mode(
                        f"disagg{suffix}",
                        tuple(
                            Phase(role, precision, phase_label(role, precision, split))
                            for role in (Role.PREFILL, Role.DECODE)
                        ),
                    )
                )
            if found:
                modes[(w, d)] = tuple(found)
        return modes

    def phase_pools(self, w: str, d: str, phase: Phase) -> tuple[Pool, ...]:
        """The pools in region d whose replicas carry `phase` of w."""
        return tuple(
            p
            for p in self.pools_at.get((w, d), ())
            if p.candidate.role is phase.role
            and (phase.precision is None or str(p.candidate.precision) == phase.precision)
        )

    # --- scenarios and routes -------------------------------------------------------

    @cached_property
    def serving_regions(self) -> dict[str, tuple[str, ...]]:
        """w -> regions with at least one serving mode for w."""
        return {w: tuple(d for d in self.regions if (w, d) in self.modes) for w in self.workloads}

    @cached_property
    def routing_scenarios(self) -> tuple[Scenario, ...]:
        """F: scenarios with their own routing and capacity rows. The loss of a region
        (or zone) that offers no GPU changes nothing and is left out. (Decided on the
        offers, not on the pools, so that a program of one workload has the same
        scenarios as the whole: solver.decompose.by_workload relies on it.)"""
        hosting = {r for (r, _) in self.offers}
        return tuple(
            f
            for f in self.scenarios
            if f.kind is ScenarioKind.NONE
            or (f.kind in (ScenarioKind.REGION, ScenarioKind.ZONE) and f.region in hosting)
        )

    @cached_property
    def routed_scenarios(self) -> tuple[Scenario, ...]:
        """The routing scenarios with rows of their own (served, demand, mode_split,
        capacity): all of F, or with `scenario_rows: cuts` those that reroute no user
        (`none`); the others are `cut_scenarios`."""
        if self.scenario_rows == "routing":
            return self.routing_scenarios
        return tuple(f for f in self.routing_scenarios if not f.reroutes)

    @cached_property
    def cut_scenarios(self) -> tuple[Scenario, ...]:
        """The routing scenarios left to Hall rows (`scenario_rows: cuts`): region and zone
        loss; empty with `routing`."""
        routed = set(self.routed_scenarios)
        return tuple(f for f in self.routing_scenarios if f not in routed)

    @cached_property
    def survives_replica_loss(self) -> bool:
        """Whether lose=replica is among the scenarios."""
        return any(f.kind is ScenarioKind.REPLICA for f in self.scenarios)

    @cached_property
    def zone_regions(self) -> tuple[str, ...]:
        """Regions whose zone loss is a routing scenario."""
        return tuple(
            f.region
            for f in self.routing_scenarios
            if f.kind is ScenarioKind.ZONE and f.region is not None
        )

    def max_failover_rtt_ms(self, w: str) -> float | None:
        """The workload's failover latency bound (None: anywhere reachable)."""
        return self.instance.workload(w).slo.max_failover_rtt_ms

    @cached_property
    def rerouted_rtt(self) -> dict[tuple[str, str, str], float]:
        """(f, w, d) -> the longest round trip of w's users f may reroute to d
        (`models.operations.scenarios.rerouted_rtt_ms`); absent where none may come."""
        longest = {}
        for f in self.routing_scenarios:
            self.on_time()
            for w in self.workloads:
                origins = [o for (w2, o) in self.demand if w2 == w]
                bound = self.max_failover_rtt_ms(w)
                for d, rtt_ms in rerouted_rtt_ms(self.graph, f, origins, bound).items():
                    longest[(f.name, w, d)] = rtt_ms
        return longest

    @cached_property
    def rerouted_rtts_at(self) -> dict[tuple[str, str], tuple[float, ...]]:
        """(w, d) -> the round trips some scenario may reroute w's users to d from
        (the values of `rerouted_rtt`), increasing."""
        found: dict[tuple[str, str], set[float]] = defaultdict(set)
        for (_, w, d), rtt_ms in self.rerouted_rtt.items():
            found[(w, d)].add(rtt_ms)
        return {key: tuple(sorted(rtts)) for key, rtts in found.items()}

    def failover_tiers(self, f: str, pool: Pool) -> tuple[float, tuple[Tier, ...]] | None:
        """q'(1) and the pooling steps of `pool` in scenario f at the TTFT target less the
        longest round trip of the users f may reroute to its region (its replicas serve
        them and their own users from one queue); None where none may come."""
        rtt_ms = self.rerouted_rtt.get((f, pool.workload, pool.region), 0.0)
        if rtt_ms <= 0:
            return None
        return self.tiers_at_rtt(rtt_ms, pool)

    def tiers_at_rtt(self, rtt_ms: float, pool: Pool) -> tuple[float, tuple[Tier, ...]] | None:
        """q'(1) and the pooling steps of `pool` on its curve at the TTFT target less a
        round trip of `rtt_ms` (> 0), as the capacity rows credit them; None where that
        curve is not tabulated. Worked out once per pool and round trip, however many
        scenarios share it."""
        key = (rtt_ms, pool.workload, pool.candidate.key, pool.region)
        if key not in self._failover_tiers:
            self._failover_tiers[key] = self._failover_tiers_at(rtt_ms, pool)
        return self._failover_tiers[key]

    @cached_property
    def _failover_tiers(self) -> dict[tuple, tuple[float, tuple[Tier, ...]] | None]:
        """`tiers_at_rtt` by (round trip, workload, candidate key, region)."""
        return {}

    def _failover_tiers_at(
        self, rtt_ms: float, pool: Pool
    ) -> tuple[float, tuple[Tier, ...]] | None:
        """`tiers_at_rtt`, worked out."""
        curve = pool.candidate.failover_curve(rtt_ms)
        if curve is None:
            return None
        steps = tuple(PoolStep(t.replicas, curve.requests_per_s(t.replicas)) for t in pool.tiers)
        zones = self._zone_hit(pool.region)
        tiers = pool_tiers(curve, steps, pool.tiers[-1].replicas if steps else 1, zones, False)
        return curve.requests_per_s(1), tiers

    @cached_property
    def routes(self) -> dict[tuple[str, str], tuple[tuple[str, str, float], ...]]:
        """(f, w) -> allowed (origin, destination, rtt_ms) for origins with demand."""
        routes = {}
        for f in self.routing_scenarios:
            self.on_time()
            for w in self.workloads:
                serving = set(self.serving_regions[w])
                pairs = []
                for (w2, o), _ in self.demand.items():
                    if w2 != w:
                        continue
                    allowed = self.graph.destinations(f, o, self.max_failover_rtt_ms(w))
                    pairs += [(o, d, rtt) for d, rtt in allowed.items() if d in serving]
                routes[(f.name, w)] = tuple(pairs)
        return routes

    @cached_property
    def inflow(self) -> dict[tuple[str, str, str], tuple[str, ...]]:
        """(f, w, d) -> origins that may be served in d."""
        grouped: dict[tuple[str, str, str], list[str]] = defaultdict(list)
        for (f, w), pairs in self.routes.items():
            for o, d, _ in pairs:
                grouped[(f, w, d)].append(o)
        return {key: tuple(value) for key, value in grouped.items()}

    @cached_property
    def tie_break_per_gpu(self) -> float:
        """$/month added per GPU used: ties between equal-cost plans go to fewer GPUs.
        1 / (1 + every GPU that could exist), so the whole term stays below $1/month and
        never outweighs a real difference in cost."""
        return 1.0 / (1 + sum(offer.available for offer in self.offers.values()))
