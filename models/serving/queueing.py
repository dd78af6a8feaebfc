"""Queueing formulas for request arrivals in front of serving replicas.

Conventions: arrivals are Poisson at `rate` per second; `service_s` is the mean service
time; `service_scv` is the squared coefficient of variation of the service time
(variance / mean^2: 1 for exponential, 0 for deterministic); `servers` is the number of
identical servers behind ONE queue, served first come first served. Utilisation
rho = rate x service_s / servers. Every function returns math.inf for an unstable queue
(rho >= 1) instead of raising; nonsense inputs (negative rates or times, no servers,
a quantile outside (0, 1)) raise ValueError.

The formulas, from exact to approximate:

- Little's law L = lambda W: exact for any stable system.
- M/M/1 and M/M/c (Erlang C): exact.
- M/G/1 mean wait (Pollaczek-Khinchine): exact.
- M/G/c mean wait (Allen-Cunneen with Poisson arrivals): an approximation, exact for
  c = 1 and for exponential service.
- Wait quantiles: Erlang C for the chance to wait, times an exponential tail with the
  Allen-Cunneen conditional mean (see `wait_quantile_s`): exact for M/M/c.
- Time-in-system quantiles (e.g. p99 TTFT): the mean service plus the wait's and the
  service's own tails in quadrature (`combine_wait_and_service_quantile_s`).
- Utilisation ceilings: the inverse of those quantiles in rho, by bisection
  (`max_utilization_for_wait`, `max_utilization_for_time_in_system`).
- The pool effect: one queue before c servers against c separate queues at the same
  per-server load (`pool_comparison`).
"""

import math
import sys
from collections.abc import Iterable
from dataclasses import dataclass

from models.serving.edge_search import bisect_edge

SEED_MM1_UTILIZATIONS = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)
"""The utilisations of the usual M/M/1 latency table, 50% to 99%."""


def _check_queue(rate: float, service_s: float, servers: int) -> None:
    if rate < 0:
        raise ValueError(f"rate must be >= 0 requests/s, got {rate}")
    if service_s < 0:
        raise ValueError(f"service_s must be >= 0, got {service_s}")
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")


def _check_quantile(quantile: float) -> None:
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must be in (0, 1), got {quantile}")


def utilization(rate: float, service_s: float, servers: int = 1) -> float:
    """Offered load per server: rho = rate x service_s / servers."""
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    return rate * service_s / servers


def littles_law_in_system(rate: float, time_in_system_s: float) -> float:
    """Little's law: L = lambda x W, the mean number in the system.

    Holds for any stable system whatever the arrival and service distributions; it gives
    means only, so tails and bursts still need headroom.
    """
    return rate * time_in_system_s


def erlang_b(servers: int, offered_load: float) -> float:
    """Erlang B blocking probability of M/M/c/c: B(c, a) = (a^c / c!) / sum_{k<=c} a^k / k!,
    with a = rate x service_s (Erlangs).

    Up to RECURSION_UP_TO servers, by the recursion B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)),
    which never forms a^c / c!, so it is stable for any c; it takes c steps, which for the
    pools of a plan (tens to hundreds of replicas) is microseconds. Above, from the terms
    that can move the result (`_erlang_b_from_terms`): ~50 sqrt(a) steps instead of c.
    The two agree to 1e-12, not to the last bit, and a plan's program can tip to another
    layout of the same cost on such a difference (chat-3region does), so plans of pools
    within reach of the recursion keep its numbers.
    """
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    if offered_load < 0:
        raise ValueError(f"offered_load must be >= 0 Erlangs, got {offered_load}")
    if servers <= RECURSION_UP_TO:
        return _erlang_b_by_recursion(servers, offered_load)
    return _erlang_b_from_terms(servers, offered_load)


RECURSION_UP_TO = 4096
"""Pools up to this many servers take Erlang B's recursion (at most ~0.5 ms a call)."""


def _erlang_b_by_recursion(servers: int, offered_load: float) -> float:
    """B(servers) by the recursion from B(0) = 1."""
    blocking = 1.0
    for k in range(1, servers + 1):
        blocking = offered_load * blocking / (k + offered_load * blocking)
    return blocking


