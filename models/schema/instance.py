"""The instance file's schema: what a capacity planner writes down.

Why one module over 500 lines: it is the instance file's one schema, and its field
docstrings are the hover help editors show (`fleetplan schema`); splitting the sections
would scatter one document. Bounds live in models/schema/limits.py, types in
models/schema/quantities.py.

Every model forbids unknown keys and is frozen. Units live in field names. Catalog
references (`gpus[].name`, `models[].name`) are resolved by `resolve_gpu` and
`resolve_llm`; cross-references between sections are checked by `cross_check`, which
collects every problem at once.
"""

from difflib import get_close_matches
from enum import StrEnum
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    model_validator,
)

from models.calculators.voice import Voice, VoiceBudgetError, voice_budget
from models.io.hf_config import HfConfigError, default_model_name, load_hf_config
from models.physics import catalog
from models.physics.efficiency import (
    EfficiencyOverrides,
    UnknownEngine,
    calibration_table,
    check_engine,
    generation_of,
)
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.precision import Precision
from models.physics.speculative import Speculation
from models.schema import limits
from models.schema.backend_names import DEFAULT_BACKEND, BackendName
from models.schema.quantities import (
    Availability,
    BurstFactor,
    ConfigsPerPool,
    DeadlineHours,
    DemandGrowth,
    GpuCount,
    HitRate,
    HorizonMonths,
    HoursPerMonth,
    InterruptionsPerHour,
    KwPerRack,
    LatencyMs,
    LeadTimeMonths,
    LoraRank,
    MaxUtilization,
    MipGap,
    MonthlyGrowth,
    ParallelDegree,
    PowerKw,
    Probability,
    Pue,
    QualityDelta,
    QualityRegression,
    RackCount,
    RttMs,
    ServerPowerFactor,
    SpotConfidence,
    StartTimeS,
    Threads,
    TimeLimitS,
    UsdPerGpuHour,
    UtcOffsetHours,
    Zones,
    at_most,
)
from models.schema.speculative_option import SpeculativeOption
from models.schema.traffic import Demand, SharedPrefix, TokenDistribution

_STRICT = ConfigDict(extra="forbid", frozen=True)
"""Every instance model: unknown keys refused, frozen, and each field's attribute docstring
its JSON-schema description (the hover help editors show, `fleetplan schema`)."""


def _overridable(spec: type[BaseModel], entry_name: str, doc: str) -> type[BaseModel]:
    """An entry model: `name` plus every other field of `spec`, each optional.

    Nested models become partial mappings so that one sub-field can be overridden.
    """
    fields: dict[str, Any] = {
        "name": (
            str,
            Field(
                min_length=1,
                description="Catalog name; a name the catalog lacks defines a new entry "
                "inline, with every field given.",
            ),
        )
    }
    for field_name, info in spec.model_fields.items():
        if field_name == "name":
            continue
        annotation = info.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            annotation = dict[str, float | None]
        elif info.metadata:
            # keep the field's bounds (they live in the metadata, not the annotation)
            annotation = Annotated[(annotation, *info.metadata)]
        fields[field_name] = (annotation | None, Field(default=None, description=info.description))
    return create_model(entry_name, __config__=_STRICT, __doc__=doc, **fields)


GpuOverrides = _overridable(
    GpuSpec, "GpuOverrides", "Catalog GPU fields to override (or all of them, inline)."
)
LlmOverrides = _overridable(
    LlmSpec, "LlmOverrides", "Catalog LLM fields to override (or all of them, inline)."
)


class GpuEntry(GpuOverrides):  # type: ignore[misc, valid-type]
    """A GPU type on offer: a catalog name, optionally with fields overridden.

    A name the catalog does not hold defines a new GPU inline and must give every field.
    """


