"""Efficiency factors of the performance model: what fraction of the datasheet a real
serving engine achieves, and the fixed costs no datasheet lists.

Each factor is named, documented and overridable per instance (`efficiency:` in the
instance file). Calibrated defaults per GPU and precision live in
`models/catalog/efficiency.yaml`.
"""

from functools import cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from models.precision import Precision

_FILE = Path(__file__).parent / "catalog" / "efficiency.yaml"


class Efficiency(BaseModel):
    """Achieved fractions of peak and fixed overheads for one GPU type and precision."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefill_flops_fraction: float = Field(default=0.55, gt=0, le=1)
    """Achieved fraction of dense peak FLOP/s in prefill (large GEMMs and attention)."""
    decode_flops_fraction: float = Field(default=0.45, gt=0, le=1)
    """Achieved fraction of dense peak FLOP/s in a compute-bound decode step."""
    hbm_fraction: float = Field(default=0.75, gt=0, le=1)
    """Achieved fraction of peak HBM bandwidth when streaming weights and KV cache."""
    scaleup_fraction: float = Field(default=0.7, gt=0, le=1)
    """Achieved fraction of scale-up link bandwidth in a ring all-reduce."""
    allreduce_latency_s: float = Field(default=10e-6, ge=0)
    """Fixed latency of one all-reduce (launch and synchronisation), seconds."""
    pp_hop_latency_s: float = Field(default=20e-6, ge=0)
    """Fixed latency of one pipeline-stage hand-off, seconds."""
    step_overhead_s: float = Field(default=2e-3, ge=0)
    """Fixed per-step cost of the engine (scheduling, sampling, launches), seconds."""
    memory_reserve_fraction: float = Field(default=0.10, ge=0, lt=1)
    """Fraction of device memory held back for the runtime (context, allocator, graphs)."""


class EfficiencyOverrides(BaseModel):
    """Instance-level overrides: any field of `Efficiency`, applied to every GPU."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prefill_flops_fraction: float | None = Field(default=None, gt=0, le=1)
    decode_flops_fraction: float | None = Field(default=None, gt=0, le=1)
    hbm_fraction: float | None = Field(default=None, gt=0, le=1)
    scaleup_fraction: float | None = Field(default=None, gt=0, le=1)
    allreduce_latency_s: float | None = Field(default=None, ge=0)
    pp_hop_latency_s: float | None = Field(default=None, ge=0)
    step_overhead_s: float | None = Field(default=None, ge=0)
    memory_reserve_fraction: float | None = Field(default=None, ge=0, lt=1)


@cache
def _calibrated() -> dict[str, dict[str, float]]:
    if not _FILE.exists():
        return {}
    with _FILE.open(encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    return data.get("by_gpu_precision", {})


def efficiency_for(
    gpu_name: str, precision: Precision | str, overrides: EfficiencyOverrides | None = None
) -> Efficiency:
    """The efficiency factors for a GPU and weight precision.

    Layering, later wins: the class defaults, the calibrated values for
    `<gpu>/<precision>` (then `<gpu>`) from the catalog, then the instance overrides.
    """
    table = _calibrated()
    fields: dict[str, float] = {}
    fields.update(table.get(gpu_name, {}))
    fields.update(table.get(f"{gpu_name}/{Precision(precision)}", {}))
    if overrides is not None:
        fields.update(overrides.model_dump(exclude_none=True))
    return Efficiency(**fields)
