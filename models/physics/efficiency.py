"""Efficiency factors of the performance model: what fraction of the datasheet a real
serving engine achieves, the fixed costs no datasheet lists, and the two engine settings
that shape a step (token budget per forward pass, most sequences in flight).

Each factor is named, documented and overridable per instance (`efficiency:` in the
instance file). Calibrated values live in `models/physics/catalog/efficiency.yaml`, written by
`python -m calibration.calibrate --write` from the published measurements in
`calibration/data/`, one set per *engine profile* (a serving engine and version with data:
`trtllm-0.20`, `trtllm-0.17`, `vllm-0.11`, `sglang-0.5`, ...) and GPU generation; a profile
with no rows of a generation falls back to an older one (`fallback`), the oldest vLLM and
SGLang profiles to the default TensorRT-LLM one. The instance key `engine:` and
`--engine` on `perf`/`estimate` pick a profile; the default is the newest with data.

Two regimes, fitted apart: the latency constants (`step_overhead_s`,
`allreduce_latency_s`, `request_overhead_s`) come from latency data or a cited physical
floor, the throughput constants (FLOP, HBM and link fractions) from max-throughput rows
with the latency constants held fixed, so that neither regime is bent to fit the other.

A GPU runs on its own generation's factors when the calibration has rows for it; a GPU
with none (MI300X, an inline GPU) runs on those of the GPU its `efficiency_like` names, or
on the pooled `default` fit, and every report says so (`efficiency_source`).
"""

import re
import statistics
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from models.physics.hardware import GpuSpec
from models.physics.overlap import engine_runs_overlap
from models.physics.precision import Precision
from models.physics.profile_files import (
    ProfileFileError,
    is_profile_file,
    profile_summary,
    read_profile_file,
)
from models.physics.yaml_files import read_yaml
from models.schema.quantities import (
    NUMBER_NOT_BOOLEAN,
    BatchSequences,
    EfficiencyFraction,
    StepLatencyS,
    TokenCount,
)

_FILE = Path(__file__).parent / "catalog" / "efficiency.yaml"