class ModelEntry(LlmOverrides):  # type: ignore[misc, valid-type]
    """An LLM to serve: a catalog name, or a Hugging Face config.json, with the precisions
    to consider, optionally overridden."""

    config: str | None = Field(default=None, min_length=1)
    """A Hugging Face config.json to build the model from instead of the catalog (path
    relative to the instance file); `name` then defaults to the config's folder name, or
    the file's stem when the file is not called config.json."""
    weight_precisions: Annotated[list[Precision], at_most(limits.CHOICES)] = Field(
        default=[Precision.BF16], min_length=1
    )
    """Weight precisions the planner may choose from."""
    kv_precision: Precision | None = None
    """KV-cache precision; default: the weight precision, but never below fp8."""
    base: str | None = Field(default=None, min_length=1)
    """This entry is a LoRA adapter of `base` (another `models` entry or a catalog model):
    it inherits the base's architecture and may be served by the base's replicas."""
    rank: LoraRank | None = None
    """LoRA rank of an adapter (only with `base`); default
    `models.colocation.lora.DEFAULT_LORA_RANK`."""

    @property
    def is_adapter(self) -> bool:
        """Whether this entry is a LoRA adapter of another model."""
        return self.base is not None

    @model_validator(mode="before")
    @classmethod
    def _config_path_and_name(cls, data: Any, info: ValidationInfo) -> Any:
        """Resolve `config` against the instance file's folder (`instance_dir` in the
        validation context) and name the model after the file when `name` is absent."""
        if not isinstance(data, dict) or not isinstance(data.get("config"), str):
            return data
        path = Path(data["config"])
        base = (info.context or {}).get("instance_dir")
        if base is not None and not path.is_absolute():
            path = Path(base) / path
        return {"name": default_model_name(path), **data, "config": str(path)}


class Supply(BaseModel):
    """GPUs of one type that can be had in a region, and their price."""

    model_config = _STRICT

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

    model_config = _STRICT

    name: str = Field(min_length=1)
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


class Slo(BaseModel):
    """Latency and availability objectives of one workload. Omit both latency
    targets for an offline workload."""

    model_config = _STRICT

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

    model_config = _STRICT

    name: str = Field(min_length=1)
    """The workload's name, as the plan and `--set workloads[NAME]` refer to it."""
    model: str = Field(min_length=1)
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


class Survive(StrEnum):
    """Which single failure the fleet must ride through without breaking its SLO."""

    NONE = "none"
    REPLICA = "replica"
    ZONE = "zone"
    REGION = "region"


class BuyUnit(StrEnum):
    """What a purchase is made of: whole servers (`gpus_per_node` GPUs) or single GPUs."""

    NODE = "node"
    GPU = "gpu"


