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

Most scenarios are served once a few rows are in: a nearest-first assignment (origins
with the fewest regions within reach first) that serves everyone is a flow of the
whole demand, and the maximum flow (networkx) runs only when it does not.
"""

from collections.abc import Iterable
from dataclasses import dataclass

from models.operations.scenarios import Scenario
from solver.program.families.hall import HallCut, TransportCredit, closure
from solver.program.families.variables import ModeLoadColumn, ServedColumn

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
    regions = {d for places in reach.values() for _, d in places}
    phase_room = {
        (d, m.name): [credit.value(f, w, d, p, values) / per_capacity for p in m.phases]
        for d in regions
        for m in credit.modes(w, d)
    }
    total = sum(demand.values())
    greedy = _nearest_first(demand, reach, phase_room, credit, w)
    if greedy is not None:
        return Transport(greedy[0], greedy[1], total, 0.0, None)
    return _max_flow(credit, f, w, demand, reach, phase_room, total)


def _nearest_first(
    demand: dict[str, float],
    reach: dict[str, list[tuple[float, str]]],
    phase_room: dict[tuple[str, str], list[float]],
    credit: TransportCredit,
    w: str,
) -> tuple[dict, dict] | None:
    """(served, modes) when nearest-first, origins with the fewest places first, serves
    every origin whole; else None."""
    room = {key: min(rooms) for key, rooms in phase_room.items()}
    served: dict[tuple[str, str], float] = {}
    modes: dict[tuple[str, str], float] = {}
    for o in sorted(demand, key=lambda o: (len(reach[o]), o)):
        left = demand[o]
        for _, d in reach[o]:
            for mode in credit.modes(w, d):
                take = min(left, room[(d, mode.name)])
                if take <= 0:
                    continue
                room[(d, mode.name)] -= take
                served[(o, d)] = served.get((o, d), 0.0) + take
                modes[(d, mode.name)] = modes.get((d, mode.name), 0.0) + take
                left -= take
        if left > 1e-12 * max(demand[o], 1.0):
            return None
    return served, modes


def _max_flow(
    credit: TransportCredit,
    f: Scenario,
    w: str,
    demand: dict[str, float],
    reach: dict[str, list[tuple[float, str]]],
    phase_room: dict[tuple[str, str], list[float]],
    total: float,
) -> Transport:
    """The maximum flow, and a minimum cut's row when it falls short."""
    import networkx as nx

    network = nx.DiGraph()
    network.add_node("sink")
    for o, rate in demand.items():
        network.add_edge("source", ("o", o), capacity=rate)
        for _, d in reach[o]:
            network.add_edge(("o", o), ("d", d))
    for (d, name), rooms in phase_room.items():
        network.add_edge(("d", d), ("m", d, name))
        chain = [("m", d, name), *(("p", d, name, i) for i in range(len(rooms)))]
        for i, room in enumerate(rooms):
            network.add_edge(chain[i], chain[i + 1], capacity=room)
        network.add_edge(chain[-1], "sink")
    flow_value, flow = nx.maximum_flow(network, "source", "sink")
    served = {(o, d): rate for o in demand for (_, d), rate in flow[("o", o)].items() if rate > 0}
    modes = {
        (d, name): flow[("d", d)][("m", d, name)]
        for (d, name) in phase_room
        if flow[("d", d)][("m", d, name)] > 0
    }
    shortfall = max(0.0, total - flow_value)
    if shortfall <= TOLERANCE * (total + 1.0):
        return Transport(served, modes, total, shortfall, None)
    _, (source_side, _) = nx.minimum_cut(network, "source", "sink")
    reached = [d for d in credit.sets.regions if ("d", d) in source_side]
    origins = closure(credit.sets, f, w, reached)  # the cut's origins and any others held there
    phases = []
    for d in credit.sets.regions:
        if ("d", d) not in source_side:
            continue
        for mode in credit.modes(w, d):
            crossed = next(
                i for i in range(len(mode.phases)) if ("p", d, mode.name, i) not in source_side
            )
            phases.append((d, mode.name, mode.phases[crossed]))
    return Transport(served, modes, total, shortfall, HallCut(f, w, origins, tuple(phases)))


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
