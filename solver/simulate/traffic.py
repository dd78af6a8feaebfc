"""Synthetic traffic for the simulator: arrival times and token lengths, seeded."""

import math

import numpy as np

from models.schema.traffic import TokenDistribution


def arrival_times_s(
    rate: float, duration_s: float, burstiness_cv: float, rng: np.random.Generator
) -> np.ndarray:
    """Arrival times in [0, duration_s) at mean `rate` requests/s.

    Inter-arrival times are gamma with coefficient of variation `burstiness_cv`
    (shape k = 1 / cv^2, scale = 1 / (rate k)): cv = 1 is a Poisson stream, cv > 1
    bursty, cv < 1 smoother than Poisson.
    """
    if rate <= 0 or duration_s <= 0:
        return np.zeros(0)
    if burstiness_cv <= 0:
        raise ValueError(f"burstiness must be > 0, got {burstiness_cv}")
    shape = 1 / burstiness_cv**2
    expected = rate * duration_s
    draws = int(expected + 6 * math.sqrt(expected) * max(burstiness_cv, 1) + 16)
    gaps = rng.gamma(shape, 1 / (rate * shape), size=draws)
    times = np.cumsum(gaps)
    while times[-1] < duration_s:
        more = np.cumsum(rng.gamma(shape, 1 / (rate * shape), size=draws)) + times[-1]
        times = np.concatenate([times, more])
    return times[times < duration_s]


def token_lengths(
    distribution: TokenDistribution, count: int, rng: np.random.Generator
) -> np.ndarray:
    """`count` lengths (whole tokens, at least 1) from a `{mean, p99}` lognormal (sigma
    from `TokenDistribution.cv`: sigma^2 = ln(1 + cv^2), mu = ln(mean) - sigma^2 / 2)
    or from the histogram's buckets."""
    if distribution.histogram is not None:
        buckets = distribution.buckets()
        tokens = np.array([t for t, _ in buckets])
        weights = np.array([w for _, w in buckets])
        return np.maximum(1, np.rint(rng.choice(tokens, size=count, p=weights))).astype(int)
    mean, cv = distribution.mean_tokens, distribution.cv
    if cv == 0:
        return np.full(count, max(1, round(mean)), dtype=int)
    sigma_sq = math.log1p(cv**2)
    draws = rng.lognormal(math.log(mean) - sigma_sq / 2, math.sqrt(sigma_sq), size=count)
    return np.maximum(1, np.rint(draws)).astype(int)
