"""The router the planner assumes (`solver.simulate.engine`, dispatch `least_prefill`):
least-work-left dispatch to per-replica FIFO queues gives the waits of one central FCFS
queue (M/G/c), which is the planner's pool model (`models.serving.batch_model.
pooled_wait_p99_s`); a router that counts outstanding requests (`jsq`) does not."""

import math

import numpy as np
import pytest

from models.serving.queueing import mgc_mean_wait_s, wait_quantile_s
from solver.simulate.engine import simulate_pool
from solver.simulate.traffic import arrival_times_s
from tests.solver.simulate.test_simulate import TOKEN_S, _exponential_server

BATCHES = 20
"""Slices of a run for the batch-means standard error (consecutive requests are
correlated through the queue, so the i.i.d. formula would understate the error)."""


def batch_means_se(values: np.ndarray, statistic=np.mean) -> float:
    """Standard error of `statistic` over a run: the spread of the statistic over
    `BATCHES` consecutive slices / sqrt(BATCHES)."""
    slices = np.array_split(values, BATCHES)
    return float(np.std([statistic(s) for s in slices], ddof=1) / math.sqrt(BATCHES))


def _p99(values: np.ndarray) -> float:
    return float(np.quantile(values, 0.99))


MEAN_TOKENS = 20
"""Mean of the toy prompts' geometric lengths: service S = 20 x TOKEN_S with squared
coefficient of variation cs^2 = 1 - 1 / 20 (a geometric law on 1, 2, ...)."""
SERVICE_SCV = 1 - 1 / MEAN_TOKENS
CHUNK_TOKENS = MEAN_TOKENS // 4
"""Prompt tokens a toy replica prefills an iteration: a prompt takes 4 iterations on
average (the last one partial), so the router reads its work left 4 times over its
service. One token an iteration (20 iterations a prompt) gave the same standard scores
to 0.05 (seed 7: mean +0.49 / -0.10 -> +0.49 / -0.05 at 2 / 8 servers, p99 +1.35 /
+0.67 -> +1.36 / +0.68, jsq's p99 +10.51 both) at 4.4 times the events, 3.4 times the CPU."""
REQUESTS = 20_000
"""Requests a run: each is ~4 iterations, so 20,000 are ~90,000 events a run.
The tests' tolerances are the run's own batch-means standard errors, so they widen as the
run shortens: at 20,000 (seed 7) the p99 wait's is 6.5-7.6% of the p99 (at 40,000:
6.2-6.6%), least_prefill's mean and p99 read within 1.4 of them of M/G/c (2 and 8
servers) and jsq's p99 10.5 above it (12.1 at 40,000), against the 3 each test allows.
At 10,000 the 2-server p99 reads 3.4 below: too short."""


def _toy_waits(servers: int, dispatch: str, rho: float = 0.8) -> tuple[np.ndarray, float, float]:
    """Waits of a pool of `servers` toy replicas (each a FIFO server that prefills
    CHUNK_TOKENS prompt tokens an iteration at TOKEN_S a token, one prompt at a time) fed
    `REQUESTS` Poisson prompts of geometric length: service of mean S = `MEAN_TOKENS` x
    TOKEN_S and cs^2 = 0.95, so the pool is M/G/c, close to M/M/c, when its queue is
    central."""
    rng = np.random.default_rng(7)
    service_s = MEAN_TOKENS * TOKEN_S
    rate = servers * rho / service_s
    arrivals = arrival_times_s(rate, REQUESTS / rate, 1.0, rng)
    prompts = rng.geometric(1 / MEAN_TOKENS, size=arrivals.size)
    server = _exponential_server(CHUNK_TOKENS)
    ones = np.ones(arrivals.size, int)
    trace = simulate_pool(server, servers, arrivals, prompts, ones, dispatch=dispatch)
    measured = arrivals > 100 * service_s
    waits = trace.ttft_s[measured] - prompts[measured] * TOKEN_S
    return waits, rate, service_s


@pytest.mark.parametrize("servers", [2, 8])
def test_least_prefill_dispatch_waits_as_one_central_queue(servers):
    """c = 2 and 8 toy replicas at rho = 0.8: with least-prompt-work dispatch the mean
    wait is M/G/c's C(c, a) S (1 + cs^2) / (2 c (1 - rho)) and the p99 wait
    m ln(C / 0.01), m = S (1 + cs^2) / (2 c (1 - rho)) (`models.serving.queueing`; exact for
    M/M/c, and cs^2 = 0.95 is within 2.5% of it), within 3 batch-means standard errors."""
    waits, rate, service_s = _toy_waits(servers, "least_prefill")
    mean_s = mgc_mean_wait_s(rate, service_s, SERVICE_SCV, servers)
    p99_s = wait_quantile_s(rate, service_s, SERVICE_SCV, servers, 0.99)
    assert waits.mean() == pytest.approx(mean_s, abs=3 * batch_means_se(waits))
    p99_se = batch_means_se(waits, _p99)
    assert np.quantile(waits, 0.99) == pytest.approx(p99_s, abs=3 * p99_se)


@pytest.mark.parametrize("servers", [8])
def test_counting_outstanding_requests_waits_longer_than_a_central_queue(servers):
    """The same pool of 8 with `jsq` (fewest outstanding requests, blind to how long the
    queued prompts are): the p99 wait is above M/M/c's by more than 3 standard errors,
    so a plan's TTFT rests on a prompt-aware router."""
    waits, rate, service_s = _toy_waits(servers, "jsq")
    p99_s = wait_quantile_s(rate, service_s, SERVICE_SCV, servers, 0.99)
    p99_se = batch_means_se(waits, _p99)
    assert np.quantile(waits, 0.99) > p99_s + 3 * p99_se
