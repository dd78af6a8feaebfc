"""The back-of-envelope fleet estimate: from a daily request volume to GPUs, logs and an
error budget, every step a named formula.

`estimate(assumptions)` is a pure function from a frozen `EstimateAssumptions` to a frozen
`EstimateResult`. Its defaults are the usual worked example of LLM chat sizing: 2M
requests a day, 4x peak, 6 s per request, 1,500 prompt and 400 output tokens, an assumed
2,000 output tokens/s per GPU at 60% planned utilisation, 40 sequences per GPU, a 99.9%
SLO over 30 days. With a model and a GPU (`estimate_with_model`) the throughput, the
request duration and the sequences per GPU come from the performance model's operating
point instead, and a capacity taken at a latency target gets no utilisation ceiling.
The figures are estimates from stated assumptions, not measurements.
Reading them from flags and a config file is the command line's job
(`cli.estimate_config`).

The steps:

    avg_qps          = requests_per_day / 86,400
    peak_qps         = avg_qps x peak_to_average
    in_flight        = peak_qps x latency_s                           (Little's law)
    peak_output_tps  = peak_qps x output_tokens
    gpus_by_throughput  = peak_output_tps / (gpu_tokens_per_s x target_utilization)
    gpus_by_concurrency = in_flight / (seqs_per_gpu x target_utilization)
    gpus             = ceil(max of the two) + 1                       (N+1 spare)
                       in whole replicas of g GPUs with a model: g ceil(max / g) + g
    log_gb_per_day   = requests_per_day x (input + output tokens) x bytes_per_token / 1e9
    M/M/1 multiplier = 1 / (1 - rho)
    error budget     = (1 - slo) x window minutes, x requests in the window
    burn             = error_rate / (1 - slo); budget used = burn x hours / window hours
"""

import math
from dataclasses import dataclass, replace
from typing import Annotated, Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from models.operations.slo import (
    BurnRateAlert,
    BurnScenario,
    ZoneLossLayout,
    burn_scenario,
    error_budget_fraction,
    error_budget_minutes,
    error_budget_requests,
    gpus_to_survive_zone_loss,
    multiwindow_burn_alerts,
    zone_loss_overprovision_factor,
)
from models.physics.efficiency import efficiency_for
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.precision import Precision
from models.schema import flag_limits, limits
from models.schema.errors import InputError, Issue
from models.schema.quantities import NUMBER_NOT_BOOLEAN, real, whole
from models.schema.traffic import HOURS_PER_DAY
from models.serving.capacity import replica_capacity
from models.serving.queueing import (
    SEED_MM1_UTILIZATIONS,
    littles_law_in_system,
    mm1_multiplier_table,
)
from models.serving.replica import (
    LatencyTargets,
    ReplicaCapacity,
    Role,
    TrafficMix,
    replica_of_pool,
)

SECONDS_PER_DAY = 86_400
MINUTES_PER_DAY = 24 * 60
LOG_RETENTION_DAYS = 30
"""Log volume is also reported per 30 days, whatever the SLO window."""
TP_CHOICES = (1, 2, 4, 8)
ASSUMED_SOURCE = "assumed gpu_tokens_per_s (not measured)"


Number = Annotated[float, NUMBER_NOT_BOOLEAN]
"""A number of an estimate's config: never `true` nor text (`hours: "2"` was read as 2)."""


