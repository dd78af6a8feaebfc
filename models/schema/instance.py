"""The instance file's schema: what a capacity planner writes down.

The top of the document: the instance itself, its regions and their supply, and the
workloads with their SLOs. The catalog entries (`gpus[]`, `models[]`) and their resolution
live in models/schema/catalog_entries.py, the policy and solver sections in
models/schema/policy.py, the checks across sections (`cross_check`, `input_warnings`) in
models/schema/checks.py; bounds in models/schema/limits.py, types in
models/schema/quantities.py.

Every model forbids unknown keys and is frozen. Units live in field names. Catalog
references (`gpus[].name`, `models[].name`) are resolved by `resolve_gpu` and
`resolve_llm`; cross-references between sections are checked by `cross_check`, which
collects every problem at once.
"""

from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import BaseModel, Field, ValidationInfo, model_validator

from models.calculators.voice import Voice, VoiceBudgetError, voice_budget
from models.physics import catalog
from models.physics.efficiency import EfficiencyOverrides
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.profile_files import is_profile_file
from models.physics.speculative import Speculation
from models.schema import limits, reading_limits
from models.schema.catalog_entries import (
    GpuEntry,
    ModelEntry,
    resolve_adapter,
    resolve_gpu,
    resolve_llm,
)
from models.schema.policy import Policy, Quality, SolverSettings
from models.schema.quantities import (
    Availability,
    DeadlineHours,
    DemandGrowth,
    FilePath,
    GpuCount,
    HitRate,
    InterruptionsPerHour,
    KwPerRack,
    LatencyMs,
    MonthlyGrowth,
    PowerKw,
    Probability,
    Pue,
    RackCount,
    RttMs,
    UsdPerGpuHour,
    UtcOffsetHours,
    Zones,
    at_most,
)
from models.schema.strict import STRICT
from models.schema.traffic import Demand, SharedPrefix, TokenDistribution


class Supply(BaseModel):
    """GPUs of one type that can be had in a region, and their price."""

    model_config = STRICT

    max_gpus: GpuCount
    """GPUs that can be bought or rented in addition to the existing fleet."""
    price_per_gpu_hour: UsdPerGpuHour | None = None
    """USD per GPU-hour; default: the catalog price."""
    reserved_price_per_gpu_hour: UsdPerGpuHour | None = None
    """USD per committed GPU-hour, paid every hour of the month whether used or not
    (`models.operations.pricing_tiers`); default: no commitment on offer."""
    max_on_demand_gpus: GpuCount | None = None
    """At most this many GPUs on demand (above the committed count) in any hour;
    default: up to `max_gpus`."""
    spot_price_per_gpu_hour: UsdPerGpuHour | None = None
    """USD per spot GPU-hour (interruptible); default: no spot on offer."""
    spot_interruptions_per_hour: InterruptionsPerHour | None = None
    """Interruptions per spot replica per hour (Poisson); required with a spot price."""

    @model_validator(mode="after")
    def _spot_pair(self) -> Self:
        if (self.spot_price_per_gpu_hour is None) != (self.spot_interruptions_per_hour is None):
            raise ValueError(
                "spot_price_per_gpu_hour and spot_interruptions_per_hour go together: "
                "spot capacity is priced by both its rate and how often it is taken back"
            )
        return self


