"""The scenario transport flow (solver.program.transport): a maximum flow, checked against
networkx's on random networks, and a minimum cut whose Hall row is broken by at least
the demand it leaves unserved."""

import networkx as nx
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from solver.program.transport import _Flow

MODES = [("a", "unified"), ("b", "unified"), ("b", "disagg"), ("c", "unified"), ("d", "unified")]


@st.composite
def networks(draw):
    origins = [f"o{i}" for i in range(draw(st.integers(1, 5)))]
    # 0 or a rate a program states (networkx's reference flow breaks on 1e-170 capacities)
    rate = st.one_of(st.just(0.0), st.floats(1e-6, 10.0))
    demand = {o: draw(rate) for o in origins}
    places = {o: draw(st.lists(st.sampled_from(MODES), unique=True, max_size=4)) for o in origins}
    room = {m: draw(rate) for m in MODES}
    return demand, places, room


@examples(max_examples=200, deadline=None)
@given(networks())
def test_the_flow_is_maximum_and_its_cut_is_broken_by_the_shortfall(network):
    demand, places, room = network
    flow = _Flow(demand, places, room)
    shortfall = flow.maximise()
    graph = nx.DiGraph()
    for o, rate in demand.items():
        graph.add_edge("source", o, capacity=rate)
        for m in places[o]:
            graph.add_edge(o, m)
    for m, rate in room.items():
        graph.add_edge(m, "sink", capacity=rate)
    best = nx.maximum_flow_value(graph, "source", "sink")
    total = sum(demand.values())
    assert abs((total - shortfall) - best) <= 1e-9 * (total + 1)
    # A flow: within every room and every origin's demand.
    assert all(flow.load[m] <= room[m] + 1e-9 for m in MODES)
    for o in demand:
        assert sum(flow.sent[o].values()) <= demand[o] + 1e-9
        assert all(m in places[o] for m, rate in flow.sent[o].items() if rate > 1e-12)
    # The cut's row: the origins held within its modes ask at least the shortfall more
    # than those modes hold (the row is broken by at least what is unserved).
    held = flow.source_side()
    within = sum(rate for o, rate in demand.items() if set(places[o]) <= held)
    assert within - sum(room[m] for m in held) >= shortfall - 1e-9 * (total + 1)
