"""Unified pools of 2, 4 and 8 replicas planned at 100% of their capacity meet the
planner's own p99 TTFT and TPOT in simulation (issue 14), behind the router the planner
assumes (`least_prefill`, `models.serving.queueing.pooled_wait_p99_s`), and miss the p99 TTFT
behind a router blind to queued prompt work (`jsq`).

Sampling tolerance: a p99 is met when the share of simulated requests above the
analytic p99 is at most 1% plus 2.33 standard errors of that share (one-sided 99%). The
standard error is from batch means: the run's requests, in arrival order, cut into
`BATCHES` slices, the share's spread over the slices / sqrt(BATCHES) (requests that
queue in the same busy period are correlated, so the binomial sqrt(p (1 - p) / N) would
understate it). One seed, 20 minutes of arrivals after a 1-minute warm-up, and for a pool
of more than 2 replicas 20 x 2 / n minutes (`measured_s`: as many requests as the pool of
2; the pools of 4 and 8 at 20 and 10 minutes were two thirds of the module's CPU):
3,500 to 22,000 measured requests per pool. With the planner made optimistic the pools
still fail: run at 10% above its capacity, every pool's TPOT check fails (as at 20
minutes); the analytic p99 TTFT cut to 0.75x, the 8B's pools of 2, 4 and 8 and b200's
of 4 fail (h200 passes at any length; b200's pool of 8 failed at 10 minutes, passes at
5), and the `jsq` pool of 4 still misses at 10 minutes."""

import math

import numpy as np
import pytest

from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.traffic import TokenDistribution
from models.serving.capacity import replica_capacity
from models.serving.latency import latency_at_rate
from models.serving.replica import LatencyTargets, ReplicaConfig, ServingContext, TrafficMix
from solver.simulate.engine import simulate_pool
from solver.simulate.traffic import arrival_times_s, token_lengths
from tests.plain_engine import plain_engine

BATCHES = 20
Z_ONE_SIDED_99 = 2.326
WARMUP_S = 60.0
MEASURED_S = 20 * 60.0
FP8 = Precision.FP8


def measured_s(replicas: int) -> float:
    """Seconds of arrivals measured after the warm-up: MEASURED_S, cut for a pool of more
    than 2 replicas to the 2-replica pool's expected request count (module text)."""
    return MEASURED_S * min(1.0, 2 / replicas)


CASES = {
    # Llama-3.3-70B chat (1,500 / p99 6,000 prompt, 400 / p99 1,200 reply, 800 ms / 50 ms).
    "b200 tp1": (
        ReplicaConfig(catalog.gpu("b200"), catalog.llm("llama-3.3-70b"), FP8, FP8, 1, 1),
        (1500, 6000, 400, 1200),
        LatencyTargets(ttft_p99_s=0.8, tpot_p99_s=0.05),
    ),
    "h200 tp2 pp2": (
        ReplicaConfig(catalog.gpu("h200"), catalog.llm("llama-3.3-70b"), FP8, FP8, 2, 2),
        (1500, 6000, 400, 1200),
        LatencyTargets(ttft_p99_s=0.8, tpot_p99_s=0.05),
    ),
    # Llama-3.1-8B on long prompts (4,000 / p99 16,000: the p99 prompt spans two chunks).
    "h100 8b long prompts": (
        ReplicaConfig(catalog.gpu("h100-sxm"), catalog.llm("llama-3.1-8b"), FP8, FP8, 1, 1),
        (4000, 16000, 300, 1000),
        LatencyTargets(ttft_p99_s=1.0, tpot_p99_s=0.03),
    ),
}


def exceedance(values: np.ndarray, threshold_s: float) -> tuple[float, float]:
    """(share of `values` above `threshold_s`, its batch-means standard error)."""
    above = values > threshold_s
    shares = [s.mean() for s in np.array_split(above, BATCHES)]
    return float(above.mean()), float(np.std(shares, ddof=1) / math.sqrt(BATCHES))


