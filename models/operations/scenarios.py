"""Failure scenarios and the region graph that failover routing runs over.

A scenario is one state of the world the fleet must serve its peak demand in:

    none                every pool at full strength; users served in their own region
    lose=<r>            (survive: region) region r serves nothing; its users, and any
                        other region's, may be served up to `max_failover_rtt_ms` away
    lose=<r>/zone       (survive: zone) region r loses its worst zone: a pool of n
                        replicas spread evenly over Z zones keeps n - ceil(n / Z)
    lose=replica        (survive: replica) any one replica of any pool fails; users
                        stay in their region (checked on the `none` routing)

Latency between regions is the shortest path over `links`, weighted by round-trip ms.
When a region is lost, paths through it are gone too: the graph without that region is
searched. `max_failover_rtt_ms: None` means any region still reachable.

Rerouted users' first token crosses the failover round trip too: a region that may
receive rerouted users in a scenario serves all its users of that workload at the TTFT
target less the longest such round trip (`rerouted_rtt_ms`, `failover_targets`), since
they share one queue.

Shortest paths are searched once per instance network (`RegionGraph.of` is cached by
regions and links) and once per origin: within a failover bound B, the search from an
origin stops at B, and losing a region farther than B from the origin changes no path
of length <= B (any path through it is longer), so only the few lost regions within B
of an origin need a search of their own. With 300 regions surviving any region loss
that is about 300 bounded searches instead of 300 x 300 full ones.
"""

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cached_property, lru_cache

from models.schema.instance import Instance
from models.schema.policy import Survive
from models.serving.pooling import zone_survivors
from models.serving.replica import LatencyTargets


class ScenarioKind(StrEnum):
    """What a scenario takes away."""

    NONE = "none"
    REGION = "region"
    ZONE = "zone"
    REPLICA = "replica"


@dataclass(frozen=True)
class Scenario:
    """One failure state; `region` is the region it hits (REGION and ZONE kinds)."""

    name: str
    kind: ScenarioKind
    region: str | None = None

    @property
    def description(self) -> str:
        """One line saying what is lost."""
        if self.kind is ScenarioKind.NONE:
            return "no failure; users served in their own region"
        if self.kind is ScenarioKind.REGION:
            return f"{self.region} is lost; its users are rerouted within the failover RTT"
        if self.kind is ScenarioKind.ZONE:
            return f"{self.region} loses one zone: each pool there keeps n - ceil(n / zones)"
        return "any one replica of any pool fails; users stay in their region"

    @property
    def reroutes(self) -> bool:
        """Whether users may be served outside their own region."""
        return self.kind in (ScenarioKind.REGION, ScenarioKind.ZONE)

    @property
    def lost_region(self) -> str | None:
        """The region that serves nothing in this scenario, if any."""
        return self.region if self.kind is ScenarioKind.REGION else None

    def surviving_replicas(self, region: str, count: int, zones: int) -> int:
        """Replicas of a pool of `count` in `region` that still serve in this scenario.

        Zone loss: replicas spread evenly over `zones`, the fullest zone holds
        ceil(count / zones). Replica loss is not a per-pool count (one replica of one
        pool); it is checked apart, so here it leaves every pool whole.
        """
        if region == self.lost_region:
            return 0
        if self.kind is ScenarioKind.ZONE and region == self.region:
            return zone_survivors(count, zones)
        return count


NONE = Scenario("none", ScenarioKind.NONE)
LOSE_REPLICA = Scenario("lose=replica", ScenarioKind.REPLICA)


def failure_scenarios(instance: Instance) -> tuple[Scenario, ...]:
    """`none` plus the single failures `policy.survive` asks the fleet to ride through."""
    survive = instance.policy.survive
    regions = [region.name for region in instance.regions]
    if survive is Survive.REGION:
        return (NONE, *(Scenario(f"lose={r}", ScenarioKind.REGION, r) for r in regions))
    if survive is Survive.ZONE:
        return (NONE, *(Scenario(f"lose={r}/zone", ScenarioKind.ZONE, r) for r in regions))
    if survive is Survive.REPLICA:
        return (NONE, LOSE_REPLICA)
    return (NONE,)


