"""The expert-parallel constants of the performance model per GPU, read from
`moe_efficiency.yaml` beside this module (written by `python -m calibration.moe --write`):
the all-to-all latency, the routing skew and the grouped GEMMs' rates that no datasheet
lists (`MoeEfficiency`). `models.physics.moe` holds the physics they enter;
`models.physics.step_time.step_model` hands them to it (`moe_efficiency_for`)."""

from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from models.physics.efficiency import lender_generation
from models.physics.hardware import GpuSpec
from models.physics.moe import ALLTOALL_LATENCY_S
from models.physics.yaml_files import read_yaml

_FILE = Path(__file__).parent / "moe_efficiency.yaml"


class MoeEfficiency(BaseModel):
    """The expert-parallel constants no datasheet lists, per GPU generation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    alltoall_latency_s: float = Field(default=ALLTOALL_LATENCY_S, ge=0)
    """Fixed latency of one dispatch or combine collective, seconds."""
    routing_skew: float = Field(default=1.0, ge=0)
    """Multiplier on the uniform-routing excess of the max-rank load (1: uniform top-k
    routing; > 1: a router more skewed than uniform, after the engine's rebalancing)."""
    gemm_half_tokens: float = Field(default=0.0, ge=0)
    """Tokens per expert at which the grouped GEMM of the routed experts runs at half its
    large-batch rate (`models.physics.moe.grouped_gemm_efficiency`); 0: every expert GEMM
    at the dense rate."""
    dequant_gemm_half_tokens: float | None = Field(default=None, ge=0)
    """`gemm_half_tokens` of a grouped GEMM that dequantises its experts in the kernel
    (W4A16, `models.physics.moe.expert_compute_precision`: GPT-OSS's MXFP4 experts on
    Hopper, which TensorRT-LLM runs with its Triton MoE kernel, not the FP8 grouped GEMM);
    None: the same as `gemm_half_tokens`."""
    dequant_gemm_rate: float = Field(default=1.0, gt=0, le=1)
    """That dequantising GEMM's large-batch rate over the dense GEMM's
    (`models.physics.moe.expert_layout`'s `dequant_rate`)."""


@cache
def _moe_table() -> dict:
    return (read_yaml(_FILE) or {}) if _FILE.exists() else {}


_TRIAL: list[dict] = []
"""Tables the calibration tool is trying (`trial_constants`), innermost last."""


@contextmanager
def trial_constants(by_key: dict) -> Iterator[None]:
    """Within the block `moe_efficiency_for` reads `by_key` in place of the catalog file
    (the calibration tool scoring candidate constants on its fit rows)."""
    _TRIAL.append(by_key)
    try:
        yield
    finally:
        _TRIAL.pop()


def moe_efficiency_for(gpu: str | GpuSpec) -> MoeEfficiency:
    """The expert-parallel constants of a GPU: the `default` set of
    `moe_efficiency.yaml`, then its generation's (`generation_of`), then the
    GPU's own entry; the class defaults where the file says nothing. A GPU with no
    generation borrows as its dense factors do (`efficiency_for`): the generation and
    entry of the GPU its `efficiency_like` names, before its own (`lender_generation`)."""
    generation, like = lender_generation(gpu)
    table = _TRIAL[-1] if _TRIAL else _moe_table().get("by_key", {})
    fields: dict[str, float] = {}
    for key in ("default", generation, like, gpu.name if isinstance(gpu, GpuSpec) else gpu):
        if key is not None:
            fields.update(table.get(key, {}))
    return MoeEfficiency(**fields)
