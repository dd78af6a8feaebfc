"""The MoE constants fitted on the MoE calibration rows (calibration.moe_rows: how a row
becomes a prediction; calibration.moe_report: their errors before and now).

Fit (`fit_moe_constants`, `python -m calibration.moe --write`): per GPU generation, two
constants of `models.physics.catalog.moe_efficiency.MoeEfficiency` on a grid, the point of
smallest mean |ln(predicted / measured)| over the generation's fit rows and the dense
set's MoE fit rows of the generation (Mixtral 8x7B on Hopper, `dense_moe_fit_rows`),
written with its fit and held-out errors to `models/physics/catalog/moe_efficiency.yaml`:
the all-to-all latency per collective (10 to 100 us with NVLink, to 400 us over PCIe
only) and the grouped-GEMM half-rate rows per expert (0 to 64: a 64-row tile half filled;
larger values make the dense set's Mixtral rows pessimistic, held out 6.9% -> 8.2%). The
routing skew stays uniform: it moves no generation's loss by more than 5%.
"""

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.calibrate import catalog_efficiency, predict
from calibration.moe_report import summarise
from calibration.moe_rows import MoeRow, load_moe_rows, predict_moe
from calibration.moe_sources import sourced_yaml_lines
from calibration.rows import Row, calibration_dir, load_rows
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.catalog.moe_efficiency import trial_constants
from models.physics.efficiency import generation_of
from models.physics.moe import ALLTOALL_LATENCY_S, expert_compute_precision

LATENCY_GRID_S = (10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 400e-6)
"""Candidate all-to-all latencies per collective: NVLink kernels' tens of microseconds to
NCCL over PCIe's hundreds; a fit on the top end is reported (`MoeFit.on_bound`)."""
NVLINK_LATENCY_MAX_S = 100e-6
"""Top of the latency grid for GPUs joined by NVLink (DeepEP's and TensorRT-LLM's NVLink
all-to-alls take tens of microseconds per collective; hundreds are PCIe's)."""
PCIE_SCALEUP_GB_S = 128
"""Scale-up bandwidth at or below which a GPU is taken to have PCIe only (no NVLink)."""


def latency_grid(rows: list[MoeRow]) -> tuple[float, ...]:
    """`LATENCY_GRID_S`, up to `NVLINK_LATENCY_MAX_S` when any row's GPU has NVLink."""
    nvlink = any(gpu_catalog()[r.gpu].scaleup_gb_s > PCIE_SCALEUP_GB_S for r in rows)
    return tuple(x for x in LATENCY_GRID_S if not nvlink or x <= NVLINK_LATENCY_MAX_S)


HALF_TOKENS_GRID = (0.0, 16.0, 32.0, 64.0)
"""Candidate half-rate rows per expert of the grouped GEMM: 0 (no loss) to 64 (a 64-row
tile half filled; the module docstring says why the grid stops there)."""
MOE_EFFICIENCY_FILE = (
    Path(__file__).resolve().parents[1] / "models" / "physics" / "catalog" / "moe_efficiency.yaml"
)


@dataclass(frozen=True)
class MoeFit:
    """The constants chosen for one GPU generation, with the errors they give."""

    generation: str
    alltoall_latency_s: float
    gemm_half_tokens: float
    fit_rows: int
    fit_median_pct: float
    held_rows: int
    held_median_pct: float
    dequant_half_tokens: float | None = None
    """The W4A16 kernel's half rows where the generation has rows that run it, else None."""

    @property
    def on_bound(self) -> bool:
        """Whether a constant sits on the top of its grid (the data want more than the
        physical range allows: a sign of another cause)."""
        return self.alltoall_latency_s in (LATENCY_GRID_S[-1], NVLINK_LATENCY_MAX_S) or (
            HALF_TOKENS_GRID[-1] in (self.gemm_half_tokens, self.dequant_half_tokens)
        )


def _log_errors(predicted: list[float], measured: list[float]) -> list[float]:
    """|ln(predicted / measured)| of each row; a row no layout fits counts ln 10."""
    return [
        math.log(10.0) if math.isnan(value) else abs(math.log(value / truth))
        for value, truth in zip(predicted, measured, strict=True)
    ]


def _scores(rows: list[MoeRow], by_key: dict, dense: list[Row] = ()) -> tuple[float, float]:
    """(mean |ln(predicted / measured)|, median |error| in percent of `rows`) under the
    trial constants `by_key`; the mean also runs over `dense`, the dense set's MoE rows
    (`dense_moe_fit_rows`), predicted as `calibration.calibrate` predicts them."""
    with trial_constants(by_key):
        predicted = [predict_moe(row) for row in rows]
        dense_predicted = [predict(row, catalog_efficiency(row)) for row in dense]
    logs = _log_errors(predicted, [row.measured for row in rows])
    logs += _log_errors(dense_predicted, [row.measured for row in dense])
    return float(np.mean(logs)), summarise("trial", rows, predicted).median_abs_pct