@dataclass(frozen=True)
class RegionGraph:
    """Regions joined by links weighted with round-trip ms (parallel links: the fastest)."""

    regions: tuple[str, ...]
    links: tuple[tuple[str, str, float], ...]

    @classmethod
    def of(cls, instance: Instance) -> "RegionGraph":
        """The graph of an instance's `regions` and `links` (one per distinct network, so
        the shortest paths are searched once however many programs share it)."""
        return _region_graph(
            tuple(region.name for region in instance.regions),
            tuple((a, b, float(rtt)) for a, b, rtt in instance.links),
        )

    @cached_property
    def _adjacency(self) -> dict[str, tuple[tuple[str, float], ...]]:
        """Each region's neighbours and the round trip to them, the lowest of parallel
        links kept (an undirected graph, built once in plain dicts: a one-region instance
        needs no graph library)."""
        neighbours: dict[str, dict[str, float]] = {region: {} for region in self.regions}
        for a, b, rtt_ms in self.links:
            known = neighbours.setdefault(a, {}).get(b)
            if known is None or known > rtt_ms:
                neighbours[a][b] = rtt_ms
                neighbours.setdefault(b, {})[a] = rtt_ms
        return {region: tuple(near.items()) for region, near in neighbours.items()}

    @cached_property
    def _rtt_cache(self) -> dict[tuple[str, str | None, float | None], dict[str, float]]:
        return {}

    def rtt_ms(
        self, origin: str, without: str | None = None, within_ms: float | None = None
    ) -> dict[str, float]:
        """Shortest-path round trip from `origin` to every reachable region, avoiding
        the region `without` (a lost region carries no traffic through it; its own users'
        traffic still starts there). Searched once per (origin, without, within_ms).

        Args:
            origin: Where the users are.
            without: A lost region no path may cross (None: the whole graph).
            within_ms: Only regions at most this far are returned (None: every one).
        """
        if without == origin:
            without = None
        near, interior = self._tree(origin, within_ms)
        if without is None:  # the whole graph's round trips: the tree's own search
            return dict(near)
        if without not in interior:  # a leaf of the shortest paths' tree, or past it
            return {region: rtt for region, rtt in near.items() if region != without}
        key = (origin, without, within_ms)
        if key not in self._rtt_cache:
            self._rtt_cache[key] = _dijkstra(self._adjacency, origin, without, within_ms)
        return dict(self._rtt_cache[key])

    @cached_property
    def _tree_cache(self) -> dict[tuple[str, float | None], tuple[dict[str, float], frozenset]]:
        return {}

    def _tree(self, origin: str, within_ms: float | None) -> tuple[dict[str, float], frozenset]:
        """The round trips from `origin` on the whole graph (within `within_ms`) and the
        regions some shortest path passes through (the tree's inner nodes). Losing a
        region that is not one of them changes no other round trip: the tree less that
        leaf still reaches every other region as fast, and no path gets faster without
        it. On 100 regions joined pairwise every region is a leaf of a star, so a region
        loss needs no search of its own (10,100 searches were 100)."""
        key = (origin, within_ms)
        if key not in self._tree_cache:
            self._tree_cache[key] = _dijkstra_tree(self._adjacency, origin, within_ms)
        return self._tree_cache[key]

    def destinations(
        self, scenario: Scenario, origin: str, max_failover_rtt_ms: float | None
    ) -> dict[str, float]:
        """Regions that may serve `origin`'s users in `scenario`, with their RTT in ms.

        Own region always (unless lost). Other regions only when the scenario reroutes,
        within `max_failover_rtt_ms` (None: any reachable region).
        """
        lost = scenario.lost_region
        allowed: dict[str, float] = {} if origin == lost else {origin: 0.0}
        if not scenario.reroutes:
            return allowed
        within_ms = None if max_failover_rtt_ms is None else max_failover_rtt_ms + 1e-9
        for region, rtt_ms in self.rtt_ms(origin, lost, within_ms).items():
            if region not in (origin, lost):
                allowed[region] = rtt_ms
        return allowed

    def nearest_outside(self, origin: str, without: str | None = None) -> tuple[str, float] | None:
        """The closest other region reachable from `origin` (for messages), or None."""
        reachable = {r: t for r, t in self.rtt_ms(origin, without).items() if r != origin}
        if not reachable:
            return None
        region = min(reachable, key=lambda r: (reachable[r], r))
        return region, reachable[region]


def rerouted_rtt_ms(
    graph: RegionGraph,
    scenario: Scenario,
    origins: Iterable[str],
    max_failover_rtt_ms: float | None,
) -> dict[str, float]:
    """Per region, the longest round trip of the users `scenario` may reroute to it: the
    most any origin other than the region itself (of `origins`, those with demand) is
    from it among `graph.destinations`; regions no rerouted user may reach are absent.

    A region's replicas serve their own users and the rerouted ones from one queue, so
    all of them must answer within the TTFT target less this round trip
    (`failover_targets`): the rerouted users' first token crosses it once more.
    """
    if not scenario.reroutes:
        return {}
    return longest_reroutes(
        {o: graph.destinations(scenario, o, max_failover_rtt_ms) for o in origins}
    )


