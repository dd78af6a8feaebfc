"""The verifier's demand check: the nearest-first assignment is only a shortcut to the
maximum flow, never a different verdict."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from solver.verify_scenarios import _max_flow, _nearest_first_serves_all

REGIONS = ["a", "b", "c", "d"]


def test_a_failed_nearest_first_assignment_falls_back_to_the_maximum_flow():
    """Users of x reach b (0 ms) then c (5 ms); users of y reach b only. Nearest first
    sends x to b and leaves y nowhere, yet x -> c, y -> b serves both: flow 1 + 1 = 2."""
    demand = {"x": 1.0, "y": 1.0}
    capacity = {"b": 1.0, "c": 1.0}
    reach = {"x": {"b": 0.0, "c": 5.0}, "y": {"b": 0.0}}
    assert not _nearest_first_serves_all(demand, capacity, reach)
    served, _ = _max_flow(demand, capacity, reach)
    assert math.isclose(served, 2.0)


@st.composite
def networks(draw):
    origins = draw(st.lists(st.sampled_from(REGIONS), min_size=1, max_size=4, unique=True))
    demand = {o: draw(st.floats(0.0, 10.0)) for o in origins}
    capacity = {d: draw(st.floats(0.0, 10.0)) for d in REGIONS}
    reach = {
        o: {d: draw(st.floats(0.0, 100.0)) for d in draw(st.sets(st.sampled_from(REGIONS)))}
        for o in origins
    }
    return demand, capacity, reach


@given(networks())
@settings(max_examples=200, deadline=None)
def test_whenever_nearest_first_serves_everyone_so_does_the_maximum_flow(network):
    demand, capacity, reach = network
    if _nearest_first_serves_all(demand, capacity, reach):
        served, _ = _max_flow(demand, capacity, reach)
        total = sum(demand.values())
        assert math.isclose(served, total, rel_tol=1e-9, abs_tol=1e-9)
