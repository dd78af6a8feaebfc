"""The planner's p99 TPOT (`models.serving.batch_model.BatchModel.tpot_p99_s`) against the
simulator's (`solver.simulate.engine.simulate_pool`) over reply lengths, each pool run at
the planner's own capacity q(n) for a 50 ms p99 TPOT (and its TTFT target), so the
model's column is the target wherever the TPOT binds.

Found by fuzz28: seed-chat-sizing with every reply `output_tokens {mean: 2, p99: 2}` buys
296 H100s (37 TP8 replicas, limit tpot, model p99 TPOT 48.0 ms) where `fleetplan
simulate` of that plan measures 7.9 ms (the pure decode step: no prompt ever rides in a
two-token reply's one gap there).

Both sides mean the same thing by TPOT: a reply's mean inter-token gap, (finish - first
token) / (O - 1) over its m = O - 1 gaps (`PoolTrace.tpot_s`; the model's "TPOT" section
divides the reply's life by m). The simulator prices each iteration with the planner's
own `StepModel.iteration_s`, so the gap is the model's, not the step times'.

Measured (this file, all rows; 30,000 replies or more per row, one seed; load 2.6-3.7
on two cores; ms). `discr` is what was tried in place of the normal law (`_discrete_p99_s`:
the model's own mixture at its tail batch, Binomial(m, p) mixed gaps of mean excess J;
fixed lengths only):

    case            n      O   req/s      B   t(B)  model  discr  sim p50  sim p99
    70b h100 tp8    1      2   0.103   0.00   7.85  50.00  62.34     7.84     7.87
    70b h100 tp8    1      3   0.338   0.01   7.95  50.00  35.45     7.84    34.20
    70b h100 tp8    1      5   0.994   0.04   8.24  50.00  35.96     7.84    31.91
    70b h100 tp8    1     10   2.676   0.24   9.11  50.00  33.55     7.85    32.18
    70b h100 tp8    1     20   4.957   1.06  10.66  50.00  33.04    10.13    33.44
    70b h100 tp8    1     50   7.928   5.50  13.87  50.00  33.84    13.82    37.29
    70b h100 tp8    1    100   9.639  16.75  17.38  50.00  36.85    17.73    40.69
    70b h100 tp8    1    200  10.367  44.26  21.35  47.88  40.65    22.01    42.41
    70b h100 tp8    1    400  10.041 103.58  25.79  46.93  45.06    27.00    45.82
    70b h100 tp8    4      2   0.619   0.01   8.07  50.00  62.84     7.84     7.87
    70b h100 tp8    4      3   1.763   0.05   8.62  50.00  64.06     7.84     7.87
    70b h100 tp8    4      5   3.732   0.18   9.75  50.00  51.22     7.84    26.57
    70b h100 tp8    4     10   6.503   0.78  11.99  50.00  41.30     7.87    32.15
    70b h100 tp8    4     50  11.006  11.01  20.01  50.00  42.35    19.69    38.06
    70b h100 tp8    4    400  10.951 148.07  33.80  50.00  51.11    34.53    45.36
    70b h100 tp8   37      2   2.770   0.05   9.16  50.00  63.15     7.84     7.87
    70b h100 tp8   37      3   5.338   0.17  10.92  50.00  64.84     7.84     7.86
    70b h100 tp8   37      5   8.079   0.56  13.76  50.00  52.39     7.84    19.39
    70b h100 tp8   37     10  10.648   1.95  18.30  50.00  49.78    14.09    33.36
    70b h100 tp8   37     20  12.211   5.68  23.24  50.00  46.37    20.72    37.47
    70b h100 tp8   37     50  13.234  19.73  29.81  50.00  48.69    27.66    40.56
    70b h100 tp8   37    400  11.386 183.19  40.22  50.00  52.07    37.44    42.06
    70b b200 tp1    1      3   0.006   0.00  20.71  50.00  70.20    20.76    20.98
    70b b200 tp1    1     10   0.177   0.04  21.07  50.00  43.19    20.76    37.72
    70b b200 tp1    1     50   1.592   1.97  24.73  50.00  44.82    23.79    44.43
    70b b200 tp1    1    400   1.898  21.00  27.65  35.79  36.04    27.69    35.48
    70b b200 tp1   37     10   1.417   0.34  24.09  50.00  54.64    20.76    20.97
    70b b200 tp1   37     20   2.412   1.32  27.31  50.00  48.17    21.91    41.99
    70b b200 tp1   37    400   3.770  64.27  42.62  50.00  49.89    41.62    47.40
    8b h100 long    1      2   0.117   0.00   5.12  50.00  60.19     5.17     5.63
    8b h100 long    1      5   1.076   0.03   5.42  50.00  33.18     5.18    33.33
    8b h100 long    1     10   2.859   0.17   6.08  50.00  30.63     5.23    37.13
    8b h100 long    1     50   8.417   4.42  10.49  50.00  31.57    10.67    51.26
    8b h100 long    1    100   9.915  14.84  14.97  50.00  39.41    16.66    69.34
    8b h100 long    1    200   9.676  39.66  20.49  50.00  48.84    23.81    73.86
    8b h100 long    1    400   7.808  74.50  23.85  50.00  52.14    27.07    65.16
    8b h100 long    4    100  11.743  27.18  23.15  50.00  48.48    25.30    58.21
    8b h100 long   37      5   9.493   0.52  10.94  50.00  49.68     5.18    23.77
    8b h100 long   37     50  13.630  19.88  29.17  50.00  51.27    29.95    58.09
    8b h100 long   37    400   8.622 136.94  39.70  50.00  52.60    39.63    47.53

The shipped instances' own lengths (mean / p99, lognormal), same run:

    70b h100 tp8    1   60/250   7.587   6.14  13.48  50.00     -     13.41    44.30
    70b h100 tp8    1 300/1000  10.211  71.98  23.50  48.56     -     24.31    46.00
    70b h100 tp8    1 400/1200  10.032 104.04  25.93  48.80     -     26.92    45.98
    70b h100 tp8   37   60/250  12.924  22.05  28.44  50.00     -     26.34    43.60
    70b h100 tp8   37 400/1200  11.357 183.13  40.31  50.00     -     37.31    43.76
    70b b200 tp1    1   60/250   1.425   2.07  24.26  50.00     -     23.27    48.00
    70b b200 tp1   37   60/250   3.173   5.88  30.88  50.00     -     28.32    52.20
    8b h100 long    1   60/250   8.055   4.94  10.21  50.00     -     10.17    58.23
    8b h100 long    1  150/500   9.773  25.34  17.29  50.00     -     19.12    69.20
    8b h100 long    1 300/1000   8.616  57.68  22.32  50.00     -     24.77    62.07
    8b h100 long   37   60/250  13.236  22.20  27.95  50.00     -     27.82    54.20
    8b h100 long   37 300/1000   9.674 112.04  38.60  50.00     -     38.67    49.06

The router is not what empties a pool's short replies: the 70b h100 tp8 pool at the rows'
rates (`simulate_pool(..., dispatch=...)`, same seed) measured p99 TPOT, least_prefill /
jsq / round_robin: n 37, O 2: 7.87 / 7.87 / 7.87; n 37, O 5: 19.39 / 17.28 / 50.32;
n 4, O 3: 7.87 all three; n 37, O 400: 42.06 / 41.67 / 56.07.

What the table says (the analysis; no fix is committed with it):
- Both sides mean the same TPOT, and the simulator is right physically: the gaps of a
  reply of m = O - 1 gaps hold the decode step and the prefill of the prompts that ride
  in them, those that reach the replica while the reply lives (the first gap's arrived
  during the reply's own prefill iteration, a long one).
- Lone replica, short replies (O = 3-20): the model is 1.5x the simulator (50 against
  32-34 ms). The riders' total is compound Poisson: with a few expected riders the p99
  is t_0 + (one or two prompts' iterations) / m, a lumpy law the normal approximation
  t(B) + 2.326 sd / sqrt(m) overprices. Replacing only the normal law by the discrete
  one at the model's own mixture (`discr`) lands within 10% at O = 3-20 (35.5 against
  34.2 ... 33.0 against 33.4) but goes optimistic from O = 50 (33.8 against 37.3,
  45.1 against 45.8 at 400: it lacks the busy stretch and the prompt-length spread), and
  at O = 2 it is worse (62.3 against 7.9): there the error is not the law's shape but
  the rate of riders. The model takes the prompts per iteration at its tail batch,
  mu(B_hi) = B_hi / O with B_hi = B + 2.326 sqrt(B / n) / (1 - g), the normal quantile
  of a Poisson batch; at B = 0.002 that is B_hi = 0.096, a prompt in 4.7% of the gaps,
  while arrivals at lambda = 0.103 / s over the reply's ~60 ms give 0.6% (< 1%: the p99
  is the decode step, as simulated). Arrivals come at lambda whatever the batch; the
  batch's spread should lengthen the decode step, not multiply the prompt rate, and a
  Poisson batch's p99 at B < 0.01 is 0 others.
- Pools (the fuzz28 plan is a pool of 37): the simulator's short replies meet no prompt
  under every router (7.87 ms at O = 2 even with round_robin), while the model (and the
  discrete law with it) prices a lone replica's Poisson riders. A replica in a pool of n
  does not see a Poisson stream at rate lambda right after one of its own arrivals: its
  next arrival comes about 1 / lambda later (round_robin: the n-th next arrival of the
  pool, Erlang(n); least_prefill and jsq send it to a replica with no prompt queued and
  fewer in flight). So the riders in a window of w after a reply's arrival are about 0
  for w << 1 / lambda, not Poisson(lambda w), and for long windows their count spreads as
  a renewal process's, lambda w cv^2 (cv^2 ~ 1 / n for round_robin), not lambda w. The
  model credits a pool only the 1/n share of the busy stretch and the sqrt(B / n) batch
  spread. This is the larger error in the reported case and it is not the normal
  approximation: a fix is a model of the per-replica arrival stream in a pool, which
  reaches every TPOT-bound pool (the long replies' pools too: 50 against 42 ms at n 37,
  O 400), so it would move goldens (tpot-pooling at least): the lead's call.
- Long replies (O >= 200, 1,500-token prompts): 2-15% conservative, as the module
  docstring records.
- Left alone, noticed here: the 8B on 4,000 / p99 16,000-token prompts at a 50 ms TPOT
  target is optimistic at O = 50-400 on a lone replica (50 against 51-74 ms) and in pools
  (58 at n 37, O 50; 52-54 ms at 60/250, voice-agent's lengths), and the b200 pool of 37
  at 60/250 measured 52.2 against 50 (test_pool_slo runs the 8B at 30 ms and passes).

Run: `make bench` (this file: ~60 s on two cores at load 4). Prints the table; asserts
only that every row simulated its replies."""