def _erlang_b_from_terms(servers: int, offered_load: float) -> float:
    """Erlang B from the terms that can move the result; with c = servers, a =
    offered_load and m = min(c, floor(a)):

    - 1 / B(m) = sum_{j=0..m} t_j, t_j = m! / ((m - j)! a^j): the sum's terms over its last,
      t_0 = 1, t_j = t_(j-1) (m - j + 1) / a. Each ratio r_j = (m - j + 1) / a is at most 1
      and falls with j, so once t_j r / (1 - r) (r = (m - j) / a: a bound on all the terms
      after t_j, a geometric series) is below 2^-60 of the sum, the rest cannot change it.
      The terms fall as exp(-j^2 / 2a) at m = a: about 9 sqrt(a) of them.
    - B(m + 1), ..., B(c) by the recursion (only where c > a). Past a each step multiplies
      B by a / (k + a B) < 1, so B falls, as exp(-(k - a)^2 / 2a); once it is below the
      smallest normal double (2^-1022, ~2.2e-308, about 38 sqrt(a) past a) the answer is
      0.0. The recursion all the way would go on in subnormals, which hold fewer digits,
      and end near 5e-324, the smallest of them (a x 5e-324 / k rounds back up to it):
      nothing a caller can tell from 0.

    So at most ~50 sqrt(a) steps whatever c, against c: a pool of 292,731 replicas at
    168,241 Erlangs (tests/cli/test_hostile_commands.py's quarter-million deploy) takes
    ~19,000. The recursion all the way agrees to 1e-12, or both are below 2.2e-308
    (tests/models/serving/test_queueing.py, on many (c, a) pairs).
    """
    top = min(servers, math.floor(offered_load))
    total = term = 1.0
    for j in range(1, top + 1):
        term *= (top - j + 1) / offered_load
        total += term
        ratio = (top - j) / offered_load
        if term * ratio < _NEGLIGIBLE_SHARE * total * (1 - ratio):
            break
    blocking = 1 / total
    for k in range(top + 1, servers + 1):
        if blocking < sys.float_info.min:
            return 0.0
        blocking = offered_load * blocking / (k + offered_load * blocking)
    return blocking


_NEGLIGIBLE_SHARE = 2.0**-60
"""A share of a sum below what a double holds (its precision is 2^-53)."""


def erlang_c(servers: int, offered_load: float) -> float:
    """Erlang C: the probability that an arrival waits in M/M/c.

    From Erlang B: C = c B / (c - a (1 - B)), a = rate x service_s, which inherits B's
    stability (no factorials). Returns 1.0 when a >= c (every arrival waits).
    """
    if offered_load >= servers:
        return 1.0
    blocking = erlang_b(servers, offered_load)
    return servers * blocking / (servers - offered_load * (1 - blocking))


def mm1_time_in_system_s(service_s: float, rho: float) -> float:
    """M/M/1 mean time in system: W = S / (1 - rho)."""
    return math.inf if rho >= 1 else service_s / (1 - rho)


def mm1_latency_multiplier(rho: float) -> float:
    """M/M/1 mean time in system in units of the service time: W / S = 1 / (1 - rho).

    2x at 50%, 10x at 90%, 100x at 99%: the hockey stick that sets planned utilisation.
    """
    if rho < 0:
        raise ValueError(f"rho must be >= 0, got {rho}")
    return mm1_time_in_system_s(1.0, rho)


def mm1_multiplier_table(
    utilizations: Iterable[float] = SEED_MM1_UTILIZATIONS,
) -> tuple[tuple[float, float], ...]:
    """(rho, W / S) pairs of `mm1_latency_multiplier` for each utilisation given."""
    return tuple((rho, mm1_latency_multiplier(rho)) for rho in utilizations)


def mm1_time_in_system_quantile_s(service_s: float, rho: float, quantile: float = 0.99) -> float:
    """Exact M/M/1 time-in-system quantile.

    The time in system of M/M/1 (FCFS) is exponential with rate mu - lambda, i.e. mean
    S / (1 - rho), so t_q = S / (1 - rho) x ln(1 / (1 - q)): 4.6 mean times at p99.
    """
    _check_quantile(quantile)
    if rho >= 1:
        return math.inf
    return service_s / (1 - rho) * math.log(1 / (1 - quantile))


