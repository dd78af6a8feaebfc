"""The utilisation ceiling that a prefill time and a p99 TTFT target imply.

The prefill queue of a replica is taken as an M/G/c queue: Poisson arrivals, one prompt
prefilled at a time per server, `servers` replicas behind one queue. Its service time
is the prefill time, whose spread follows the prompt-length spread (lognormal, as
`models.schema.traffic` takes token lengths). The ceiling is the highest utilisation at which
the p99 time to first token stays within the target, from `models.serving.queueing`:

    p99 TTFT ~ S + sqrt(W99^2 + (S99 - S)^2)    (spreads above the mean in quadrature,
                                                 as `models.serving.capacity` combines them)
    W99      = m ln(P / 0.01)  when P > 0.01    (else 0)
    P        = C(c, c rho)                      (Erlang C; rho itself for c = 1)
    m        = S (1 + cs^2) / (2 c (1 - rho))   (Allen-Cunneen conditional mean wait)

A wider prompt spread raises cs^2, and with it m, and raises S99, which takes its share
of the target first; so the same target allows less load.
"""

import math
from dataclasses import dataclass
from statistics import NormalDist

from models.serving.queueing import (
    conditional_mean_wait_s,
    erlang_c,
    max_utilization_for_time_in_system,
    time_in_system_wait_budget_s,
    wait_quantile_s,
)

DEFAULT_CV_SWEEP = (0.0, 0.5, 1.0, 1.25, 1.5, 1.75, 2.0)
DEFAULT_SERVER_SWEEP = (1, 2, 4, 8)


def service_scv_from_prompt_cv(prompt_cv: float) -> float:
    """Squared coefficient of variation of the prefill time: cs^2 = cv_prompt^2.

    Assumes prefill time proportional to prompt length. A fixed per-request overhead
    would lower the spread and the quadratic attention term raise it; at the prompt
    lengths of chat traffic the linear term dominates.
    """
    if prompt_cv < 0:
        raise ValueError(f"prompt_cv must be >= 0, got {prompt_cv}")
    return prompt_cv**2


def lognormal_quantile(mean: float, cv: float, quantile: float = 0.99) -> float:
    """Quantile of a lognormal with this mean and coefficient of variation:
    mean x exp(z sigma - sigma^2 / 2), sigma^2 = ln(1 + cv^2), z the standard normal
    quantile (2.326 at p99). cv = 0 gives the mean itself."""
    sigma = math.sqrt(math.log1p(cv**2))
    z = NormalDist().inv_cdf(quantile)
    return mean * math.exp(z * sigma - sigma**2 / 2)


@dataclass(frozen=True)
class Ceiling:
    """The ceiling at one prompt spread and pool size."""

    prompt_cv: float
    service_scv: float
    servers: int
    service_p99_s: float
    """p99 of the prefill time alone."""
    utilization: float
    """Highest utilisation meeting the p99 target (0.0 when none does)."""
    requests_per_s: float
    """Arrival rate at the ceiling for the whole pool: rho x c / S."""

    @property
    def requests_per_s_per_server(self) -> float:
        """Arrival rate at the ceiling per server: rho / S."""
        return self.requests_per_s / self.servers


@dataclass(frozen=True)
class HeadroomDerivation:
    """Every step from a prefill time and a p99 TTFT target to a utilisation ceiling."""

    prefill_s: float
    """Mean prefill time of a prompt: the service time S."""
    ttft_p99_s: float
    prompt_cv: float
    service_scv: float
    """cs^2 of the service time (`service_scv_from_prompt_cv`)."""
    servers: int
    quantile: float
    service_p99_s: float
    """`quantile` of the prefill time alone (lognormal with this cv): the p99 TTFT with
    no queue."""
    wait_budget_s: float
    """What the target leaves for the p99 wait: sqrt((T - S)^2 - (S99 - S)^2); negative
    (T - S99) when the prefill alone misses the target."""
    utilization: float
    """The ceiling: highest rho with p99 wait within the budget."""
    requests_per_s: float
    """Pool arrival rate at the ceiling: rho x c / S."""
    p_wait: float
    """Chance an arrival waits at the ceiling: Erlang C(c, c rho)."""
    conditional_wait_s: float
    """Mean wait of an arrival that waits, at the ceiling."""
    wait_p99_s: float
    """p99 wait at the ceiling (equals the budget, up to the bisection tolerance)."""
    by_cv: tuple[Ceiling, ...]
    """The ceiling as the prompt spread widens, at `servers`."""
    by_servers: tuple[Ceiling, ...]
    """The ceiling as more replicas share one queue, at `prompt_cv`."""

    @property
    def requests_per_s_per_server(self) -> float:
        """Arrival rate at the ceiling per server: rho / S."""
        return self.requests_per_s / self.servers

    @property
    def feasible(self) -> bool:
        """Some load meets the target: the prefill leaves a wait budget and a ceiling."""
        return self.wait_budget_s >= 0 and self.utilization > 0