class Policy(BaseModel):
    """Layout and failure policy."""

    model_config = _STRICT

    survive: Survive = Survive.NONE
    """Failures the fleet must ride through at the SLO: none, replica, zone or region."""
    tensor_parallel: Annotated[list[ParallelDegree], at_most(limits.CHOICES)] = Field(
        default=[1, 2, 4, 8], min_length=1
    )
    """TP degrees to consider."""
    pipeline_parallel: Annotated[list[ParallelDegree], at_most(limits.CHOICES)] = Field(
        default=[1], min_length=1
    )
    """PP degrees to consider."""
    expert_parallel: Annotated[list[ParallelDegree], at_most(limits.CHOICES)] = Field(
        default=[1], min_length=1
    )
    """Expert-parallel sizes to consider for MoE models: the routed experts of a stage are
    split over `ep` ranks, which must divide tp x dp
    (`models.physics.memory.expert_layout_problem`); 1 splits every expert by TP."""
    attention_data_parallel: Annotated[list[ParallelDegree], at_most(limits.CHOICES)] = Field(
        default=[1], min_length=1
    )
    """Attention data-parallel groups to consider for MoE models: a replica is
    tp x pp x dp GPUs, each group of tp GPUs holding its own sequences."""
    disaggregation: bool = False
    """Whether prefill and decode may run in separate pools."""
    prefix_affinity: bool = False
    """Route requests with the same declared prefix to the replicas that hold it
    (`models.serving.prefix_routing`); default: random (least-loaded) routing."""
    warm_cold_split: bool = False
    """Whether a workload with per-customer prefixes may be served by a warm pool (requests
    that reuse a prefix) and a cold pool (the rest), each sized for its share
    (`models.colocation.warm_cold`); the plan takes the split only where it is cheaper."""
    hours_per_month: HoursPerMonth = 730
    """Hours billed per month for a GPU bought (730 = 8,760 h / 12)."""
    colocation: bool = False
    """Whether several workloads may share replica groups (co-resident engines, multi-LoRA,
    swapping); off by default, so every workload gets its own replicas."""
    multi_lora: bool = False
    """With `colocation`: whether workloads of LoRA adapters (`base:` models) of one base,
    and the base's own workloads, may share one engine of the base (weights once, each
    adapter resident, the multi-LoRA step cost); off: an adapter is served as a merged
    fine-tune, its own engine and weights."""
    replica_start_s: StartTimeS | None = None
    """Seconds from starting a replica to serving (image pull + weight load + warm-up),
    for every GPU type; a `gpus[]` entry's own `replica_start_s` wins; default: the
    catalog value per GPU."""
    failover_start_s: StartTimeS | None = None
    """Seconds after a loss before replicas started elsewhere serve (detection +
    replica start); default: the replica start time of the GPU type."""
    scale_detection_s: StartTimeS = 60.0
    """Seconds the autoscaler takes to see a rise and act (metric window + decision)."""
    spot_confidence: SpotConfidence | None = None
    """Let interactive pools run on spot where a supply entry offers it: each pool keeps
    its SLO with this confidence through interruptions (a Poisson quantile of replicas
    down over the restart window, `models.operations.pricing_tiers`); default: spot serves
    dedicated batch replicas only."""
    burst_factor: BurstFactor = 1.0
    """Multiplier on the profile's steepest ramp that the warm headroom must absorb."""
    horizon_months: HorizonMonths | None = None
    """Months to plan procurement over; default: one static month."""
    monthly_growth: MonthlyGrowth = 0.0
    """Demand growth per month as a fraction, for workloads without their own."""
    lead_time_months: LeadTimeMonths = 0
    """Months between ordering committed capacity and having it to serve."""
    buy_unit: BuyUnit = BuyUnit.NODE
    """Purchases in whole servers of `gpus_per_node` GPUs (`node`) or single GPUs (`gpu`);
    the existing fleet counts as it is. With `node`, a stage's tp x dp GPUs divide the
    server (TP within a server; pipeline stages may span servers)."""
    max_configs_per_pool: ConfigsPerPool | None = 1
    """Replica configurations one (workload, region, phase) may mix; null: any number.
    The report states what the limit costs."""
    credit_tpot_pooling: bool = False
    """Credit TPOT-limited pools with what a larger pool carries per replica (the batch a
    reply lives through spreads less in a pool): pool ladders for them, 3-18% more per
    replica in pools of 2-16, at several times the solve time on large instances;
    default: credited at a lone replica's capacity, which every pool size carries."""
    max_utilization: MaxUtilization = 1.0
    """Pools are planned at most this fraction of their capacity at the SLO, in every
    scenario (headroom)."""
    demand_growth: DemandGrowth | None = None
    """A factor applied to all demand (1.3 plans for 30% more); the top-level
    `demand_growth` wins."""
    pue: Pue | None = None
    """Power usage effectiveness of every region without its own; default 1.0 (power_kw
    is then IT power)."""
    server_power_factor: ServerPowerFactor | None = None
    """A server's power over its GPUs' board power; default
    `models.operations.site.SERVER_POWER_FACTOR` (1.82, DGX H100: 10.2 kW for 8 x 700 W)."""
    speculative: Annotated[list[SpeculativeOption], at_most(limits.SPECULATIVE_OPTIONS)] = Field(
        default_factory=list
    )
    """Speculative-decoding options the program may turn on per pool (each: name,
    draft_model or draft_cost_ratio, tokens, acceptance_rate); every unified and decode
    candidate is enumerated with and without each; default: none."""


class Quality(BaseModel):
    """A quality change the instance declares against a base (for `fleetplan compare`):
    e.g. a lower precision or a speculative decoder measured on an evaluation."""

    model_config = _STRICT

    metric: str = Field(min_length=1, max_length=200)
    """The evaluation, e.g. `mmlu` or `win-rate vs base`."""
    delta: QualityDelta
    """Change against the base, in the metric's units; negative is worse."""
    max_regression: QualityRegression
    """The largest drop the gate allows (>= 0, same units): pass when delta >= -max."""

    @property
    def passes(self) -> bool:
        """Whether the declared change is within its gate: delta >= -max_regression."""
        return self.delta >= -self.max_regression