class Incident(BaseModel):
    """A steady error rate held for some hours: give `burn_rate` (a multiple of the error
    budget, so it follows the SLO) or `error_rate` (a fraction of requests)."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    burn_rate: Number | None = Field(default=None, ge=0)
    """Error rate over the budget: 1.0 spends the budget exactly over the window."""
    error_rate: Number | None = Field(default=None, ge=0, le=1)
    """Fraction of requests that fail."""
    hours: Number | None = Field(default=None, gt=0)
    """How long it lasts; None for the whole SLO window."""

    @model_validator(mode="after")
    def _one_rate(self) -> Self:
        if (self.burn_rate is None) == (self.error_rate is None):
            raise ValueError("give either burn_rate or error_rate")
        return self


SEED_INCIDENTS = (
    Incident(burn_rate=1.0),
    Incident(burn_rate=14.4, hours=1.0),
    Incident(burn_rate=50.0, hours=0.33),
)
"""On budget for the whole window; the 14.4x fast-burn page threshold for an hour; a
50x incident for 20 minutes (0.33 h)."""

Utilization = Annotated[float, NUMBER_NOT_BOOLEAN, Field(ge=0, lt=1)]


SPREAD_ZONES = replace(
    limits.ZONES, low=2.0, low_why="surviving the loss of one zone needs another to serve"
)
"""Zones the estimate spreads a fleet over: those of a region, and at least two."""


TABLE_ROWS = 100
"""Most rows of a table an estimate prints (utilisations, incidents): a config of 200,000
utilisations printed 5 MB of table with exit 0; a hundred is past any reading."""


class EstimateAssumptions(BaseModel):
    """Every assumption of the estimate; the defaults are the worked example."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    requests_per_day: real(limits.ESTIMATED_REQUESTS_PER_DAY) = 2_000_000.0
    """Requests in an average day."""
    peak_to_average: real(limits.PEAK_TO_AVERAGE) = 4.0
    """Peak-hour rate over the daily average rate."""
    latency_s: real(flag_limits.REQUEST_LATENCY_S) = 6.0
    """End-to-end seconds per (streamed) request: the W of Little's law."""
    input_tokens: real(flag_limits.PROMPT_TOKENS) = 1500.0
    """Prompt tokens per request."""
    output_tokens: real(limits.TOKENS) = 400.0
    """Output tokens per request."""
    gpu_tokens_per_s: real(flag_limits.GPU_TOKENS_PER_S) = 2000.0
    """Output tokens/s one GPU generates under batching (an assumption to measure)."""
    target_utilization: real(limits.MAX_UTILIZATION) = 0.6
    """Planned utilisation at peak, of both throughput and sequence slots."""
    seqs_per_gpu: real(flag_limits.SEQUENCES_PER_GPU) = 40.0
    """Concurrent sequences one GPU's memory holds (KV cache)."""
    slo: real(limits.AVAILABILITY) = 0.999
    """Target fraction of good requests."""
    window_days: real(flag_limits.SLO_WINDOW_DAYS) = 30.0
    """SLO window in days."""
    bytes_per_token: real(flag_limits.BYTES_PER_TOKEN) = 4.0
    """Bytes of logged text per token (about 4 for English)."""
    zones: whole(SPREAD_ZONES) | None = None
    """Zones (or regions) the fleet spreads over to survive losing one; None: not asked."""
    mm1_utilizations: tuple[Utilization, ...] = Field(
        default=SEED_MM1_UTILIZATIONS, min_length=1, max_length=TABLE_ROWS
    )
    """Utilisations of the M/M/1 latency table."""
    incidents: tuple[Incident, ...] = Field(default=SEED_INCIDENTS, max_length=TABLE_ROWS)
    """Incidents to price against the error budget."""

    @model_validator(mode="after")
    def _incident_rates(self) -> Self:
        budget = 1 - self.slo
        for index, incident in enumerate(self.incidents):
            if incident.burn_rate is not None and incident.burn_rate * budget > 1:
                raise ValueError(
                    f"incidents[{index}]: burn rate {incident.burn_rate:g} means an error rate "
                    f"of {incident.burn_rate * budget:.0%} at SLO {self.slo:g}; at most "
                    f"{1 / budget:g}"
                )
        return self


