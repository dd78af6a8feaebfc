"""The distribution of one iteration's time at a mean batch (`IterationMixture`; the
model is stated in the `models.serving.batch_model` docstring, "Chunked-prefill
interference"): the Poisson law of the prompts that join an iteration (`poisson_points`),
the iteration time over the tokens they bring (`LoadCurve`, below) and the mixtures kept
by batch for every `BatchModel` of a decode side (`mixture_side`, `kept_mixture`).

The iteration time over spread prompt lengths, in closed form (`LoadCurve`).

An iteration's time is a function of the prompt tokens riding in it, t(S), and the
iteration mixture (`models.serving.batch_model` docstring) needs its moments over the
tokens S of the k prompts that join an iteration: their total is taken as a lognormal of
mean k P (1-h) and squared cv cv_p^2 / k (Fenton-Wilkinson's moment match of a sum of
lognormal lengths). t(S) is the larger of each kernel's weight read and its compute, so
it is piecewise linear in S (exactly so for a dense model; an MoE's expert reads and load
imbalance bend it slowly between its kinks), convex at each kink, and where a kink lies
among the prompts the mean iteration is longer than the mean length's (Jensen).

`LoadCurve` holds t at a few loads (knots) with t linear between them, and takes the
expectations of t and t^2 over the lognormal exactly, from its partial moments
    E[S^n; S <= x] = E[S^n] Phi((ln x - mu) / sigma - n sigma),   n = 0, 1, 2
(one erfc a knot and moment, and none at knots further than `PHI_SPAN` sigmas from
mu): on a segment t = a + b S, E[t; seg] = a dM_0 + b dM_1 and
E[t^2; seg] = a^2 dM_0 + 2 a b dM_1 + b^2 dM_2. Past the lane of L tokens the prompts
run as S / L full-lane iterations of t(L) each, so an iteration count c = max(1, S / L),
E[c] = M_0(L) + (E[S] - M_1(L)) / L, and the mixture's sums weight t and t^2 by c.

Where t is piecewise linear in S (a dense model, `StepModel.prompt_kinks`) the knots
are 0, its kink and L, and the moments are exact. Elsewhere (an MoE, a speculation
cycle) `load_curve` places them: a geometric grid over the loads the prompts bring, then
at each bend the grid shows (the slope changes by more than `BEND` across a cell) the
point where the lines of the cells either side meet, the kink itself for a
piecewise-linear t; then the knots t is linear through are dropped (`COLLINEAR`). A
count whose tokens lie on one segment (within `PHI_SPAN` sigmas) needs no erfc:
E[t] = a + b E[S], E[t^2] = E[t]^2 + b^2 Var[S]. Pricing each count's tokens at 9
Gauss-Hermite points instead would time the whole step 9 times per count.
"""

import itertools
import math
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable
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
"""Largest prefill share rho of the iteration time a reply's life is taken at
(`models.serving.tail.reply_life`, through `BatchModel.tpot_p99_s`): beyond it the token
budget, not the busy period, is what stops the batch."""
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


def lognormal_points(mean: float, scv: float) -> list[tuple[float, float]]:
    """(value, probability) points of a lognormal law of mean `mean` and squared cv `scv`
    at the 9 Gauss-Hermite nodes in its log (the mean alone where `scv` is 0)."""
    if scv <= 0:
        return [(mean, 1.0)]
    sigma = math.sqrt(math.log1p(scv))
    log_mean = math.log(mean) - sigma * sigma / 2
    return [(math.exp(log_mean + sigma * node), weight) for node, weight in _HERMITE_POINTS]


def _poisson_terms(mean: float) -> list[tuple[float, float]]:
    """The Poisson law's terms from 0 until the mass left is below `POISSON_TAIL`."""
    term, total, terms, k = math.exp(-mean), 0.0, [], 0
    mass = 1 - POISSON_TAIL
    while k <= mean or total < mass:
        terms.append(term)
        total += term
        k += 1
        term *= mean / k
    return [(float(k), weight / total) for k, weight in enumerate(terms)]


