"""The instance file's schema: what a capacity planner writes down.

Every model forbids unknown keys and is frozen. Units live in field names. Catalog
references (`gpus[].name`, `models[].name`) are resolved by `resolve_gpu` and
`resolve_llm`; cross-references between sections are checked by `cross_check`, which
collects every problem at once.
"""

from difflib import get_close_matches
from enum import StrEnum
from functools import cached_property
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from models import catalog, limits
from models.efficiency import EfficiencyOverrides
from models.hardware import GpuSpec
from models.llm import LlmSpec
from models.precision import Precision
from models.quantities import (
    Availability,
    GpuCount,
    HitRate,
    HoursPerMonth,
    LatencyMs,
    MipGap,
    ParallelDegree,
    RttMs,
    Threads,
    TimeLimitS,
    UsdPerGpuHour,
    Zones,
    at_most,
)
from models.traffic import Demand, TokenDistribution

_STRICT = ConfigDict(extra="forbid", frozen=True)


def _overridable(spec: type[BaseModel], entry_name: str, doc: str) -> type[BaseModel]:
    """An entry model: `name` plus every other field of `spec`, each optional.

    Nested models become partial mappings so that one sub-field can be overridden.
    """
    fields: dict[str, Any] = {"name": (str, Field(min_length=1))}
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
    """An LLM to serve: a catalog name with the precisions to consider, optionally overridden."""

    weight_precisions: Annotated[list[Precision], at_most(limits.CHOICES)] = Field(
        default=[Precision.BF16], min_length=1
    )
    """Weight precisions the planner may choose from."""
    kv_precision: Precision | None = None
    """KV-cache precision; default: the weight precision, but never below fp8."""


class Supply(BaseModel):
    """GPUs of one type that can be had in a region, and their price."""

    model_config = _STRICT

    max_gpus: GpuCount
    """GPUs that can be bought or rented in addition to the existing fleet."""
    price_per_gpu_hour: UsdPerGpuHour | None = None
    """USD per GPU-hour; default: the catalog price."""


class Region(BaseModel):
    """A region: its GPU supply, the fleet it already owns, and its zones."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    supply: Annotated[dict[str, Supply], at_most(limits.GPU_TYPES)] = Field(default_factory=dict)
    """Per GPU type: how many more can be had, at what price."""
    existing: Annotated[dict[str, GpuCount], at_most(limits.GPU_TYPES)] = Field(
        default_factory=dict
    )
    """Per GPU type: GPUs already owned here (already paid for; usable at no cost)."""
    zones: Zones = 1
    """Availability zones; replicas spread evenly over them (`survive: zone`)."""


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

    @property
    def is_offline(self) -> bool:
        """No latency target: the batch is as large as memory allows."""
        return self.ttft_p99_ms is None and self.tpot_p99_ms is None


class Workload(BaseModel):
    """One model's traffic: rates per region, token mix and objectives."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    model: str = Field(min_length=1)
    """Name of an entry in `models`."""
    demand: Annotated[dict[str, Demand], at_most(limits.REGIONS)] = Field(min_length=1)
    """Per region: a daily volume with a peak factor, or a peak rate."""
    prompt_tokens: TokenDistribution
    output_tokens: TokenDistribution
    prefix_cache_hit_rate: HitRate = 0.0
    """Fraction of prompt tokens served from a prefix cache (not recomputed)."""
    slo: Slo = Field(default_factory=Slo)


class Survive(StrEnum):
    """Which single failure the fleet must ride through without breaking its SLO."""

    NONE = "none"
    REPLICA = "replica"
    ZONE = "zone"
    REGION = "region"


class Policy(BaseModel):
    """Layout and failure policy."""

    model_config = _STRICT

    survive: Survive = Survive.NONE
    tensor_parallel: Annotated[list[ParallelDegree], at_most(limits.CHOICES)] = Field(
        default=[1, 2, 4, 8], min_length=1
    )
    """TP degrees to consider."""
    pipeline_parallel: Annotated[list[ParallelDegree], at_most(limits.CHOICES)] = Field(
        default=[1], min_length=1
    )
    """PP degrees to consider."""
    disaggregation: bool = False
    """Whether prefill and decode may run in separate pools."""
    hours_per_month: HoursPerMonth = 730


class SolverSettings(BaseModel):
    """Which backend solves the program, and how long it may take."""

    model_config = _STRICT

    backend: Literal["highs", "cbc", "scip", "cpsat"] = "highs"
    time_limit_s: TimeLimitS = 60
    mip_gap: MipGap = 1e-3
    threads: Threads = 1


class Instance(BaseModel):
    """A whole planning question."""

    model_config = _STRICT

    name: str = Field(min_length=1)
    description: str = ""
    gpus: Annotated[list[GpuEntry], at_most(limits.GPU_TYPES)] = Field(min_length=1)
    models: Annotated[list[ModelEntry], at_most(limits.MODELS)] = Field(min_length=1)
    regions: Annotated[list[Region], at_most(limits.REGIONS)] = Field(min_length=1)
    links: Annotated[list[tuple[str, str, RttMs]], at_most(limits.LINKS)] = Field(
        default_factory=list
    )
    """Region graph: `[a, b, round-trip ms]`."""
    workloads: Annotated[list[Workload], at_most(limits.WORKLOADS)] = Field(min_length=1)
    policy: Policy = Field(default_factory=Policy)
    solver: SolverSettings = Field(default_factory=SolverSettings)
    efficiency: EfficiencyOverrides | None = None
    """Overrides of the performance model's efficiency factors, for every GPU."""

    @cached_property
    def gpu_specs(self) -> dict[str, GpuSpec]:
        """Resolved GPU specs by name (catalog merged with overrides)."""
        return {entry.name: resolve_gpu(entry) for entry in self.gpus}

    @cached_property
    def llm_specs(self) -> dict[str, LlmSpec]:
        """Resolved LLM specs by name (catalog merged with overrides)."""
        return {entry.name: resolve_llm(entry) for entry in self.models}

    def model_entry(self, name: str) -> ModelEntry:
        """The `models` entry called `name`."""
        return next(entry for entry in self.models if entry.name == name)

    def region(self, name: str) -> Region:
        """The region called `name`."""
        return next(region for region in self.regions if region.name == name)

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
    """Catalog LLM merged with the entry's overrides, or the inline definition."""
    overrides = entry.model_dump(exclude_none=True, exclude={"weight_precisions", "kv_precision"})
    base = catalog.llm_catalog().get(entry.name)
    fields = _merge(base.model_dump() if base else {}, overrides)
    return LlmSpec.model_validate(fields)


FieldPath = tuple[str | int, ...]


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
    for index, entry in enumerate(instance.models):
        try:
            resolve_llm(entry)
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