class Efficiency(BaseModel):
    """Achieved fractions of peak, fixed overheads and engine settings for one GPU type
    and weight precision. The class defaults are generic; `efficiency_for` layers the
    calibrated values and the instance overrides on top."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefill_flops_fraction: EfficiencyFraction = 0.55
    """Achieved fraction of dense peak FLOP/s on prefill tokens (large GEMMs, attention)."""
    decode_flops_fraction: EfficiencyFraction = 0.45
    """Achieved fraction of dense peak FLOP/s on decode tokens (skinny GEMMs at batch B)."""
    hbm_fraction: EfficiencyFraction = 0.75
    """Achieved fraction of peak HBM bandwidth when streaming weights and KV cache."""
    scaleup_fraction: EfficiencyFraction = 0.7
    """Achieved fraction of scale-up link bandwidth (NVLink, Infinity Fabric, PCIe) in a
    ring all-reduce or a pipeline hand-off."""
    scaleout_fraction: EfficiencyFraction = 0.8
    """Achieved fraction of the scale-out NIC bandwidth (all-reduce across nodes, KV
    transfer from a prefill to a decode replica)."""
    allreduce_latency_s: float = Field(default=10e-6, ge=0)
    """Fixed latency of one all-reduce (launch and synchronisation), seconds."""
    pp_hop_latency_s: float = Field(default=20e-6, ge=0)
    """Fixed latency of one pipeline-stage hand-off, seconds."""
    step_overhead_s: float = Field(default=2e-3, ge=0)
    """Fixed cost of one engine iteration (scheduling, sampling, launches), seconds: a
    latency constant, fitted on latency rows."""
    request_overhead_s: float = Field(default=0.0, ge=0)
    """Fixed latency of one request in front of the engine (HTTP, tokenisation, scheduling,
    detokenising the first token), seconds: a benchmark tool counts it in each TTFT. A
    latency constant of the vLLM and SGLang profiles, fitted on their one-user runs (a
    lone request's TTFT less its prefill); 0 where no such run was measured. It delays a
    request's entry into the engine in the closed-loop replay (`models.serving.closed_loop`)."""
    sequence_overhead_s: float = Field(default=0.0, ge=0)
    """Cost of one iteration per sequence in it (host-side sampling, stop checks and
    scheduler bookkeeping, small per-token kernels the roofline leaves out), seconds: a
    throughput constant, fitted on max-throughput rows; it is a few us, so it moves
    large batches only."""
    memory_reserve_fraction: float = Field(default=0.05, ge=0, lt=1)
    """Fraction of device memory held back for the runtime (CUDA context, allocator
    slack, graphs, communication buffers). Activations are counted separately. An engine
    setting where the engine caps its own memory: vLLM uses at most
    `gpu_memory_utilization` (0.9 by default) of the device for weights, activations and
    KV cache, so its profiles hold 1 - 0.9 = 0.10 (`settings` in efficiency.yaml)."""
    prefill_chunk_tokens: int = Field(default=8192, ge=256)
    """Engine token budget of one forward pass (vLLM `max_num_batched_tokens`, TensorRT-LLM
    `max_num_tokens`): prompts are prefilled in chunks of at most this many tokens."""
    max_batch_sequences: int = Field(default=2048, ge=1)
    """Most sequences the engine keeps in flight (vLLM `max_num_seqs`, TensorRT-LLM
    `max_batch_size`), whatever the memory would allow."""
    prefill_first: bool = False
    """Run waiting prompts' prefill as an iteration of its own, the decoding sequences
    waiting for it, where the engine does not mix prompt chunks into decode iterations:
    SGLang's default (`--enable-mixed-chunk` off; its scheduler runs a new prefill batch
    whenever one can be formed, else a decode batch). vLLM and TensorRT-LLM fill each
    decode iteration's spare token budget with prompt chunks (False). An engine setting
    (`settings` in efficiency.yaml); the closed-loop replay follows it
    (`models.serving.closed_loop`)."""
    kv_preemption: bool = False
    """Give a sequence KV blocks as it computes tokens and, when the cache is full, evict
    the newest sequence and recompute it later (vLLM's V1 scheduler: a prompt is admitted
    while the cache holds its first chunk, up to `max_batch_sequences`), where False seats
    a sequence only with room for its whole prompt and reply (TensorRT-LLM's
    `GUARANTEED_NO_EVICT`). An engine setting (`settings` in efficiency.yaml); the
    closed-loop replay follows it (`models.serving.closed_loop.preempting`)."""
    two_batch_overlap: bool = False
    """Split each pass of an expert-parallel replica into two micro-batches, one's
    all-to-all under the other's compute (SGLang `--enable-two-batch-overlap`, vLLM
    `--enable-dbo`; both off by default, on in DeepSeek's and SGLang's wide-EP
    deployments), on the layouts `overlap_engine` runs it on (`overlaps`):
    `models.physics.step_passes.StepModel.two_batch_overlap`. `deploy` writes an engine's
    switch where the plan timed it and that engine runs it (`solver.deploy.engines`)."""
    overlap_engine: str | None = None
    """The serving engine whose two-batch overlap condition applies (`vllm`, `sglang`,
    `trtllm`: `models.physics.overlap.engine_runs_overlap`): the engine profile's, set by
    `efficiency_for` (`engine_family`); None (factors built by hand): any layout at EP
    above 1. An engine setting, never fitted nor overridden."""

    def overlaps(self, tp: int, dp: int, ep: int) -> bool:
        """Whether a stage of dp attention groups of tp GPUs and `ep` expert ranks runs as
        two overlapped micro-batches: the switch on and the engine running it there."""
        return self.two_batch_overlap and engine_runs_overlap(self.overlap_engine, tp, dp, ep)


class EfficiencyOverrides(BaseModel):
    """Instance-level overrides: any field of `Efficiency`, applied to every GPU."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefill_flops_fraction: EfficiencyFraction | None = None
    decode_flops_fraction: EfficiencyFraction | None = None
    hbm_fraction: EfficiencyFraction | None = None
    scaleup_fraction: EfficiencyFraction | None = None
    scaleout_fraction: EfficiencyFraction | None = None
    allreduce_latency_s: StepLatencyS | None = None
    pp_hop_latency_s: StepLatencyS | None = None
    step_overhead_s: StepLatencyS | None = None
    request_overhead_s: Annotated[float, NUMBER_NOT_BOOLEAN] | None = Field(
        default=None, ge=0, le=10
    )
    sequence_overhead_s: StepLatencyS | None = None
    memory_reserve_fraction: Annotated[float, NUMBER_NOT_BOOLEAN] | None = Field(
        default=None, ge=0, lt=1
    )
    prefill_chunk_tokens: TokenCount | None = Field(default=None, ge=256)
    max_batch_sequences: BatchSequences | None = None
    prefill_first: bool | None = None
    kv_preemption: bool | None = None
    two_batch_overlap: bool | None = None


@cache
def calibration_table() -> dict[str, Any]:
    """The parsed `efficiency.yaml` (empty when the file is absent)."""
    if not _FILE.exists():
        return {}
    return read_yaml(_FILE) or {}


class UnknownEngine(ValueError):
    """An engine profile name `efficiency.yaml` does not hold."""


def engine_profiles() -> dict[str, dict[str, Any]]:
    """The calibrated engine profiles by name (`efficiency.yaml` `engines`)."""
    return calibration_table().get("engines", {})


def default_engine() -> str:
    """The profile used when none is named: the newest engine version with data."""
    return calibration_table().get("default_engine", "")


def profile_of(name: str) -> dict[str, Any]:
    """The engine profile `name`: a catalog profile, or the profile a file holds
    (`models.physics.profile_files`); empty for an unknown catalog name. Raises
    UnknownEngine for a profile file that does not hold a profile."""
    if is_profile_file(name):
        try:
            # each factor held to the bounds an instance's `efficiency:` is held to (a
            # step of 10^6 s planned at exit 0, a chunk of 10^12 tokens read 'does not fit')
            return read_profile_file(name, EfficiencyOverrides)
        except ProfileFileError as error:
            raise UnknownEngine(str(error)) from None
    return engine_profiles().get(name, {})


_VERSION = re.compile(r"(\d{1,9}(?:\.\d{1,9}){0,7})(?:[.-]?(?:post|rc|a|b|dev)\d{0,9})?", re.I)
"""A release as engines publish it: up to 8 dotted numbers of up to 9 digits, then
perhaps one PEP 440 pre-, post- or dev-release tag (`0.5.6.post1`, `1.0.0rc2`)."""


def _version(text: str) -> tuple[int, ...] | None:
    """`(0, 12, 1)` for `0.12.1`, and for a tagged release of it (`0.12.1.post1`,
    `0.12.1rc2`: the tag is ignored, so a pre-release runs on the profile of the release
    it precedes); None for text that is not a version (a digit run past 9 is not one:
    `int` refuses strings past 4,300 digits)."""
    match = _VERSION.fullmatch(text)
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def resolve_engine(name: str) -> str | None:
    """The catalog profile that serves `name`: itself when the calibration holds it, else
    for `<engine>-<version>` (`vllm-0.12.1`, `trtllm-1.0`) the same engine's newest
    profile at or below that version (a release newer than the data runs on the newest
    fit of its engine); None when there is none."""
    known = engine_profiles()
    if name in known:
        return name
    engine, _, version = name.partition("-")
    wanted = _version(version)
    if wanted is None:
        return None
    older = [
        (found, profile)
        for profile in known
        if profile.partition("-")[0] == engine
        and (found := _version(profile.partition("-")[2])) is not None
        and found <= wanted
    ]
    return max(older)[1] if older else None


def check_engine(name: str | None, _chain: tuple[str, ...] = ()) -> str:
    """The profile `name` runs on (`resolve_engine`: a newer release than the data runs on
    its engine's newest profile below it), or the default profile when None; raises
    UnknownEngine naming the known profiles when the calibration has no profile for it,
    or naming what is wrong with a profile file (a `fallback` that leads back to a file
    of its own chain among them)."""
    if name is None:
        return default_engine()
    if is_profile_file(name):
        if name in _chain:
            loop = " -> ".join((*_chain, name))
            raise UnknownEngine(f"engine profile file {_chain[0]}: its fallbacks loop: {loop}")
        profile = profile_of(name)
        if profile["fallback"] is not None:
            check_engine(profile["fallback"], (*_chain, name))
        return name
    resolved = resolve_engine(name)
    if resolved is None:
        known = engine_profiles()
        raise UnknownEngine(
            f"unknown engine profile {name!r}; known: {', '.join(sorted(known))} "
            f"(default {default_engine()}; a newer release of a known engine runs on its "
            "newest profile)"
        )
    return resolved


def _profiles(engine: str) -> list[dict[str, Any]]:
    """`engine`'s profile and its fallbacks', newest first."""
    profiles, seen = [], set()
    name: str | None = engine
    while name and name not in seen:
        seen.add(name)
        profile = profile_of(name)
        profiles.append(profile)
        name = profile.get("fallback")
    return profiles


def _chain(engine: str) -> list[dict[str, Any]]:
    """The `by_key` tables of `engine` and its fallbacks, newest first."""
    return [profile.get("by_key", {}) for profile in _profiles(engine)]


def _settings(engine: str) -> dict[str, Any]:
    """The engine settings of `engine`'s profile (`settings`: an engine's documented
    defaults, never fitted, such as vLLM's `gpu_memory_utilization` 0.9 as a reserve of
    10% of HBM): the first profile of its chain that states them, {} when none does."""
    for profile in _profiles(engine):
        if "settings" in profile:
            return dict(profile["settings"])
    return {}


def _gpu_settings(engine: str, gpu_name: str) -> dict[str, Any]:
    """The engine settings `engine`'s profile states for one GPU (`settings_by_gpu`: a
    default the engine picks by device, such as vLLM's smaller token budget and sequence
    cap on an A100 or a GPU under 70 GiB), from the first profile of its chain that states
    settings; {} for a GPU it names none for."""
    for profile in _profiles(engine):
        if "settings" in profile:
            return dict(profile.get("settings_by_gpu", {}).get(gpu_name, {}))
    return {}


def _fitted_by(source: "EfficiencySource") -> str | None:
    """The profile in `source.engine`'s fallback chain whose fit of the GPU's generation is
    used (the first that holds it, as `_calibrated` looks it up); None for the pooled fit."""
    name: str | None = source.engine
    for table in _chain(source.engine):
        if source.generation in table:
            return name
        name = profile_of(name).get("fallback") if name else None
    return None


def generation_of(gpu_name: str, engine: str | None = None) -> str | None:
    """The calibrated generation a GPU belongs to (`hopper`, ...): a GPU with calibration
    rows of its own. With `engine`, a generation the profile (or a fallback) names for a
    GPU only that engine has rows of comes first (the profile's own `generation_of`:
    MI300X is `cdna3` under the vLLM profiles). None for any other GPU."""
    if engine is not None:
        for profile in _profiles(engine):
            if gpu_name in profile.get("generation_of", {}):
                return profile["generation_of"][gpu_name]
    return calibration_table().get("generation_of", {}).get(gpu_name)


@dataclass(frozen=True)
class EfficiencySource:
    """Where a GPU's efficiency factors come from."""

    gpu: str
    engine: str
    """The engine profile."""
    like: str | None
    """The GPU whose calibrated factors are used, when not the GPU's own."""
    generation: str | None
    """The calibrated generation used; None: the pooled `default` fit."""

    @property
    def borrowed(self) -> bool:
        """Whether the factors were fitted on another GPU's rows (or pooled)."""
        return self.like is not None or self.generation is None

    @property
    def note(self) -> str:
        """One phrase: `h100-sxm (hopper)`, `pooled fit`, or `own rows (hopper)`."""
        if self.generation is None:
            return "the pooled fit over every generation (no calibration rows)"
        if self.like is not None:
            return f"{self.like}'s ({self.generation}, no calibration rows of its own)"
        return f"its own rows ({self.generation})"