MIXTURES_KEPT = 65536
"""Iteration mixtures kept (`kept_mixture`), over every decode side, the least recently
used dropped first (~340 bytes each: 22 MB). A capacity search evaluates ~35 batches,
and co-location's coupled batch searches (`models.colocation.interference`) bisect from
the same bracket every round, so their first steps come back: zipf-20-models computed
587k mixtures with 128 kept per side (a full table started again), 350k with these (338k
distinct); the physics, candidate and serving tests 294k, 166k (a trace replayed)."""
MIXTURE_SIDES_KEPT = 1024
"""Decode sides numbered (`mixture_side`) before the numbering starts again (a side met
again then gets a new number; its old mixtures age out of the table)."""
_SIDES: dict[tuple, int] = {}
_NEXT_SIDE = itertools.count()
_MIXTURES: OrderedDict[tuple[int, float], IterationMixture] = OrderedDict()
"""(side, batch) -> mixture, least recently used first (an OrderedDict: a plain dict
reordered by pop and insert finds its first entry past every one deleted before it)."""
_MIXTURES_LOCK = threading.Lock()
"""Held while `_MIXTURES` is read or changed: the pricing and held-fleet threads
(`solver.solve`, `solver.time.step`) run the physics beside the main one."""


def mixture_side(steps: StepModel | SpeculativeSteps, mix: MixTokens, prefill: bool) -> int:
    """The number under which a decode side's iteration mixtures by batch
    (`BatchModel.mixture`) are kept: one per (step model, mix in tokens, prefill or
    not), shared by every `BatchModel` of that side, since the mixture at B depends on
    nothing else (not on the pool size, the transfer times or the targets). The capacity
    searches of one configuration at several pool sizes and TTFT targets
    (`solver.candidates.pools`) evaluate many of the same batches. A speculation cycle's
    model gets a number of its own (a `SpeculativeSteps` is not hashable)."""
    if not isinstance(steps, StepModel):
        return next(_NEXT_SIDE)
    key = (steps, mix, prefill)
    side = _SIDES.get(key)
    if side is None:
        if len(_SIDES) >= MIXTURE_SIDES_KEPT:
            _SIDES.clear()
        side = _SIDES[key] = next(_NEXT_SIDE)
    return side


def kept_mixture(side: int, batch: float) -> IterationMixture | None:
    """The mixture of decode side `side` at `batch` if it is kept (it becomes the most
    recently used), else None."""
    key = (side, batch)
    with _MIXTURES_LOCK:
        found = _MIXTURES.get(key)
        if found is not None:
            _MIXTURES.move_to_end(key)
    return found


def keep_mixture(side: int, batch: float, mixture: IterationMixture) -> None:
    """Keep `mixture` as decode side `side`'s at `batch`, dropping the least recently
    used past `MIXTURES_KEPT`."""
    with _MIXTURES_LOCK:
        if len(_MIXTURES) >= MIXTURES_KEPT:
            _MIXTURES.popitem(last=False)
        _MIXTURES[(side, batch)] = mixture


GRID_RATIO = 3.0
"""Ratio between neighbouring loads of `load_curve`'s grid (at most `GRID_LOADS` loads:
the ratio widens over a wider range)."""
GRID_RATIO_DP = math.sqrt(2.0)
"""The grid's ratio for a layout of several attention-DP groups, whose busiest group's
share of the prompt tokens bends the iteration at each multiple of a prompt's length
(`models.physics.step_passes.StepModel.prefill_group_share`): kinks a cell or two apart,
which a grid of ratio 2 merges (p99 TPOT 5% off at DEP8)."""
GRID_LOADS = 16
"""Most loads on `load_curve`'s grid."""
LOW_SIGMAS = 4.0
"""The grid starts this many sigmas below the log-mean of the fewest prompts' tokens."""
BEND = 0.1
"""Relative change of slope across a cell from which `load_curve` looks for a kink in it."""
COLLINEAR = 1e-4
"""Relative distance from the chord of its neighbours under which a knot is dropped."""
PHI_SPAN = 4.0
"""Sigmas from the log-mean beyond which Phi is taken as 0 or 1 (Phi(-4) ~ 3e-5)."""
RARE_COUNT = 1e-3
"""Probability under which a count of prompts is priced on the segment of its mean
tokens, its spread across a kink left out (`LoadCurve.sums`): a count this rare moves
the mixture's moments by ~1e-4 of themselves through it."""
_SQRT_HALF = math.sqrt(0.5)


