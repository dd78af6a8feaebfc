"""The bounds on the calculators' command-line flags (`estimate`, `perf`, `simulate`,
`calibrate`) and on the replays `simulate` and `explain` run, each with the reason it is
where it is. models.schema.limits holds the limits on the instance itself.
"""

from models.schema.limits import BATCH_SEQUENCES, TOKENS, Bound, Most

# --- the calculators' command-line flags ------------------------------------------------

POOL_REPLICAS = Bound(
    10_000,
    "replicas",
    "10,000 replicas behind one router's queue is a whole large fleet as one queue; the "
    "M/G/c wait sums c terms, so 10^9 replicas would hang the command",
    low=1.0,
    low_open=False,
)
CONCURRENT_USERS = Bound(
    1e9,
    "users",
    "Little's law at the largest request rate (10^7 requests/s) held 100 s each",
)
PROMPT_TOKENS = Bound(TOKENS.high, "tokens", TOKENS.why + "; a prompt may be empty", low_open=False)
GPU_TOKENS_PER_S = Bound(
    1e6,
    "tokens/s",
    "30x the best published output throughput of one GPU on a small model, about 30,000 tokens/s",
)
SEQUENCES_PER_GPU = Bound(BATCH_SEQUENCES.high, "sequences", BATCH_SEQUENCES.why)
REQUEST_LATENCY_S = Bound(
    86_400,
    "s",
    "a request in flight for over a day is a batch job, not a latency",
    low=1e-3,
    low_open=False,
    low_why="a request takes at least one engine step, about a millisecond; at 1e-300 s "
    "Little's law held 0 requests in flight and sized 0.0 GPUs by concurrency",
)
SLO_WINDOW_DAYS = Bound(
    3_660,
    "days",
    "SLO windows run 7 to 90 days; ten years is no window",
    low=3.0,
    low_open=False,
    low_why="the ticket alert looks back 3 days (SRE Workbook); a shorter SLO window is "
    "shorter than the alert's own (1e-300 days read burn thresholds of 0.0x, a budget of 0 min)",
)
BYTES_PER_TOKEN = Bound(
    1_000, "bytes", "text runs about 4 bytes a token; 1,000 bytes a token is a units mistake"
)
LENGTH_CV = Bound(
    100,
    "",
    "prompt lengths and inter-arrival gaps of real traffic have a coefficient of variation "
    "of a few units; 100 is a units mistake",
    low_open=False,
)
ARRIVAL_CV = Bound(
    LENGTH_CV.high,
    "",
    LENGTH_CV.why,
    low=0.01,
    low_open=False,
    low_why="0.01 is clockwork arrivals; at 1e-300 the gamma gaps' shape 1/cv^2 overflowed "
    "(ZeroDivisionError)",
)
SIMULATED_MINUTES = Bound(
    1_440, "minutes", "the replay holds the peak rate steady, and no peak lasts a day"
)
SIMULATED_S = Bound(SIMULATED_MINUTES.high * 60, "s", SIMULATED_MINUTES.why)
SEED = Bound(
    2**64 - 1,
    "",
    "a random seed is a non-negative integer; 64 bits tell more runs apart than anyone makes",
    low_open=False,
)


REPLAY_ROUTER_STEPS = Most(
    100_000_000,
    "router steps in one open-arrival replay (requests x the replicas each is chosen among, "
    "summed over the runs: one, one per engine effect off, ~8 for the tolerance)",
    "the router scans every replica of its pool for each request: ~1.5 million steps a "
    "second on one loaded core (360,000 requests among 97 replicas took 23 s), so 10^8 is "
    "about a minute; one second of three 10^5 requests/s pools of 9,686 replicas "
    "(2.9 x 10^9, half an hour at that rate) had not ended after a minute, and explain's "
    "engine effects (120 s of arrivals, five runs) hung past its time limit with it",
)

REPLAY_REQUESTS = Most(
    500_000,
    "requests in one run of an open-arrival replay (the plan's load x the duration)",
    "the replay runs ~10,000 requests a CPU-second whatever its router scans (one 20 "
    "requests/s replica for a day, 1.7 x 10^6 requests, ran past 100 s), so 500,000 is about "
    "a minute a run",
)

CLOSED_LOOP_REQUESTS = Most(
    500_000,
    "closed-loop requests in one `simulate --arrivals burst|staggered`",
    "the replay runs ~8,500 requests a CPU-second (24 replicas x 1,000 users x 10 requests "
    "= 240,000 took 28 s on one core), so 500,000 is about a minute; 10^9 users would run "
    "for days or exhaust memory",
)