def _spec(gpu: str | GpuSpec) -> GpuSpec | None:
    if isinstance(gpu, GpuSpec):
        return gpu
    from models.physics.catalog import gpu_catalog  # the catalog reads efficiency-free files

    return gpu_catalog().get(gpu)


def lender_generation(gpu: str | GpuSpec) -> tuple[str | None, str | None]:
    """(the generation, the GPU) a GPU's factors come from when no engine is named: its own
    generation and no lender; without one, the generation of the GPU its `efficiency_like`
    names and that GPU (gh200: `hopper`, h200); else (None, None)."""
    name = gpu.name if isinstance(gpu, GpuSpec) else gpu
    if (own := generation_of(name)) is not None:
        return own, None
    spec = _spec(gpu)
    like = spec.efficiency_like if spec is not None and spec.efficiency_like != name else None
    return (generation_of(like) if like is not None else None), like


def efficiency_source(gpu: str | GpuSpec, engine: str | None = None) -> EfficiencySource:
    """Which calibrated set a GPU gets: its own generation's when the engine profile (or
    its fallbacks) holds rows of it, else that of the GPU its `efficiency_like` names,
    else the pooled fit. (MI300X has vLLM rows but no TensorRT-LLM rows: under a vLLM
    profile it runs on its own generation, under TensorRT-LLM on the Hopper fit it names.)"""
    spec = _spec(gpu)
    name = gpu.name if isinstance(gpu, GpuSpec) else gpu
    like = spec.efficiency_like if spec is not None else None
    engine = check_engine(engine)
    own = generation_of(name, engine)
    if like == name or (own is not None and any(own in table for table in _chain(engine))):
        like = None
    generation = generation_of(like or name, engine)
    return EfficiencySource(name, engine, like, generation)


