"""The distribution of one iteration's time at a mean batch (`IterationMixture`; the
model is stated in the `models.serving.batch_model` docstring, "Chunked-prefill
interference"): the Poisson law of the prompts that join an iteration (`poisson_points`)
and the tables of mixtures by batch shared by every `BatchModel` of a decode side
(`shared_mixtures`)."""

import math
from dataclasses import dataclass

from models.physics.speculative import SpeculativeSteps
from models.physics.step_time import StepModel
from models.serving.replica import MixTokens


@dataclass(frozen=True)
class IterationMixture:
    """The distribution of one iteration's time at a mean batch (`models.serving.batch_model`
    docstring)."""

    mean_s: float
    """E[t]: the mean iteration, t(B)."""
    second_moment_s2: float
    """E[t^2], prompt-length spread included."""
    mixed_share: float
    """Share of iterations that carry prompt tokens."""
    decode_only_s: float
    """t_0: an iteration with no prompt tokens."""

    @property
    def variance_s2(self) -> float:
        """Var[t] = E[t^2] - E[t]^2 (never below 0)."""
        return max(self.second_moment_s2 - self.mean_s**2, 0.0)

    @property
    def prefill_share(self) -> float:
        """rho = 1 - t_0 / t(B): the share of the iteration time spent on prompts (0 for a
        decode replica; clipped to [0, `PREFILL_SHARE_CAP`])."""
        if not self.mean_s > 0 or math.isinf(self.mean_s):
            return 0.0
        return min(max(1.0 - self.decode_only_s / self.mean_s, 0.0), PREFILL_SHARE_CAP)


_HERMITE_NODES = (
    -4.512745863399783,
    -3.20542900285647,
    -2.07684797867783,
    -1.0232556637891326,
    0.0,
    1.0232556637891326,
    2.07684797867783,
    3.20542900285647,
    4.512745863399783,
)
"""Nodes of the 9-point Gauss-Hermite rule of the standard normal law (the roots of the
probabilists' Hermite polynomial He_9): `numpy.polynomial.hermite_e.hermegauss(9)`
written out, so that the physics does not import numpy (issue 19);
tests/models/serving/test_hermite_constants.py checks them against numpy's to the bit."""
_HERMITE_WEIGHTS = (
    2.2345844007746607e-05,
    0.0027891413212317692,
    0.04991640676521782,
    0.24409750289493953,
    0.40634920634920635,
    0.24409750289493953,
    0.04991640676521782,
    0.0027891413212317692,
    2.2345844007746607e-05,
)
"""Their weights, normalised to sum to 1 (hermegauss's weights over their sum)."""
_HERMITE_POINTS = tuple(zip(_HERMITE_NODES, _HERMITE_WEIGHTS, strict=True))
"""The rule's (node, weight) pairs."""
PREFILL_SHARE_CAP = 0.9
"""Largest prefill share rho of the iteration time the busy-period stretch
1 / (1 - rho)^2 of a reply's variance is taken at (`BatchModel.tpot_p99_s`): beyond it
the token budget, not the stretch, is what stops the batch."""
POISSON_TAIL = 1e-12
"""Poisson mass left out of `poisson_points` (its weights are renormalised). Small enough
that a term joining the sum as the mean grows moves the mixture by ~1e-12, not by a step
a numerical derivative would amplify (at 1e-5, `BatchModel.batch_high`'s derivative over
a 1e-3 B step turned such a step into a 13-15% spike of the p99 TPOT a few tenths of a
sequence wide, which made the SLO's edge depend on where a search landed)."""
POISSON_EXACT_MEAN = 8.0
"""Up to this mean the Poisson law is summed term by term; from `POISSON_NORMAL_MEAN` on,
a normal law of the same mean and variance at 9 Gauss-Hermite points; in between, the
two laws mixed with a weight moving linearly from the first to the second, so that the
iteration mixture is continuous in the batch (a switch at one mean moved the step time
by up to 0.6% at once and the p99 TPOT's derivative term by 3%)."""
POISSON_NORMAL_MEAN = 16.0
"""The mean from which `poisson_points` is the normal law alone."""


def poisson_points(mean: float) -> list[tuple[float, float]]:
    """(value, probability) points of a Poisson law of mean `mean`: its terms from 0 up
    to where the mass left is below `POISSON_TAIL` (the weights are renormalised) for
    mean <= `POISSON_EXACT_MEAN`; a 9-point Gauss-Hermite rule of the normal N(mean,
    mean), values clipped at 0, from `POISSON_NORMAL_MEAN`; in between, both sets of
    points, the normal's weighted w = (mean - 8) / (16 - 8) and the terms' 1 - w."""
    if mean <= POISSON_EXACT_MEAN:
        return _poisson_terms(mean)
    root = math.sqrt(mean)
    normal = [(max(mean + root * node, 0.0), weight) for node, weight in _HERMITE_POINTS]
    if mean >= POISSON_NORMAL_MEAN:
        return normal
    w = (mean - POISSON_EXACT_MEAN) / (POISSON_NORMAL_MEAN - POISSON_EXACT_MEAN)
    return [(v, (1 - w) * p) for v, p in _poisson_terms(mean)] + [(v, w * p) for v, p in normal]


def _poisson_terms(mean: float) -> list[tuple[float, float]]:
    """The Poisson law's terms from 0 until the mass left is below `POISSON_TAIL`."""
    term, total, points, k = math.exp(-mean), 0.0, [], 0
    while k <= mean or total < 1 - POISSON_TAIL:
        points.append((float(k), term))
        total += term
        k += 1
        term *= mean / k
    return [(value, weight / total) for value, weight in points]


MIXTURES_KEPT_PER_SIDE = 128
"""Iteration mixtures kept per decode side (`shared_mixtures`) before its table starts
again: a capacity search evaluates ~35 batches."""
MIXTURE_SIDES_KEPT = 1024
"""Decode sides whose mixtures are kept (`shared_mixtures`) before all start again."""
_MIXTURES: dict[tuple, dict[float, IterationMixture]] = {}


def shared_mixtures(
    steps: StepModel | SpeculativeSteps, mix: MixTokens, prefill: bool
) -> dict[float, IterationMixture]:
    """The table of iteration mixtures by batch (`BatchModel.mixture`) of a decode side:
    one table per (step model, mix in tokens, prefill or not), shared by every
    `BatchModel` of that side, since the mixture at B depends on nothing else (not on the
    pool size, the transfer times or the targets). The capacity searches of one
    configuration at several pool sizes and TTFT targets (`solver.candidates.pools`) evaluate many
    of the same batches. A speculation cycle's model gets a table of its own (a
    `SpeculativeSteps` is not hashable)."""
    if not isinstance(steps, StepModel):
        return {}
    key = (steps, mix, prefill)
    table = _MIXTURES.get(key)
    if table is None:
        if len(_MIXTURES) >= MIXTURE_SIDES_KEPT:
            _MIXTURES.clear()
        table = _MIXTURES[key] = {}
    return table
