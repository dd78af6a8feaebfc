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

Before stop 26 (the model's independent iterations of the mixture at the tail batch B_hi,
their normal law stretched by the busy period; 30,000 replies a row, one seed, at that
model's capacity): a 2-10-token reply was priced at 50 ms where the lone 70B TP8
replica measured 7.9-34 ms (a 2-token reply at 0.103 requests/s meets a prompt in 0.6%
of them; the model took them at mu(B_hi) = B_hi / O, 4.7%), and in a pool of 37 every
router left a 2-token reply at the bare decode step (7.87 ms); the 8B on 4,000 / p99
16,000-token prompts was optimistic, 51-74 ms on a lone replica at O = 50-400 and 58 ms
in a pool of 37 at O = 50, 54 at voice-agent's 60 / 250. Replacing only the normal law
by the mixture's own discrete law at B_hi (Binomial(m, p) mixed gaps) landed within 10%
at O = 3-20 but went optimistic from O = 50 (33.8 against 37.3 ms) and stayed at 62 ms
for O = 2: the error was the rate of riders and the reply's life, not the law's shape.
What the simulator showed instead (the 8B, lone, O = 100): the slow replies come in
congestions of long prompts, the top 1% living 8.2 s (mean 2.0) at a batch of 75 (mean
20), meeting 5.9 s of prefill work at 1.25 lambda, 0.5 s of it queued behind them at their
first token; the model now counts that life (`models.serving.tail.reply_life`).

Measured now (this file; 3 seeds x 30,000 replies or more per row and seed; `above` the
share of replies above the model's p99 (%), `se` its batch-means standard error over 20
slices of each run (%); `verdict` (`verdict`): optimistic where `above` exceeds 1% by more
than 2.326 se, conservative where the model is more than 10% above the simulated p99;
load 4-5 on two cores; ms):

    case           n         O   req/s   t(B)  model sim p99 m/sim  above    se  verdict
    70b h100 tp8   1         2   0.225   7.90  50.00   36.75  1.36   0.70  0.03  conservative
    70b h100 tp8   1         3   0.485   8.01  50.00   39.32  1.27   0.53  0.02  conservative
    70b h100 tp8   1         5   1.589   8.53  50.00   39.68  1.26   0.46  0.03  conservative
    70b h100 tp8   1        10   3.510   9.61  50.00   37.57  1.33   0.26  0.02  conservative
    70b h100 tp8   1        20   5.605  11.19  50.00   36.54  1.37   0.16  0.02  conservative
    70b h100 tp8   1        50   8.723  15.06  50.00   42.61  1.17   0.35  0.06  conservative
    70b h100 tp8   1       100  10.250  18.88  50.00   46.99  1.06   0.65  0.14  ok
    70b h100 tp8   1       200  10.367  21.35  43.80   42.66  1.03   0.80  0.17  ok
    70b h100 tp8   1       400  10.041  25.79  45.77   44.25  1.03   0.67  0.26  ok
    70b h100 tp8   1    60/250   7.608  13.51  50.00   44.57  1.12   0.64  0.04  conservative
    70b h100 tp8   1   150/500  10.083  19.35  50.00   48.03  1.04   0.82  0.10  ok
    70b h100 tp8   1  300/1000  10.211  23.50  48.54   45.81  1.06   0.66  0.10  ok
    70b h100 tp8   1  400/1200  10.012  25.80  50.00   45.37  1.10   0.38  0.08  conservative
    70b h100 tp8   4         2   1.190   8.33  38.79    7.86  4.93   0.02  0.01  conservative
    70b h100 tp8   4         3   1.789   8.63  50.00    7.87  6.36   0.02  0.00  conservative
    70b h100 tp8   4         5   4.763  10.47  50.00   33.97  1.47   0.17  0.02  conservative
    70b h100 tp8   4        10   8.124  13.85  50.00   41.46  1.21   0.33  0.04  conservative
    70b h100 tp8   4        20  10.211  17.48  50.00   43.61  1.15   0.33  0.06  conservative
    70b h100 tp8   4        50  11.891  22.98  50.00   47.30  1.06   0.61  0.14  ok
    70b h100 tp8   4       100  12.411  27.45  50.00   46.89  1.07   0.32  0.12  ok
    70b h100 tp8   4       200  12.205  31.92  50.00   47.44  1.05   0.44  0.25  ok
    70b h100 tp8   4       400  10.892  33.10  50.00   42.43  1.18   0.00  0.00  conservative
    70b h100 tp8   4    60/250  11.244  20.97  50.00   49.29  1.01   0.94  0.09  ok
    70b h100 tp8   4   150/500  12.076  27.97  50.00   47.64  1.05   0.63  0.12  ok
    70b h100 tp8   4  300/1000  11.396  31.62  50.00   44.64  1.12   0.18  0.08  conservative
    70b h100 tp8   4  400/1200  10.761  32.01  50.00   41.55  1.20   0.01  0.00  conservative
    70b h100 tp8  37         2   1.864   8.67  50.00    7.86  6.36   0.00  0.00  conservative
    70b h100 tp8  37         3   3.222   9.43  50.00    7.86  6.36   0.00  0.00  conservative
    70b h100 tp8  37         5   7.132  12.62  50.00    7.87  6.35   0.00  0.00  conservative
    70b h100 tp8  37        10  10.375  17.68  50.00   32.77  1.53   0.04  0.01  conservative
    70b h100 tp8  37        20  12.227  23.30  50.00   37.65  1.33   0.02  0.01  conservative
    70b h100 tp8  37        50  13.561  32.20  50.00   44.92  1.11   0.12  0.07  conservative
    70b h100 tp8  37       100  13.614  37.32  50.00   46.82  1.07   0.12  0.06  ok
    70b h100 tp8  37       200  12.977  41.11  50.00   46.66  1.07   0.09  0.04  ok
    70b h100 tp8  37       400  11.398  40.58  50.00   43.63  1.15   0.00  0.00  conservative
    70b h100 tp8  37    60/250  13.054  29.26  50.00   44.78  1.12   0.29  0.06  conservative
    70b h100 tp8  37   150/500  13.177  37.78  50.00   47.17  1.06   0.35  0.12  ok
    70b h100 tp8  37  300/1000  12.087  40.36  50.00   46.08  1.09   0.08  0.02  ok
    70b h100 tp8  37  400/1200  11.332  39.86  50.00   44.73  1.12   0.02  0.01  conservative
    70b b200 tp1   1         2   0.087  20.88  50.00   23.01  2.17   0.81  0.03  conservative
    70b b200 tp1   1         3   0.089  20.88  50.00   34.03  1.47   0.73  0.03  conservative
    70b b200 tp1   1         5   0.120  20.95  50.00   40.13  1.25   0.63  0.03  conservative
    70b b200 tp1   1        10   0.292  21.32  50.00   43.31  1.15   0.57  0.03  conservative
    70b b200 tp1   1        20   0.759  22.40  50.00   44.64  1.12   0.52  0.03  conservative
    70b b200 tp1   1        50   1.613  24.79  50.00   44.51  1.12   0.44  0.04  conservative
    70b b200 tp1   1       100   1.944  26.10  43.71   40.97  1.07   0.53  0.05  ok
    70b b200 tp1   1       200   1.928  26.57  37.45   36.78  1.02   0.73  0.09  ok
    70b b200 tp1   1       400   1.898  27.65  34.87   35.20  0.99   1.21  0.15  ok
    70b b200 tp1   1    60/250   1.258  23.78  50.00   44.65  1.12   0.57  0.03  conservative
    70b b200 tp1   1   150/500   1.935  26.34  43.42   41.38  1.05   0.66  0.04  ok
    70b b200 tp1   1  300/1000   1.913  27.15  37.93   37.45  1.01   0.85  0.07  ok
    70b b200 tp1   1  400/1200   1.897  27.73  36.46   36.45  1.00   0.97  0.10  ok
    70b b200 tp1   4         2   0.187  21.09  50.00   20.97  2.38   0.00  0.00  conservative
    70b b200 tp1   4         3   0.300  21.33  50.00   20.97  2.38   0.00  0.00  conservative
    70b b200 tp1   4         5   0.327  21.39  50.00   20.97  2.38   0.00  0.00  conservative
    70b b200 tp1   4        10   0.634  22.09  50.00   21.04  2.38   0.03  0.01  conservative
    70b b200 tp1   4        20   1.374  24.00  50.00   38.51  1.30   0.17  0.02  conservative
    70b b200 tp1   4        50   2.512  27.90  50.00   42.55  1.18   0.19  0.03  conservative
    70b b200 tp1   4       100   3.395  32.57  50.00   46.18  1.08   0.32  0.06  ok
    70b b200 tp1   4       200   3.806  37.24  50.00   48.35  1.03   0.44  0.11  ok
    70b b200 tp1   4       400   3.647  41.09  50.00   49.35  1.01   0.69  0.28  ok
    70b b200 tp1   4    60/250   2.064  26.31  50.00   43.60  1.15   0.47  0.03  conservative
    70b b200 tp1   4   150/500   3.351  33.11  50.00   48.00  1.04   0.63  0.06  ok
    70b b200 tp1   4  300/1000   3.575  37.83  50.00   49.46  1.01   0.87  0.11  ok
    70b b200 tp1   4  400/1200   3.513  39.86  50.00   49.66  1.01   0.89  0.15  ok
    70b b200 tp1  37         2   0.520  21.82  50.00   20.97  2.38   0.00  0.00  conservative
    70b b200 tp1  37         3   0.384  21.51  50.00   20.97  2.38   0.00  0.00  conservative
    70b b200 tp1  37         5   0.417  21.59  50.00   20.97  2.38   0.00  0.00  conservative
    70b b200 tp1  37        10   0.793  22.47  50.00   20.97  2.38   0.00  0.00  conservative
    70b b200 tp1  37        20   1.644  24.77  50.00   30.38  1.65   0.04  0.01  conservative
    70b b200 tp1  37        50   2.821  29.16  50.00   40.18  1.24   0.09  0.02  conservative
    70b b200 tp1  37       100   3.636  34.00  50.00   43.41  1.15   0.09  0.03  conservative
    70b b200 tp1  37       200   3.959  38.54  50.00   45.53  1.10   0.06  0.03  ok
    70b b200 tp1  37       400   3.735  42.17  50.00   47.29  1.06   0.11  0.08  ok
    70b b200 tp1  37    60/250   2.369  27.43  50.00   43.41  1.15   0.42  0.02  conservative
    70b b200 tp1  37   150/500   3.574  34.54  50.00   46.68  1.07   0.46  0.04  ok
    70b b200 tp1  37  300/1000   3.708  39.10  50.00   48.37  1.03   0.58  0.07  ok
    70b b200 tp1  37  400/1200   3.613  41.03  50.00   48.20  1.04   0.43  0.06  ok
    8b h100 long   1         2   0.212   5.15  50.00   17.12  2.92   0.47  0.02  conservative
    8b h100 long   1         3   0.355   5.19  50.00   25.22  1.98   0.34  0.01  conservative
    8b h100 long   1         5   0.901   5.36  50.00   29.85  1.67   0.27  0.02  conservative
    8b h100 long   1        10   2.416   5.90  50.00   31.45  1.59   0.23  0.02  conservative
    8b h100 long   1        20   4.314   6.79  50.00   31.42  1.59   0.20  0.03  conservative
    8b h100 long   1        50   7.410   9.31  50.00   39.47  1.27   0.34  0.07  conservative
    8b h100 long   1       100   8.820  12.33  50.00   44.14  1.13   0.50  0.13  conservative
    8b h100 long   1       200   8.897  16.46  50.00   48.67  1.03   0.89  0.25  ok
    8b h100 long   1       400   7.590  21.57  50.00   48.72  1.03   0.54  0.36  ok
    8b h100 long   1    60/250   6.185   8.28  50.00   36.28  1.38   0.39  0.04  conservative
    8b h100 long   1   150/500   8.379  12.88  50.00   40.49  1.23   0.32  0.07  conservative
    8b h100 long   1  300/1000   7.905  17.38  50.00   40.66  1.23   0.24  0.10  conservative
    8b h100 long   1  400/1200   7.355  19.96  50.00   41.52  1.20   0.21  0.13  conservative
    8b h100 long   4         2   1.208   5.46  50.00    5.51  9.07   0.01  0.00  conservative
    8b h100 long   4         3   1.797   5.66  50.00    5.52  9.05   0.01  0.00  conservative
    8b h100 long   4         5   3.489   6.34  50.00   17.85  2.80   0.07  0.01  conservative
    8b h100 long   4        10   6.953   8.42  50.00   35.69  1.40   0.27  0.04  conservative
    8b h100 long   4        20   9.270  11.00  50.00   41.64  1.20   0.35  0.06  conservative
    8b h100 long   4        50  11.007  15.53  50.00   46.45  1.08   0.67  0.20  ok
    8b h100 long   4       100  11.197  19.93  50.00   47.10  1.06   0.53  0.18  ok
    8b h100 long   4       200  10.253  25.02  50.00   44.01  1.14   0.14  0.11  conservative
    8b h100 long   4       400   8.227  29.99  50.00   45.86  1.09   0.11  0.06  ok
    8b h100 long   4    60/250  10.184  13.90  50.00   43.01  1.16   0.53  0.05  conservative
    8b h100 long   4   150/500  10.447  20.70  50.00   41.73  1.20   0.23  0.06  conservative
    8b h100 long   4  300/1000   8.974  26.05  50.00   40.67  1.23   0.05  0.01  conservative
    8b h100 long   4  400/1200   8.095  28.64  50.00   42.67  1.17   0.02  0.01  conservative
    8b h100 long  37         2   3.095   6.16  50.00    5.51  9.07   0.00  0.00  conservative
    8b h100 long  37         3   3.910   6.53  50.00    5.51  9.07   0.00  0.00  conservative
    8b h100 long  37         5   6.564   8.08  50.00    5.51  9.07   0.00  0.00  conservative
    8b h100 long  37        10  10.361  12.38  50.00   32.75  1.53   0.17  0.02  conservative
    8b h100 long  37        20  12.444  18.07  50.00   41.64  1.20   0.27  0.04  conservative
    8b h100 long  37        50  13.537  28.35  50.00   53.44  0.94   2.35  0.88  ok
    8b h100 long  37       100  12.844  33.62  50.00   53.68  0.93   3.24  0.90  optimistic
    8b h100 long  37       200  11.158  37.73  50.00   52.90  0.95   4.71  1.24  optimistic
    8b h100 long  37       400   8.602  39.05  50.00   47.45  1.05   0.20  0.08  ok
    8b h100 long  37    60/250  12.850  24.92  50.00   48.71  1.03   0.81  0.10  ok
    8b h100 long  37   150/500  11.838  34.30  50.00   50.76  0.99   1.49  0.30  ok
    8b h100 long  37  300/1000   9.639  37.70  50.00   49.03  1.02   0.71  0.12  ok
    8b h100 long  37  400/1200   8.517  38.23  50.00   46.36  1.08   0.19  0.04  ok

The 8B's pool of 37 was run again at 5x the replies (150,000 a seed; its rows above are
63 s of arrivals a seed, too few for its rare congestions): O = 50, 100, 200 measured
56.4, 58.0, 57.5 ms, 3.1%, 7.6%, 12.8% of the replies above the model's 50 (se 0.6, 1.4,
2.3%): optimistic, as the earlier model was there (58 against 50 at O = 50). Its top 1%
of replies (O = 100, 400 s of arrivals, seed 0) come in one pool-wide episode: 1,900
replies on 34 of the 37 replicas within ~30 s, each living 6.0 s (mean 3.7) at a batch
of 61 (mean 49), its replica sent 66 prompts in that time (86% of lambda) of 4,780 tokens
on average (size-biased against 4,006); neither of the pool's limits (whole prompts at a
1/n feedback; the pool's work evened over its lanes) has a pool-wide congestion of that
size. At 5x the replies the pools of 4 sit at the edge, within the tolerance: the 8B at
O = 50 and 100 50.7 and 48.7 ms (0.86% +- 0.12%, 1.10% +- 0.22% above), 70B B200 at
O = 400 50.5 ms (1.23% +- 0.19%); 70B TP8 in a pool of 37 at O = 100 47.8 ms (0.33%).
Short replies in pools stay conservative (2-5 tokens: the model's 50 ms against the
decode step, 5.5-21 ms): the router sends a new request to a replica with fewer in
flight, so a short reply in a large pool meets no prompt, which neither limit models.

