"""The iteration mixture over spread prompt lengths (`models.serving.iteration_mixture.
LoadCurve`: the iteration time piecewise linear in the prompt tokens, its moments over
each count's lognormal tokens in closed form): the closed form against numerical integration, the
compound Poisson's moments by hand where the step is affine, the call-price formula where
the roofline has its kink among the prompts, and a dense step model's kink where its
compute meets its weight read."""

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.serving.batch_model import BatchModel
from models.serving.iteration_mixture import LoadCurve
from models.serving.replica import MixTokens, Role


@dataclass(frozen=True)
class _AffineSteps:
    """An iteration of t_0 + c x prompt tokens, with an unlimited token budget."""

    decode_s: float
    per_token_s: float
    pp: int = 1
    chunk_tokens: int = 10**9

    def iteration_s(self, batch, context, prefill_tokens=0.0, prefill_context=0.0):
        return self.decode_s + self.per_token_s * prefill_tokens

    def iterations_s(self, batch, context, loads, prefill_context=0.0):
        return [self.iteration_s(batch, context, q) for q in loads]


@dataclass(frozen=True)
class _KinkedSteps(_AffineSteps):
    """The roofline: an iteration is the larger of its weight read (t_0) and its compute
    (c x prompt tokens), so the first prompt tokens ride in the read's shadow."""

    def iteration_s(self, batch, context, prefill_tokens=0.0, prefill_context=0.0):
        return max(self.decode_s, self.per_token_s * prefill_tokens)


def _mix(prompt_scv: float) -> MixTokens:
    """1,000-token prompts (no prefix hits), 10-token replies of fixed length."""
    return MixTokens(1000.0, 4000.0, prompt_scv, 10.0, 0.0, 10.0, 0.0, 1005.0, 1010.0)


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2))


@settings(max_examples=25, deadline=None)
@example(kink_share=0.84375, slopes=(5e-6, 4.78e-5), mean_share=0.05, scv=0.8125)
@given(
    kink_share=st.floats(0.05, 0.95),
    slopes=st.tuples(st.floats(0.0, 5e-5), st.floats(0.0, 5e-5)),
    mean_share=st.floats(0.05, 3.0),
    scv=st.floats(0.01, 2.0),
)
def test_the_closed_form_matches_numerical_integration(kink_share, slopes, mean_share, scv):
    """(E[c], E[c t], E[c t^2]) over S lognormal, t linear on [0, kink] and [kink, L], S
    past the lane L = 8,192 taking S / L iterations of t(L): the partial-moment form
    against the trapezoid rule over 24 sigmas of the log (20,001 points). The example:
    410-token prompts (scv 0.8125: sigma 0.771) all but 4.3 sigmas below the kink at
    6,912 tokens, where the slope rises tenfold; S^2's mass, 2 sigma^2 higher in the
    log, reaches past it, so E[c t^2] taken on the first segment alone was 3.3e-4 low."""
    lane = 8192.0
    kink = kink_share * lane
    t0 = 0.02
    t_kink = t0 + slopes[0] * kink
    t_lane = t_kink + slopes[1] * (lane - kink)
    curve = LoadCurve.through([0.0, kink, lane], [t0, t_kink, t_lane])
    mean = mean_share * lane
    count, count_s, count_s2, mixed = curve.sums([(1.0, 1.0)], mean, scv)

    sigma = math.sqrt(math.log1p(scv))
    z = np.linspace(-12.0, 12.0, 20_001)
    weights = np.exp(-z * z / 2)
    weights /= np.trapezoid(weights, z)
    tokens = np.exp(math.log(mean) - sigma * sigma / 2 + sigma * z)
    c = np.maximum(1.0, tokens / lane)
    t = np.interp(np.minimum(tokens, lane), [0.0, kink, lane], [t0, t_kink, t_lane])
    assert count == pytest.approx(np.trapezoid(weights * c, z), rel=2e-4)
    assert count_s == pytest.approx(np.trapezoid(weights * c * t, z), rel=2e-4)
    assert count_s2 == pytest.approx(np.trapezoid(weights * c * t * t, z), rel=2e-4)
    assert mixed == count  # every iteration of a count above 0 carries prompt tokens


