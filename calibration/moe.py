"""The MoE calibration rows: TensorRT-LLM throughput of mixture-of-experts models, with
expert parallelism and attention data parallelism where the table gives them.

Reads `trtllm_perf_moe.csv` (`calibration/data/README.md`): Llama 4 Scout and Maverick,
GPT-OSS 20B and 120B, Qwen3-30B-A3B on H100, H200, B200, GB200 and RTX PRO 6000,
TensorRT-LLM v0.21 to v1.0 and a later layout. Every row is an offline max-throughput
measurement (all requests queued at once, fixed ISL/OSL), predicted like the dense rows
of `calibration.calibrate`: `replica_capacity` with no latency target, output tokens/s
per GPU, with the catalog's efficiency factors for the GPU and precision.

Layout of a row: `tp` and `pp` as published; `ep` the expert-parallel size where the
table gives one. A blank TP with an EP is TensorRT-LLM's "DEP" layout (the notes say so:
"DEP8 = attention data-parallel 8 + expert-parallel 8"): attention DP over the GPUs of a
stage, dp = num_gpus / pp, tp = 1, ep as given. A row with TP and no EP runs the experts
tensor-parallel (ep = 1), TensorRT-LLM's default.

Fit: at most one MoE-specific constant per GPU generation, the routing skew of
`models.physics.moe.MoeEfficiency` (the multiplier on the uniform top-k max-rank excess), on the
EP rows of that generation only; nothing per row. `python -m calibration.calibrate`
prints this report after the dense one; `make bench` prints it too
(tests/bench/test_moe_calibration.py).
"""

import csv
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import Efficiency, efficiency_for, generation_of
from models.physics.memory import default_kv_precision
from models.physics.precision import Precision
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix

MOE_FILE = "trtllm_perf_moe.csv"
MOE_MODELS = {
    "Llama 4 Maverick": "llama-4-maverick",
    "LLaMA v4 Maverick": "llama-4-maverick",
    "Llama 4 Scout": "llama-4-scout",
    "GPT-OSS 20B": "gpt-oss-20b",
    "GPT-OSS 120B": "gpt-oss-120b",
    "Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen3 30B A3B": "qwen3-30b-a3b",
}
MOE_GPUS = {
    "H100 SXM 80GB (DGX H100)": "h100-sxm",
    "H200 SXM 141GB (DGX H200)": "h200",
    "B200 180GB (DGX B200)": "b200",
    "GB200 192GB (GB200 NVL72)": "gb200",
    "RTX 6000 Pro Blackwell Server Edition": "rtx-pro-6000",
}
MOE_PRECISIONS = {"FP8": Precision.FP8, "FP4": Precision.FP4, "FP16": Precision.BF16}


@dataclass(frozen=True)
class MoeRow:
    """One MoE calibration row in the model's terms."""

    label: str
    model: str
    gpu: str
    weight_precision: Precision
    tp: int
    pp: int
    ep: int
    dp: int
    mix: TrafficMix
    measured: float
    """Output tokens/s per GPU."""

    @property
    def kv_precision(self) -> Precision:
        """FP8 and FP4 checkpoints run an FP8 KV cache."""
        return default_kv_precision(self.weight_precision)

    @property
    def expert_parallel(self) -> bool:
        """Whether the row uses EP or attention DP (the rows the MoE constant is fitted on)."""
        return self.ep > 1 or self.dp > 1

    @property
    def engine(self) -> str:
        """The TensorRT-LLM version that measured the row (`trtllm-v1.0`), from its label."""
        return "trtllm-" + self.label.split()[1]

    @property
    def generation(self) -> str:
        """The GPU's generation (`models.physics.efficiency.generation_of`), else the GPU name."""
        return generation_of(self.gpu) or self.gpu


def _layout(raw: dict[str, str]) -> tuple[int, int, int, int]:
    """(tp, pp, ep, dp) of a row: blank TP with an EP is attention DP over the stage."""
    pp = int(raw["pp"] or 1)
    gpus = int(raw["num_gpus"])
    ep = int(raw["ep"] or 1)
    if raw["tp"]:
        return int(raw["tp"]), pp, ep, 1
    return 1, pp, ep, gpus // pp