def borrowed_gpus(gpus: Iterable[str | GpuSpec], engine: str | None = None) -> list[str]:
    """Sorted names of the GPUs among `gpus` that run on borrowed efficiencies."""
    sources = (efficiency_source(gpu, engine) for gpu in gpus)
    return sorted({source.gpu for source in sources if source.borrowed})


def borrowed_note(gpus: Iterable[str | GpuSpec], engine: str | None = None) -> str:
    """A sentence naming the GPUs on borrowed efficiencies and whose they use ('' for
    none)."""
    sources = {s.gpu: s for s in (efficiency_source(g, engine) for g in gpus) if s.borrowed}
    if not sources:
        return ""
    parts = [f"{name} on {sources[name].note}" for name in sorted(sources)]
    return (
        "borrowed efficiencies (no calibration rows of their own; numbers less certain): "
        + "; ".join(parts)
    )


def efficiency_for(
    gpu: str | GpuSpec,
    precision: Precision | str,
    overrides: EfficiencyOverrides | None = None,
    engine: str | None = None,
) -> Efficiency:
    """The efficiency factors for a GPU and weight precision under an engine profile.

    Layering, later wins: the class defaults; the calibrated `default` set; the
    calibrated values for the GPU's generation, then `<generation>/<precision>`; values
    keyed by the GPU name, then `<gpu>/<precision>`; then the instance overrides. Each key
    is looked up in the profile first, then in its `fallback` profile (a generation the
    newest engine version has no rows for keeps the older version's fit). A GPU with no
    calibration rows is looked up as the GPU its `efficiency_like` names; without one it
    gets the calibrated `default` set (`efficiency_source` says which). A borrowing GPU
    whose catalog entry measures its own link (`GpuSpec.scaleup_fraction`) keeps that
    link fraction instead of the lender's.

    An engine's settings (a profile's `settings`: vLLM's memory reserve) apply at every
    generation, under the factors of whichever profile of the chain holds them (vllm-0.10
    on Hopper: trtllm-0.20's fractions, vLLM's reserve); a `by_key` set that names one
    wins. Settings the engine picks by device (`settings_by_gpu`: vLLM's 2,048-token
    budget and 256 sequences on an A100) go with the GPU itself, never with the GPU it
    borrows factors from; a `by_key` set that names one wins over them too.

    The request overhead (`request_overhead_s`: HTTP, tokenisation and scheduling on the
    host, before the engine) and the step overhead (`step_overhead_s`: the engine's
    scheduler, launches and sampling each iteration) are the engine's, not the GPU's
    (`HOST_COSTS`): a generation the profile has no closed-loop fit of takes the median
    of the profile's own fits, never the fallback profile's (sglang-0.5 on Hopper: the
    medians of its Ampere and Blackwell fits, 73 ms and 4.2 ms, not TensorRT-LLM's 0 and
    1.9 ms).

    Raises UnknownEngine for a profile the calibration does not hold.
    """
    source = efficiency_source(gpu, engine)
    calibrated = _calibrated(
        source.like or source.gpu,
        source.generation,
        Precision(precision),
        source.engine,
        source.gpu,
    )
    spec = _spec(gpu)
    if source.borrowed and spec is not None and spec.scaleup_fraction is not None:
        calibrated = calibrated.model_copy(update={"scaleup_fraction": spec.scaleup_fraction})
    if overrides is None:
        return calibrated
    return Efficiency(**{**calibrated.model_dump(), **overrides.model_dump(exclude_none=True)})


