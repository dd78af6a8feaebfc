"""The edge search (`models.serving.edge_search.find_edge`): a bracket of a pass and a fail, as
tight as asked, in far fewer evaluations than the 48-step bisection it replaces."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.serving.edge_search import EDGE_REL_TOL, find_edge, signed_margin


class Counted:
    """A margin that counts its evaluations."""

    def __init__(self, margin):
        self.margin = margin
        self.calls = 0

    def __call__(self, x: float) -> float:
        self.calls += 1
        return self.margin(x)


def test_square_root_of_two_as_the_edge_of_x_squared_below_two():
    margin = Counted(lambda x: x * x - 2.0)  # passes while x^2 <= 2
    low, high = find_edge(margin, 0.0, 2.0)
    assert low <= math.sqrt(2.0) <= high
    assert margin.margin(low) <= 0 < margin.margin(high)
    assert high - low <= EDGE_REL_TOL * high
    assert margin.calls <= 12  # a bisection takes 41 halvings of [0, 2] to 1e-12 of sqrt 2


def test_known_ends_are_not_evaluated_again():
    margin = Counted(lambda x: x - 0.3)
    find_edge(margin, 0.0, 1.0, low_margin=-0.3, high_margin=0.7)
    plain = Counted(lambda x: x - 0.3)
    find_edge(plain, 0.0, 1.0)
    assert margin.calls == plain.calls - 2


def test_a_jump_at_the_edge_is_bracketed_like_a_bisection():
    """A margin that jumps from -1 to +1 at the edge has no root to interpolate: every
    step falls back to a bisection, which still closes on the jump."""
    edge = 0.123456789
    low, high = find_edge(lambda x: -1.0 if x <= edge else 1.0, 0.0, 1.0)
    assert low <= edge < high
    assert high - low <= EDGE_REL_TOL * high


def test_an_infinite_margin_beyond_saturation_is_bisected():
    """A queue past saturation has an infinite p99: log(ratio) = inf beyond x = 0.8, and
    the ratio rises smoothly below it (here it reaches the target at 0.5)."""

    def margin(x: float) -> float:
        return math.inf if x >= 0.8 else math.log((x + 0.5) / (1.0 - x) / 1.0 / 2.0)

    low, high = find_edge(margin, 0.0, 1.0)
    assert low <= 0.5 <= high
    assert high - low <= EDGE_REL_TOL * high


def test_a_bracket_that_does_not_pass_and_fail_is_refused():
    with pytest.raises(ValueError, match="passing low and a failing high"):
        find_edge(lambda x: x - 2.0, 0.0, 1.0)  # passes at both ends
    with pytest.raises(ValueError, match="passing low and a failing high"):
        find_edge(lambda x: x + 1.0, 0.0, 1.0)  # fails at both ends


def test_signed_margin_takes_its_sign_from_the_verdict():
    assert signed_margin(0.25, passes=True) == -0.25
    assert signed_margin(-0.25, passes=False) == 0.25
    assert signed_margin(0.0, passes=False) > 0  # a fail at ratio 1 (rounding) still fails
    assert signed_margin(math.nan, passes=True) == 0.0
    assert signed_margin(math.inf, passes=False) == math.inf


@settings(max_examples=200, deadline=None)
@given(
    root=st.floats(1e-6, 1e4),
    scale=st.floats(1e-3, 1e3),
    curvature=st.floats(0.0, 10.0),
    cap_factor=st.floats(1.001, 1e3),
)
def test_smooth_monotone_margins_are_bracketed_to_the_tolerance(root, scale, curvature, cap_factor):
    """m(x) = scale (x/r - 1) (1 + c (x/r - 1)^2): increasing, root r; the bracket holds
    r, passes at low, fails at high, and is EDGE_REL_TOL wide."""

    def margin(x: float) -> float:
        u = x / root - 1.0
        return scale * u * (1.0 + curvature * u * u)

    counted = Counted(margin)
    low, high = find_edge(counted, root * 1e-6, root * cap_factor)
    assert counted.margin(low) <= 0 < counted.margin(high)
    assert high - low <= EDGE_REL_TOL * high
    assert low <= root * (1 + 1e-15) and high >= root * (1 - 1e-15)
    assert counted.calls < 48


@settings(max_examples=200, deadline=None)
@given(edge=st.floats(0.001, 0.999), steps=st.integers(1, 50))
def test_any_monotone_test_is_bracketed_even_as_a_staircase(edge, steps):
    """A staircase margin (flat pieces, so no interpolation helps): still a valid bracket
    of the edge, within the tolerance and at most ~a bisection's evaluations."""

    def margin(x: float) -> float:
        return math.floor((x - edge) * steps) + (0.5 if x > edge else -0.5)

    counted = Counted(margin)
    low, high = find_edge(counted, 0.0, 1.0)
    assert low <= edge < high
    assert high - low <= EDGE_REL_TOL * high
    assert counted.calls <= 3 * 48
