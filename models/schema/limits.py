"""Every limit fleetplan puts on its input, each with the reason it is where it is.

Numbers are bounded by physical sense: a bound sits an order of magnitude or more beyond
the largest real value known today, so that no real fleet is refused while a units
mistake, a typo or a hostile file (`.inf`, `1e308`, `10**37`) is. Reading is bounded so
that no file can hang or exhaust the machine. The schema (`models/schema/quantities.py`), the
reader (`models/io/loading.py`) and the program-size check use these constants and nothing
else; change a limit here and every message that names it follows.
"""

import os
from dataclasses import dataclass, replace

# --- reading files ----------------------------------------------------------------------

MAX_DOCUMENT_BYTES = 8 * 2**20
"""8 MiB: the largest instance the list limits below allow is about 2 MB of YAML; plans
are larger but JSON parses at ~30 MB/s. A bigger file is junk, not a fleet."""
MAX_PLAN_BYTES = 64 * 2**20
"""64 MiB: a plan (or golden result) fleetplan wrote itself and reads back (`simulate`,
`verify`): a 12-month hourly plan of 5 regions x 5 workloads is about 11 MB of indented
JSON (each month's 24 hours state their pools and scenarios), so the instance limit
would refuse plans the tool writes; JSON parses at ~30 MB/s, a couple of seconds here."""
MAX_NESTING_DEPTH = 32
"""Containers inside containers: fleetplan's own files nest at most 7 levels (an
`explain --json` report); 100,000 levels would crash a recursive parser."""
MAX_DOCUMENT_NODES = 250_000
"""Values (scalars, lists, mappings) of a YAML file after alias expansion: the largest
instance the list limits allow has about 160,000; PyYAML builds roughly 100,000 values a
second, so this bounds a read to seconds, and a billion-laughs file (10^9) is refused
after reading a few hundred bytes."""
MAX_ISSUES_REPORTED = 50
"""Problems listed for one file; the rest are counted (a file of 10^5 junk keys would
otherwise print 10^5 lines)."""
MAX_NAME_CHARS = 256
"""Longest name an instance may give (the instance, a region, a workload, a GPU or model
entry): real ones run to some 40 characters (a Hugging Face id); a name of 100,000
characters hung `report` past 20 s while the charts laid out their tick labels."""
MAX_PATH_CHARS = 4096
"""Longest file path an instance may name (an engine profile file): Linux's PATH_MAX."""

# --- list lengths -----------------------------------------------------------------------


@dataclass(frozen=True)
class Most:
    """The most entries one list (or mapping) of the instance may hold, and why.

    Attributes:
        count: largest number of entries allowed.
        what: what the entries are, plural ("regions").
        why: one line saying why the limit is where it is.
    """

    count: int
    what: str
    why: str