HOST_COSTS = ("step_overhead_s", "request_overhead_s")
"""The engine's own costs, fitted together on its closed-loop runs (a `by_key` set that
holds a request overhead was fitted on them): the fixed cost of an iteration (its
scheduler, launches and sampling) and of a request in front of it. A generation the
profile has no such set of takes their medians over the profile's sets, never the
fallback profile's (`efficiency_for`)."""


@cache
def _calibrated(
    lookup: str, generation: str | None, precision: Precision, engine: str, gpu: str
) -> Efficiency:
    """The calibrated layers of `efficiency_for`, without the instance overrides: the
    engine's settings, those it picks for `gpu` itself (never for `lookup`, the GPU whose
    factors it borrows), then the `by_key` sets."""
    keys = ["default", lookup, f"{lookup}/{precision}"]
    if generation is not None:
        keys[1:1] = [generation, f"{generation}/{precision}"]
    tables = _chain(engine)
    fields: dict[str, Any] = _settings(engine)  # the engine's, at every generation
    fields["overlap_engine"] = engine_family(engine)
    fields.update(_gpu_settings(engine, gpu))  # and those it picks by device
    own_overhead = False
    for key in keys:
        for depth, table in enumerate(tables):
            if key in table:
                fields.update(table[key])
                own_overhead |= depth == 0 and "request_overhead_s" in table[key]
                break
    if not own_overhead:  # an engine's costs, not a GPU's: the profile's own measures
        measured = [
            entry
            for entry in tables[0].values()
            if isinstance(entry, dict) and "request_overhead_s" in entry
        ]
        for name in HOST_COSTS:
            values = [entry[name] for entry in measured if name in entry]
            if values:
                fields[name] = statistics.median(values)
    return Efficiency(**fields)