class SolverSettings(BaseModel):
    """Which backend solves the program, and how long it may take."""

    model_config = _STRICT

    backend: BackendName = DEFAULT_BACKEND
    """MIP solver: highs (default; it hands workload programs of 2,000 columns or more to
    SCIP), cbc, scip or cpsat (`--backend` overrides it)."""
    time_limit_s: TimeLimitS = 60
    """Wall-time limit of the whole run, seconds (`--time-limit` overrides it)."""
    mip_gap: MipGap = 1e-3
    """Relative optimality gap at which the solver stops (`--mip-gap` overrides it)."""
    threads: Threads = 1
    """Solver threads (`--threads` overrides it)."""


class Instance(BaseModel):
    """A whole planning question."""

    model_config = _STRICT

    name: str = Field(min_length=1)
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
    engine: str | None = Field(default=None, min_length=1, max_length=64)
    """The serving engine profile whose calibrated efficiency factors the physics uses
    (`trtllm-0.20`, `trtllm-0.17`; `fleetplan perf --help` lists them); default: the
    newest engine version with calibration data. Every report names the profile used."""
    quality: Quality | None = None
    """A quality change declared against a base instance (read by `fleetplan compare`
    only; the plan ignores it)."""
    demand_growth: DemandGrowth | None = None
    """A factor applied to all demand (1.3 plans for 30% more); default:
    `policy.demand_growth`, else 1."""

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

    def monthly_growth(self, workload: str) -> float:
        """Monthly demand growth of `workload`: its own, else the policy's."""
        own = next(item for item in self.workloads if item.name == workload).monthly_growth
        return self.policy.monthly_growth if own is None else own

    def price_per_gpu_hour(self, region: str, gpu: str) -> float:
        """The price of one more GPU of type `gpu` in `region` (region offer, else catalog)."""
        offer = self.region(region).supply.get(gpu)
        if offer is not None and offer.price_per_gpu_hour is not None:
            return offer.price_per_gpu_hour
        return self.gpu_specs[gpu].price_per_gpu_hour


def _merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


def resolve_gpu(entry: BaseModel) -> GpuSpec:
    """Catalog GPU merged with the entry's overrides, or the inline definition.

    Raises pydantic.ValidationError when an inline GPU misses a field.
    """
    overrides = entry.model_dump(exclude_none=True)
    base = catalog.gpu_catalog().get(entry.name)
    fields = _merge(base.model_dump() if base else {}, overrides)
    return GpuSpec.model_validate(fields)


def resolve_llm(entry: ModelEntry) -> LlmSpec:
    """The entry's config.json (when it names one) or catalog LLM, merged with the entry's
    overrides; or the inline definition.

    Raises:
        HfConfigError: the config.json is missing, malformed or of an unsupported family.
    """
    overrides = entry.model_dump(
        exclude_none=True, exclude={"weight_precisions", "kv_precision", "config", "base", "rank"}
    )
    if entry.config is not None:
        base = load_hf_config(entry.config, entry.name)
    else:
        base = catalog.llm_catalog().get(entry.name)
    fields = _merge(base.model_dump() if base else {}, overrides)
    return LlmSpec.model_validate(fields)


def resolve_adapter(entry: ModelEntry, base: LlmSpec) -> LlmSpec:
    """An adapter's architecture: its base's, under the adapter's name (a LoRA adapter
    changes no shape; merged into the base it is a model of the same size)."""
    return base.model_copy(update={"name": entry.name, "display_name": entry.name})


_ADAPTER_KEYS = {"name", "base", "rank", "weight_precisions", "kv_precision"}
"""Keys an adapter entry may carry: every architecture field comes from its base."""


FieldPath = tuple[str | int, ...]


