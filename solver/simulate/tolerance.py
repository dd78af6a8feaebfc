"""Burstiness tolerance: the largest coefficient of variation of inter-arrival times at
which a pool still meets its SLO in simulation, at the same mean rate.

Inter-arrival times are gamma with coefficient of variation cv (`solver.simulate.traffic`;
cv = 1 is Poisson, larger is burstier). With a fixed seed, the simulated p99s are a
deterministic function of cv; the tolerance is found by bisection on log(cv) between
`MIN_CV` and `MAX_CV`:

    tolerated = max { cv in [MIN_CV, MAX_CV] : the pool meets its SLO at cv }

taking "meets at cv" as monotone (burstier arrivals only lengthen queues). At a fixed
seed that is true of the queue, not exactly of every sample, so the answer is good to
about the bisection's step (`STEPS` halvings of a factor of MAX_CV / MIN_CV = 80: ~3.5%)
and to the sampling error of a p99 over the run.
"""

import math
from collections.abc import Callable

MIN_CV = 0.1
"""Smoother than any real traffic (0 would be a metronome)."""
MAX_CV = 8.0
"""Burstier than any production trace we know of reports (cv 2-4 is typical of chat)."""
STEPS = 7
"""Halvings of log(MAX_CV / MIN_CV): the tolerance to ~3.5%, 7 extra runs of a pool."""


def tolerated_cv(
    meets: Callable[[float], bool], low: float = MIN_CV, high: float = MAX_CV, steps: int = STEPS
) -> float | None:
    """The largest cv in [low, high] with `meets(cv)` (bisection on log cv, module
    docstring): `high` when even that meets, None when not even `low` does."""
    if meets(high):
        return high
    if not meets(low):
        return None
    good, bad = math.log(low), math.log(high)
    for _ in range(steps):
        middle = (good + bad) / 2
        if meets(math.exp(middle)):
            good = middle
        else:
            bad = middle
    return math.exp(good)
