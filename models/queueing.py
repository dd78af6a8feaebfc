"""Queueing formulas for request arrivals in front of serving replicas.

Conventions: arrivals are Poisson at `rate` per second; `service_s` is the mean service
time; `service_scv` is the squared coefficient of variation of the service time
(variance / mean^2: 1 for exponential, 0 for deterministic); `servers` is the number of
identical servers behind ONE queue. Utilisation rho = rate x service_s / servers.
Every function returns math.inf for an unstable queue (rho >= 1) instead of raising.
"""

import math


def utilization(rate: float, service_s: float, servers: int = 1) -> float:
    """rho = rate x service_s / servers."""
    return rate * service_s / servers


def littles_law_in_system(rate: float, time_in_system_s: float) -> float:
    """Little's law: L = lambda x W, items in the system (any stable queue)."""
    return rate * time_in_system_s


def erlang_b(servers: int, offered_load: float) -> float:
    """Erlang B blocking probability, by the stable recursion
    B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)), with a = rate x service_s (Erlangs).

    The recursion never forms a^c / c!, so it is exact and stable for thousands of servers.
    """
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    blocking = 1.0
    for k in range(1, servers + 1):
        blocking = offered_load * blocking / (k + offered_load * blocking)
    return blocking


def erlang_c(servers: int, offered_load: float) -> float:
    """Erlang C: probability an arrival waits in M/M/c, from Erlang B:
    C = c B / (c - a (1 - B)). Returns 1.0 when a >= c (every arrival waits)."""
    if offered_load >= servers:
        return 1.0
    blocking = erlang_b(servers, offered_load)
    return servers * blocking / (servers - offered_load * (1 - blocking))


def mm1_time_in_system_s(service_s: float, rho: float) -> float:
    """M/M/1 mean time in system: W = S / (1 - rho)."""
    return math.inf if rho >= 1 else service_s / (1 - rho)


def mmc_mean_wait_s(rate: float, service_s: float, servers: int) -> float:
    """M/M/c mean wait in queue: Wq = C(c, a) x S / (c (1 - rho))."""
    rho = utilization(rate, service_s, servers)
    if rho >= 1:
        return math.inf
    return erlang_c(servers, rate * service_s) * service_s / (servers * (1 - rho))


def mg1_mean_wait_s(rate: float, service_s: float, service_scv: float) -> float:
    """M/G/1 mean wait (Pollaczek-Khinchine): Wq = rho S (1 + cs^2) / (2 (1 - rho))."""
    rho = utilization(rate, service_s)
    if rho >= 1:
        return math.inf
    return rho * service_s * (1 + service_scv) / (2 * (1 - rho))


def mgc_mean_wait_s(rate: float, service_s: float, service_scv: float, servers: int) -> float:
    """M/G/c mean wait (Allen-Cunneen with Poisson arrivals, ca^2 = 1):
    Wq = Wq(M/M/c) x (1 + cs^2) / 2. Exact for c = 1 (Pollaczek-Khinchine)."""
    return mmc_mean_wait_s(rate, service_s, servers) * (1 + service_scv) / 2


def wait_quantile_s(
    rate: float, service_s: float, service_scv: float, servers: int = 1, quantile: float = 0.99
) -> float:
    """The `quantile` of the wait in an M/G/c queue.

    Approximation: an arrival waits with probability P = C(c, a) (Erlang C), and a
    waiting arrival's wait is exponential with the Allen-Cunneen conditional mean
    m = S (1 + cs^2) / (2 c (1 - rho)). So P(W > t) = P exp(-t / m) and the quantile is
    t_q = m ln(P / (1 - q)) when P > 1 - q, else 0. Exact for M/M/c; for M/G/1 it
    matches the Pollaczek-Khinchine mean and the heavy-traffic exponential tail.
    """
    rho = utilization(rate, service_s, servers)
    if rho >= 1:
        return math.inf
    if rate <= 0:
        return 0.0
    p_wait = erlang_c(servers, rate * service_s)
    tail = 1 - quantile
    if p_wait <= tail:
        return 0.0
    conditional_mean = service_s * (1 + service_scv) / (2 * servers * (1 - rho))
    return conditional_mean * math.log(p_wait / tail)


def max_utilization_for_wait(
    service_s: float,
    service_scv: float,
    max_wait_s: float,
    servers: int = 1,
    quantile: float = 0.99,
) -> float:
    """The highest utilisation rho at which the `quantile` wait stays within `max_wait_s`.

    The wait quantile rises monotonically with rho, so bisection on rho in [0, 1) finds
    it to 1e-9. Returns 0.0 when even an idle queue misses (max_wait_s < 0).
    """
    if max_wait_s < 0:
        return 0.0

    def wait_at(rho: float) -> float:
        return wait_quantile_s(rho * servers / service_s, service_s, service_scv, servers, quantile)

    low, high = 0.0, 1.0
    for _ in range(100):
        mid = (low + high) / 2
        if wait_at(mid) <= max_wait_s:
            low = mid
        else:
            high = mid
        if high - low < 1e-9:
            break
    return low