def ceiling(
    prefill_s: float,
    ttft_p99_s: float,
    prompt_cv: float,
    servers: int = 1,
    quantile: float = 0.99,
) -> Ceiling:
    """The utilisation ceiling and pool rate at one spread and pool size."""
    scv = service_scv_from_prompt_cv(prompt_cv)
    tail_s = lognormal_quantile(prefill_s, prompt_cv, quantile)
    rho = max_utilization_for_time_in_system(
        prefill_s, scv, ttft_p99_s, servers, quantile, service_quantile_s=tail_s
    )
    return Ceiling(prompt_cv, scv, servers, tail_s, rho, rho * servers / prefill_s)


def derive_headroom(
    prefill_s: float,
    ttft_p99_s: float,
    prompt_cv: float = 1.0,
    servers: int = 1,
    quantile: float = 0.99,
    cv_sweep: tuple[float, ...] = DEFAULT_CV_SWEEP,
    server_sweep: tuple[int, ...] = DEFAULT_SERVER_SWEEP,
) -> HeadroomDerivation:
    """The utilisation ceiling that `prefill_s` and `ttft_p99_s` imply, step by step.

    Args:
        prefill_s: mean prefill time of one prompt, seconds (the service time S).
        ttft_p99_s: the p99 time-to-first-token target, seconds.
        prompt_cv: coefficient of variation of prompt length (1.0: exponential-like).
        servers: replicas behind one queue (c).
        quantile: the target's quantile (0.99 for p99).
        cv_sweep: prompt spreads to tabulate (the given one is added).
        server_sweep: pool sizes to tabulate (the given one is added).

    Raises:
        ValueError: for a non-positive prefill time or target, a negative cv, or fewer
            than one server.
    """
    if prefill_s <= 0:
        raise ValueError(f"prefill_s must be > 0, got {prefill_s}")
    if ttft_p99_s <= 0:
        raise ValueError(f"ttft_p99_s must be > 0, got {ttft_p99_s}")
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    main = ceiling(prefill_s, ttft_p99_s, prompt_cv, servers, quantile)
    rho = main.utilization
    rate = main.requests_per_s
    if rho > 0:
        p_wait = erlang_c(servers, rate * prefill_s)
        conditional_wait_s = conditional_mean_wait_s(prefill_s, main.service_scv, servers, rho)
        wait_p99_s = wait_quantile_s(rate, prefill_s, main.service_scv, servers, quantile)
    else:
        p_wait = conditional_wait_s = wait_p99_s = 0.0
    cvs = tuple(sorted({*cv_sweep, prompt_cv}))
    pools = tuple(sorted({*server_sweep, servers}))
    return HeadroomDerivation(
        prefill_s=prefill_s,
        ttft_p99_s=ttft_p99_s,
        prompt_cv=prompt_cv,
        service_scv=main.service_scv,
        servers=servers,
        quantile=quantile,
        service_p99_s=main.service_p99_s,
        wait_budget_s=time_in_system_wait_budget_s(prefill_s, ttft_p99_s, main.service_p99_s),
        utilization=rho,
        requests_per_s=rate,
        p_wait=p_wait,
        conditional_wait_s=conditional_wait_s,
        wait_p99_s=wait_p99_s,
        by_cv=tuple(ceiling(prefill_s, ttft_p99_s, cv, servers, quantile) for cv in cvs),
        by_servers=tuple(ceiling(prefill_s, ttft_p99_s, prompt_cv, c, quantile) for c in pools),
    )
