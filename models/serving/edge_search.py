"""The edge of a monotone feasibility test, found with few evaluations (Brent's method).

Every capacity search asks for the largest x in [low, high] at which a monotone test
still passes (the largest mean batch meeting the SLO, the largest prompt rate meeting
the TTFT target). A plain bisection halves the bracket whatever the test looks like and
needs ~48 evaluations for a relative precision of 1e-14. The tests are thresholds of
smooth quantities (a p99 TTFT against its target, a rate against a cap), so the edge is
the root of a continuous margin m(x), <= 0 where the test passes and > 0 beyond it
(`log(value / target)`, say), and Brent's method (inverse quadratic interpolation and
secant steps, falling back to bisection whenever they would not shrink the bracket fast
enough; R. P. Brent, "Algorithms for Minimization without Derivatives", 1973, ch. 4, as
in SciPy's `brentq`) finds it to a relative 1e-12 in ~6-12 evaluations instead.

The bracket invariant of the bisection is kept: the test passes at the returned low and
fails at the returned high, both evaluated, and the two are within `EDGE_REL_TOL` of each
other (relative to high). The sign of the margin is the test's verdict, so the bracket
never trusts an interpolation: where the margin jumps (a discontinuity of the physics) the
method still returns a bracket of a pass and a fail, like the bisection. An infinite
margin (a queue past saturation) makes that step a bisection.

Where a test has no margin to interpolate, or a caller's precision is a count of halvings,
the plain bisection is here too, once: `bisect_edge` halves a real bracket a given number
of times (keeping a passing low and a failing high), `smallest_passing` finds the first
whole number at which a monotone test passes.
"""

import math
from collections.abc import Callable

EDGE_REL_TOL = 1e-12
"""Width of the returned bracket, relative to its high end: the edge is found to this
precision (the 48-step bisection it replaces reached ~1e-14 of the initial bracket)."""
EDGE_MAX_EVALUATIONS = 200
"""A bound on evaluations that the method never reaches on a finite bracket (Brent's
method takes at most about the square of the bisection's count); a safeguard only."""


def find_edge(
    margin: Callable[[float], float],
    low: float,
    high: float,
    low_margin: float | None = None,
    high_margin: float | None = None,
    rel_tol: float = EDGE_REL_TOL,
) -> tuple[float, float]:
    """The edge of a monotone test given as a margin: the largest x in [low, high] with
    margin(x) <= 0, bracketed.

    Args:
        margin: m(x) <= 0 where the test passes, > 0 where it fails (the sign is the
            verdict; the size lets the method interpolate, and may be infinite).
        low, high: the initial bracket: the test passes at low and fails at high.
        low_margin, high_margin: m(low) and m(high) when already known (saves calls).
        rel_tol: the returned bracket's width relative to its high end.

    Returns:
        (low, high): evaluated points, margin(low) <= 0 < margin(high), and
        high - low <= rel_tol x high.

    Raises:
        ValueError: the test does not pass at low or does not fail at high.
    """
    f_low = margin(low) if low_margin is None else low_margin
    f_high = margin(high) if high_margin is None else high_margin
    if not f_low <= 0 < f_high:
        raise ValueError(f"find_edge needs a passing low and a failing high, got {f_low}, {f_high}")
    passed, failed = low, high  # the bracket: evaluated points of each verdict
    # Brent's method, as SciPy's brentq: `current` the best estimate, `block` the other
    # end of the bracket, `previous` the point before `current`.
    previous, f_previous = low, f_low
    current, f_current = high, f_high
    block, f_block = low, f_low
    step_before = step = high - low
    for _ in range(EDGE_MAX_EVALUATIONS):
        if (f_previous <= 0) != (f_current <= 0):
            block, f_block = previous, f_previous
            step_before = step = current - previous
        if abs(f_block) < abs(f_current):
            previous, current, block = current, block, current
            f_previous, f_current, f_block = f_current, f_block, f_current
        if failed - passed <= rel_tol * abs(failed):
            break
        delta = rel_tol * abs(current) / 4
        half = (block - current) / 2
        step_before, step = _next_step(
            current, f_current, previous, f_previous, block, f_block, step_before, step, delta
        )
        if abs(step) <= delta:
            step = math.copysign(delta, half)
        previous, f_previous = current, f_current
        current = current + step
        if not passed < current < failed:  # rounding at the bracket's ends
            current = (passed + failed) / 2
            step = current - previous
        f_current = margin(current)
        if f_current <= 0:
            passed = current
        else:
            failed = current
    return passed, failed


def _next_step(
    current: float,
    f_current: float,
    previous: float,
    f_previous: float,
    block: float,
    f_block: float,
    step_before: float,
    step: float,
    delta: float,
) -> tuple[float, float]:
    """Brent's step from `current`: an interpolation when it is short enough (less than
    half the step before last, and inside three quarters of the bracket), else a
    bisection. Returns (the step before the new one, the new step)."""
    half = (block - current) / 2
    finite = math.isfinite(f_current) and math.isfinite(f_previous) and math.isfinite(f_block)
    if not (finite and abs(step_before) > delta and abs(f_current) < abs(f_previous)):
        return half, half
    if previous == block:  # secant
        trial = -f_current * (current - previous) / (f_current - f_previous)
    else:  # inverse quadratic interpolation
        slope_previous = (f_previous - f_current) / (previous - current)
        slope_block = (f_block - f_current) / (block - current)
        trial = -f_current * (f_block * slope_block - f_previous * slope_previous)
        trial /= slope_block * slope_previous * (f_block - f_previous)
    if math.isfinite(trial) and 2 * abs(trial) < min(abs(step_before), 3 * abs(half) - delta):
        return step, trial
    return half, half


def signed_margin(size: float, passes: bool) -> float:
    """A margin for `find_edge` whose sign is the test's verdict: -|size| where the test
    passes, |size| where it fails (at least the smallest positive float, so that a fail
    at size 0 still counts as one; a NaN size counts as 0)."""
    magnitude = 0.0 if math.isnan(size) else abs(size)
    return -magnitude if passes else max(magnitude, math.ulp(0.0))


def bisect_edge(
    passes: Callable[[float], bool], low: float, high: float, steps: int, width: float = 0.0
) -> tuple[float, float]:
    """The edge of a monotone test by plain bisection: `steps` halvings of [low, high],
    each keeping a low where the test passes and a high where it fails, and no more once
    high - low < `width`.

    Args:
        passes: the test, true up to the edge and false beyond it.
        low, high: the bracket: taken to pass at low and fail at high (neither is
            evaluated).
        steps: halvings at most: the bracket ends (high - low) / 2^steps wide.
        width: stop as soon as the bracket is narrower (0: always `steps` halvings).

    Returns:
        (low, high): the final bracket.
    """
    for _ in range(steps):
        mid = (low + high) / 2
        if passes(mid):
            low = mid
        else:
            high = mid
        if high - low < width:
            break
    return low, high


def smallest_passing(passes: Callable[[int], bool], low: int, high: int) -> int:
    """The smallest whole n in (low, high] at which a monotone test passes (false up to
    some n, true from it on), by bisection of the whole numbers: about log2(high - low)
    evaluations.

    Args:
        passes: the test.
        low, high: taken to fail at low and pass at high (neither is evaluated).
    """
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if passes(middle) else (middle, high)
    return high