@dataclass(frozen=True)
class EstimateResult:
    """Every figure of the estimate, with the assumptions it came from."""

    assumptions: EstimateAssumptions
    throughput_source: str
    """Where gpu_tokens_per_s came from: the assumption, or the performance model."""
    avg_qps: float
    peak_qps: float
    in_flight: float
    """Requests in the system at peak (Little's law)."""
    peak_output_tokens_per_s: float
    gpus_by_throughput: float
    gpus_by_concurrency: float
    binding: str
    """Which count is larger: `throughput` or `concurrency`."""
    gpus_fractional: float
    """max(gpus_by_throughput, gpus_by_concurrency), before rounding up."""
    gpus_needed: int
    """ceil(max(gpus_by_throughput, gpus_by_concurrency)), in whole replicas of
    `gpus_per_replica` GPUs: g ceil(max / g)."""
    gpus: int
    """gpus_needed + one spare replica (N+1): gpus_needed + gpus_per_replica."""
    gpus_per_replica: int
    """GPUs of one replica (the model's TP x PP layout; 1 for the assumed per-GPU
    figures), the unit the N+1 spare comes in."""
    bytes_per_request: float
    log_gb_per_day: float
    log_tb_per_30_days: float
    mm1: tuple[tuple[float, float], ...]
    """(utilisation, mean time in system over service time) pairs."""
    error_budget_fraction: float
    window_minutes: float
    error_budget_minutes: float
    requests_in_window: float
    error_budget_requests: float
    burn: tuple[BurnScenario, ...]
    alerts: tuple[BurnRateAlert, ...]
    zone_overprovision_factor: float | None
    zone_layout: ZoneLossLayout | None
    """GPUs per zone to survive one zone loss (from gpus_needed), when zones are given."""

    @property
    def gpus_to_survive_zone_loss(self) -> int | None:
        """Total GPUs over all zones to survive losing one, or None without zones."""
        return None if self.zone_layout is None else self.zone_layout.total_gpus

    def to_json(self) -> dict[str, Any]:
        """The figures under their documented JSON names."""
        data: dict[str, Any] = {
            "assumptions": self.assumptions.model_dump(mode="json"),
            "throughput_source": self.throughput_source,
            "avg_qps": self.avg_qps,
            "peak_qps": self.peak_qps,
            "in_flight": self.in_flight,
            "peak_output_tokens_per_s": self.peak_output_tokens_per_s,
            "gpus_by_throughput": self.gpus_by_throughput,
            "gpus_by_concurrency": self.gpus_by_concurrency,
            "binding": self.binding,
            "gpus_needed": self.gpus_needed,
            "gpus": self.gpus,
            "gpus_per_replica": self.gpus_per_replica,
            "bytes_per_request": self.bytes_per_request,
            "log_gb_per_day": self.log_gb_per_day,
            "log_tb_per_30_days": self.log_tb_per_30_days,
            "mm1": {f"{rho:g}": multiplier for rho, multiplier in self.mm1},
            "error_budget_fraction": self.error_budget_fraction,
            "error_budget_minutes": self.error_budget_minutes,
            "requests_in_window": self.requests_in_window,
            "error_budget_requests": self.error_budget_requests,
            "burn": [
                {
                    "error_rate": item.error_rate,
                    "hours": item.duration_h,
                    "burn_rate": item.burn_rate,
                    "budget_consumed": item.budget_consumed,
                    "hours_to_exhaustion": _finite(item.hours_to_exhaustion),
                }
                for item in self.burn
            ],
            "alerts": [
                {
                    "severity": alert.policy.severity,
                    "budget_fraction": alert.policy.budget_fraction,
                    "long_window_h": alert.policy.long_window_h,
                    "short_window_h": alert.policy.short_window_h,
                    "burn_rate": alert.burn_rate,
                    "error_rate": alert.error_rate,
                }
                for alert in self.alerts
            ],
        }
        if self.zone_layout is not None:
            data["zones"] = self.zone_layout.zones
            data["zone_overprovision_factor"] = self.zone_overprovision_factor
            data["gpus_to_survive_zone_loss"] = self.zone_layout.total_gpus
            data["gpus_per_zone"] = list(self.zone_layout.gpus_per_zone)
        return _tidy(data)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _tidy(value: Any) -> Any:
    """Floats to 12 significant digits, so 1 - 0.999 reads 0.001 rather than
    0.0010000000000000009 (far below any figure's precision)."""
    if isinstance(value, float):
        return float(f"{value:.12g}")
    if isinstance(value, dict):
        return {key: _tidy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_tidy(item) for item in value]
    return value


def whole_gpus(gpus: float) -> int:
    """ceil(gpus), forgiving float noise of 1e-9 (24.000000000000004 is 24 GPUs)."""
    return math.ceil(round(gpus, 9))


_DRIVERS = {
    "throughput": "requests_per_day x peak_to_average x output_tokens / "
    "(gpu_tokens_per_s x target_utilization)",
    "concurrency": "requests_per_day x peak_to_average x latency_s / "
    "(seqs_per_gpu x target_utilization)",
}


def _check_fleet_size(gpus: float, binding: str) -> None:
    """Refuse assumptions whose fleet exceeds `limits.GPU_COUNT`: each input within its
    own bound can still multiply to 10^300 GPUs (seqs_per_gpu 1e-300), printed as a
    300-digit count with exit 0.

    Raises:
        InputError: naming the figures that multiply to the count and the bound.
    """
    bound = limits.GPU_COUNT
    if gpus <= bound.high:
        return
    message = (
        f"the assumptions need {gpus:.3g} GPUs by {binding} ({_DRIVERS[binding]}); at most "
        f"{bound.high:,.0f} {bound.unit} ({bound.why})"
    )
    raise InputError([Issue("assumptions", None, "", message)])


