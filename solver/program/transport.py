"""The transport problem of a rerouting scenario at a solution: a flow, or the Hall row it breaks.

For a cut scenario f (solver.program.families.hall) and workload w, at the solution's
values, the network is

    source -> o             capacity D[w,o]                    each origin with demand
    o -> d                  unbounded                          each route f allows
    d -> (d,m)              unbounded                          each serving mode of w in d
    (d,m) -> phase_1 -> ... -> phase_k -> sink                 capacity credit_f[w,d,p] / u^-1
                                                               on the edge into phase p

so a mode carries no more than its weakest phase. The demand is served iff the maximum
flow is sum_o D[w,o]; otherwise the source side S of a minimum cut gives the violated
row: N(U) = the regions in S (every region an origin of S reaches is in S, the edges
being unbounded), U = every origin whose routes all lead into N(U) (the origins in S
and any others: the row only grows stronger), and in each mode of N(U) the phase whose
edge the cut crosses. Broken by at least the demand left unserved (times u^-1).

The phase chain of a mode is cut at its weakest edge, so the network is solved as
origins -> modes, each mode a node of capacity min_p credit_f[w,d,p] / u^-1 (that phase
is the one its row credits). The flow starts from a nearest-first assignment (origins
with the fewest regions within reach first), which serves everyone in most scenarios
once a few rows are in, and is completed by shortest augmenting paths (Edmonds-Karp:
origin -> mode with room, or through a mode to another origin that sends it flow and
on to another mode); the origins and modes still reachable from an unserved origin are
then the source side of a minimum cut. Pure Python on a network of at most R origins
and R x modes nodes: a separation round is thousands of these.
"""

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise

from models.operations.scenarios import Scenario
from solver.program.families.hall import HallCut, TransportCredit, closure
from solver.program.families.variables import ModeLoadColumn, ServedColumn
from solver.program.sets import Phase

TOLERANCE = 1e-6
"""Relative shortfall (of the scenario's demand, plus as much in requests/s) below which
a transport problem counts as served: the solver's own feasibility tolerance."""


@dataclass(frozen=True)
class Transport:
    """A flow of one scenario's transport problem for one workload at a solution."""

    served: dict[tuple[str, str], float]
    """(origin, destination) -> requests/s."""
    modes: dict[tuple[str, str], float]
    """(destination, mode name) -> requests/s."""
    demand: float
    """sum_o D[w,o], requests/s."""
    shortfall: float
    """Requests/s no flow can serve (0 when served)."""
    cut: HallCut | None
    """The broken row when the shortfall is beyond `TOLERANCE`."""


def transport(credit: TransportCredit, f: Scenario, w: str, values: dict[str, float]) -> Transport:
    """The flow of w's users under f at `values`, and the violated Hall row if any."""
    sets = credit.sets
    per_capacity = sets.load_per_capacity
    demand = {o: sets.demand[(w, o)] for o in sets.regions if (w, o) in sets.demand}
    reach: dict[str, list[tuple[float, str]]] = {o: [] for o in demand}
    for o, d, rtt_ms in sets.routes[(f.name, w)]:
        reach[o].append((rtt_ms, d))
    for places in reach.values():
        places.sort()
    reached_by_some = {d for places in reach.values() for _, d in places}
    regions = [d for d in sets.regions if d in reached_by_some]
    weakest: dict[Node, Phase] = {}
    room: dict[Node, float] = {}
    for d in regions:
        for mode in credit.modes(w, d):
            rooms = [credit.value(f, w, d, p, values) / per_capacity for p in mode.phases]
            i = min(range(len(rooms)), key=rooms.__getitem__)
            weakest[(d, mode.name)], room[(d, mode.name)] = mode.phases[i], rooms[i]
    flow = _Flow(
        demand,
        {o: [(d, m.name) for _, d in reach[o] for m in credit.modes(w, d)] for o in demand},
        room,
    )
    total = sum(demand.values())
    shortfall = flow.maximise()
    served: dict[tuple[str, str], float] = {}
    for o, sent in flow.sent.items():
        for (d, _), rate in sent.items():
            if rate > 0:
                served[(o, d)] = served.get((o, d), 0.0) + rate
    modes = {node: load for node, load in flow.load.items() if load > 0}
    if shortfall <= TOLERANCE * (total + 1.0):
        return Transport(served, modes, total, shortfall, None)
    modes_side = flow.source_side()
    reached = [d for d in regions if any((d, m.name) in modes_side for m in credit.modes(w, d))]
    origins = closure(sets, f, w, reached)  # the cut's origins and any others held there
    phases = tuple((d, m.name, weakest[(d, m.name)]) for d in reached for m in credit.modes(w, d))
    return Transport(served, modes, total, shortfall, HallCut(f, w, origins, phases))