REGIONS = Most(
    100,
    "regions",
    "the biggest clouds offer 30-60 regions each; the failover program grows as their cube",
)
LINKS = Most(REGIONS.count * (REGIONS.count - 1) // 2, "links", "one per pair of regions")
WORKLOADS = Most(200, "workloads", "each workload is a sub-program of its own")
MODELS = Most(200, "models", "no more than the workloads that could serve them")
GPU_TYPES = Most(50, "GPU types", "the catalog holds 6 and all clouds together offer ~30")
HISTOGRAM_BUCKETS = Most(
    10_000, "buckets", "a histogram finer than 10,000 buckets adds nothing the physics uses"
)
CHOICES = Most(16, "choices", "powers of two up to 1,024 are 11 entries")
PREFIXES = Most(1_000, "prefix classes", "use `count` for many prefixes of one length and share")


@dataclass(frozen=True)
class Bound:
    """The range one kind of quantity must lie in, its unit and why.

    Attributes:
        high: largest value allowed (inclusive).
        unit: unit for messages ("requests/s"); empty for a pure number.
        why: one line saying why the bound is where it is.
        low: smallest value; allowed when `low_open` is False, excluded when True.
        low_open: whether `low` itself is excluded (`> low` rather than `>= low`).
        high_open: whether `high` itself is excluded (`< high` rather than `<= high`).
        low_why: why a floor above zero sits where it is (empty where `low` is the
            natural zero or one of the quantity).
    """

    high: float
    unit: str
    why: str
    low: float = 0.0
    low_open: bool = True
    high_open: bool = False
    low_why: str = ""


# --- traffic ----------------------------------------------------------------------------

REQUEST_RATE = Bound(
    1e7, "requests/s", "100x the peak of the busiest public LLM APIs, about 10^5 requests/s"
)
REQUESTS_PER_DAY = Bound(1e12, "requests/day", "10^7 requests/s sustained for a whole day")
ESTIMATED_REQUESTS_PER_DAY = Bound(
    REQUESTS_PER_DAY.high,
    REQUESTS_PER_DAY.unit,
    REQUESTS_PER_DAY.why,
    low=1.0,
    low_open=False,
    low_why="a day of traffic holds at least one request; at 1e-300 a day, estimate sized "
    "'ceil(0.0) + 1 spare' = a fleet of one spare GPU (an instance's demand has its own "
    "floor, LEAST_PEAK_RPS)",
)
LEAST_PEAK_RPS = 1e-4
"""The smallest peak demand an instance may plan for, requests/s (one request every 2.8
hours), checked on each workload's peak in each region times demand_growth
(`models.schema.checks.cross_check`; the hourly and monthly rates derived from it are
not held to it): below about 1e-6 the demand falls under the solver's feasibility
tolerance and the plan buys no GPU for it (1e-6 requests/s planned $0, exit 0)."""
RANGE_RATIO = Bound(
    1.0,
    "",
    "a benchmark's length range ratio R draws lengths over [L (1 - R), L (1 + R)]; "
    "vllm bench serve takes R below 1 (R = 1 would allow empty requests)",
    low_open=False,
    high_open=True,
)
DATASET_LENGTH_CV = Bound(
    10.0,
    "",
    "10x the length spread of a conversation dataset (ShareGPT's is about 1)",
    low_open=False,
)
"""`perf --length-cv` (it was named LENGTH_CV too, and the flags' LENGTH_CV below, defined
later, replaced it: the flag took up to 100)."""
PEAK_TO_AVERAGE = Bound(
    100,
    "",
    "a peak over 100x the day's mean rate is a burst, not a diurnal peak: "
    "give peak_requests_per_s instead",
    low=1.0,
    low_open=False,
)
TOKENS = Bound(
    1e8,
    "tokens",
    "10x the longest context window offered today, 10M tokens",
    low=1.0,
    low_open=False,
    low_why="a request holds whole tokens, at least one; a mean of 1e-300 tokens planned a "
    "fleet for prompts of nothing",
)
HISTOGRAM_WEIGHT = Bound(1e15, "", "weights are relative; 10^15 exceeds any request log")
HOURLY_WEIGHT = Bound(
    1e15,
    "",
    "weights are relative; 10^15 is beyond any day's peak over its quietest hour, and 24 "
    "times a weight near 10^308 is infinite",
    low_open=False,
)
HIT_RATE = Bound(
    1.0, "", "a fraction of tokens; 1 would mean no prefill at all", low_open=False, high_open=True
)
QUALITY_DELTA = Bound(
    1e6,
    "",
    "a change of a quality metric in its own units (points, percent); beyond 10^6 is a "
    "units mistake",
    low=-1e6,
    low_open=False,
)
QUALITY_REGRESSION = Bound(
    1e6, "", "the largest drop of a quality metric a change may cost", low_open=False
)
AVAILABILITY = Bound(1.0, "", "a fraction of requests; 1 would allow no failure", high_open=True)

# --- objectives and network -------------------------------------------------------------

LATENCY_MS = Bound(
    86_400_000, "ms", "a latency target beyond a day is no target; omit it for offline work"
)
PREFILL_MS = replace(
    LATENCY_MS,
    low=0.001,
    low_open=False,
    low_why="a microsecond, under one GPU kernel launch (about 5 us); at 1e-300 ms a queue's "
    "rate is a 300-digit requests/s",
)
"""A mean prefill time, ms: a latency with a floor (the service time a rate divides by)."""
TTFT_TARGET_MS = replace(
    PREFILL_MS,
    low_why="a microsecond; headroom divides by the target in seconds (5e-324 ms is 0 s)",
)
"""`headroom`'s p99 TTFT target, ms: a latency with the prefill time's floor."""
RTT_MS = Bound(
    10_000,
    "ms",
    "10x the longest round trip on Earth, about 600 ms through a geostationary satellite",
    low_open=False,
)

VOICE_STAGE_MS = Bound(
    60_000,
    "ms",
    "a voice turn waits seconds at most; a minute in one stage is no conversation",
    low_open=False,
)
FIRST_CLAUSE_TOKENS = Bound(
    100,
    "tokens",
    "a first spoken clause is a few words (10 tokens by default); 100 tokens is half a "
    "minute of speech before any audio, and 100,000 read a TPOT target of 0.00 ms",
    low=1.0,
    low_open=False,
)
TTFT_SHARE = Bound(
    1.0,
    "",
    "a share of the LLM's allowance; 1 leaves nothing for the first clause",
    high_open=True,
    low=0.01,
    low_open=False,
    low_why="1% of the allowance; at 1e-300 the TTFT target read 0.0 ms, a target no "
    "server meets, as 1 leaves nothing for the first clause",
)

# --- money, counts and time -------------------------------------------------------------

USD_PER_GPU_HOUR = Bound(
    1_000,
    "USD/GPU-hour",
    "100x the list price of the dearest cloud GPU, about $10 an hour",
    low=0.001,
    low_open=False,
    low_why="a tenth of a cent, 1/100 of the cheapest cloud GPU-hour (about $0.10); below "
    "it every cost rounds to $0 and the solver's tolerances, not prices, pick the plan "
    "(give owned GPUs as `existing` instead)",
)
GPU_COUNT = Bound(
    1_000_000,
    "GPUs",
    "5x the largest GPU cluster built, about 200,000 GPUs",
    low_open=False,
)
PLAN_INTEGER = Bound(
    10**30,
    "",
    "a plan's counts, degrees and months, multiplied by one another, hours and prices, "
    "stay within a float (10^308); 10^30 is far past any fleet (GPU_COUNT)",
    low=-(10**30),
    low_open=False,
)
ZONES = Bound(16, "zones", "clouds offer at most 6 zones per region", low=1.0, low_open=False)
PARALLEL_DEGREE = Bound(
    1024,
    "",
    "no scale-up domain or model depth comes near it: NVL72 has 72 GPUs, Llama 3.1 405B 126 layers",
    low=1.0,
    low_open=False,
)
REDUNDANT_EXPERTS = Bound(
    1024,
    "experts",
    "deployments copy an eighth to a third of the routed experts (SGLang's DeepSeek-V3: "
    "32 beside 256, Kimi K2: 96 beside 384); 1,024 is over a copy of every expert",
    low=0.0,
    low_open=False,
)
_A_DAY = "a solve allowed more than a day belongs in a job scheduler"
_NO_PLAN = "at 1e-9 s a run stopped in its candidates (exit 4); 0.1 s solves a small instance"
TIME_LIMIT_S = Bound(86_400, "s", _A_DAY, low=0.1, low_open=False, low_why=_NO_PLAN)
MIP_GAP = Bound(1.0, "", "a relative gap; 1 accepts any plan", low_open=False, high_open=True)
HOURS_PER_MONTH = Bound(
    744,
    "hours",
    "31 days x 24 hours",
    low=1.0,
    low_open=False,
    low_why="a month bills at least one hour (730 is a whole one); at 1e-300 every cost "
    "rounded to $0",
)
START_TIME_S = Bound(
    86_400, "s", "a replica that takes over a day to start is broken", low_open=False
)
STEP_LATENCY_S = Bound(
    10.0, "s", "1,000x the fixed cost of an engine step or collective, about 10 ms", low_open=False
)
BATCH_SEQUENCES = Bound(
    1_000_000,
    "sequences",
    "1,000x what serving engines keep in flight, 256 to 2,048",
    low=1.0,
    low_open=False,
)

# --- hardware ---------------------------------------------------------------------------

HBM_GIB = Bound(4096, "GiB", "14x the largest GPU memory shipped, 288 GB")
_STEP_OVERFLOW = "far below it a step takes over 10^154 s and its square overflows"
HBM_TB_S = Bound(
    100,
    "TB/s",
    "12x the fastest HBM shipped, 8 TB/s",
    low=0.01,
    low_open=False,
    low_why="10 GB/s, under one DDR4 channel (25 GB/s); the slowest GPU memory, an L4's, "
    "moves 0.3 TB/s; " + _STEP_OVERFLOW,
)
TFLOPS = Bound(
    100_000,
    "TFLOPS",
    "7x the densest FP4 peak announced, about 15,000 TFLOPS",
    low=0.1,
    low_open=False,
    low_why="a CPU socket's matrix units reach a few TFLOPS, a T4 65; " + _STEP_OVERFLOW,
)
SCALEUP_GB_S = Bound(
    10_000,
    "GB/s",
    "11x NVLink 5, 900 GB/s per direction",
    low=0.1,
    low_open=False,
    low_why="a PCIe 1.0 lane moves 0.25 GB/s; " + _STEP_OVERFLOW,
)
KV_LINK_GB_S = Bound(
    SCALEUP_GB_S.high,
    "GB/s",
    SCALEUP_GB_S.why + "; at least 0.01 GB/s (80 Mbit/s), where a 1 GB prompt's KV already "
    "takes 100 s to move: far below it the figures underflow (1e-300 GB/s gave a TPOT of 0)",
    low=0.01,
    low_open=False,
)
SCALEOUT_GBIT_S = Bound(
    10_000,
    "Gbit/s",
    "12x the fastest NICs shipped, 800 Gbit/s",
    low=0.1,
    low_open=False,
    low_why="100 Mbit/s Ethernet; far below it a KV transfer or a cross-node all-reduce "
    "takes over 10^154 s",
)
GPUS_PER_NODE = Bound(
    1024, "GPUs", "announced scale-up domains reach 576 GPUs", low=1.0, low_open=False
)
POWER_W = Bound(10_000, "W", "7x the hungriest GPU board, about 1,400 W")
SM_COUNT = Bound(1024, "SMs", "7x the largest GPU's 148", low=1.0, low_open=False)

# --- model architecture -----------------------------------------------------------------

LAYERS = Bound(1024, "layers", "8x the deepest released LLM, 126 layers", low=1.0, low_open=False)
SHAPE = Bound(2**20, "", "4x the largest released shape, a vocabulary of 256,000", low_open=False)
PARAMS_B = Bound(100_000, "billion parameters", "50x the largest published model, about 2,000 B")


# --- time, pricing tiers, co-location ---------------------------------------------------

UTC_OFFSET_HOURS = Bound(
    14, "hours", "time zones run from UTC-12 to UTC+14", low=-12.0, low_open=False
)
PROBABILITY = Bound(1.0, "", "a probability below 1", low_open=False, high_open=True)
SPOT_CONFIDENCE = Bound(
    1.0, "", "a confidence in (0, 1); 1 would need unboundedly many spot spares", high_open=True
)
INTERRUPTIONS_PER_HOUR = Bound(
    60, "per hour", "a spot replica taken back every minute serves nothing", low_open=False
)
DEADLINE_HOURS = Bound(24 * 31, "hours", "batch work due beyond a month is not a daily plan")
MONTHLY_GROWTH = Bound(
    10, "", "demand growing 11x every month is a typo for a percentage", low=-1.0
)
BURST_FACTOR = Bound(
    100,
    "",
    "a burst 100x above the steepest ramp is an outage, not a ramp",
    low=1.0,
    low_open=False,
)
HORIZON_MONTHS = Bound(120, "months", "ten years of procurement", low=1.0, low_open=False)
LEAD_TIME_MONTHS = Bound(60, "months", "five years between order and delivery", low_open=False)
UTC_HOUR = Bound(23, "", "an hour of the UTC day, 0 to 23", low_open=False)
MONTH = Bound(
    HORIZON_MONTHS.high - 1, "", "a month of the horizon, 0 to horizon_months - 1", low_open=False
)
LORA_RANK = Bound(65_536, "", "LoRA ranks are 4 to 256; above the widest layer means no LoRA")


# --- KV tiers and shared prefixes ---------------------------------------------------------

SHARE = Bound(1.0, "", "a fraction of the workload's requests", low_open=True, high_open=False)
PREFIX_CLASSES = Bound(
    1_000_000,
    "prefixes",
    "a million distinct prefixes of one class is per-request data",
    low=1.0,
    low_open=False,
)
HOST_MEMORY_GIB = Bound(65_536, "GiB", "64 TiB per GPU is 16x the largest server's DRAM per GPU")
HOST_LINK_GB_S = Bound(10_000, "GB/s", "11x NVLink-C2C, 900 GB/s")
NVME_TB = Bound(10_000, "TB", "20x the NVMe a dense storage node holds, about 500 TB")
NVME_GB_S = Bound(
    10_000,
    "GB/s",
    "20x a node of 16 PCIe 5 drives, about 500 GB/s",
    low=0.1,
    low_open=False,
    low_why="100 MB/s, a fifth of one SATA SSD; at 1e-300 GB/s fetching 1K tokens read "
    "a 300-digit ms (the SSD tier's value its negative)",
)
DWPD = Bound(1_000, "drive writes/day", "100x the most durable SLC drives, about 10 DWPD")
WARRANTY_YEARS = Bound(50, "years", "10x the usual 5-year drive warranty")


# --- procurement: servers, power, space, headroom ---------------------------------------

POWER_KW = Bound(
    10_000_000, "kW", "10x the largest data-centre campus planned, about 1 GW", low_open=False
)
RACKS = Bound(1_000_000, "racks", "20x the racks of the largest data centre, about 50,000")
KW_PER_RACK = Bound(1_000, "kW", "7x an NVL72 rack, about 132 kW")
PUE = Bound(
    3.0,
    "",
    "power usage effectiveness is 1.1-1.6 in modern data centres; above 3 is a units mistake",
    low=1.0,
    low_open=False,
)
SERVER_POWER_FACTOR = Bound(
    5.0,
    "",
    "a server drawing 5x its GPUs' board power is a GPU-less server; DGX H100 is 1.82x",
    low=1.0,
    low_open=False,
)
CONFIGS_PER_POOL = Bound(
    64,
    "configurations",
    "more configurations per pool than the candidates ever kept",
    low=1.0,
    low_open=False,
)
MAX_UTILIZATION = Bound(
    1.0,
    "",
    "a fraction of the capacity at the SLO",
    high_open=False,
    low=0.01,
    low_open=False,
    low_why="below 1% a fleet is over 100x what its load needs; at 1e-300 the program's "
    "coefficients underflowed and the solver failed",
)
EFFICIENCY_FRACTION = Bound(
    1.0,
    "",
    "a fraction of the datasheet peak",
    low=0.01,
    low_open=False,
    low_why="an engine reaching under 1% of peak is misconfigured (the calibrated fractions "
    "lie between 0.19 and 1); " + _STEP_OVERFLOW,
)
DEMAND_GROWTH = Bound(
    1_000,
    "",
    "demand 1,000x today's is a different service, not growth",
    low=1e-3,
    low_open=False,
    low_why="demand 1,000x below today's is a different service, not a forecast; at 1e-300 "
    "the plan bought no GPU at all",
)
DRAFT_TOKENS = Bound(
    16,
    "tokens",
    "engines draft 1-8 tokens; past 16 even a = 0.9 adds under 0.2 token per cycle",
    low=1.0,
    low_open=False,
)
ACCEPTANCE_RATE = Bound(1.0, "", "a probability", low_open=False, high_open=False)
DRAFT_COST_RATIO = Bound(
    1.0, "", "a drafter as slow as the target can never pay for itself", low_open=True
)
SPECULATIVE_OPTIONS = Most(
    16, "speculative options", "each doubles the candidates of every workload it applies to"
)

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


THREADS = Bound(
    1024, "threads", "the largest servers run 768 hardware threads", low=1.0, low_open=False
)
"""`solver.threads`: an instance written for a bigger machine is valid on this one, whose
solver runs min(threads, `max_threads()`), with a warning (models.schema.checks)."""


def max_threads() -> int:
    """Threads the solver runs on this machine: the CPUs this process may use.

    More threads than cores only oversubscribes; 100,000 requested threads hang it.
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