def input_warnings(instance: Instance) -> list[str]:
    """What in a valid instance is probably not what its author meant, one line each
    (the command line prints them on stderr; the plan is unchanged).

    A `requests_per_day` with neither `peak_to_average` nor an `hourly_profile` plans for
    the daily average rate (peak factor 1): every hour at the average, so the fleet falls
    short at any peak above it. Batch work (`deadline_hours`) is sized by its daily volume
    and deadline, not by a peak, so it is not warned about.
    """
    warnings = []
    for workload in instance.workloads:
        if workload.is_batch:
            continue
        for region, demand in workload.demand.items():
            daily_only = (
                demand.requests_per_day is not None
                and demand.hourly_profile is None
                and "peak_to_average" not in demand.model_fields_set
            )
            if daily_only:
                warnings.append(
                    f"workloads[{workload.name}].demand.{region}: requests_per_day without "
                    f"peak_to_average or hourly_profile sizes {workload.name} for the daily "
                    f"average ({demand.peak_rps:,.3g} requests/s); traffic that peaks above "
                    "it is not served at the SLO: give peak_to_average or an hourly_profile"
                )
    return warnings


def cross_check(instance: Instance) -> list[tuple[FieldPath, str]]:
    """Every cross-reference problem in the instance, as (field path, message) pairs."""
    problems: list[tuple[FieldPath, str]] = []
    add = problems.append

    for section in ("gpus", "models", "regions", "workloads"):
        seen: set[str] = set()
        for index, item in enumerate(getattr(instance, section)):
            if item.name in seen:
                add(((section, index, "name"), f"duplicate name {item.name!r}"))
            seen.add(item.name)

    for index, entry in enumerate(instance.gpus):
        try:
            resolve_gpu(entry)
        except ValidationError as error:
            add((("gpus", index), _inline_message("GPU", entry.name, error, catalog.gpu_catalog())))
    problems.extend(_efficiency_problems(instance))
    problems.extend(_adapter_problems(instance))
    for index, entry in enumerate(instance.models):
        if entry.is_adapter:
            continue
        try:
            resolve_llm(entry)
        except HfConfigError as error:
            add((("models", index, "config"), str(error)))
        except ValidationError as error:
            add(
                (
                    ("models", index),
                    _inline_message("model", entry.name, error, catalog.llm_catalog()),
                )
            )

    gpu_names = [entry.name for entry in instance.gpus]
    region_names = [region.name for region in instance.regions]
    model_names = [entry.name for entry in instance.models]

    for r_index, region in enumerate(instance.regions):
        for key in ("supply", "existing"):
            for gpu_name in getattr(region, key):
                if gpu_name not in gpu_names:
                    add((("regions", r_index, key, gpu_name), _unknown("GPU", gpu_name, gpu_names)))
        for gpu_name, offer in region.supply.items():
            if offer.max_on_demand_gpus is not None and offer.max_on_demand_gpus > offer.max_gpus:
                add(
                    (
                        ("regions", r_index, "supply", gpu_name, "max_on_demand_gpus"),
                        f"{offer.max_on_demand_gpus} exceeds max_gpus ({offer.max_gpus})",
                    )
                )
        for gpu_name, count in region.existing.items():
            if count < 0:
                add((("regions", r_index, "existing", gpu_name), f"must be >= 0, got {count}"))
        if instance.policy.survive is Survive.ZONE and region.zones < 2:
            add((("regions", r_index, "zones"), "survive: zone needs at least 2 zones per region"))

    for l_index, (a, b, rtt_ms) in enumerate(instance.links):
        for position, end in enumerate((a, b)):
            if end not in region_names:
                add((("links", l_index, position), _unknown("region", end, region_names)))
        if a == b:
            add((("links", l_index), f"a link joins two different regions, got {a!r} twice"))
        if rtt_ms < 0:
            add((("links", l_index, 2), f"round-trip ms must be >= 0, got {rtt_ms:g}"))

    for w_index, workload in enumerate(instance.workloads):
        if workload.model not in model_names:
            add((("workloads", w_index, "model"), _unknown("model", workload.model, model_names)))
        for region_name in workload.demand:
            if region_name not in region_names:
                add(
                    (
                        ("workloads", w_index, "demand", region_name),
                        _unknown("region", region_name, region_names),
                    )
                )

    for p_index, degree in enumerate(instance.policy.tensor_parallel):
        if degree < 1 or degree & (degree - 1):
            add((("policy", "tensor_parallel", p_index), f"must be a power of two, got {degree}"))
    for p_index, degree in enumerate(instance.policy.pipeline_parallel):
        if degree < 1:
            add((("policy", "pipeline_parallel", p_index), f"must be >= 1, got {degree}"))
    if instance.policy.survive is Survive.REGION and len(instance.regions) < 2:
        add((("policy", "survive"), "survive: region needs at least two regions"))
    drafts = model_names + [name for name in catalog.llm_catalog() if name not in model_names]
    option_names: set[str] = set()
    for o_index, option in enumerate(instance.policy.speculative):
        if option.name in option_names:
            add((("policy", "speculative", o_index, "name"), f"duplicate name {option.name!r}"))
        option_names.add(option.name)
        if option.draft_model is not None and option.draft_model not in drafts:
            add(
                (
                    ("policy", "speculative", o_index, "draft_model"),
                    _unknown("model", option.draft_model, drafts),
                )
            )
    return problems