class Region(BaseModel):
    """A region: its GPU supply, the fleet it already owns, and its zones."""

    model_config = STRICT

    name: str = Field(min_length=1, max_length=reading_limits.MAX_NAME_CHARS)
    """The region's name, as `demand`, `links` and the plan refer to it."""
    supply: Annotated[dict[str, Supply], at_most(limits.GPU_TYPES)] = Field(default_factory=dict)
    """Per GPU type: how many more can be had, at what price."""
    existing: Annotated[dict[str, GpuCount], at_most(limits.GPU_TYPES)] = Field(
        default_factory=dict
    )
    """Per GPU type: GPUs already owned here (already paid for; usable at no cost)."""
    zones: Zones = 1
    """Availability zones; replicas spread evenly over them (`survive: zone`)."""
    utc_offset_hours: UtcOffsetHours = 0.0
    """Local time minus UTC, hours (may be fractional, e.g. 5.5): where this region's
    `hourly_profile` falls on the UTC clock the program plans in."""
    failure_probability_per_year: Probability | None = None
    """Chance the region is lost at least once in a year; default: not stated (no
    expected budget burn is reported)."""
    power_kw: PowerKw | None = None
    """Facility power the region's GPUs may draw, kW: every GPU installed (existing and
    bought) at tdp_w x server power factor x PUE (`models.operations.site`); default: no limit."""
    pue: Pue | None = None
    """Power usage effectiveness of the region's data centre (facility / IT power);
    default: `policy.pue`."""
    racks: RackCount | None = None
    """Racks the region has for GPU servers (with `kw_per_rack`); default: no limit."""
    kw_per_rack: KwPerRack | None = None
    """IT power one rack feeds, kW: it holds the whole servers that fit
    (`models.operations.site`)."""

    @model_validator(mode="after")
    def _racks_pair(self) -> Self:
        if (self.racks is None) != (self.kw_per_rack is None):
            raise ValueError(
                "racks and kw_per_rack go together: a rack holds the servers its power feeds"
            )
        return self

    def offers(self, gpu: str) -> bool:
        """Whether the region offers GPU type `gpu`: a supply entry, or at least one owned."""
        return gpu in self.supply or self.existing.get(gpu, 0) > 0

    def available_gpus(self, gpu: str) -> int:
        """GPUs of type `gpu` the region can field: existing + max_gpus (its supply entry's;
        0 without one)."""
        supply = self.supply.get(gpu)
        return self.existing.get(gpu, 0) + (supply.max_gpus if supply else 0)


class Slo(BaseModel):
    """Latency and availability objectives of one workload. Omit both latency
    targets for an offline workload."""

    model_config = STRICT

    ttft_p99_ms: LatencyMs | None = None
    """99th-percentile time to first token, ms (queue wait + prefill)."""
    tpot_p99_ms: LatencyMs | None = None
    """99th-percentile time per output token, ms."""
    availability: Availability | None = None
    """Fraction of requests that must succeed, e.g. 0.999."""
    max_failover_rtt_ms: RttMs | None = None
    """Users may be served this far away (round trip) when their region is lost;
    default: anywhere reachable over `links`."""
    first_audio_ms: LatencyMs | None = None
    """Voice: p99 time from the end of the user's speech to the first audio of the
    answer, ms. Needs the workload's `voice:` block; the TTFT and TPOT targets are
    derived from what its fixed lines leave (`models.calculators.voice`)."""

    @property
    def is_offline(self) -> bool:
        """No latency target: the batch is as large as memory allows."""
        return self.ttft_p99_ms is None and self.tpot_p99_ms is None and self.first_audio_ms is None


