"""The plain bisections (`models.serving.edge_search.bisect_edge`, `smallest_passing`): the
brackets and answers worked out halving by halving, and, as properties, the bracket kept
and the answer of the loops they replaced."""

import math

from hypothesis import given
from hypothesis import strategies as st

from models.serving.edge_search import bisect_edge, smallest_passing


class Counted:
    """A test that records where it was evaluated."""

    def __init__(self, test):
        self.test = test
        self.at = []

    def __call__(self, x):
        self.at.append(x)
        return self.test(x)


def test_three_halvings_by_hand():
    # passes while x <= 0.3 on [0, 1]: 0.5 fails -> [0, 0.5]; 0.25 passes -> [0.25, 0.5];
    # 0.375 fails -> [0.25, 0.375].
    below = Counted(lambda x: x <= 0.3)
    assert bisect_edge(below, 0.0, 1.0, 3) == (0.25, 0.375)
    assert below.at == [0.5, 0.25, 0.375]  # the ends themselves are never evaluated


def test_a_width_stops_the_halving_early():
    # widths after each halving: 0.5, 0.25, 0.125 < 0.2: three of the 100 allowed.
    below = Counted(lambda x: x <= 0.3)
    assert bisect_edge(below, 0.0, 1.0, 100, width=0.2) == (0.25, 0.375)
    assert len(below.at) == 3


def test_the_smallest_passing_whole_number_by_hand():
    # passes from 5 on, bracket (0, 16]: 8 passes -> (0, 8]; 4 fails -> (4, 8];
    # 6 passes -> (4, 6]; 5 passes -> (4, 5]: 5, in log2(16) = 4 evaluations.
    from_five = Counted(lambda n: n >= 5)
    assert smallest_passing(from_five, 0, 16) == 5
    assert from_five.at == [8, 4, 6, 5]
    assert smallest_passing(from_five, 4, 5) == 5  # nothing left to test
    assert from_five.at == [8, 4, 6, 5]


@given(
    edge=st.floats(0.0, 1.0, exclude_max=True),
    steps=st.integers(1, 40),  # 2^-40 is far above the spacing of floats below 1
)
def test_the_bracket_holds_a_pass_and_a_fail_halved_steps_times(edge, steps):
    low, high = bisect_edge(lambda x: x <= edge, 0.0, 1.0, steps)
    assert low <= edge < high
    assert math.isclose(high - low, 2.0**-steps, rel_tol=1e-9)


@given(
    low=st.integers(-50, 50),
    span=st.integers(1, 200),
    offset=st.integers(1, 200),
)
def test_smallest_passing_agrees_with_the_loops_it_replaced(low, span, offset):
    high = low + span
    first = low + min(offset, span)  # the test passes from here on, and at high

    def passes(n):
        return n >= first

    # the pool search (solver.candidates.pools): the first pass in [low + 1, high]
    a, b = low + 1, high
    while a < b:
        mid = (a + b) // 2
        if passes(mid):
            b = mid
        else:
            a = mid + 1
    assert smallest_passing(passes, low, high) == a == first
