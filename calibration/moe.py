"""The MoE calibration rows: TensorRT-LLM throughput of mixture-of-experts models, with
expert parallelism and attention data parallelism where the table gives them.

Reads `trtllm_perf_moe.csv` (`calibration/data/README.md`): Llama 4 Scout and Maverick,
GPT-OSS 20B and 120B, Qwen3-30B-A3B on H100, H200, B200, GB200 and RTX PRO 6000,
TensorRT-LLM v0.21 to v1.0 and a later layout (with DeepSeek R1 and Qwen3-235B, held out),
and three DeepSeek-R1 DEP8 runs of its DeepSeek blog at their own caps and KV cache
(`MoeRow.run_caps`, `kv`; held out).
Every row is an offline max-throughput
measurement (all requests queued at once, fixed ISL/OSL), predicted like the dense rows
of `calibration.calibrate`: `replica_capacity` with no latency target, output tokens/s
per GPU, with the catalog's efficiency factors for the GPU and precision, at the engine
settings trtllm-bench chose for the run (`bench_settings`: max_batch_size and
max_num_tokens from its own KV estimate, chunked prefill off). An offline run of fixed
lengths keeps attention-DP groups in lockstep (`models.serving.batch_model.offline_lockstep`).

Layout of a row: `tp` and `pp` as published; `ep` the expert-parallel size where the
table gives one. A blank TP with an EP is TensorRT-LLM's "DEP" layout (the notes say so:
"DEP8 = attention data-parallel 8 + expert-parallel 8"): attention DP over the GPUs of a
stage, dp = num_gpus / pp, tp = 1, ep as given. A row with TP and no EP runs the experts
tensor-parallel (ep = 1), TensorRT-LLM's default.

Split: like the dense rows (`calibration.rows`), one row in three is held out by a CRC of
its configuration (`MoeRow.held_out`); a fit may read only the others.

Layout families (`MoeRow.family`): `TP` (experts tensor-parallel, ep = dp = 1), `DEP`
(attention data parallelism with expert parallelism, tp = 1), `EP+TP` (expert
parallelism inside tensor-parallel attention groups). The report gives, per family,
model, GPU and generation, the median |error| and the median signed error (the bias)
before issue 34's physics (`BEFORE_FILE`: the predictions of main at ec6ad5f, stored so
the comparison survives later changes) and now, on the held-out rows and on the fit rows.
`make bench` prints it (tests/bench/test_moe_calibration.py).

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
import csv
import math
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.calibrate import catalog_efficiency, predict
from calibration.moe_sources import sourced_yaml_lines
from calibration.rows import Row, calibration_dir, load_rows
from calibration.trtllm_bench import RUN_REQUESTS, bench_caps, bench_requests
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.catalog.moe_efficiency import trial_constants
from models.physics.efficiency import Efficiency, UnknownEngine, efficiency_for, generation_of
from models.physics.memory import default_kv_precision
from models.physics.moe import ALLTOALL_LATENCY_S, expert_compute_precision
from models.physics.precision import Precision
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix

MOE_FILE = "trtllm_perf_moe.csv"
BEFORE_FILE = Path(__file__).parent / "moe_before.csv"
"""Each row's prediction before issue 34 (fleetplan main at ec6ad5f), by label."""
FAMILIES = ("TP", "DEP", "EP+TP")
MOE_MODELS = {
    "Llama 4 Maverick": "llama-4-maverick",
    "LLaMA v4 Maverick": "llama-4-maverick",
    "Llama 4 Scout": "llama-4-scout",
    "GPT-OSS 20B": "gpt-oss-20b",
    "GPT-OSS 120B": "gpt-oss-120b",
    "Qwen3-30B-A3B": "qwen3-30b-a3b",
    "Qwen3 30B A3B": "qwen3-30b-a3b",
    "DeepSeek R1": "deepseek-r1",
    "DeepSeek-R1": "deepseek-r1",
    "DeepSeek-R1-0528": "deepseek-r1",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Qwen3 235B A22B": "qwen3-235b-a22b",
}
MOE_GPUS = {
    "H100 SXM 80GB (DGX H100)": "h100-sxm",
    "H200 SXM 141GB (DGX H200)": "h200",
    "B200 180GB (DGX B200)": "b200",
    "GB200 192GB (GB200 NVL72)": "gb200",
    "RTX 6000 Pro Blackwell Server Edition": "rtx-pro-6000",
}
MOE_PRECISIONS = {
    "FP8": Precision.FP8,
    "FP4": Precision.FP4,
    "FP16": Precision.BF16,
    "BF16": Precision.BF16,
}
HOPPER_KV = Precision.BF16
"""KV cache of the Hopper MoE rows: the checkpoint's BF16 (TensorRT-LLM's `auto` dtype;
GPT-OSS's options say "Hopper: use auto", Llama 4's and Qwen3's set none). With an FP8
KV cache the KV-bound Hopper rows of Scout and GPT-OSS are 25-110% optimistic where the
compute-bound rows are within 10% (fit median 44.3% against 19.0%). Blackwell's GPT-OSS
rows read FP8 (BF16 makes them 50% pessimistic), as its options set it."""