def estimate(
    assumptions: EstimateAssumptions,
    throughput_source: str = ASSUMED_SOURCE,
    gpus_per_replica: int = 1,
) -> EstimateResult:
    """The back-of-envelope sizing of `assumptions` (formulas in the module docstring).

    Throughput and concurrency each give a GPU count at the target utilisation; the
    larger binds, rounded up to whole replicas of `gpus_per_replica` GPUs, plus one spare
    replica (a TP2 replica's N+1 is two GPUs: one GPU more serves nothing). With `zones`,
    the fleet from the same rounded need is spread so that losing any one zone keeps it
    (N / (N - 1) over). Traffic is taken as uniform within the SLO window for the error budget.
    """
    a = assumptions
    avg_qps = a.requests_per_day / SECONDS_PER_DAY
    peak_qps = avg_qps * a.peak_to_average
    in_flight = littles_law_in_system(peak_qps, a.latency_s)
    peak_output_tokens_per_s = peak_qps * a.output_tokens
    gpus_by_throughput = peak_output_tokens_per_s / (a.gpu_tokens_per_s * a.target_utilization)
    gpus_by_concurrency = in_flight / (a.seqs_per_gpu * a.target_utilization)
    binding = "throughput" if gpus_by_throughput >= gpus_by_concurrency else "concurrency"
    gpus_fractional = max(gpus_by_throughput, gpus_by_concurrency)
    _check_fleet_size(gpus_fractional, binding)
    gpus_needed = whole_gpus(gpus_fractional / gpus_per_replica) * gpus_per_replica

    bytes_per_request = (a.input_tokens + a.output_tokens) * a.bytes_per_token
    log_gb_per_day = a.requests_per_day * bytes_per_request / 1e9

    budget = error_budget_fraction(a.slo)
    requests_in_window = a.requests_per_day * a.window_days
    window_h = a.window_days * HOURS_PER_DAY
    burn = tuple(
        burn_scenario(
            incident.error_rate if incident.error_rate is not None else incident.burn_rate * budget,
            incident.hours if incident.hours is not None else window_h,
            a.slo,
            a.window_days,
        )
        for incident in a.incidents
    )
    zone_factor, zone_layout = None, None
    if a.zones is not None:
        zone_factor = zone_loss_overprovision_factor(a.zones)
        zone_layout = gpus_to_survive_zone_loss(gpus_needed, a.zones)
    return EstimateResult(
        assumptions=a,
        throughput_source=throughput_source,
        avg_qps=avg_qps,
        peak_qps=peak_qps,
        in_flight=in_flight,
        peak_output_tokens_per_s=peak_output_tokens_per_s,
        gpus_by_throughput=gpus_by_throughput,
        gpus_by_concurrency=gpus_by_concurrency,
        binding=binding,
        gpus_fractional=gpus_fractional,
        gpus_needed=gpus_needed,
        gpus=gpus_needed + gpus_per_replica,
        gpus_per_replica=gpus_per_replica,
        bytes_per_request=bytes_per_request,
        log_gb_per_day=log_gb_per_day,
        log_tb_per_30_days=log_gb_per_day * LOG_RETENTION_DAYS / 1000,
        mm1=mm1_multiplier_table(a.mm1_utilizations),
        error_budget_fraction=budget,
        window_minutes=a.window_days * MINUTES_PER_DAY,
        error_budget_minutes=error_budget_minutes(a.slo, a.window_days),
        requests_in_window=requests_in_window,
        error_budget_requests=error_budget_requests(a.slo, requests_in_window),
        burn=burn,
        alerts=multiwindow_burn_alerts(a.slo, a.window_days),
        zone_overprovision_factor=zone_factor,
        zone_layout=zone_layout,
    )


# ---- per-GPU throughput from the performance model ----------------------------------


class NoServingConfig(Exception):
    """No tensor-parallel layout of the model on the GPU fits or meets the targets."""

    def __init__(self, message: str, candidates: tuple[ReplicaCapacity, ...]):
        self.candidates = candidates
        super().__init__(message)


@dataclass(frozen=True)
class ModelThroughput:
    """Per-GPU output throughput of the best layout of a model on a GPU."""

    best: ReplicaCapacity
    candidates: tuple[ReplicaCapacity, ...]
    """Every layout tried, in TP order, whether or not it fits."""
    targets: LatencyTargets

    @property
    def gpu_tokens_per_s(self) -> float:
        """Output tokens/s per GPU of the best layout at its operating point."""
        return self.best.output_tokens_per_s_per_gpu

    @property
    def request_duration_s(self) -> float:
        """Mean seconds a request spends in the best layout at its operating point: its
        prefill, then B / lambda of decoding (Little's law on the B sequences decoding,
        which leave at lambda requests/s: O t(B), or O t(B) / E with speculation)."""
        best = self.best
        return best.prefill_s + best.batch / best.requests_per_s

    @property
    def seqs_per_gpu(self) -> float:
        """Requests in one replica at the operating point, per GPU: lambda x the request
        duration / GPUs per replica = (B + lambda x prefill) / GPUs (Little's law: the B
        decoding and those in their prefill)."""
        best = self.best
        return best.requests_per_s * self.request_duration_s / best.config.gpus

    @property
    def at_slo(self) -> bool:
        """Whether the capacity was taken at a latency target (its p99 already holds the
        SLO, so no utilisation ceiling belongs on top)."""
        return not self.targets.is_offline

    @property
    def source(self) -> str:
        """One line saying where the throughput came from."""
        slo = "no latency target" if self.targets.is_offline else _targets_text(self.targets)
        return (
            f"performance model: {self.best.config.label}, "
            f"{self.gpu_tokens_per_s:,.0f} output tok/s per GPU "
            f"(limited by {self.best.limit}; {slo})"
        )