def longest_reroutes(destinations: dict[str, dict[str, float]]) -> dict[str, float]:
    """`rerouted_rtt_ms` from each origin's `RegionGraph.destinations` in a scenario that
    reroutes, for a caller that has them already (the verifier, which reads them again
    for its flow)."""
    longest: dict[str, float] = {}
    for origin, places in destinations.items():
        for region, rtt_ms in places.items():
            if region != origin and rtt_ms > longest.get(region, 0.0):
                longest[region] = rtt_ms
    return longest


def rerouted_rtts(
    instance: Instance, check: Callable[[], None] | None = None
) -> dict[str, tuple[float, ...]]:
    """Per workload, every round trip `rerouted_rtt_ms` gives some region in some failure
    scenario of the instance (increasing): the TTFT targets less a round trip at which
    its replicas may have to serve (the candidates tabulate their capacity at each).

    Workloads of the same origins and failover bound share one search per scenario (100
    workloads in 100 regions: 101 x 100 searches of 100 origins instead of 101 x 100 x
    100); `check` (the run's deadline) is called before each search, so a time limit
    stops this too.
    """
    graph = RegionGraph.of(instance)
    found: dict[str, set[float]] = {w.name: set() for w in instance.workloads}
    for scenario in failure_scenarios(instance):
        searched: dict[tuple[frozenset[str], float | None], set[float]] = {}
        for workload in instance.workloads:
            origins = frozenset(o for o, level in workload.demand.items() if level.peak_rps > 0)
            key = (origins, workload.slo.max_failover_rtt_ms)
            if key not in searched:
                if check is not None:
                    check()
                rtts = rerouted_rtt_ms(graph, scenario, sorted(origins), key[1])
                searched[key] = set(rtts.values())
            found[workload.name] |= searched[key]
    return {w: tuple(sorted(rtts)) for w, rtts in found.items()}


def failover_targets(targets: LatencyTargets, rtt_ms: float) -> LatencyTargets:
    """The targets a region's replicas must meet while serving users rerouted from
    `rtt_ms` away: the p99 TTFT less the round trip (at least 1 us, so a round trip
    longer than the target leaves a target no replica meets); the TPOT is unchanged
    (tokens stream over the same path at the same pace)."""
    if targets.ttft_p99_s is None or rtt_ms <= 0:
        return targets
    return replace(targets, ttft_p99_s=max(targets.ttft_p99_s - rtt_ms / 1e3, 1e-6))


@lru_cache(maxsize=64)
def _region_graph(
    regions: tuple[str, ...], links: tuple[tuple[str, str, float], ...]
) -> RegionGraph:
    return RegionGraph(regions, links)


def _dijkstra_tree(
    adjacency: dict[str, tuple[tuple[str, float], ...]], origin: str, within_ms: float | None
) -> tuple[dict[str, float], frozenset]:
    """`_dijkstra` on the whole graph, and the regions a shortest path found leaves
    from (the inner nodes of its tree, `origin` among them when it reaches another)."""
    found: dict[str, float] = {}
    inner: set[str] = set()
    frontier: list[tuple[float, str, str | None]] = [(0.0, origin, None)]
    while frontier:
        rtt_ms, region, parent = heapq.heappop(frontier)
        if region in found:
            continue
        found[region] = rtt_ms
        if parent is not None:
            inner.add(parent)
        for other, link_ms in adjacency[region]:
            if other in found:
                continue
            candidate = rtt_ms + link_ms
            if within_ms is None or candidate <= within_ms:
                heapq.heappush(frontier, (candidate, other, region))
    return found, frozenset(inner)


def _dijkstra(
    adjacency: dict[str, tuple[tuple[str, float], ...]],
    origin: str,
    without: str | None,
    within_ms: float | None,
) -> dict[str, float]:
    """Dijkstra's search from `origin`, never entering `without`, stopping past
    `within_ms`: {region: shortest round trip in ms} for every region reached."""
    found: dict[str, float] = {}
    frontier = [(0.0, origin)]
    while frontier:
        rtt_ms, region = heapq.heappop(frontier)
        if region in found:
            continue
        found[region] = rtt_ms
        for other, link_ms in adjacency[region]:
            if other == without or other in found:
                continue
            candidate = rtt_ms + link_ms
            if within_ms is None or candidate <= within_ms:
                heapq.heappush(frontier, (candidate, other))
    return found