@dataclass(frozen=True)
class LoadCurve:
    """An iteration's time t(S) in the prompt tokens S riding in it, linear between
    `loads` (the first 0, the last the lane L), and the iterations S tokens take.
    Build it with `load_curve` (or `LoadCurve.through`)."""

    loads: tuple[float, ...]
    times_s: tuple[float, ...]
    log_loads: tuple[float, ...]
    """ln of each load past the first (the segments' right ends)."""
    levels_s: tuple[float, ...]
    """a of each segment's t = a + b S."""
    slopes_s: tuple[float, ...]
    """b of each segment's t = a + b S, seconds per token."""

    @classmethod
    def through(cls, loads: list[float], times_s: list[float]) -> "LoadCurve":
        """The curve linear between (loads[i], times_s[i]), loads rising from 0."""
        slopes = [
            (t1 - t0) / (x1 - x0)
            for x0, x1, t0, t1 in zip(loads, loads[1:], times_s, times_s[1:], strict=False)
        ]
        levels = [t0 - b * x0 for x0, t0, b in zip(loads, times_s, slopes, strict=False)]
        logs = tuple(math.log(x) for x in loads[1:])
        return cls(tuple(loads), tuple(times_s), logs, tuple(levels), tuple(slopes))

    def sums(
        self, points: list[tuple[float, float]], prompt_tokens: float, prompt_scv: float
    ) -> tuple[float, float, float, float]:
        """The iteration mixture's sums over `points`, (count of prompts k, probability w)
        pairs, k prompts of `prompt_tokens` tokens each on average with squared cv
        `prompt_scv` bringing S tokens, lognormal of mean k P and squared cv cv^2 / k:
        (sum w E[c], sum w E[c t], sum w E[c t^2], sum over k > 0 of w E[c]), c the
        iterations S takes (module docstring). A count rarer than `RARE_COUNT` is priced
        at its mean tokens; one whose tokens lie on one segment (within `PHI_SPAN`
        sigmas) as t = a + b S, E[t^2] = (a + b E[S])^2 + b^2 Var[S]; the others from
        the partial moments (`_spread`)."""
        loads, times, log_loads = self.loads, self.times_s, self.log_loads
        levels, slopes = self.levels_s, self.slopes_s
        lane, lane_s, log_lane = loads[-1], times[-1], log_loads[-1]
        iterations = time_s = square_s = mixed = 0.0
        for prompts, weight in points:
            if prompts <= 0:
                iterations += weight
                time_s += weight * times[0]
                square_s += weight * times[0] * times[0]
                continue
            mean = prompts * prompt_tokens
            scv = prompt_scv / prompts
            if weight < RARE_COUNT:  # on its mean's segment, or past the lane: no logs
                # (its mass's lower end, ln mean - sigma^2 / 2 - 4 sigma, lies past ln L
                # only where its mean does)
                j = -1 if mean >= lane else bisect_right(loads, mean) - 1
                sigma = log_mean = 0.0
            else:
                sigma = math.sqrt(math.log1p(scv))
                log_mean = math.log(mean) - sigma * sigma / 2
                lowest = log_mean - PHI_SPAN * sigma
                # past the lane, or the segment of the lowest mass
                j = -1 if lowest > log_lane else bisect_right(log_loads, lowest)
            if j < 0:
                count = mean / lane  # past the lane: S / L full-lane iterations
                count_s, count_s2 = count * lane_s, count * lane_s * lane_s
            elif weight < RARE_COUNT or log_loads[j] > log_mean + (PHI_SPAN + 2 * sigma) * sigma:
                # rare, or all of it on one segment: t = a + b S on its mean's (the
                # segment's end past PHI_SPAN sigmas of S^2's mass too, whose log-mean
                # lies 2 sigma^2 above S's: E[t^2] weighs the tail by S^2, as `_spread`)
                level, slope = levels[j], slopes[j]
                count = 1.0
                count_s = level + slope * mean
                count_s2 = count_s * count_s + slope * slope * mean * mean * scv
            else:
                count, count_s, count_s2 = self._spread(j, mean, scv, sigma, log_mean)
            iterations += weight * count
            time_s += weight * count_s
            square_s += weight * count_s2
            mixed += weight * count
        return iterations, time_s, square_s, mixed

    def _spread(
        self, first_segment: int, mean: float, scv: float, sigma: float, log_mean: float
    ) -> tuple[float, float, float]:
        """(E[c], E[c t], E[c t^2]) over S lognormal (mean `mean`, squared cv `scv`, log
        sd `sigma`, log mean `log_mean`), its mass from `first_segment` on, from the
        partial moments at the knots (module docstring)."""
        highest = log_mean + (PHI_SPAN + 2 * sigma) * sigma
        first, second = mean, mean * mean * (1.0 + scv)  # E[S], E[S^2]
        below0 = below1 = below2 = 0.0  # M_n at the segment's left end
        time_s = square_s = 0.0
        j = first_segment
        for log_load, level, slope in zip(
            self.log_loads[j:], self.levels_s[j:], self.slopes_s[j:], strict=True
        ):
            full = log_load > highest
            if full:
                at0, at1, at2 = 1.0, first, second
            else:
                z = (log_load - log_mean) / sigma
                at0 = 0.5 * math.erfc(-z * _SQRT_HALF)
                at1 = first * 0.5 * math.erfc((sigma - z) * _SQRT_HALF)
                at2 = second * 0.5 * math.erfc((2 * sigma - z) * _SQRT_HALF)
            d0, d1 = at0 - below0, at1 - below1
            time_s += level * d0 + slope * d1
            square_s += level * level * d0 + slope * (2 * level * d1 + slope * (at2 - below2))
            below0, below1, below2 = at0, at1, at2
            if full:
                break
        lane, lane_s = self.loads[-1], self.times_s[-1]
        past = max(first - below1, 0.0) / lane  # full-lane iterations past L: E[S; S > L] / L
        return below0 + past, time_s + past * lane_s, square_s + past * lane_s * lane_s


