"""Annotated types for the instance schema: one per kind of quantity, each finite and
bounded by the `models/schema/limits.py` entry that says why.

A field declared `peak_requests_per_s: RequestRate` rejects NaN, infinity, negatives,
10^37 and `true` alike, with a message that gives the bound, its unit and its reason:
`must be at most 10,000,000 requests/s, got 1e+37 (the bound: 100x the peak of ...)`.
"""

import math
import re
from collections.abc import Sized
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field

from models.io.numbers import is_decimal
from models.schema import catalog_limits, limits, reading_limits
from models.schema.limits import Bound, Most


def describe(value: float) -> str:
    """A number as a message shows it, safe for integers of any size."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        if value.bit_length() > 50:  # the sign kept: -2^63 read 'an integer of about 10^19'
            sign = "-" if value < 0 else ""
            return f"an integer of about {sign}10^{int(value.bit_length() * math.log10(2))}"
        return f"{value:,}"
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e15:
        return f"{int(value):,}"
    return f"{value:g}"


def long_name(name: str) -> str | None:
    """Why `name` is too long for a report's line (None where it fits): an instance's
    names' bound, reading_limits.MAX_NAME_CHARS, for names given elsewhere (a profile's)."""
    if len(name) <= reading_limits.MAX_NAME_CHARS:
        return None
    most = reading_limits.MAX_NAME_CHARS
    return f"is {len(name):,} characters; a name is at most {most} (MAX_NAME_CHARS)"


def counted(count: float, noun: str, many: str | None = None) -> str:
    """`count` and its noun, the noun in the plural unless the count is one:
    "1 period", "3 periods", "1,024 GPUs"; `many` for a plural not made with an -s
    (counted(2, "entry", "entries"))."""
    return f"{describe(count)} {noun if count == 1 else many or noun + 's'}"


def out_of_range(value: float, bound: Bound) -> str | None:
    """Why `value` is not finite or lies outside `bound`, or None when it is fine."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"must be a finite number, got {value}"
    unit = f" {bound.unit}" if bound.unit else ""
    low_fails = value <= bound.low if bound.low_open else value < bound.low
    if low_fails:
        relation = "greater than" if bound.low_open else "at least"
        floor = f" (the floor: {bound.low_why})" if bound.low_why else ""
        low = counted(bound.low, bound.unit[:-1], bound.unit) if _a_count(bound) else ""
        low = low or f"{describe(bound.low)}{unit}"  # "at least 1 token", "at least 1 GiB"
        return f"must be {relation} {low}, got {describe(value)}{floor}"
    high_fails = value >= bound.high if bound.high_open else value > bound.high
    if high_fails:
        relation = "below" if bound.high_open else "at most"
        return (
            f"must be {relation} {describe(bound.high)}{unit}, got {describe(value)} "
            f"(the bound: {bound.why})"
        )
    return None


def _a_count(bound: Bound) -> bool:
    """Whether the bound's unit is a plural noun of things counted ("tokens", "GPUs"), one
    word ending in s, not a unit symbol ("ms", "s", "requests/s")."""
    return bool(re.fullmatch(r"[A-Za-z]{2,}s", bound.unit)) and bound.unit not in ("ms",)


def _check_within(bound: Bound):
    def check(value: float) -> float:
        problem = out_of_range(value, bound)
        if problem:
            raise ValueError(problem)
        return value

    return check


def _schema_of(bound: Bound) -> dict[str, Any]:
    low_key = "exclusiveMinimum" if bound.low_open else "minimum"
    high_key = "exclusiveMaximum" if bound.high_open else "maximum"
    return {low_key: bound.low, high_key: bound.high}


def not_a_boolean(value: Any) -> Any:
    """Refuse what is not a number where a number belongs: pydantic's lax mode reads
    `true`/`false` as 1 and 0 (`max_gpus: yes`, YAML 1.1's true, offered one GPU) and text
    as the number it spells (`max_gpus: "64"` offered 64 GPUs, `"6_4"` too: PEP 515's
    separator). One rule: a number the user quoted is text, and a numeric field refuses
    text, showing it. Unquoted, a scalar is what YAML 1.2's core schema reads
    (models.physics.yaml_files.CORE_SCALARS): `1e9` a number, `6_4` and `on` text."""
    if isinstance(value, bool):
        raise ValueError(f"must be a number, got {str(value).lower()} (a boolean is not a number)")
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        if is_decimal(value):
            raise ValueError(
                f"must be a number, got the text {shown!r}: a number in quotes is text; "
                "write it without quotes"
            )
        raise ValueError(f"must be a number, got the text {shown!r}{_spelling(value)}")
    return value