class Workload(BaseModel):
    """One model's traffic: rates per region, token mix and objectives."""

    model_config = STRICT

    name: str = Field(min_length=1, max_length=reading_limits.MAX_NAME_CHARS)
    """The workload's name, as the plan and `--set workloads[NAME]` refer to it."""
    model: str = Field(min_length=1, max_length=reading_limits.MAX_NAME_CHARS)
    """Name of an entry in `models`."""
    demand: Annotated[dict[str, Demand], at_most(limits.REGIONS)] = Field(min_length=1)
    """Per region: a daily volume with a peak factor, or a peak rate."""
    prompt_tokens: TokenDistribution
    """Prompt (input) length per request, tokens: `{mean, p99}` or a histogram."""
    output_tokens: TokenDistribution
    """Reply (output) length per request, tokens: `{mean, p99}` or a histogram."""
    prefix_cache_hit_rate: HitRate = 0.0
    """Fraction of prompt tokens served from a prefix cache (not recomputed): the simple
    form. When given, it is the hit rate used even with `prefixes` declared."""
    prefixes: Annotated[list[SharedPrefix], at_most(limits.PREFIXES)] = Field(default_factory=list)
    """Shared prompt prefixes `{tokens, share, count}`: their KV is held once per replica, not
    per sequence. Without an explicit `prefix_cache_hit_rate` they also set the hit rate:
    sum(share x tokens) / mean prompt over the prefixes a replica holds
    (`models.serving.prefix_routing`); with one, they only set the KV sharing."""
    slo: Slo = Field(default_factory=Slo)
    """Latency and availability targets (p99 TTFT and TPOT, failover round trip)."""
    deadline_hours: DeadlineHours | None = None
    """Batch work: each request may be served any time within this many hours of its
    arrival (no latency SLO); default: interactive."""
    monthly_growth: MonthlyGrowth | None = None
    """Demand growth per month as a fraction (0.05 = +5%/month) over
    `policy.horizon_months`; default: `policy.monthly_growth`."""
    voice: Voice | None = None
    """Voice pipeline lines around the LLM (`network_rtt_ms`, `endpointing_ms`, `asr_ms`,
    `tts_first_audio_ms`, `first_clause_tokens`, `ttft_share`): with
    `slo.first_audio_ms`, they set the LLM's TTFT and TPOT targets."""

    @model_validator(mode="after")
    def _voice_sets_the_llm_targets(self) -> Self:
        """With `slo.first_audio_ms`, the SLO's TTFT and TPOT targets are the ones the
        voice budget leaves (`models.calculators.voice.voice_budget`); given explicitly as well,
        they must equal them (a plan or golden file written by fleetplan holds both)."""
        first_audio = self.slo.first_audio_ms
        if first_audio is None:
            if self.voice is not None:
                raise ValueError(
                    "voice: the voice lines budget slo.first_audio_ms; give "
                    "slo.first_audio_ms (or drop voice:)"
                )
            return self
        if self.voice is None:
            raise ValueError(
                "slo.first_audio_ms needs a voice: block {network_rtt_ms, endpointing_ms, "
                "asr_ms, tts_first_audio_ms, first_clause_tokens} to derive the LLM's targets"
            )
        try:
            budget = voice_budget(first_audio, self.voice)
        except VoiceBudgetError as error:
            raise ValueError(str(error)) from None
        derived = {"ttft_p99_ms": budget.ttft_p99_ms, "tpot_p99_ms": budget.tpot_p99_ms}
        for key, value in derived.items():
            given = getattr(self.slo, key)
            if given is not None and abs(given - value) > 1e-9 * value:
                raise ValueError(
                    f"slo.{key} ({given:g} ms) conflicts with slo.first_audio_ms: the voice "
                    f"budget derives {value:g} ms; drop slo.{key}"
                )
        # The validated workload holds its derived targets, so that every consumer of
        # slo.ttft_p99_ms / tpot_p99_ms (candidates, verifier, simulator) sizes from them.
        object.__setattr__(self, "slo", self.slo.model_copy(update=derived))
        return self

    @model_validator(mode="after")
    def _prefixes_fit_the_prompt(self) -> Self:
        prompt_mean = self.prompt_tokens.mean_tokens
        prompt_p99 = self.prompt_tokens.p99_tokens
        for index, prefix in enumerate(self.prefixes):
            if prefix.tokens > prompt_p99:
                raise ValueError(
                    f"prefixes[{index}].tokens ({prefix.tokens:g}) exceeds the p99 prompt "
                    f"({prompt_p99:g} tokens): a prefix is part of the prompt"
                )
        per_request = sum(p.tokens * p.share * p.count for p in self.prefixes)
        if per_request > prompt_mean:
            raise ValueError(
                f"prefixes: sum(tokens x share x count) = {per_request:g} tokens per request "
                "exceeds "
                f"the mean prompt ({prompt_mean:g} tokens)"
            )
        return self

    @model_validator(mode="after")
    def _batch_has_no_latency_slo(self) -> Self:
        if self.deadline_hours is not None and not self.slo.is_offline:
            raise ValueError(
                "a workload with deadline_hours is batch work and has no latency SLO: "
                "drop slo.ttft_p99_ms and slo.tpot_p99_ms (or drop deadline_hours)"
            )
        return self

    @property
    def is_batch(self) -> bool:
        """Batch work with a deadline rather than a latency SLO."""
        return self.deadline_hours is not None


