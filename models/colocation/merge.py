"""Same model, several workloads: one pool spec that serves them all.

Workloads of the same model (a chat tenant and an API tenant, say) may share one pool.
The pool then meets the strictest SLO among them (the smallest p99 TTFT and TPOT targets,
the highest availability) for the combined traffic, whose token mix is the rate-weighted
mixture of theirs (weights w_i = lambda_i / sum lambda):
    mean         P = sum w_i P_i
    spread       cv^2 = (sum w_i P_i^2 (1 + cv_i^2)) / P^2 - 1     (mixture variance)
    p99          the x with sum w_i Pr(P_i > x) = 1%, each member lognormal with its mean
                 and cv (fixed length when cv = 0), as `TokenDistribution` reads {mean, p99}
    prefix hits  h = sum w_i P_i h_i / P                          (token-weighted)
for prompts and outputs alike. A pool sized this way meets every member's SLO: its p99
latencies are within the strictest targets for the whole mixture.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from models.serving.edge_search import bisect_edge
from models.serving.replica import LatencyTargets, TrafficMix

_BISECTION_STEPS = 100


@dataclass(frozen=True)
class WorkloadLoad:
    """One workload to merge: its name, model, mix, SLO and planned requests/s."""

    name: str
    model: str
    mix: TrafficMix
    targets: LatencyTargets
    requests_per_s: float


@dataclass(frozen=True)
class MergedPool:
    """The pool spec of several workloads of one model."""

    model: str
    workloads: tuple[str, ...]
    mix: TrafficMix
    targets: LatencyTargets
    requests_per_s: float
    """The combined rate, sum lambda_i."""
    strictest_ttft: str | None
    """The workload whose TTFT target the pool keeps (None without TTFT targets)."""
    strictest_tpot: str | None


def _lognormal_exceedance(x: float, mean: float, cv: float) -> float:
    """Pr(X > x) for a lognormal with this mean and cv (a point mass at the mean if cv=0)."""
    if cv <= 0:
        return 1.0 if x < mean else 0.0
    sigma2 = math.log1p(cv * cv)
    mu = math.log(mean) - sigma2 / 2
    if x <= 0:
        return 1.0
    return 0.5 * math.erfc((math.log(x) - mu) / math.sqrt(2 * sigma2))


def mixture_quantile(
    weights: Sequence[float],
    means: Sequence[float],
    cvs: Sequence[float],
    p99s: Sequence[float],
    quantile: float = 0.99,
) -> float:
    """The `quantile` of a mixture of lognormals (weights summing to 1): the x with
    sum w_i Pr(X_i > x) = 1 - quantile, by bisection between the smallest mean and the
    largest p99 (the mixture's p99 never exceeds its members' largest p99)."""
    tail = 1 - quantile

    def exceed(x: float) -> float:
        return sum(
            w * _lognormal_exceedance(x, m, cv)
            for w, m, cv in zip(weights, means, cvs, strict=True)
        )

    _, high = bisect_edge(lambda x: exceed(x) > tail, 0.0, max(p99s), _BISECTION_STEPS)
    return high


def _mixed(
    weights: Sequence[float], means: Sequence[float], cvs: Sequence[float]
) -> tuple[float, float]:
    """(mean, cv) of the mixture."""
    mean = sum(w * m for w, m in zip(weights, means, strict=True))
    second = sum(w * m * m * (1 + cv * cv) for w, m, cv in zip(weights, means, cvs, strict=True))
    return mean, math.sqrt(max(second / (mean * mean) - 1, 0.0))


def merge_workloads(workloads: Sequence[WorkloadLoad]) -> MergedPool:
    """One pool spec for workloads of the same model: the strictest SLO, the combined
    rate and the rate-weighted token mix (see the module docstring).

    Raises:
        ValueError: no workloads, different models, or no traffic at all.
    """
    if not workloads:
        raise ValueError("merge at least one workload")
    models = {w.model for w in workloads}
    if len(models) > 1:
        raise ValueError(f"only workloads of one model share a pool, got {sorted(models)}")
    total = sum(w.requests_per_s for w in workloads)
    if total <= 0:
        raise ValueError("the workloads to merge carry no traffic")
    weights = [w.requests_per_s / total for w in workloads]
    mixes = [w.mix for w in workloads]
    prompt, prompt_cv = _mixed(
        weights, [m.prompt_mean_tokens for m in mixes], [m.prompt_cv for m in mixes]
    )
    output, output_cv = _mixed(
        weights, [m.output_mean_tokens for m in mixes], [m.output_cv for m in mixes]
    )
    prompt_p99 = mixture_quantile(
        weights,
        [m.prompt_mean_tokens for m in mixes],
        [m.prompt_cv for m in mixes],
        [m.prompt_p99_tokens for m in mixes],
    )
    output_p99 = mixture_quantile(
        weights,
        [m.output_mean_tokens for m in mixes],
        [m.output_cv for m in mixes],
        [m.output_p99_tokens for m in mixes],
    )
    hit = (
        sum(
            w * m.prompt_mean_tokens * m.prefix_cache_hit_rate
            for w, m in zip(weights, mixes, strict=True)
        )
        / prompt
    )
    mix = TrafficMix(
        prompt_mean_tokens=prompt,
        prompt_p99_tokens=max(prompt_p99, prompt),
        prompt_cv=prompt_cv,
        output_mean_tokens=output,
        output_p99_tokens=max(output_p99, output),
        output_cv=output_cv,
        prefix_cache_hit_rate=hit,
    )
    ttft = _strictest(workloads, lambda w: w.targets.ttft_p99_s)
    tpot = _strictest(workloads, lambda w: w.targets.tpot_p99_s)
    return MergedPool(
        model=next(iter(models)),
        workloads=tuple(w.name for w in workloads),
        mix=mix,
        targets=LatencyTargets(
            ttft_p99_s=ttft.targets.ttft_p99_s if ttft else None,
            tpot_p99_s=tpot.targets.tpot_p99_s if tpot else None,
        ),
        requests_per_s=total,
        strictest_ttft=ttft.name if ttft else None,
        strictest_tpot=tpot.name if tpot else None,
    )


def _strictest(
    workloads: Sequence[WorkloadLoad], target: Callable[[WorkloadLoad], float | None]
) -> WorkloadLoad | None:
    """The workload with the smallest target (None when none has one)."""
    having = [w for w in workloads if target(w) is not None]
    return min(having, key=lambda w: target(w) or 0.0) if having else None
