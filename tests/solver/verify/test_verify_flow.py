"""The verifier's demand check: the nearest-first assignment is only a shortcut to the
maximum flow, never a different verdict."""

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from solver.verify.scenarios import _assigns_all, _max_flow, _nearest_first_serves_all

REGIONS = ["a", "b", "c", "d"]


def test_the_origin_with_fewest_choices_goes_first_when_its_own_order_fails():
    """Users of x reach b (0 ms) then c (5 ms); users of y reach b only. In their own
    order x takes b and leaves y nowhere; y first (one choice) takes b, x then c: 1 + 1
    = 2 served without the maximum flow."""
    demand = {"x": 1.0, "y": 1.0}
    capacity = {"b": 1.0, "c": 1.0}
    reach = {"x": {"b": 0.0, "c": 5.0}, "y": {"b": 0.0}}
    assert not _assigns_all(demand, capacity, reach, ["x", "y"])
    assert _nearest_first_serves_all(demand, capacity, reach)


def test_when_both_orders_fail_the_maximum_flow_decides():
    """x reaches b (0 ms) then c (5 ms), y reaches b (0 ms) then d (3 ms), z reaches d
    only; one request/s each, one of room in b, c, d. Own order: x -> b, y -> d, z finds
    d full. Fewest choices first: z -> d, x -> b, y finds b and d full. Yet x -> c,
    y -> b, z -> d serves all: flow 1 + 1 + 1 = 3."""
    demand = {"x": 1.0, "y": 1.0, "z": 1.0}
    capacity = {"b": 1.0, "c": 1.0, "d": 1.0}
    reach = {"x": {"b": 0.0, "c": 5.0}, "y": {"b": 0.0, "d": 3.0}, "z": {"d": 0.0}}
    assert not _nearest_first_serves_all(demand, capacity, reach)
    served, _ = _max_flow(demand, capacity, reach)
    assert math.isclose(served, 3.0)


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
@settings(max_examples=100, deadline=None)  # 200 took 1.6 s of CPU; both orders pinned above
def test_whenever_nearest_first_serves_everyone_so_does_the_maximum_flow(network):
    demand, capacity, reach = network
    if _nearest_first_serves_all(demand, capacity, reach):
        served, _ = _max_flow(demand, capacity, reach)
        total = sum(demand.values())
        assert math.isclose(served, total, rel_tol=1e-9, abs_tol=1e-9)