Run: `make bench` (this file: ~8 minutes on two cores at load 4). Prints the table;
asserts only that every row simulated its replies."""

import math

import numpy as np

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

FP8 = Precision.FP8
TPOT_TARGET_S = 0.05
REPLIES = 30000
"""Replies simulated per row and seed at least (a short reply's p99 sits on a 1% atom)."""
SEEDS = (0, 1, 2)
WARMUP_S = 60.0
BATCHES = 20
"""Slices of a run, in arrival order, for the batch-means standard error of the share of
replies above the model's p99 (a lone replica's slow replies come in congestions)."""
Z_ONE_SIDED_99 = 2.326

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
SHIPPED_OUTPUTS = ((60, 250), (150, 500), (300, 1000), (400, 1200))


def _row(case: str, output: int, output_p99: int, replicas: int) -> tuple:
    """(rate, B, t(B), model p99 TPOT, sim p50, sim p99 (mean over the seeds), share of
    the replies above the model's p99, its batch-means standard error, replies) of the
    pool of `replicas` at the planner's capacity q(n) for the case's targets."""
    config, (prompt, prompt_p99), ttft_s = CASES[case]
    prompts = TokenDistribution(mean=prompt, p99=prompt_p99)
    outputs = TokenDistribution(mean=output, p99=output_p99)
    mix = TrafficMix.of_lengths(prompts, outputs)
    efficiency = efficiency_for(config.gpu, FP8)
    targets = LatencyTargets(ttft_p99_s=ttft_s, tpot_p99_s=TPOT_TARGET_S)
    rate = replica_capacity(config, mix, targets, efficiency, replicas).requests_per_s
    analytic = latency_at_rate(ServingContext(config, mix, efficiency), rate, replicas)
    engine = plain_engine(config, mix, efficiency)
    duration_s = WARMUP_S + max(600 * min(1, 2 / replicas), REPLIES / (replicas * rate))
    p50s, p99s, shares = [], [], []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
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
        p50s.append(float(np.quantile(tpot_s, 0.5)))
        p99s.append(float(np.quantile(tpot_s, 0.99)))
        above = tpot_s > analytic.tpot_p99_s * (1 + 1e-9)
        shares.extend(float(part.mean()) for part in np.array_split(above, BATCHES))
    share = float(np.mean(shares))
    se = float(np.std(shares, ddof=1) / math.sqrt(len(shares)))
    count = round(len(shares) / BATCHES * tpot_s.size)
    return (
        rate,
        analytic.batch,
        analytic.step_s,
        analytic.tpot_p99_s,
        float(np.mean(p50s)),
        float(np.mean(p99s)),
        share,
        se,
        count,
    )


def verdict(share: float, se: float, model_s: float, p99_s: float) -> str:
    """`optimistic` where more than 1% of the replies exceed the model's p99 beyond the
    one-sided 99% sampling tolerance, `conservative` where the model is above the
    simulated p99 by more than 10%, else `ok`."""
    if share > 0.01 + Z_ONE_SIDED_99 * se:
        return "optimistic"
    return "conservative" if model_s > 1.1 * p99_s else "ok"


def test_short_replies_model_against_simulator():
    print()
    print(
        f"{'case':12} {'n':>3} {'O':>9} {'req/s':>7} {'t(B)':>6} {'model':>6} {'sim p99':>7} "
        f"{'m/sim':>5} {'above':>6} {'se':>5}  verdict"
    )
    rows = [(o, o) for o in FIXED_OUTPUTS] + list(SHIPPED_OUTPUTS)
    for case in CASES:
        for replicas in POOLS:
            for output, output_p99 in rows:
                rate, _batch, step_s, model_s, _p50, p99_s, share, se, count = _row(
                    case, output, output_p99, replicas
                )
                label = str(output) if output == output_p99 else f"{output}/{output_p99}"
                print(
                    f"{case:12} {replicas:3} {label:>9} {rate:7.3f} {step_s * 1e3:6.2f} "
                    f"{model_s * 1e3:6.2f} {p99_s * 1e3:7.2f} {model_s / p99_s:5.2f} "
                    f"{share * 100:6.2f} {se * 100:5.2f}  {verdict(share, se, model_s, p99_s)}",
                    flush=True,
                )
                assert count >= 0.9 * REPLIES and math.isfinite(p99_s)