def test_an_affine_step_gives_the_compound_poissons_moments_by_hand():
    """t = t_0 + c S, S the tokens of K ~ Poisson(mu) prompts of lognormal lengths (mean
    P, cv^2): a compound Poisson sum, mean t_0 + mu c P and variance mu c^2 E[L^2] =
    mu (c P)^2 (1 + cv^2). B = 20 and O = 10 give mu = 2; P = 1,000, cv^2 = 0.5,
    c = 10 us, t_0 = 20 ms: mean 20 + 2 x 10 = 40 ms, variance 2 x (10 ms)^2 x 1.5 =
    3e-4 s^2 (the lognormal of k prompts' total keeps their mean and variance)."""
    model = BatchModel(_AffineSteps(0.020, 1e-5), _mix(0.5), Role.UNIFIED, 0.0, 0.0)
    mixture = model.mixture(20.0)
    assert mixture.mean_s == pytest.approx(0.040, rel=1e-9)
    assert mixture.variance_s2 == pytest.approx(3e-4, rel=1e-6)


def test_spread_prompts_past_the_roofline_kink_by_the_call_price():
    """t(q) = max(t_0, c q) = t_0 + c (q - k*)^+ with k* = t_0 / c, so over k prompts'
    lognormal tokens S (mean m = k P, log sd s^2 = ln(1 + cv^2 / k)) the mean iteration
    is t_0 + c E[(S - k*)^+], the call price m Phi(d1) - k* Phi(d2), d1 = (ln(m / k*) +
    s^2 / 2) / s, d2 = d1 - s. One prompt per iteration on average (B = O = 10, K ~
    Poisson(1)) of 1,000 tokens at c = 20 us: k* = 20 ms / 20 us = 1,000 tokens, a
    typical prompt. Fixed lengths give 20 E[max(1, K)] = 20 (1 + e^-1) = 27.36 ms;
    cv^2 = 0.6 the sum over k of Poisson(k; 1) x the call-price form, which is more
    (Jensen: the planner's mean length was the optimistic side)."""
    t0, c, prompt, scv = 0.020, 2e-5, 1000.0, 0.6
    kink = t0 / c

    def mean_s(prompt_scv: float) -> float:
        return BatchModel(_KinkedSteps(t0, c), _mix(prompt_scv), Role.UNIFIED, 0.0, 0.0).step_s(
            10.0
        )

    expected = math.exp(-1.0) * t0  # k = 0: the weight read alone
    for k in range(1, 40):
        s = math.sqrt(math.log1p(scv / k))
        m = k * prompt
        d1 = (math.log(m / kink) + s * s / 2) / s
        call = m * _phi(d1) - kink * _phi(d1 - s)
        expected += math.exp(-1.0) / math.factorial(k) * (t0 + c * call)
    assert mean_s(0.0) == pytest.approx(t0 * (1 + math.exp(-1)), rel=1e-9)
    assert mean_s(scv) == pytest.approx(expected, rel=1e-6)
    assert expected > mean_s(0.0) * 1.01


def test_a_dense_iteration_is_linear_between_its_kink_where_compute_meets_the_read():
    """Llama 3.1 8B BF16 on one H100 at B = 32: `prompt_kinks` names the prompt load at
    which the linear kernels' compute (prompt tokens' FLOPs plus the decode tokens')
    reaches the weight read; there the two roofline terms are equal, and the iteration
    is linear on either side (its midpoints are the chords')."""
    gpu, llm = gpu_catalog()["h100-sxm"], llm_catalog()["llama-3.1-8b"]
    bf16 = Precision.BF16
    steps = step_model(gpu, llm, bf16, bf16, 1, 1, efficiency_for(gpu, bf16))
    batch, context, prompt_context = 32.0, 1000.0, 500.0
    (kink,) = steps.prompt_kinks(batch)
    parts = steps.iteration_parts(batch, context, kink, prompt_context)
    assert parts.linear_compute_s == pytest.approx(parts.weight_read_s, rel=1e-9)

    def t(load: float) -> float:
        return steps.iteration_s(batch, context, load, prompt_context)

    assert t(kink / 2) == pytest.approx((t(0.0) + t(kink)) / 2, rel=1e-12)
    assert t(1.5 * kink) == pytest.approx((t(kink) + t(2 * kink)) / 2, rel=1e-12)
    assert t(2 * kink) - t(kink) > t(kink) - t(0.0)  # convex: steeper past the kink