def number_text(text: str) -> None:
    """Refuse a command-line number's text that only Python reads as one (`1_000_000`,
    other scripts' digits), by the rule of the CSV readers (models.io.numbers); a decimal
    as `float` writes one passes. Raises ValueError naming the text."""
    if not is_decimal(text) and _python_reads(text):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ValueError(f"must be a number, got the text {shown!r}{_spelling(text)}")


def _spelling(text: str) -> str:
    """What is wrong with a number's spelling that Python reads (separators, other
    scripts' digits), or "" for text that is no number at all."""
    if not _python_reads(text):
        return ""
    return ": write ASCII digits without separators ('_') or other scripts' digits"


def _python_reads(text: str) -> bool:
    """Whether Python's `float` reads `text` as a number (`1_6`, Arabic-Indic digits)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


NUMBER_NOT_BOOLEAN = BeforeValidator(not_a_boolean)
"""`not_a_boolean` as a validator, for every numeric field (`real`, `whole`, and the
plain numbers of the schema)."""


def whole(bound: Bound) -> Any:
    """An integer within `bound` (a boolean, floats with a fraction and huge integers
    rejected)."""
    return Annotated[
        int,
        Field(json_schema_extra=_schema_of(bound)),
        NUMBER_NOT_BOOLEAN,
        AfterValidator(_check_within(bound)),
    ]


MAX_PLAN_TEXT_CHARS = 65_536
"""Longest text one field of a plan may hold: the longest a plan writes is a note (396
characters in the shipped plans) or a shared group's name (members' names of at most
reading_limits.MAX_NAME_CHARS joined by `+`); a 10 MiB region name in a hand-edited plan was
printed whole in two violations (20 MB on stderr)."""

PlanInteger = whole(limits.PLAN_INTEGER)
"""Every integer of a plan (a count, a layout degree, a month): never `true` (pydantic
reads it as 1) and within limits.PLAN_INTEGER (10^400 replicas overflowed a float)."""


def real(bound: Bound) -> Any:
    """A finite float within `bound` (a boolean refused, NaN and infinity rejected before
    the range)."""
    return Annotated[
        float,
        Field(json_schema_extra=_schema_of(bound)),
        NUMBER_NOT_BOOLEAN,
        AfterValidator(_check_within(bound)),
    ]


def _check_count(most: Most):
    def check(value: Any) -> Any:
        if isinstance(value, Sized) and not isinstance(value, str) and len(value) > most.count:
            raise ValueError(
                f"has {len(value):,} entries; at most {most.count:,} {most.what} "
                f"are allowed ({most.why})"
            )
        return value

    return check


def at_most(most: Most) -> BeforeValidator:
    """A length check that runs before the entries are validated (so 10^5 regions fail
    at once, not after 10^5 validations). Use as `Annotated[list[X], at_most(REGIONS)]`."""
    return BeforeValidator(_check_count(most))


def _once_each(values: list) -> list:
    """A list of choices with each at most once: `tensor_parallel: [1, 1]` was read as
    [1], one of the two values dropped without a word."""
    seen, twice = set(), []
    for value in values:
        if value in seen and value not in twice:
            twice.append(value)
        seen.add(value)
    if twice:
        shown = ", ".join(str(getattr(value, "value", value)) for value in twice)
        raise ValueError(f"lists {shown} twice; give each choice once")
    return values


ONCE_EACH = AfterValidator(_once_each)
"""Refuses a choice listed twice (use as `Annotated[list[X], at_most(...), ONCE_EACH]`)."""


def _nameable(path: str) -> str:
    """A path the system can look up: a NUL character (YAML's "\\0", JSON's "\\u0000")
    ends a C string, and every file call raised ValueError on it (exit 70 from validate,
    solve and sweep where `engine`, `models[].config` or a grid's `instance` held one)."""
    if "\x00" in path:
        raise ValueError("holds a NUL character (\\0), which no file or profile name can hold")
    return path


FilePath = Annotated[
    str, Field(min_length=1, max_length=reading_limits.MAX_PATH_CHARS), AfterValidator(_nameable)
]
"""A file an input names (an engine profile, a config.json, a grid's base instance)."""


RequestRate = real(limits.REQUEST_RATE)
"""Requests per second."""
RequestsPerDay = real(limits.REQUESTS_PER_DAY)
"""Requests in one day."""
PeakToAverage = real(limits.PEAK_TO_AVERAGE)
"""Peak rate over the daily mean rate, >= 1."""
Tokens = real(limits.TOKENS)
"""A token length (may be fractional: a mean)."""
TokenCount = whole(limits.TOKENS)
"""A whole number of tokens (a context window, a chunk)."""
HistogramWeight = real(limits.HISTOGRAM_WEIGHT)
"""A relative weight of a histogram bucket."""
HourlyWeight = real(limits.HOURLY_WEIGHT)
"""A relative weight of one hour of the day (0 allowed: an hour without traffic)."""
HitRate = real(limits.HIT_RATE)
"""A fraction in [0, 1)."""
QualityDelta = real(limits.QUALITY_DELTA)
"""A change of a quality metric, its own units (negative: worse)."""
QualityRegression = real(limits.QUALITY_REGRESSION)
"""The largest drop of a quality metric allowed, its own units (>= 0)."""
Availability = real(limits.AVAILABILITY)
"""A fraction in (0, 1)."""
LatencyMs = real(limits.LATENCY_MS)
"""A latency target, milliseconds."""
RttMs = real(limits.RTT_MS)
"""A network round trip, milliseconds, >= 0."""
VoiceStageMs = real(limits.VOICE_STAGE_MS)
"""One fixed line of a voice latency budget, milliseconds, >= 0."""
TtftShare = real(limits.TTFT_SHARE)
FirstClauseTokens = whole(limits.FIRST_CLAUSE_TOKENS)
"""A fraction in (0, 1): TTFT's share of the LLM's voice allowance."""
UsdPerGpuHour = real(limits.USD_PER_GPU_HOUR)
"""A price, USD per GPU-hour."""
GpuCount = whole(limits.GPU_COUNT)
"""A number of GPUs, >= 0."""
Zones = whole(limits.ZONES)
"""Availability zones of one region."""
ParallelDegree = whole(limits.PARALLEL_DEGREE)
"""A tensor- or pipeline-parallel degree."""
RedundantExperts = whole(limits.REDUNDANT_EXPERTS)
"""Redundant (replicated) routed experts per MoE layer, on top of the model's own."""
HoursPerMonth = real(limits.HOURS_PER_MONTH)
"""Hours billed per month."""
HOURS_PER_MONTH = 730
"""Hours in an average month, 8,760 h a year / 12: the default of `policy.hours_per_month`
and of every month-long budget (an instance's own value is bounded by
`limits.HOURS_PER_MONTH`, a 31-day month)."""
TimeLimitS = real(limits.TIME_LIMIT_S)
"""A solver time limit, seconds."""
MipGap = real(limits.MIP_GAP)
"""A relative MIP gap in [0, 1)."""
Threads = whole(limits.THREADS)
"""Solver threads: the solver runs at most this machine's CPU count of them."""
StartTimeS = real(limits.START_TIME_S)
"""Seconds for a replica to become ready."""
StepLatencyS = real(limits.STEP_LATENCY_S)
"""A fixed per-step or per-collective latency, seconds."""
BatchSequences = whole(limits.BATCH_SEQUENCES)
"""Sequences an engine keeps in flight."""
HbmGib = real(catalog_limits.HBM_GIB)
"""Device memory, GiB."""
HbmTbS = real(catalog_limits.HBM_TB_S)
"""Memory bandwidth, TB/s."""
Tflops = real(catalog_limits.TFLOPS)
"""Dense peak TFLOPS."""
ScaleupGbS = real(catalog_limits.SCALEUP_GB_S)
"""Scale-up bandwidth per GPU per direction, GB/s."""
ScaleoutGbitS = real(catalog_limits.SCALEOUT_GBIT_S)
"""Scale-out NIC bandwidth per GPU, Gbit/s."""
GpusPerNode = whole(catalog_limits.GPUS_PER_NODE)
"""GPUs in one scale-up domain."""
SmCount = whole(catalog_limits.SM_COUNT)
"""Streaming multiprocessors (compute units) of one GPU."""
PowerW = real(catalog_limits.POWER_W)
"""Board power, W."""
Layers = whole(catalog_limits.LAYERS)
"""Transformer blocks."""
Shape = whole(catalog_limits.SHAPE)
"""An architecture dimension (width, head count, vocabulary, expert count), >= 0."""
ParamsB = real(catalog_limits.PARAMS_B)
"""Parameters, billions."""
UtcOffsetHours = real(limits.UTC_OFFSET_HOURS)
"""Local time minus UTC, hours."""
Probability = real(limits.PROBABILITY)
SpotConfidence = real(limits.SPOT_CONFIDENCE)
"""A probability in [0, 1)."""
InterruptionsPerHour = real(limits.INTERRUPTIONS_PER_HOUR)
"""Spot interruptions per replica per hour."""
DeadlineHours = real(limits.DEADLINE_HOURS)
"""Hours within which batch work must be served."""
MonthlyGrowth = real(limits.MONTHLY_GROWTH)
"""Demand growth per month as a fraction (> -1)."""
BurstFactor = real(limits.BURST_FACTOR)
"""A multiplier >= 1 on a ramp."""
HorizonMonths = whole(limits.HORIZON_MONTHS)
"""Months of a procurement horizon."""
LeadTimeMonths = whole(limits.LEAD_TIME_MONTHS)
"""Months between order and delivery."""
LoraRank = whole(limits.LORA_RANK)
"""A LoRA adapter's rank."""
Share = real(limits.SHARE)
"""A fraction of requests in (0, 1]."""
PrefixClasses = whole(limits.PREFIX_CLASSES)
"""Distinct prefixes of one class."""
HostMemoryGib = real(limits.HOST_MEMORY_GIB)
"""Host DRAM per GPU, GiB."""
HostLinkGbS = real(limits.HOST_LINK_GB_S)
"""Host-to-GPU bandwidth, GB/s."""
NvmeTb = real(limits.NVME_TB)
"""NVMe capacity per node, TB."""
NvmeGbS = real(limits.NVME_GB_S)
"""NVMe read bandwidth per node, GB/s."""
Dwpd = real(limits.DWPD)
"""Drive writes per day."""
WarrantyYears = real(limits.WARRANTY_YEARS)
"""Years a drive's endurance rating holds over."""
PowerKw = real(limits.POWER_KW)
"""Power a site can feed, kW."""
RackCount = whole(limits.RACKS)
"""Racks of a site."""
KwPerRack = real(limits.KW_PER_RACK)
"""Power one rack can feed, kW."""
Pue = real(limits.PUE)
"""Power usage effectiveness: facility power over IT power, >= 1."""
ServerPowerFactor = real(limits.SERVER_POWER_FACTOR)
"""A server's power over its GPUs' board power, >= 1."""
ConfigsPerPool = whole(limits.CONFIGS_PER_POOL)
"""Replica configurations one pool may mix."""
MaxUtilization = real(limits.MAX_UTILIZATION)
"""A fraction in [0.01, 1] of a pool's capacity at the SLO."""
EfficiencyFraction = real(limits.EFFICIENCY_FRACTION)
"""An achieved fraction of a datasheet peak (FLOPs, bandwidth), in [0.01, 1]."""
DemandGrowth = real(limits.DEMAND_GROWTH)
"""A factor > 0 applied to all demand."""
DraftTokens = whole(limits.DRAFT_TOKENS)
"""k: tokens a speculative drafter proposes per cycle."""
AcceptanceRate = real(limits.ACCEPTANCE_RATE)
"""a: the mean chance a proposed draft token is accepted, in [0, 1]."""
DraftCostRatio = real(limits.DRAFT_COST_RATIO)
"""One draft step's time over one target decode pass at the same batch, in (0, 1]."""