Node = tuple[str, str]
"""A serving mode of a region: (region, mode name)."""


class _Flow:
    """A flow from origins (supply: their demand) to modes (capacity: their room) over
    unbounded edges origin -> mode: nearest-first, then maximised by augmenting paths."""

    def __init__(
        self, demand: dict[str, float], places: dict[str, list[Node]], room: dict[Node, float]
    ):
        self.demand, self.places, self.room = demand, places, room
        self.eps = 1e-12 * (sum(demand.values()) + 1.0)
        self.sent: dict[str, dict[Node, float]] = {o: {} for o in demand}
        self.load: dict[Node, float] = dict.fromkeys(room, 0.0)
        self.senders: dict[Node, set[str]] = {node: set() for node in room}
        self.left = dict(demand)
        for o in sorted(demand, key=lambda o: (len({d for d, _ in places[o]}), o)):
            for node in places[o]:
                take = min(self.left[o], room[node] - self.load[node])
                if take > 0:
                    self._move(o, node, take)
                if self.left[o] <= self.eps:
                    break

    def _move(self, o: str, node: Node, rate: float) -> None:
        """Send `rate` more (or, negative, less) of o's users to `node`."""
        sent = self.sent[o].get(node, 0.0) + rate
        self.sent[o][node] = sent
        if sent > self.eps:
            self.senders[node].add(o)
        else:
            self.senders[node].discard(o)
        self.load[node] += rate
        self.left[o] -= rate

    def maximise(self) -> float:
        """Augment along shortest paths until none is left; the demand left unserved."""
        while True:
            found, came_from, reached_by = self._search()
            if found is None:
                return sum(max(rate, 0.0) for rate in self.left.values())
            path = []  # (origin, mode) forward edges, last first
            node = found
            while True:
                o = reached_by[node]
                path.append((o, node))
                back = came_from[o]
                if back is None:
                    break
                node = back
            start = path[-1][0]
            rate = min(self.left[start], self.room[found] - self.load[found])
            for (o, _), (_, back) in pairwise(path):
                rate = min(rate, self.sent[o][back])  # o gives up flow into `back`
            for i, (o, node) in enumerate(path):
                self._move(o, node, rate)
                if i + 1 < len(path):  # o's flow into the next mode down the path moves
                    self._move(o, path[i + 1][1], -rate)

    def _search(self) -> tuple[Node | None, dict[str, Node | None], dict[Node, str]]:
        """Breadth-first search of the residual network from every unserved origin: a
        mode with room, and the search's parents."""
        came_from: dict[str, Node | None] = {
            o: None for o, rate in self.left.items() if rate > self.eps
        }
        reached_by: dict[Node, str] = {}
        queue = deque(came_from)
        while queue:
            o = queue.popleft()
            for node in self.places[o]:
                if node in reached_by:
                    continue
                reached_by[node] = o
                if self.room[node] - self.load[node] > self.eps:
                    return node, came_from, reached_by
                for other in self.senders[node]:
                    if other not in came_from:
                        came_from[other] = node
                        queue.append(other)
        return None, came_from, reached_by

    def source_side(self) -> set[Node]:
        """The modes reachable from an unserved origin in the residual network of a
        maximum flow: the source side of a minimum cut (with the origins that reach
        them, every one of which sends only there)."""
        _, _, reached_by = self._search()
        return set(reached_by)


def routing_values(
    credit: TransportCredit, values: dict[str, float], scenarios: Iterable[Scenario]
) -> dict[str, float]:
    """The served[f,w,o,d] and mode load columns of the cut scenarios, as the routing
    program would hold them: a flow of each transport problem at `values` (read back
    into the plan's per-scenario routing and loads)."""
    sets = credit.sets
    routed: dict[str, float] = {}
    for f in scenarios:
        for w in sets.workloads:
            if not any((w, o) in sets.demand for o in sets.regions):
                continue
            flow = transport(credit, f, w, values)
            for (o, d), rate in flow.served.items():
                routed[ServedColumn(f.name, w, o, d).name()] = rate
            for (d, name), rate in flow.modes.items():
                modes = sets.modes[(w, d)]
                if len(modes) > 1:
                    mode = next(m for m in modes if m.name == name)
                    routed[ModeLoadColumn.of(f.name, w, d, mode).name()] = rate
    return routed