def engine_report(gpus: Iterable[str | GpuSpec], engine: str | None = None) -> str:
    """The line every report carries: the engine profile used, the GPUs whose generation
    the profile's engine has no rows of (their fit is another engine's, down the fallback
    chain: vllm-0.11 on B200 runs on trtllm-0.20's Blackwell fit) and, when any, the GPUs
    on borrowed efficiencies."""
    name = check_engine(engine)
    shown = profile_summary(profile_of(name), name) if is_profile_file(name) else name
    line = f"engine profile: {shown}" + (" (default)" if engine is None else "")
    if engine is not None and name != engine:
        line += f" (for {engine}: the newest {name.partition('-')[0]} profile at or below it)"
    family = _family(name)
    other = sorted(
        {
            f"{source.gpu} runs on {fitted}'s {source.generation} fit "
            f"(no {family} rows of {source.generation})"
            for source in (efficiency_source(gpu, engine) for gpu in gpus)
            if (fitted := _fitted_by(source)) and _family(fitted) != family
        }
    )
    if other and not is_profile_file(name):  # a vLLM name on TensorRT-LLM's factors, say
        line += "; " + "; ".join(other)
    borrowed = borrowed_note(gpus, engine)
    return f"{line}; {borrowed}" if borrowed else line


def engine_family(engine: str) -> str | None:
    """The serving engine a profile runs as (`vllm` for `vllm-0.11`): the first of its
    name, its file's `profile` name and its fallbacks' names that belongs to an engine of
    the catalog (a profile file fitted from trtllm-0.20 runs as `trtllm`); None when none
    does."""
    known = {_family(name) for name in engine_profiles()}
    name: str | None = engine
    for profile in _profiles(engine):
        for candidate in (name, profile.get("profile")):
            if isinstance(candidate, str) and _family(candidate) in known:
                return _family(candidate)
        name = profile.get("fallback")
    return None


def profile_engine(name: str | None) -> tuple[str, str | None] | None:
    """The engine profile `name` runs on (`check_engine`; None: the default) and its
    serving engine (`engine_family`), or None for a profile the calibration does not hold
    (the instance cross-check names it)."""
    try:
        profile = check_engine(name)
    except UnknownEngine:
        return None
    return profile, engine_family(profile)


def _family(profile: str) -> str:
    """The engine a profile name belongs to (`vllm` for `vllm-0.11`)."""
    return profile.partition("-")[0]