def mmc_mean_wait_s(rate: float, service_s: float, servers: int) -> float:
    """M/M/c mean wait in queue: Wq = C(c, a) x S / (c (1 - rho))."""
    _check_queue(rate, service_s, servers)
    rho = utilization(rate, service_s, servers)
    if rho >= 1:
        return math.inf
    if rate == 0 or service_s == 0:
        return 0.0
    return erlang_c(servers, rate * service_s) * service_s / (servers * (1 - rho))


def mg1_mean_wait_s(rate: float, service_s: float, service_scv: float) -> float:
    """M/G/1 mean wait (Pollaczek-Khinchine): Wq = rho S (1 + cs^2) / (2 (1 - rho)).

    Exact for any service distribution with that mean and squared coefficient of
    variation cs^2; with cs^2 = 1 it is M/M/1's rho S / (1 - rho).
    """
    _check_queue(rate, service_s, 1)
    rho = utilization(rate, service_s)
    if rho >= 1:
        return math.inf
    return rho * service_s * (1 + service_scv) / (2 * (1 - rho))


def mgc_mean_wait_s(rate: float, service_s: float, service_scv: float, servers: int) -> float:
    """M/G/c mean wait (Allen-Cunneen with Poisson arrivals, ca^2 = 1):
    Wq = Wq(M/M/c) x (1 + cs^2) / 2.

    An approximation; exact for c = 1 (Pollaczek-Khinchine) and for cs^2 = 1 (M/M/c).
    """
    return mmc_mean_wait_s(rate, service_s, servers) * (1 + service_scv) / 2


def wait_quantile_s(
    rate: float, service_s: float, service_scv: float, servers: int = 1, quantile: float = 0.99
) -> float:
    """The `quantile` of the wait in queue of an M/G/c queue.

    Approximation: an arrival waits with probability P = C(c, a) (Erlang C), and a
    waiting arrival's wait is exponential with the Allen-Cunneen conditional mean
    m = S (1 + cs^2) / (2 c (1 - rho)). So P(Wq > t) = P exp(-t / m) and the quantile is
    t_q = m ln(P / (1 - q)) when P > 1 - q, else 0. Exact for M/M/c; for M/G/1 its mean
    P m is the Pollaczek-Khinchine mean and its decay rate is Kingman's heavy-traffic
    exponential tail.
    """
    _check_queue(rate, service_s, servers)
    _check_quantile(quantile)
    rho = utilization(rate, service_s, servers)
    if rho >= 1:
        return math.inf
    if rate == 0 or service_s == 0:
        return 0.0
    p_wait = erlang_c(servers, rate * service_s)
    tail = 1 - quantile
    if p_wait <= tail:
        return 0.0
    return conditional_mean_wait_s(service_s, service_scv, servers, rho) * math.log(p_wait / tail)


def conditional_mean_wait_s(
    service_s: float, service_scv: float, servers: int, rho: float
) -> float:
    """Mean wait of an arrival that waits in M/G/c at per-server utilisation rho
    (Allen-Cunneen): m = S (1 + cs^2) / (2 c (1 - rho)); exact for M/M/c."""
    return service_s * (1 + service_scv) / (2 * servers * (1 - rho))


def combine_wait_and_service_quantile_s(
    wait_quantile_s: float, service_s: float, service_quantile_s: float
) -> float:
    """The quantile of wait plus service from the quantiles of each:
    t_q ~ S + sqrt(Wq_q^2 + (S_q - S)^2).

    The mean service S always adds; the two spreads above it (the wait's tail and the
    service's own tail) add in quadrature, as independent spreads do. Exact at zero load
    (t_q = S_q) and for a fixed service time (t_q = Wq_q + S); `models.serving.capacity` combines
    the p99 TTFT the same way. Against the exact M/M/1 p99 S ln(100) / (1 - rho) it is
    high by 4% at rho = 0.5, 2% at 0.7 and 0.2% at 0.9.
    """
    if math.isinf(wait_quantile_s):
        return math.inf
    return service_s + math.hypot(wait_quantile_s, max(service_quantile_s - service_s, 0.0))