class Instance(BaseModel):
    """A whole planning question."""

    model_config = STRICT

    name: str = Field(min_length=1, max_length=reading_limits.MAX_NAME_CHARS)
    """The instance's name (shown on every report)."""
    description: str = ""
    """Free text: what the instance is about."""
    gpus: Annotated[list[GpuEntry], at_most(limits.GPU_TYPES)] = Field(min_length=1)
    """GPU types on offer: catalog names, optionally with fields overridden."""
    models: Annotated[list[ModelEntry], at_most(limits.MODELS)] = Field(min_length=1)
    """LLMs to serve: catalog names or Hugging Face configs, with precisions to consider."""
    regions: Annotated[list[Region], at_most(limits.REGIONS)] = Field(min_length=1)
    """Regions where GPUs can be placed: supply, prices, existing fleet, zones, power."""
    links: Annotated[list[tuple[str, str, RttMs]], at_most(limits.LINKS)] = Field(
        default_factory=list
    )
    """Region graph: `[a, b, round-trip ms]`."""
    workloads: Annotated[list[Workload], at_most(limits.WORKLOADS)] = Field(min_length=1)
    """Traffic to serve: a model, demand per region, token lengths and SLOs each."""
    policy: Policy = Field(default_factory=Policy)
    """What the planner may choose and must survive: layouts, failures, purchases."""
    solver: SolverSettings = Field(default_factory=SolverSettings)
    """The MIP solver and its limits."""
    efficiency: EfficiencyOverrides | None = None
    """Overrides of the performance model's efficiency factors, for every GPU."""
    engine: FilePath | None = None
    """The serving engine profile whose calibrated efficiency factors the physics uses
    (`trtllm-0.20`, `trtllm-0.17`; `fleetplan perf --help` lists them), or a profile file
    written by `fleetplan calibrate` (a name ending in .yaml, relative to the instance
    file's folder); default: the newest engine version with calibration data. Every
    report names the profile used."""
    quality: Quality | None = None
    """A quality change declared against a base instance (read by `fleetplan compare`
    only; the plan ignores it)."""
    demand_growth: DemandGrowth | None = None
    """A factor applied to all demand (1.3 plans for 30% more); default:
    `policy.demand_growth`, else 1."""

    @model_validator(mode="before")
    @classmethod
    def _engine_file_beside_the_instance(cls, data: Any, info: ValidationInfo) -> Any:
        """Resolve a relative engine profile file against the instance file's folder
        (`instance_dir` in the validation context), as `models[].config` is."""
        engine = data.get("engine") if isinstance(data, dict) else None
        base = (info.context or {}).get("instance_dir")
        if not isinstance(engine, str) or not is_profile_file(engine) or base is None:
            return data
        path = Path(engine).expanduser()
        return data if path.is_absolute() else {**data, "engine": str(Path(base) / path)}

    @cached_property
    def gpu_specs(self) -> dict[str, GpuSpec]:
        """Resolved GPU specs by name (catalog merged with overrides)."""
        return {entry.name: resolve_gpu(entry) for entry in self.gpus}

    @cached_property
    def llm_specs(self) -> dict[str, LlmSpec]:
        """Resolved LLM specs by name (catalog merged with overrides); an adapter gets its
        base's architecture under its own name (`resolve_adapter`)."""
        specs = {entry.name: resolve_llm(entry) for entry in self.models if not entry.is_adapter}
        for entry in self.models:
            if entry.is_adapter:
                specs[entry.name] = resolve_adapter(entry, self._base_spec(entry, specs))
        return specs

    @cached_property
    def speculations(self) -> dict[str, Speculation]:
        """`policy.speculative` resolved by option name: a draft model is one of the
        instance's models, else the catalog's."""
        specs = self.llm_specs
        resolved = {}
        for option in self.policy.speculative:
            name = option.draft_model
            draft = None if name is None else specs.get(name) or catalog.llm(name)
            resolved[option.name] = option.resolve(draft)
        return resolved

    def _base_spec(self, adapter: ModelEntry, resolved: dict[str, LlmSpec]) -> LlmSpec:
        """The architecture an adapter inherits: its base entry's, else the catalog's."""
        assert adapter.base is not None
        if adapter.base in resolved:
            return resolved[adapter.base]
        return catalog.llm_catalog()[adapter.base]

    def model_entry(self, name: str) -> ModelEntry:
        """The `models` entry called `name`."""
        return next(entry for entry in self.models if entry.name == name)

    def region(self, name: str) -> Region:
        """The region called `name`."""
        return next(region for region in self.regions if region.name == name)

    def workload(self, name: str) -> Workload:
        """The workload called `name`."""
        return next(item for item in self.workloads if item.name == name)

    def asks_for_hours(self) -> bool:
        """Whether the instance asks for hourly planning: an hourly profile on some demand,
        or a reserved or spot price on some supply entry
        (models.operations.time_demand.uses_time)."""
        return bool(self.hourly_reasons())

    def hourly_reasons(self) -> tuple[str, ...]:
        """What makes the instance ask for hours (`asks_for_hours`), as a user reads it: the
        first demand with an hourly profile (its field path) and the first supply entry
        with a reserved or spot price (its region and GPU); empty where nothing does."""
        profiled = next(
            (
                f"workloads[{workload.name}].demand.{region}"
                for workload in self.workloads
                for region, demand in workload.demand.items()
                if demand.hourly_profile is not None
            ),
            None,
        )
        priced = next(
            (
                f"{region.name} {gpu}"
                for region in self.regions
                for gpu, offer in region.supply.items()
                if offer.reserved_price_per_gpu_hour is not None
                or offer.spot_price_per_gpu_hour is not None
            ),
            None,
        )
        reasons = (f"an hourly_profile on {profiled}",) if profiled else ()
        return reasons + ((f"a reserved or spot price on {priced}",) if priced else ())

    def replica_start_s(self, gpu: str) -> float:
        """Seconds for a replica on `gpu` to serve: the `gpus[]` entry's own value, else
        `policy.replica_start_s`, else the catalog's."""
        entry = next(item for item in self.gpus if item.name == gpu)
        if entry.replica_start_s is not None:
            return entry.replica_start_s
        if self.policy.replica_start_s is not None:
            return self.policy.replica_start_s
        return self.gpu_specs[gpu].replica_start_s

    def failover_start_s(self, gpu: str) -> float:
        """Seconds after a loss before replicas started on `gpu` serve:
        `policy.failover_start_s`, else the replica start time."""
        if self.policy.failover_start_s is not None:
            return self.policy.failover_start_s
        return self.replica_start_s(gpu)

    @property
    def demand_factor(self) -> float:
        """The factor on every demand: `demand_growth` (top level, else policy), else 1."""
        for growth in (self.demand_growth, self.policy.demand_growth):
            if growth is not None:
                return growth
        return 1.0

    def monthly_growth(self, workload: str) -> float:
        """Monthly demand growth of `workload`: its own, else the policy's."""
        own = self.workload(workload).monthly_growth
        return self.policy.monthly_growth if own is None else own

    def price_per_gpu_hour(self, region: str, gpu: str) -> float:
        """The price of one more GPU of type `gpu` in `region` (region offer, else catalog)."""
        offer = self.region(region).supply.get(gpu)
        if offer is not None and offer.price_per_gpu_hour is not None:
            return offer.price_per_gpu_hour
        return self.gpu_specs[gpu].price_per_gpu_hour