def dense_moe_fit_rows(generation: str) -> list[Row]:
    """The fit rows of the dense set (`calibration.rows`, TensorRT-LLM offline rows) whose
    model is a mixture of experts (Mixtral 8x7B) on `generation`'s GPUs: the MoE constants
    drive their predictions too, so a generation's fit scores them beside its MoE rows
    (its held-out rows stay unseen)."""
    rows, _ = load_rows(calibration_dir())
    return [
        row
        for row in rows
        if row.kind == "offline"
        and not row.held_out
        and llm_catalog()[row.model].is_moe
        and generation_of(row.gpu) == generation
    ]


def fit_moe_constants(
    rows: list[MoeRow], dense_rows: Callable[[str], list[Row]] = dense_moe_fit_rows
) -> list[MoeFit]:
    """Per GPU generation, the (all-to-all latency, grouped-GEMM half rows) of the grids
    with the smallest mean |ln(predicted / measured)| on the generation's fit rows and
    the dense set's MoE fit rows of the generation (`dense_rows`: Mixtral on Hopper);
    every row counts, a ratio off either way alike; ties: the smaller constants. The
    held-out rows are scored after the choice, for the record only."""
    fits = []
    for generation in sorted({row.generation for row in rows}):
        fit = [r for r in rows if r.generation == generation and not r.held_out]
        held = [r for r in rows if r.generation == generation and r.held_out]
        dense = dense_rows(generation)

        def table(latency: float, half: float, dq: float | None, key: str = generation) -> dict:
            constants = {"alltoall_latency_s": latency, "gemm_half_tokens": half}
            return {key: constants | ({} if dq is None else {"dequant_gemm_half_tokens": dq})}

        dequant_grid = HALF_TOKENS_GRID if any(map(dequantises, fit)) else (None,)
        scored = [
            (_scores(fit, table(latency, half, dq), dense)[0], half, latency, dq or 0.0)
            for latency in latency_grid(fit)
            for half in HALF_TOKENS_GRID
            for dq in dequant_grid
        ]
        _, half, latency, dq = min(scored)
        dq = dq if dequant_grid[0] is not None else None
        error = _scores(fit, table(latency, half, dq))[1]
        held_error = _scores(held, table(latency, half, dq))[1] if held else math.nan
        fits.append(MoeFit(generation, latency, half, len(fit), error, len(held), held_error, dq))
    return fits


def dequantises(row: MoeRow) -> bool:
    """Whether the row's experts are dequantised in the kernel (W4A16:
    `models.physics.moe.expert_compute_precision`)."""
    gpu, llm = gpu_catalog()[row.gpu], llm_catalog()[row.model]
    return expert_compute_precision(gpu, llm, row.weight_precision) is not row.weight_precision


def render_moe_yaml(fits: list[MoeFit]) -> str:
    """The text of `moe_efficiency.yaml` for the chosen constants."""
    lines = [
        "# Expert-parallel constants of the performance model (models/physics/moe.py,",
        "# MoeEfficiency).",
        "#",
        "# Written by `python -m calibration.moe --write`; do not edit by hand.",
        "# Keys: `default`, a GPU generation (efficiency.yaml `generation_of`) or a GPU name;",
        "# later wins. Per generation, on the TensorRT-LLM MoE rows (trtllm_perf_moe.csv, one",
        "# engine: v0.21 to post-v1.0, at trtllm-bench's own max_batch_size and max_num_tokens)",
        "# and the dense set's MoE fit rows (Mixtral), the grid point of smallest mean",
        "# |ln(pred / meas)| on the fit rows (two in three by a CRC of the configuration);",
        "# the errors below are the MoE rows'; the held-out error is scored",
        "# after the choice. alltoall_latency_s: one dispatch or combine collective;",
        "# gemm_half_tokens: rows per expert at which the grouped GEMM runs at half rate",
        "# (dequant_gemm_half_tokens: the same for a kernel that dequantises W4A16 experts);",
        "# routing_skew stays uniform (1.0: it moves no generation's loss, calibration/moe.py).",
        "",
        "by_key:",
        "  default:",
        f"    alltoall_latency_s: {ALLTOALL_LATENCY_S:.4g}",
        "    routing_skew: 1.0",
        "    gemm_half_tokens: 0.0",
    ]
    for fit in fits:
        lines += [
            f"  {fit.generation}:  # {fit.fit_rows} fit rows, median |error| "
            f"{fit.fit_median_pct:.1f}%; {fit.held_rows} held out, {fit.held_median_pct:.1f}%"
            + ("; on a grid bound" if fit.on_bound else ""),
            f"    alltoall_latency_s: {fit.alltoall_latency_s:.4g}",
            f"    gemm_half_tokens: {fit.gemm_half_tokens:g}",
        ]
        if fit.dequant_half_tokens is not None:
            lines.append(f"    dequant_gemm_half_tokens: {fit.dequant_half_tokens:g}")
    return "\n".join(lines + sourced_yaml_lines()) + "\n"


def main() -> None:
    """Fit the MoE constants per generation and print them; `--write` writes the file."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--write", action="store_true", help="write moe_efficiency.yaml")
    args = parser.parse_args()
    rows, _ = load_moe_rows(calibration_dir())
    text = render_moe_yaml(fit_moe_constants(rows))
    print(text)
    if args.write:
        MOE_EFFICIENCY_FILE.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