def load_moe_rows(directory: Path) -> tuple[list[MoeRow], Counter]:
    """Every usable MoE row of `directory/trtllm_perf_moe.csv`, and the skipped ones."""
    rows: list[MoeRow] = []
    skipped: Counter = Counter()
    with (directory / MOE_FILE).open(encoding="utf-8") as handle:
        for raw in csv.DictReader(handle):
            model = MOE_MODELS.get(raw["model"])
            gpu = MOE_GPUS.get(raw["gpu"])
            precision = MOE_PRECISIONS.get(raw["precision"])
            if model is None or gpu is None or precision is None:
                skipped[f"trtllm moe: {raw['model']} on {raw['gpu']} not in the catalogs"] += 1
                continue
            tp, pp, ep, dp = _layout(raw)
            isl, osl = float(raw["isl"]), float(raw["osl"])
            per_gpu = raw["derived_value_per_gpu"]
            measured = float(per_gpu) if "whole" in raw["unit"] and per_gpu else float(raw["value"])
            version = raw["trtllm_version_stated"].split(" ")[0]
            layout = f"tp{tp}pp{pp}" + (f"dp{dp}" if dp > 1 else "") + (f"ep{ep}" if ep > 1 else "")
            rows.append(
                MoeRow(
                    label=f"trtllm {version} {model} {gpu} {precision} {layout} {isl:g}/{osl:g}",
                    model=model,
                    gpu=gpu,
                    weight_precision=precision,
                    tp=tp,
                    pp=pp,
                    ep=ep,
                    dp=dp,
                    mix=TrafficMix.fixed(isl, osl),
                    measured=measured,
                )
            )
    return rows, skipped


def moe_config(row: MoeRow) -> ReplicaConfig:
    """The replica configuration of a row."""
    gpu = gpu_catalog()[row.gpu]
    llm = llm_catalog()[row.model]
    return ReplicaConfig(
        gpu,
        llm,
        row.weight_precision,
        row.kv_precision,
        row.tp,
        row.pp,
        Role.UNIFIED,
        row.ep,
        row.dp,
    )


def predict_moe(row: MoeRow, efficiency: Efficiency | None = None) -> float:
    """Output tokens/s per GPU the model gives a row (offline); nan when it does not fit."""
    config = moe_config(row)
    efficiency = efficiency or efficiency_for(config.gpu, row.weight_precision)
    capacity = replica_capacity(config, row.mix, LatencyTargets(), efficiency)
    return capacity.output_tokens_per_s_per_gpu if capacity.fits else math.nan


@dataclass(frozen=True)
class MoeSummary:
    """Signed percentage errors of a set of rows, and their median and worst."""

    name: str
    errors_pct: tuple[float, ...]
    unplaced: int

    @property
    def median_abs_pct(self) -> float:
        """Median |error| in percent (nan with no placed row)."""
        return float(np.median(np.abs(self.errors_pct))) if self.errors_pct else math.nan

    @property
    def worst_pct(self) -> float:
        """The signed error of largest magnitude, percent."""
        if not self.errors_pct:
            return math.nan
        return max(self.errors_pct, key=abs)


def summarise(name: str, rows: list[MoeRow], predicted: list[float]) -> MoeSummary:
    """Signed errors (predicted - measured) / measured x 100 of the rows that fit."""
    errors = tuple(
        (value - row.measured) / row.measured * 100
        for row, value in zip(rows, predicted, strict=True)
        if not math.isnan(value)
    )
    return MoeSummary(name, errors, sum(math.isnan(v) for v in predicted))


def moe_report(rows: list[MoeRow]) -> tuple[list[str], list[MoeSummary]]:
    """The report's lines (every row, then summaries by layout kind, model and
    generation) and the summaries."""
    predicted = [predict_moe(row) for row in rows]
    lines = [f"{'MoE row':78s} {'predicted':>10s} {'measured':>10s} {'error':>8s}"]
    for row, value in zip(rows, predicted, strict=True):
        if math.isnan(value):
            lines.append(f"{row.label:78s} {'no fit':>10s} {row.measured:10.4g}")
            continue
        error = (value - row.measured) / row.measured * 100
        lines.append(f"{row.label:78s} {value:10.4g} {row.measured:10.4g} {error:+7.1f}%")
    groups: list[tuple[str, list[int]]] = [
        ("all MoE rows", list(range(len(rows)))),
        ("EP / attention-DP rows", [i for i, r in enumerate(rows) if r.expert_parallel]),
        ("TP-only MoE rows", [i for i, r in enumerate(rows) if not r.expert_parallel]),
    ]
    for key in sorted({r.model for r in rows}):
        groups.append((f"model {key}", [i for i, r in enumerate(rows) if r.model == key]))
    for key in sorted({r.generation for r in rows}):
        groups.append((f"generation {key}", [i for i, r in enumerate(rows) if r.generation == key]))
    for key in sorted({r.engine for r in rows}):
        groups.append((f"engine {key}", [i for i, r in enumerate(rows) if r.engine == key]))
    summaries = []
    lines.append("\nMoE summary (median |error|, worst signed error):")
    for name, indices in groups:
        summary = summarise(name, [rows[i] for i in indices], [predicted[i] for i in indices])
        summaries.append(summary)
        lines.append(
            f"  {name:34s} rows {len(summary.errors_pct):4d}  median |error| "
            f"{summary.median_abs_pct:5.1f}%  worst {summary.worst_pct:+7.1f}%"
            + (f"  (no layout fits: {summary.unplaced})" if summary.unplaced else "")
        )
    return lines, summaries