def _targets_text(targets: LatencyTargets) -> str:
    parts = []
    if targets.ttft_p99_s is not None:
        parts.append(f"p99 TTFT {targets.ttft_p99_s * 1e3:g} ms")
    if targets.tpot_p99_s is not None:
        parts.append(f"p99 TPOT {targets.tpot_p99_s * 1e3:g} ms")
    return ", ".join(parts)


def model_throughput(
    llm: LlmSpec,
    gpu: GpuSpec,
    input_tokens: float,
    output_tokens: float,
    precision: Precision = Precision.BF16,
    targets: LatencyTargets | None = None,
    tp_choices: tuple[int, ...] = TP_CHOICES,
    engine: str | None = None,
) -> ModelThroughput:
    """The best output tokens/s per GPU of `llm` on `gpu` over TP in `tp_choices`.

    Each candidate is a unified replica, TP x 1, weights and KV cache at `precision`,
    serving fixed-length requests of `input_tokens` and `output_tokens`, with the GPU's
    calibrated efficiency factors under the `engine` profile (default: the newest with
    data); `models.serving.capacity.replica_capacity` gives its capacity
    at the targets (or its maximum throughput with none). The candidate with the highest
    output tokens/s per GPU wins.

    Raises:
        NoServingConfig: when no candidate fits and meets the targets; its message gives
            each candidate's reason.
    """
    targets = targets or LatencyTargets()
    mix = TrafficMix.fixed(input_tokens, output_tokens)
    efficiency = efficiency_for(gpu, precision, engine=engine)
    configs = [
        replica_of_pool(
            gpu, llm, precision, None, tp=tp, pp=1, role=Role.UNIFIED, ep=1, dp=1,
            redundant_experts=0, speculation=None,
        )
        for tp in tp_choices
    ]  # fmt: skip
    candidates = tuple(replica_capacity(c, mix, targets, efficiency) for c in configs)
    usable = [c for c in candidates if c.fits and c.meets_slo and c.requests_per_s > 0]
    if not usable:
        within = "" if targets.is_offline else f" within {_targets_text(targets)}"
        reasons = "".join(f"\n  tp{c.config.tp}: {c.reason}" for c in candidates)
        raise NoServingConfig(
            f"no layout of {llm.name} on {gpu.name} at {precision} (TP in "
            f"{', '.join(map(str, tp_choices))}) serves {input_tokens:g} + {output_tokens:g} "
            f"tokens{within}:{reasons}",
            candidates,
        )
    best = max(usable, key=lambda c: c.output_tokens_per_s_per_gpu)
    return ModelThroughput(best=best, candidates=candidates, targets=targets)


def estimate_with_model(
    assumptions: EstimateAssumptions, throughput: ModelThroughput
) -> EstimateResult:
    """`estimate` with the performance model's operating point in place of the assumed
    figures: gpu_tokens_per_s, the request duration (`latency_s`, from
    `ModelThroughput.request_duration_s`) and the sequences per GPU (`seqs_per_gpu`).

    With a latency target the capacity is already the most one replica carries within
    the p99 SLO, so the planned utilisation is 1 (a ceiling on top would count the
    queueing margin twice); without one (maximum throughput) the assumption's
    utilisation stays. Then the throughput and concurrency counts agree: both are
    peak_qps / (requests/s per replica) x GPUs per replica, over the utilisation.
    """
    update: dict[str, float] = {"gpu_tokens_per_s": throughput.gpu_tokens_per_s}
    if throughput.best.batch > 0 and throughput.best.requests_per_s > 0:
        update["latency_s"] = throughput.request_duration_s
        update["seqs_per_gpu"] = throughput.seqs_per_gpu
    if throughput.at_slo:
        update["target_utilization"] = 1.0
    updated = assumptions.model_copy(update=update)
    return estimate(updated, throughput.source, throughput.best.config.gpus)