def load_curve(
    times_at: Callable[[list[float]], list[float]],
    low_tokens: float,
    lane_tokens: float,
    grid_ratio: float = GRID_RATIO,
) -> LoadCurve:
    """The `LoadCurve` of `times_at` (iteration times at a list of prompt loads, the
    decode-only iteration at load 0) up to the lane of `lane_tokens`, for prompts that
    bring at least ~`low_tokens` tokens (module docstring)."""
    lane = lane_tokens
    low = min(max(low_tokens, lane * 1e-6), lane / grid_ratio)
    cells = max(math.ceil(math.log(lane / low) / math.log(grid_ratio)), 1)
    cells = min(cells, GRID_LOADS)
    ratio = (lane / low) ** (1.0 / cells)
    # the grid, and one load past the lane so that its last cell has a neighbour
    grid = [0.0] + [low * ratio**j for j in range(cells)] + [lane, lane * ratio]
    times = times_at(grid)
    kinks = [kink for c in range(1, cells + 1) if (kink := _kink(grid, times, c)) is not None]
    pairs = sorted([*zip(grid[:-1], times[:-1], strict=True), *kinks])
    return _without_collinear([x for x, _ in pairs], [t for _, t in pairs])


def _kink(loads: list[float], times: list[float], c: int) -> tuple[float, float] | None:
    """Where the lines of the cells either side of the cell [x_c, x_c+1] meet, (load,
    time), if the slope changes by more than `BEND` across it and they meet inside it:
    the kink of a piecewise-linear t, the neighbours' tangents' meeting of a bent one."""
    left = (times[c] - times[c - 1]) / (loads[c] - loads[c - 1])
    right = (times[c + 2] - times[c + 1]) / (loads[c + 2] - loads[c + 1])
    if abs(right - left) <= BEND * max(abs(left), abs(right)):
        return None
    # t_c + left (x - x_c) = t_c+1 + right (x - x_c+1)
    x = (times[c + 1] - times[c] + left * loads[c] - right * loads[c + 1]) / (left - right)
    if not loads[c] < x < loads[c + 1]:
        return None
    return x, times[c] + left * (x - loads[c])


def _without_collinear(loads: list[float], times: list[float]) -> LoadCurve:
    """The curve through `loads` less the interior knots within `COLLINEAR` of the chord
    between the knots kept either side (the ends always kept)."""
    kept_x, kept_t = [loads[0]], [times[0]]
    for i in range(1, len(loads) - 1):
        x0, t0 = kept_x[-1], kept_t[-1]
        x1, t1 = loads[i + 1], times[i + 1]
        chord = t0 + (t1 - t0) * (loads[i] - x0) / (x1 - x0)
        if abs(times[i] - chord) > COLLINEAR * abs(times[i]):
            kept_x.append(loads[i])
            kept_t.append(times[i])
    kept_x.append(loads[-1])
    kept_t.append(times[-1])
    return LoadCurve.through(kept_x, kept_t)