def time_in_system_quantile_s(
    rate: float,
    service_s: float,
    service_scv: float,
    servers: int = 1,
    quantile: float = 0.99,
    service_quantile_s: float | None = None,
) -> float:
    """The `quantile` of the time in system (wait plus service), e.g. the p99 TTFT of a
    prefill queue.

    The wait quantile of `wait_quantile_s` combined with the service time's own quantile
    `service_quantile_s` by `combine_wait_and_service_quantile_s`:
    t_q ~ S + sqrt(Wq_q^2 + (S_q - S)^2). Without `service_quantile_s` the service is
    counted at its mean, t_q ~ Wq_q + S, which ignores the service's own tail (low by
    S (1 + ln(rho) / (1 - rho)) against exact M/M/1: 4% at rho = 0.5).
    """
    wait_s = wait_quantile_s(rate, service_s, service_scv, servers, quantile)
    tail_s = service_s if service_quantile_s is None else service_quantile_s
    return combine_wait_and_service_quantile_s(wait_s, service_s, tail_s)


def max_utilization_for_wait(
    service_s: float,
    service_scv: float,
    max_wait_s: float,
    servers: int = 1,
    quantile: float = 0.99,
) -> float:
    """The highest utilisation rho at which the `quantile` wait stays within `max_wait_s`.

    Inverts `wait_quantile_s` at fixed S, cs^2 and c. The wait quantile rises
    monotonically with rho (both the chance to wait and the conditional mean do), so
    bisection on rho in [0, 1) finds it to 1e-9. Returns 0.0 when even an idle queue
    misses (max_wait_s < 0).
    """
    if service_s <= 0:
        raise ValueError(f"service_s must be > 0, got {service_s}")
    if max_wait_s < 0:
        return 0.0

    def wait_at(rho: float) -> float:
        return wait_quantile_s(rho * servers / service_s, service_s, service_scv, servers, quantile)

    low, _ = bisect_edge(lambda rho: wait_at(rho) <= max_wait_s, 0.0, 1.0, 100, width=1e-9)
    return low


def max_utilization_for_time_in_system(
    service_s: float,
    service_scv: float,
    max_time_in_system_s: float,
    servers: int = 1,
    quantile: float = 0.99,
    service_quantile_s: float | None = None,
) -> float:
    """The highest utilisation at which the `quantile` time in system stays within
    `max_time_in_system_s` (e.g. a p99 TTFT target over a prefill service time).

    Inverts `time_in_system_quantile_s`: S + sqrt(Wq_q^2 + (S_q - S)^2) <= T leaves the
    wait max_wait = sqrt((T - S)^2 - (S_q - S)^2), then `max_utilization_for_wait`.
    Returns 0.0 when the service alone misses the target (T < S_q, or T < S without
    `service_quantile_s`).
    """
    if service_s <= 0:
        raise ValueError(f"service_s must be > 0, got {service_s}")
    budget_s = time_in_system_wait_budget_s(service_s, max_time_in_system_s, service_quantile_s)
    if budget_s < 0:
        return 0.0
    return max_utilization_for_wait(service_s, service_scv, budget_s, servers, quantile)


def time_in_system_wait_budget_s(
    service_s: float, max_time_in_system_s: float, service_quantile_s: float | None = None
) -> float:
    """What a time-in-system target T leaves for the wait's quantile:
    sqrt((T - S)^2 - (S_q - S)^2).

    Without `service_quantile_s` (service at its mean): T - S. When the service alone
    misses the target (T < S_q) the budget is negative: T - S_q, the overshoot.
    """
    tail_s = service_s if service_quantile_s is None else max(service_quantile_s, service_s)
    if max_time_in_system_s < tail_s:
        return max_time_in_system_s - tail_s
    above_mean_s = max_time_in_system_s - service_s
    return math.sqrt(max(above_mean_s**2 - (tail_s - service_s) ** 2, 0.0))