import math

import numpy as np

from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.traffic import TokenDistribution
from models.serving.capacity import replica_capacity
from models.serving.latency import _Replica, latency_at_rate
from models.serving.replica import LatencyTargets, ReplicaConfig, ServingContext, TrafficMix
from solver.simulate.engine import simulate_pool
from solver.simulate.traffic import arrival_times_s, token_lengths
from tests.plain_engine import plain_engine

FP8 = Precision.FP8
TPOT_TARGET_S = 0.05
REPLIES = 30000
"""Replies simulated per row at least (a short reply's p99 sits on a 1% atom)."""
WARMUP_S = 60.0

CASES = {
    "70b h100 tp8": (
        ReplicaConfig(catalog.gpu("h100-sxm"), catalog.llm("llama-3.1-70b"), FP8, FP8, 8, 1),
        (1500, 4500),
        0.8,
    ),
    "70b b200 tp1": (
        ReplicaConfig(catalog.gpu("b200"), catalog.llm("llama-3.3-70b"), FP8, FP8, 1, 1),
        (1500, 6000),
        0.8,
    ),
    "8b h100 long": (
        ReplicaConfig(catalog.gpu("h100-sxm"), catalog.llm("llama-3.1-8b"), FP8, FP8, 1, 1),
        (4000, 16000),
        2.0,
    ),
}
POOLS = (1, 4, 37)
FIXED_OUTPUTS = (2, 3, 5, 10, 20, 50, 100, 200, 400)
SHIPPED_OUTPUTS = ((60, 250), (150, 500), (200, 600), (300, 1000), (400, 1200))