FP8_KV_MODELS = frozenset({"deepseek-r1"})
"""Models whose runs set `kv_cache_config: dtype: fp8` on every GPU: the perf overview's
`llm_options.yml` for DeepSeek R1 (NVIDIA/TensorRT-LLM docs/source/developer-guide/
perf-overview.md, commit 8a9c66ce086594054d3722307cfed2d658d25e60); GPT-OSS's says fp8
but "Hopper: use auto", Qwen3 MoE's and Llama 4 Maverick's set none."""

ATTENTION_DP_MODELS = frozenset({"qwen3-30b-a3b", "qwen3-235b-a22b", "llama-4-maverick"})
ATTENTION_DP_MODELS |= {"deepseek-r1", "gpt-oss-20b", "gpt-oss-120b"}
"""Models whose v1.0 and later runs enable attention DP in every layout (`llm_options.yml`
of the perf overview, commit above: `enable_attention_dp: true` for GPT-OSS, DeepSeek R1,
Qwen3 MoE and Llama 4 Maverick, not Llama 4 Scout): a TP column with no EP is attention DP
over its TP GPUs with the experts TP-split (TensorRT-LLM's default without `--ep`)."""


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
    published_tp: bool = False
    """A TP column run with attention DP over its GPUs (`ATTENTION_DP_MODELS`): tp = 1,
    dp = the published TP, the experts TP-split (ep = 1); its family stays `TP`."""
    run_caps: tuple[int, int] | None = None
    """(max_batch_size, max_num_tokens) per rank where the run set them (the CSV's
    `max_batch_size` and `max_num_tokens`); None: trtllm-bench chose (`bench_settings`)."""
    kv: Precision | None = None
    """The KV cache the run set (`kv_cache_dtype`); None: `kv_precision`'s rule."""
    held_out_reason: str = ""
    """Why a row is always held out (a source outside the perf overview's tables)."""

    @property
    def kv_precision(self) -> Precision:
        """The KV cache the row ran: FP8 with FP8 and FP4 checkpoints (NVFP4 pairs FP4
        weights with an FP8 KV cache), except on Hopper, where these MoE rows ran the
        checkpoint's BF16 KV cache (`HOPPER_KV`), but for a model whose published options
        set an FP8 cache on every GPU (`FP8_KV_MODELS`)."""
        if self.kv is not None:
            return self.kv
        if self.generation == "hopper" and self.model not in FP8_KV_MODELS:
            return HOPPER_KV
        return default_kv_precision(self.weight_precision)

    @property
    def expert_parallel(self) -> bool:
        """Whether the row uses EP or attention DP (the rows the MoE constant is fitted on)."""
        return self.ep > 1 or self.dp > 1

    @property
    def family(self) -> str:
        """`TP` (ep = dp = 1, or a published TP column: `published_tp`), `DEP` (attention
        DP, dp > 1) or `EP+TP` (ep > 1, dp = 1)."""
        if self.dp > 1 and not self.published_tp:
            return "DEP"
        return "EP+TP" if self.ep > 1 else "TP"

    @property
    def held_out(self) -> bool:
        """One row in three, by a CRC of its label (its configuration), and every row with a
        `held_out_reason`: never fitted on."""
        return bool(self.held_out_reason) or zlib.crc32(self.label.encode()) % 3 == 0

    @property
    def engine(self) -> str:
        """The TensorRT-LLM version that measured the row (`trtllm-v1.0`), from its label."""
        return "trtllm-" + self.label.split()[1]

    @property
    def lengths(self) -> str:
        """ISL/OSL as the row gives them (`1024/8192`), from its label."""
        return self.label.split()[-1]

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
    rows = []
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
            tp_with_adp = version != "v0.21" and model in ATTENTION_DP_MODELS and tp > dp == ep == 1
            if tp_with_adp:  # the label keeps the published layout (and the split)
                tp, dp = 1, tp
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
                    published_tp=tp_with_adp,
                    run_caps=(int(raw["max_batch_size"]), int(raw["max_num_tokens"]))
                    if raw.get("max_batch_size")
                    else None,
                    kv=MOE_PRECISIONS.get(raw.get("kv_cache_dtype") or ""),
                    held_out_reason=raw.get("held_out_reason") or "",
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