def _efficiency_problems(instance: Instance) -> list[tuple[FieldPath, str]]:
    """An unknown `engine` profile; an `efficiency_like` that names no calibrated GPU."""
    problems: list[tuple[FieldPath, str]] = []
    try:
        check_engine(instance.engine)
    except UnknownEngine as error:
        problems.append((("engine",), str(error)))
    calibrated = sorted(calibration_table().get("generation_of", {}))
    for index, entry in enumerate(instance.gpus):
        like = entry.efficiency_like
        if like is not None and generation_of(like) is None:
            problems.append(
                (
                    ("gpus", index, "efficiency_like"),
                    f"{like!r} is not a GPU with calibration rows; choose one of "
                    + ", ".join(calibrated),
                )
            )
    return problems


def _adapter_problems(instance: Instance) -> list[tuple[FieldPath, str]]:
    """Adapters: `base` names a non-adapter model entry or a catalog model, an adapter
    carries no architecture field, and `rank` comes only with `base`."""
    problems: list[tuple[FieldPath, str]] = []
    entries = {entry.name: entry for entry in instance.models}
    known = [name for name, entry in entries.items() if not entry.is_adapter]
    known += [name for name in catalog.llm_catalog() if name not in entries]
    for index, entry in enumerate(instance.models):
        if entry.base is None:
            if entry.rank is not None:
                problems.append(
                    (("models", index, "rank"), "rank is an adapter's LoRA rank: give base too")
                )
            continue
        if entry.base == entry.name:
            problems.append((("models", index, "base"), "an adapter cannot be its own base"))
        elif entry.base in entries and entries[entry.base].is_adapter:
            problems.append(
                (
                    ("models", index, "base"),
                    f"base {entry.base!r} is itself an adapter; name the model it adapts "
                    f"({entries[entry.base].base!r})",
                )
            )
        elif entry.base not in known:
            problems.append((("models", index, "base"), _unknown("base model", entry.base, known)))
        inherited = sorted(
            key for key in entry.model_dump(exclude_none=True) if key not in _ADAPTER_KEYS
        )
        if inherited:
            problems.append(
                (
                    ("models", index, inherited[0]),
                    f"adapter {entry.name!r} inherits the architecture of {entry.base!r}; "
                    f"remove {', '.join(inherited)}",
                )
            )
    return problems


def _unknown(kind: str, name: str, known: list[str]) -> str:
    message = f"unknown {kind} {name!r}"
    close = get_close_matches(name, known, n=1)
    if close:
        message += f"; did you mean {close[0]!r}?"
    return message + f" (declared: {', '.join(known) or 'none'})"


def _inline_message(kind: str, name: str, error: ValidationError, known: dict) -> str:
    details = "; ".join(
        f"{'.'.join(str(part) for part in item['loc'])}: "
        f"{item['msg'].removeprefix('Value error, ')}"
        for item in error.errors()
    )
    if name in known:
        return f"{kind} {name!r}: overrides are invalid: {details}"
    return f"{kind} {name!r} is not in the catalog, so it must be defined inline: {details}" + (
        _did_you_mean(name, list(known))
    )


def _did_you_mean(name: str, known: list[str]) -> str:
    close = get_close_matches(name, known, n=1, cutoff=0.5)
    return f" (did you mean the catalog's {close[0]!r}?)" if close else ""