def _pool_at_capacity(case: str, replicas: int, dispatch: str, measured: float | None = None):
    """The pool of `replicas` run at n x q(n) requests/s (q(n) the planner's capacity per
    replica in a pool of n) for `measured` seconds after the warm-up (default
    `measured_s`); returns (analytic latency at that load, TTFTs, TPOTs)."""
    config, (prompt, prompt_p99, output, output_p99), targets = CASES[case]
    prompts = TokenDistribution(mean=prompt, p99=prompt_p99)
    outputs = TokenDistribution(mean=output, p99=output_p99)
    mix = TrafficMix.of_lengths(prompts, outputs)
    efficiency = efficiency_for(config.gpu, FP8)
    capacity = replica_capacity(config, mix, targets, efficiency, replicas)
    assert capacity.meets_slo
    analytic = latency_at_rate(
        ServingContext(config, mix, efficiency), capacity.requests_per_s, replicas
    )
    engine = plain_engine(config, mix, efficiency)
    rng = np.random.default_rng(replicas)
    duration_s = WARMUP_S + (measured_s(replicas) if measured is None else measured)
    arrivals = arrival_times_s(replicas * capacity.requests_per_s, duration_s, 1.0, rng)
    trace = simulate_pool(
        engine,
        replicas,
        arrivals,
        token_lengths(prompts, arrivals.size, rng),
        token_lengths(outputs, arrivals.size, rng),
        dispatch=dispatch,
    )
    measured = trace.arrival_s >= WARMUP_S
    assert not np.isnan(trace.finish_s[measured]).any()
    return analytic, trace.ttft_s[measured], trace.tpot_s[measured[trace.output_tokens > 1]]


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("replicas", [2, 4, 8])
def test_a_pool_planned_at_capacity_keeps_the_promised_p99s(case, replicas):
    """At most 1% (plus the sampling tolerance) of the simulated requests exceed the
    analytic p99 TTFT, and of the replies the analytic p99 TPOT; the analytic p99s are
    themselves within the targets (the plan's promise)."""
    analytic, ttft_s, tpot_s = _pool_at_capacity(case, replicas, "least_prefill")
    _, _, targets = CASES[case]
    assert analytic.ttft_p99_s <= targets.ttft_p99_s * (1 + 1e-9)
    assert analytic.tpot_p99_s <= targets.tpot_p99_s * (1 + 1e-9)
    share, se = exceedance(ttft_s, analytic.ttft_p99_s)
    assert share <= 0.01 + Z_ONE_SIDED_99 * se
    share, se = exceedance(tpot_s, analytic.tpot_p99_s)
    assert share <= 0.01 + Z_ONE_SIDED_99 * se


@pytest.mark.parametrize("case", list(CASES))
def test_a_lone_replica_planned_at_capacity_keeps_the_promised_p99_tpot(case):
    """A lone unified replica (no pool to even out its batch) at its planned capacity:
    at most 1% (plus the sampling tolerance) of the simulated replies exceed the
    analytic p99 TPOT. Before the busy-period stretch and the tail batch's spread
    (`models.serving.batch_model.BatchModel.tpot_p99_s`) the lone replica's p99 TPOT was 10-20%
    optimistic in simulation (38.7 ms against 34.2 ms for the b200 case, 36.1 against
    30 ms for the 8B one); the p99 TTFT of a lone replica is not asserted here (its
    seed-to-seed spread is a fifth of the target)."""
    analytic, _, tpot_s = _pool_at_capacity(case, 1, "least_prefill")
    _, _, targets = CASES[case]
    assert analytic.tpot_p99_s <= targets.tpot_p99_s * (1 + 1e-9)
    share, se = exceedance(tpot_s, analytic.tpot_p99_s)
    assert share <= 0.01 + Z_ONE_SIDED_99 * se


def test_a_router_blind_to_queued_prompts_misses_the_promised_ttft():
    """The b200 pool of 4 behind `jsq` (fewest outstanding requests), 20 minutes: more
    than 1% of the requests exceed the analytic p99 TTFT, by more than 3 standard errors
    (1.80% +- 0.19%). At 10 minutes it was 4.1 standard errors at q(4) = 3.424 requests/s
    and 2.5 (1.57% +- 0.22%) at the 3.513 of the reply's life
    (`models.serving.tail.reply_life`)."""
    analytic, ttft_s, _ = _pool_at_capacity("b200 tp1", 4, "jsq", MEASURED_S)
    share, se = exceedance(ttft_s, analytic.ttft_p99_s)
    assert share > 0.01 + 3 * se