def _binomial_p99(trials: int, share: float) -> int:
    """The 0.99 quantile of Binomial(trials, share)."""
    below = 0.0
    for count in range(trials + 1):
        below += math.comb(trials, count) * share**count * (1 - share) ** (trials - count)
        if below >= 0.99:
            return count
    return trials


def _discrete_p99_s(serving: ServingContext, replicas: int, batch: float, gaps: int) -> float:
    """What was tried in place of the normal approximation: the model's own mixture at
    its tail batch B_hi (share p of iterations that carry prompts, their mean excess J
    over the decode step t_0), and the reply's m gaps carrying Binomial(m, p) such
    iterations: t_0 + J k99 / m (no busy stretch, no spread of J)."""
    model = _Replica(serving, replicas).model
    mixture = model.mixture(model.batch_high(batch))
    share, decode_s = mixture.mixed_share, mixture.decode_only_s
    if share <= 0:
        return decode_s
    excess_s = (mixture.mean_s - decode_s) / share
    return decode_s + excess_s * _binomial_p99(gaps, share) / gaps


def _row(case: str, output: int, output_p99: int, replicas: int) -> tuple:
    """(rate, B, t(B), model p99 TPOT, its discrete variant (`_discrete_p99_s`, fixed
    lengths only, else NaN), sim p50, sim p99, replies) of the pool of
    `replicas` at the planner's capacity q(n) for the case's targets."""
    config, (prompt, prompt_p99), ttft_s = CASES[case]
    prompts = TokenDistribution(mean=prompt, p99=prompt_p99)
    outputs = TokenDistribution(mean=output, p99=output_p99)
    mix = TrafficMix.of_lengths(prompts, outputs)
    efficiency = efficiency_for(config.gpu, FP8)
    targets = LatencyTargets(ttft_p99_s=ttft_s, tpot_p99_s=TPOT_TARGET_S)
    rate = replica_capacity(config, mix, targets, efficiency, replicas).requests_per_s
    serving = ServingContext(config, mix, efficiency)
    analytic = latency_at_rate(serving, rate, replicas)
    discrete_s = math.nan
    if output == output_p99:
        discrete_s = _discrete_p99_s(serving, replicas, analytic.batch, output - 1)
    engine = plain_engine(config, mix, efficiency)
    rng = np.random.default_rng(0)
    duration_s = WARMUP_S + max(600 * min(1, 2 / replicas), REPLIES / (replicas * rate))
    arrivals = arrival_times_s(replicas * rate, duration_s, 1.0, rng)
    trace = simulate_pool(
        engine,
        replicas,
        arrivals,
        token_lengths(prompts, arrivals.size, rng),
        token_lengths(outputs, arrivals.size, rng),
    )
    measured = trace.arrival_s >= WARMUP_S
    tpot_s = trace.tpot_s[measured[trace.output_tokens > 1]]
    return (
        rate,
        analytic.batch,
        analytic.step_s,
        analytic.tpot_p99_s,
        discrete_s,
        float(np.quantile(tpot_s, 0.5)),
        float(np.quantile(tpot_s, 0.99)),
        tpot_s.size,
    )


def test_short_replies_model_against_simulator():
    print()
    print(
        f"{'case':14} {'n':>3} {'O':>9} {'req/s':>7} {'B':>7} {'t(B)':>6} "
        f"{'model':>6} {'discr':>6} {'sim p50':>8} {'sim p99':>8} {'replies':>8}"
    )
    rows = [(o, o) for o in FIXED_OUTPUTS] + list(SHIPPED_OUTPUTS)
    for case in CASES:
        for replicas in POOLS:
            for output, output_p99 in rows:
                rate, batch, step_s, model_s, discrete_s, p50_s, p99_s, count = _row(
                    case, output, output_p99, replicas
                )
                label = str(output) if output == output_p99 else f"{output}/{output_p99}"
                print(
                    f"{case:14} {replicas:3} {label:>9} {rate:7.3f} {batch:7.2f} "
                    f"{step_s * 1e3:6.2f} {model_s * 1e3:6.2f} {discrete_s * 1e3:6.2f} "
                    f"{p50_s * 1e3:8.2f} {p99_s * 1e3:8.2f} {count:8}",
                    flush=True,
                )
                assert count >= 0.9 * REPLIES and math.isfinite(p99_s)