@dataclass(frozen=True)
class PoolComparison:
    """One queue in front of `servers` servers against the same servers each with its
    own queue and a 1/c share of the traffic, at the same per-server utilisation."""

    servers: int
    rate: float
    """Total arrival rate, requests/s, shared by both layouts."""
    service_s: float
    service_scv: float
    utilization: float
    """Per-server utilisation rho = rate x S / c, equal in both layouts."""
    quantile: float
    pooled_mean_wait_s: float
    """M/G/c mean wait with one shared queue (Allen-Cunneen)."""
    split_mean_wait_s: float
    """M/G/1 mean wait of each separate queue at rate / c (Pollaczek-Khinchine)."""
    pooled_wait_quantile_s: float
    split_wait_quantile_s: float
    pooled_p_wait: float
    """Chance an arrival waits at all in the pool: Erlang C(c, c rho)."""
    split_p_wait: float
    """Chance an arrival waits at its own server: rho."""

    @property
    def mean_wait_ratio(self) -> float:
        """Pooled over split mean wait: C(c, c rho) / (c rho) <= 1 (0/0 read as 1)."""
        if self.split_mean_wait_s == 0:
            return 1.0
        return self.pooled_mean_wait_s / self.split_mean_wait_s


def pool_comparison(
    rate: float,
    service_s: float,
    servers: int,
    service_scv: float = 1.0,
    quantile: float = 0.99,
) -> PoolComparison:
    """The pool effect: the waits of one shared queue against `servers` split queues.

    Pooled: M/G/c at `rate`. Split: c independent M/G/1 queues at rate / c each (each
    request sent to a queue at random, which keeps each stream Poisson; no stealing).
    Per-server load is the same, so the difference is only the pooling: a pooled arrival
    waits only when all c servers are busy (Erlang C), and then for the first of c to
    finish (1/c of the wait). That is why partitioning a fleet per tenant or per region
    costs latency or capacity.
    """
    _check_queue(rate, service_s, servers)
    _check_quantile(quantile)
    per_server_rate = rate / servers
    rho = utilization(rate, service_s, servers)
    return PoolComparison(
        servers=servers,
        rate=rate,
        service_s=service_s,
        service_scv=service_scv,
        utilization=rho,
        quantile=quantile,
        pooled_mean_wait_s=mgc_mean_wait_s(rate, service_s, service_scv, servers),
        split_mean_wait_s=mg1_mean_wait_s(per_server_rate, service_s, service_scv),
        pooled_wait_quantile_s=wait_quantile_s(rate, service_s, service_scv, servers, quantile),
        split_wait_quantile_s=wait_quantile_s(per_server_rate, service_s, service_scv, 1, quantile),
        pooled_p_wait=erlang_c(servers, rate * service_s),
        split_p_wait=min(rho, 1.0),
    )


def pooled_wait_p99_s(
    rate: float, service_s: float, service_scv: float, pool_replicas: float = 1
) -> float:
    """p99 wait of a prompt for a prefill lane when `pool_replicas` replicas, each fed
    `rate` prompts/s, share one queue: M/G/c with c = pool_replicas and arrivals c x rate,
    `models.serving.queueing.wait_quantile_s(c x rate, service_s, cs^2, c, 0.99)`.

    The router assumed: each request goes at arrival to the replica with the least
    prompt work queued for prefill (prompt tokens waiting, or admitted and not yet
    prefilled), which then serves its queue first come first served. Dispatch by least
    work left makes an arrival wait for the smallest remaining work over the c lanes,
    the moment the first lane would free in one central FCFS queue, so the waits are
    those of M/G/c (Harchol-Balter, Performance Modeling and Design of Computer Systems,
    2013, ch. 24). The simulator's `least_prefill` router is this one and matches M/M/c
    waits (tests/solver/simulate/test_pool_dispatch.py). A router blind to queued prompt work
    (fewest outstanding requests, a count dominated by running decodes; round robin) pools
    less well: at a pool's planned capacity its p99 TTFT is 10-50% above this model
    for pools of 2-8 replicas (`solver.simulate.engine`, dispatch `jsq`).

    c = 1 is the single FCFS server. `UNLIMITED_POOL` (math.inf) is the limit c -> inf
    at a fixed per-lane utilisation rho = rate x service_s: no wait while rho < 1,
    math.inf from rho >= 1 (never below any finite pool's wait)."""
    if math.isinf(pool_replicas):
        return 0.0 if rate * service_s < 1 else math.inf
    servers = int(pool_replicas)
    return wait_quantile_s(servers * rate, service_s, service_scv, servers, 0.99)