def bench_settings(row: MoeRow) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) trtllm-bench ran the row with: the runs set neither,
    so the tool chose them (`calibration.trtllm_bench`). With attention DP each rank
    schedules under both (the model's per-group `max_batch_sequences` and
    `prefill_chunk_tokens`); the tool is given the whole stage as its TP. A run of N
    requests (`RUN_REQUESTS`, the runs after v1.0) never holds more than N / dp per rank.
    A run that set both (`MoeRow.run_caps`) runs at its own."""
    if row.run_caps is not None:
        return row.run_caps
    isl, osl = (float(x) for x in row.lengths.split("/"))
    llm, gpu = llm_catalog()[row.model], gpu_catalog()[row.gpu]
    shape = (row.tp * row.dp, row.pp, isl, osl)
    requests = bench_requests(llm, gpu, row.weight_precision, row.kv_precision, *shape)
    max_bs, max_tokens = bench_caps(requests, isl, osl, row.pp)
    run = RUN_REQUESTS.get((int(isl), int(osl))) if row.engine == "trtllm-post-v1.0" else None
    return (max_bs if run is None else min(max_bs, math.ceil(run / row.dp))), max_tokens


def row_efficiency(row: MoeRow, efficiency: Efficiency | None = None) -> Efficiency:
    """The efficiency factors a row runs on: `efficiency` where given, else the catalog's
    profile of its TensorRT-LLM release (`trtllm-1.0` for v1.0 and later rows,
    `trtllm-0.21`) where the catalog holds one, else the default profile (today's case:
    every row); always at the operating point trtllm-bench chose (`bench_settings`: its
    max_batch_size and max_num_tokens), a property of the run. A new profile moves every
    prediction: refit the MoE constants after it (`python -m calibration.moe --write`)."""
    if efficiency is None:
        release = "1.0" if "1.0" in row.engine else row.engine.removeprefix("trtllm-v")
        try:
            efficiency = efficiency_for(row.gpu, row.weight_precision, engine=f"trtllm-{release}")
        except UnknownEngine:
            efficiency = efficiency_for(row.gpu, row.weight_precision)
    max_bs, max_tokens = bench_settings(row)
    return efficiency.model_copy(
        update={"max_batch_sequences": max_bs, "prefill_chunk_tokens": max_tokens}
    )


def predict_moe(row: MoeRow, efficiency: Efficiency | None = None) -> float:
    """Output tokens/s per GPU the model gives a row (offline) on `efficiency` (default:
    its engine's, `row_efficiency`) at the run's operating point; nan when it does not fit."""
    config = moe_config(row)
    capacity = replica_capacity(config, row.mix, LatencyTargets(), row_efficiency(row, efficiency))
    return capacity.output_tokens_per_s_per_gpu if capacity.fits else math.nan


@dataclass(frozen=True)
class MoeSummary:
    """Signed percentage errors of a set of rows, and their median, bias and worst."""

    name: str
    errors_pct: tuple[float, ...]
    unplaced: int

    @property
    def median_abs_pct(self) -> float:
        """Median |error| in percent (nan with no placed row)."""
        return float(np.median(np.abs(self.errors_pct))) if self.errors_pct else math.nan

    @property
    def bias_pct(self) -> float:
        """Median signed error in percent: > 0 optimistic, < 0 pessimistic."""
        return float(np.median(self.errors_pct)) if self.errors_pct else math.nan

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


def predictions_before(rows: list[MoeRow]) -> list[float]:
    """Each row's stored prediction before issue 34 (`BEFORE_FILE`; nan where absent)."""
    with BEFORE_FILE.open(encoding="utf-8") as handle:
        stored = {raw["label"]: float(raw["predicted_before"]) for raw in csv.DictReader(handle)}
    return [stored.get(row.label, math.nan) for row in rows]


def _groups(rows: list[MoeRow]) -> list[tuple[str, list[int]]]:
    """Named row sets of the report: all, each layout family (and by generation), model,
    GPU, generation, engine, ISL/OSL."""
    groups: list[tuple[str, list[int]]] = [("all MoE rows", list(range(len(rows))))]
    for family in FAMILIES:
        groups.append((f"family {family}", [i for i, r in enumerate(rows) if r.family == family]))
    for family in FAMILIES:
        for key in sorted({r.generation for r in rows if r.family == family}):
            members = [i for i, r in enumerate(rows) if r.family == family and r.generation == key]
            groups.append((f"{family} on {key}", members))
    for attribute in ("model", "gpu", "generation", "engine", "lengths"):
        for key in sorted({getattr(r, attribute) for r in rows}):
            members = [i for i, r in enumerate(rows) if getattr(r, attribute) == key]
            groups.append((f"{attribute} {key}", members))
    return groups


def _summary_table(
    title: str, rows: list[MoeRow], now: list[float], before: list[float]
) -> tuple[list[str], list[MoeSummary]]:
    """Lines of one before/after table (median |error| and bias per group) and the
    summaries of now."""
    lines = [
        f"\n{title}",
        f"  {'rows':32s} {'n':>4s}   {'before: median|e|':>17s} {'bias':>7s}"
        f"   {'now: median|e|':>14s} {'bias':>7s} {'worst':>8s}",
    ]
    summaries = []
    for name, indices in _groups(rows):
        if not indices:
            lines.append(f"  {name:32s} {0:4d}   (no rows)")
            continue
        subset = [rows[i] for i in indices]
        old = summarise(name, subset, [before[i] for i in indices])
        new = summarise(name, subset, [now[i] for i in indices])
        summaries.append(new)
        lines.append(
            f"  {name:32s} {len(indices):4d}   {old.median_abs_pct:16.1f}% {old.bias_pct:+6.1f}%"
            f"   {new.median_abs_pct:13.1f}% {new.bias_pct:+6.1f}% {new.worst_pct:+7.1f}%"
            + (f"  (no layout fits: {new.unplaced})" if new.unplaced else "")
        )
    return lines, summaries


def moe_report(rows: list[MoeRow]) -> tuple[list[str], dict[str, list[MoeSummary]]]:
    """The report's lines (every row, then before/after tables on the held-out rows and on
    the fit rows) and the summaries of now, by split (`held out`, `fit`)."""
    predicted = [predict_moe(row) for row in rows]
    before = predictions_before(rows)
    lines = [
        f"{'MoE row':78s} {'split':>5s} {'family':>6s} {'before':>10s} {'now':>10s} "
        f"{'measured':>10s} {'error':>8s}"
    ]
    for row, value, old in zip(rows, predicted, before, strict=True):
        split = "held" if row.held_out else "fit"
        head = f"{row.label:78s} {split:>5s} {row.family:>6s} {old:10.4g}"
        if math.isnan(value):
            lines.append(f"{head} {'no fit':>10s} {row.measured:10.4g}")
            continue
        error = (value - row.measured) / row.measured * 100
        lines.append(f"{head} {value:10.4g} {row.measured:10.4g} {error:+7.1f}%")
    summaries: dict[str, list[MoeSummary]] = {}
    for split, keep in (("held out", True), ("fit", False)):
        indices = [i for i, r in enumerate(rows) if r.held_out is keep]
        table, summaries[split] = _summary_table(
            f"MoE {split} rows, before issue 34 and now (median |error|, median signed error):",
            [rows[i] for i in indices],
            [predicted[i] for i in indices],
            [before[i] for i in indices],
        )
        lines += table
    return lines, summaries


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
