"""Efficiency factors of the performance model: what fraction of the datasheet a real
serving engine achieves, the fixed costs no datasheet lists, and the two engine settings
that shape a step (token budget per forward pass, most sequences in flight).

Each factor is named, documented and overridable per instance (`efficiency:` in the
instance file). Calibrated defaults per GPU generation and weight precision live in
`models/catalog/efficiency.yaml`, written by `python -m calibration.calibrate --write` from the
published measurements in `calibration/data/`.
"""

from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from models.hardware import GpuSpec
from models.precision import Precision
from models.quantities import BatchSequences, StepLatencyS, TokenCount
from models.yaml_files import read_yaml

_FILE = Path(__file__).parent / "catalog" / "efficiency.yaml"


class Efficiency(BaseModel):
    """Achieved fractions of peak, fixed overheads and engine settings for one GPU type
    and weight precision. The class defaults are generic; `efficiency_for` layers the
    calibrated values and the instance overrides on top."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)

    prefill_flops_fraction: float = Field(default=0.55, gt=0, le=1)
    """Achieved fraction of dense peak FLOP/s on prefill tokens (large GEMMs, attention)."""
    decode_flops_fraction: float = Field(default=0.45, gt=0, le=1)
    """Achieved fraction of dense peak FLOP/s on decode tokens (skinny GEMMs at batch B)."""
    hbm_fraction: float = Field(default=0.75, gt=0, le=1)
    """Achieved fraction of peak HBM bandwidth when streaming weights and KV cache."""
    scaleup_fraction: float = Field(default=0.7, gt=0, le=1)
    """Achieved fraction of scale-up link bandwidth (NVLink, Infinity Fabric, PCIe) in a
    ring all-reduce or a pipeline hand-off."""
    scaleout_fraction: float = Field(default=0.8, gt=0, le=1)
    """Achieved fraction of the scale-out NIC bandwidth (all-reduce across nodes, KV
    transfer from a prefill to a decode replica)."""
    allreduce_latency_s: float = Field(default=10e-6, ge=0)
    """Fixed latency of one all-reduce (launch and synchronisation), seconds."""
    pp_hop_latency_s: float = Field(default=20e-6, ge=0)
    """Fixed latency of one pipeline-stage hand-off, seconds."""
    step_overhead_s: float = Field(default=2e-3, ge=0)
    """Fixed cost of one engine iteration (scheduling, sampling, launches), seconds."""
    memory_reserve_fraction: float = Field(default=0.05, ge=0, lt=1)
    """Fraction of device memory held back for the runtime (CUDA context, allocator
    slack, graphs, communication buffers). Activations are counted separately."""
    prefill_chunk_tokens: int = Field(default=8192, ge=256)
    """Engine token budget of one forward pass (vLLM `max_num_batched_tokens`, TensorRT-LLM
    `max_num_tokens`): prompts are prefilled in chunks of at most this many tokens."""
    max_batch_sequences: int = Field(default=2048, ge=1)
    """Most sequences the engine keeps in flight (vLLM `max_num_seqs`, TensorRT-LLM
    `max_batch_size`), whatever the memory would allow."""


def _described_as_efficiency(schema: dict[str, Any]) -> None:
    """Each override's JSON-schema description is that of the `Efficiency` field it sets."""
    for name, prop in schema.get("properties", {}).items():
        field = Efficiency.model_fields.get(name)
        if field is not None and field.description:
            prop.setdefault("description", field.description)


class EfficiencyOverrides(BaseModel):
    """Instance-level overrides: any field of `Efficiency`, applied to every GPU."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
        json_schema_extra=_described_as_efficiency,
    )

    prefill_flops_fraction: float | None = Field(default=None, gt=0, le=1)
    decode_flops_fraction: float | None = Field(default=None, gt=0, le=1)
    hbm_fraction: float | None = Field(default=None, gt=0, le=1)
    scaleup_fraction: float | None = Field(default=None, gt=0, le=1)
    scaleout_fraction: float | None = Field(default=None, gt=0, le=1)
    allreduce_latency_s: StepLatencyS | None = None
    pp_hop_latency_s: StepLatencyS | None = None
    step_overhead_s: StepLatencyS | None = None
    memory_reserve_fraction: float | None = Field(default=None, ge=0, lt=1)
    prefill_chunk_tokens: TokenCount | None = Field(default=None, ge=256)
    max_batch_sequences: BatchSequences | None = None


@cache
def calibration_table() -> dict[str, Any]:
    """The parsed `efficiency.yaml` (empty when the file is absent)."""
    if not _FILE.exists():
        return {}
    return read_yaml(_FILE) or {}


def generation_of(gpu_name: str) -> str | None:
    """The GPU generation a catalog GPU belongs to (`hopper`, ...), or None when unknown."""
    return calibration_table().get("generation_of", {}).get(gpu_name)


def efficiency_for(
    gpu: str | GpuSpec,
    precision: Precision | str,
    overrides: EfficiencyOverrides | None = None,
) -> Efficiency:
    """The efficiency factors for a GPU and weight precision.

    Layering, later wins: the class defaults; the calibrated `default` set; the
    calibrated values for the GPU's generation, then `<generation>/<precision>`; values
    keyed by the GPU name, then `<gpu>/<precision>`; then the instance overrides. A GPU
    the calibration file does not know (an inline GPU in an instance) gets the class
    defaults, the calibrated `default` set and the overrides.
    """
    gpu_name = gpu.name if isinstance(gpu, GpuSpec) else gpu
    precision = Precision(precision)
    table = calibration_table().get("by_key", {})
    keys = ["default", gpu_name, f"{gpu_name}/{precision}"]
    generation = generation_of(gpu_name)
    if generation is not None:
        keys[1:1] = [generation, f"{generation}/{precision}"]
    fields: dict[str, float] = {}
    for key in keys:
        fields.update(table.get(key, {}))
    if overrides is not None:
        fields.update(overrides.model_dump(exclude_none=True))
    return Efficiency(**fields)
