"""The iteration mixture is continuous in the batch, so the p99 TPOT has no spikes.

`poisson_points` feeds every iteration mixture (`BatchModel.mixture`), and
`BatchModel.batch_high` differentiates the mixture's mean step numerically over a
1e-3 B step. Any jump of the law as its mean grows (a term joining the truncated sum, the
switch to the normal law) is amplified a thousandfold there: with a 1e-5 tail the p99
TPOT of the configurations below leapt 13-15% above its neighbours over a few tenths of a
sequence, and the SLO's edge depended on where a search landed.
"""

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.efficiency import efficiency_for
from models.serving.batch_model import BatchModel
from models.serving.capacity import replica_capacity
from models.serving.iteration_mixture import POISSON_EXACT_MEAN, POISSON_NORMAL_MEAN, poisson_points
from models.serving.replica import LatencyTargets, MixTokens
from models.serving.replica_layout import decode_steps, replica_step_model
from tests.models.serving.test_capacity_search import CHAT, FP8, LONG_PROMPT, SHORT_REPLY, _config


def _expect(points, f) -> float:
    return sum(weight * f(value) for value, weight in points)


@pytest.mark.parametrize("edge", [POISSON_EXACT_MEAN, POISSON_NORMAL_MEAN])
def test_the_law_does_not_jump_where_the_normal_law_takes_over(edge):
    """E[f(K)] of a smooth f just below and just above each switch agrees to 1e-8
    (a relative step of the mean of 1e-10 moves it by about that much)."""

    def f(k: float) -> float:
        return math.sqrt(k + 1.0)

    below, above = edge * (1 - 1e-10), edge * (1 + 1e-10)
    assert math.isclose(
        _expect(poisson_points(below), f), _expect(poisson_points(above), f), rel_tol=1e-8
    )


@given(st.floats(0.01, 40.0))
@settings(max_examples=60, deadline=None)
def test_every_law_keeps_its_mass_mean_and_variance(mean):
    """Probabilities sum to 1; mean and variance are the Poisson's, `mean` both (the
    blend of two laws of the same mean and variance keeps them; the normal's clipping at
    0 moves them by less than 1e-3 of the mean at the smallest means it serves)."""
    points = poisson_points(mean)
    assert math.isclose(sum(w for _, w in points), 1.0, rel_tol=1e-12)
    first = _expect(points, lambda k: k)
    second = _expect(points, lambda k: (k - mean) ** 2)
    assert math.isclose(first, mean, rel_tol=1e-3)
    assert math.isclose(second, mean, rel_tol=1e-3)


@pytest.mark.parametrize(
    ("config", "mix"),
    [
        (_config("h200", "qwen2.5-72b", FP8, 2), SHORT_REPLY),
        (_config("b200", "llama-3.1-8b", FP8, 1), LONG_PROMPT),
        # it fell by 0.3% at B = 304.54 where the tail batch (BatchModel.batch_high)
        # dropped from 489.96 to 487.88 between neighbouring batches (an xfail until the
        # reply's life, models.serving.tail.reply_life, took the prompts at the mean batch
        # and left the tail batch only the decode step's spread)
        (_config("h100-sxm", "llama-3.3-70b", FP8, 8, pp=2), CHAT),
    ],
)
def test_the_p99_tpot_grows_with_the_batch_without_spikes(config, mix):
    """On 2,000 batches from 0.9 to 1.1 of the capacity's batch at a 60 ms TPOT target,
    the p99 TPOT never falls by more than 1e-9 relative from one batch to the next, and
    never rises by more than 1e-3 (a 1e-4 B step; the spikes rose 13-15% and fell back)."""
    efficiency = efficiency_for(config.gpu, config.weight_precision)
    capacity = replica_capacity(config, mix, LatencyTargets(2.0, 0.06), efficiency)
    steps = replica_step_model(config, efficiency)
    model = BatchModel(
        decode_steps(config, efficiency, steps), MixTokens.of(mix), config.role, 0.0, 0.0, 1
    )
    count = 2000
    batches = [capacity.batch * (0.9 + 0.2 * k / count) for k in range(count + 1)]
    tpots = [model.tpot_p99_s(b) for b in batches]
    for before, after in itertools.pairwise(tpots):
        assert after >= before * (1 - 1e-9)
        assert after <= before * (1 + 1e-3)


@settings(max_examples=40, deadline=None)
@given(mean=st.floats(min_value=1e-6, max_value=POISSON_NORMAL_MEAN, exclude_max=True))
def test_the_terms_are_the_laws_own_to_the_bit(mean):
    """Up to the normal law's mean, the terms are e^-m m^k / k! built term by term (each
    the last x m / k) from k = 0 until past the mean with less than 1e-12 of the mass
    left, each over their sum, the normal law's points (from the mean 8) after them."""
    term, terms, k, total = math.exp(-mean), [], 0, 0.0
    while k <= mean or total < 1 - 1e-12:
        terms.append(term)
        total += term  # left to right, as the law adds them
        k += 1
        term *= mean / k
    exact = [(float(k), weight / total) for k, weight in enumerate(terms)]
    share = min(max((mean - POISSON_EXACT_MEAN) / (POISSON_NORMAL_MEAN - POISSON_EXACT_MEAN), 0), 1)
    points = poisson_points(mean)
    if share == 0:
        assert points == exact
    else:
        assert points[: len(exact)] == [(v, (1 - share) * p) for v, p in exact]
