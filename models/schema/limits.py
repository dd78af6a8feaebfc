"""Every limit fleetplan puts on its input, each with the reason it is where it is.

Numbers are bounded by physical sense: a bound sits an order of magnitude or more beyond
the largest real value known today, so that no real fleet is refused while a units
mistake, a typo or a hostile file (`.inf`, `1e308`, `10**37`) is. Reading is bounded so
that no file can hang or exhaust the machine. The schema (`models/schema/quantities.py`), the
reader (`models/io/loading.py`) and the program-size check use these constants and nothing
else; change a limit here and every message that names it follows.

This module holds the list lengths and the bounds on the instance's values; three rooms
beside it hold the rest, each with its reasons: reading a file (models.schema.reading_limits),
a catalog entry's hardware and architecture (models.schema.catalog_limits), and the
calculators' command-line flags and replays (models.schema.flag_limits). The program's size
is models.schema.program_limits.
"""

import os
from dataclasses import dataclass, replace

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


STEP_OVERFLOW = "far below it a step takes over 10^154 s and its square overflows"
"""Why a physics figure has a floor above zero: a GPU's bandwidths and compute
(models.schema.catalog_limits) and an engine's efficiency."""

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
"""`perf --length-cv` (it was named LENGTH_CV too, and the flags' LENGTH_CV, then defined later in
this module, replaced it: the flag took up to 100; the flags' bounds are now
models.schema.flag_limits)."""
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
    "lie between 0.19 and 1); " + STEP_OVERFLOW,
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
