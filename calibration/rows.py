"""The calibration rows: the published measurements of `calibration/data/` in the
performance model's terms (model and GPU catalog names, precision, layout, token mix,
the measured figure), each marked fit or held out, with the engine that measured it.
`calibration.calibrate` predicts and fits them; `calibration/data/README.md` names the
sources.
"""

import csv
import math
import os
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from models.physics.catalog import gpu_catalog
from models.physics.efficiency import engine_profiles
from models.physics.memory import default_kv_precision
from models.physics.precision import Precision
from models.serving.replica import LatencyTargets, TrafficMix

REPO = Path(__file__).resolve().parents[1]
DATA_DIR = REPO / "calibration" / "data"
"""The published measurements shipped with the repository."""
GENERATIONS = {
    "a100-80gb-sxm": "ampere",
    "l40s": "ada",
    "h100-sxm": "hopper",
    "h200": "hopper",
    "b200": "blackwell",
}
"""GPUs with calibration rows of their own, by generation (every other GPU borrows through
`efficiency_like` in the GPU catalog)."""
TRT_MODELS = {
    "Llama 3.3 70B": "llama-3.3-70b",
    "LLaMA v3.1 70B": "llama-3.1-70b",
    "Llama 3.1 8B": "llama-3.1-8b",
    "LLaMA v3.1 8B": "llama-3.1-8b",
    "Llama 3.1 405B": "llama-3.1-405b",
    "LLaMA v3.1 405B": "llama-3.1-405b",
    "Mixtral 8x7B": "mixtral-8x7b",
    "LLaMA 70B (Llama 2)": "llama-2-70b",
    "llama_70b (Llama 2)": "llama-2-70b",
}
TRT_GPUS = {
    "H100 SXM 80GB (DGX H100)": "h100-sxm",
    "H100 80GB HBM3": "h100-sxm",
    "H100": "h100-sxm",
    "H200 SXM 141GB (DGX H200)": "h200",
    "H200 141GB HBM3": "h200",
    "H200": "h200",
    "B200 180GB (DGX B200)": "b200",
    "A100-SXM4-80GB": "a100-80gb-sxm",
    "A100": "a100-80gb-sxm",
    "L40S": "l40s",
    "GB200 192GB (GB200 NVL72)": "gb200",
    "RTX 6000 Pro Blackwell Server Edition": "rtx-pro-6000",
}
TRT_PRECISIONS = {"FP8": Precision.FP8, "FP4": Precision.FP4, "FP16": Precision.BF16}
FITTED_TRTLLM = ("trtllm-0.20", "trtllm-0.17")
"""The TensorRT-LLM versions whose max-throughput rows the fit may use (the keys of
`calibration.calibrate.PROFILES`). A row of any other version (v1.0's tables) is held out:
reported against the newest profile, never fitted."""
MLPERF_GPUS = {
    "NVIDIA H100-SXM-80GB": "h100-sxm",
    "NVIDIA H200-SXM-141GB": "h200",
    "NVIDIA H200-SXM-141GB-CTS": "h200",
    "NVIDIA B200-SXM-180GB": "b200",
    "NVIDIA L40S": "l40s",
    "AMD Instinct MI300X-NPS1-SPX-192GB-750W": "mi300x",
    "AMD MI300X-NPS1-SPX-192GB-750W": "mi300x",
    "AMD Instinct MI300X 192GB HBM3": "mi300x",
    "AMD Instinct MI325X 256GB HBM3E": "mi325x",
    "AMD Instinct MI325X 256GB HBM3e": "mi325x",
    "NVIDIA GB200": "gb200",
}


@dataclass(frozen=True)
class MlperfWorkload:
    """The token mix of an MLPerf LLM benchmark's dataset (not in the CSV: see `source`)."""

    model: str
    mix: TrafficMix
    source: str


MLPERF_WORKLOADS = {
    "llama2-70b": MlperfWorkload(
        "llama-2-70b",
        TrafficMix(
            prompt_mean_tokens=222.3,
            prompt_p99_tokens=791,
            prompt_cv=0.77,
            output_mean_tokens=294,
            output_p99_tokens=1024,
            output_cv=1.0,
        ),
        "MLCommons llama2-70b (OpenOrca, 24,576 samples, prompts and outputs cut at 1,024 "
        "tokens; reference 294.45 output tokens per sample: mlcommons/inference "
        "language/llama2-70b/README.md). Prompt tokens per sample in "
        "calibration/data/mlperf_llama2_lengths.csv: mean 222.3 (5,463,976 / 24,576), p99 "
        "791, cv 0.77. The output spread is assumed (cv=1): the file's outputs are the "
        "GPT-4 reference answers (mean 218.9), not the 294 tokens the model generates.",
    ),
    "mixtral-8x7b": MlperfWorkload(
        "mixtral-8x7b",
        TrafficMix(
            prompt_mean_tokens=427.4,
            prompt_p99_tokens=1561,
            prompt_cv=0.77,
            output_mean_tokens=146,
            output_p99_tokens=582,
            output_cv=0.78,
        ),
        "MLCommons mixtral-8x7b (15,000 samples, 5,000 each of OpenOrca, GSM8K and MBXP: "
        "mlcommons/inference language/mixtral-8x7b/README.md), token lengths per sample in "
        "calibration/data/mlperf_mixtral_lengths.csv: prompt mean 427.4 (6,410,905 / "
        "15,000), p99 1,561, cv 0.77; reference outputs mean 144.8, p99 582, cv 0.78. "
        "Output mean 146 tokens per sample as the rows report it.",
    ),
}
MLPERF_TTFT_S = 2.0
MLPERF_TPOT_S = 0.2


@dataclass(frozen=True)
class Row:
    """One calibration row in the model's terms."""

    label: str
    source: str
    """`trtllm` or `mlperf`."""
    kind: str
    """`offline` (max throughput), `server` (at the SLO), `ttft` (first-token latency,
    seconds), `static` (static batching at `batch`), `itl` (mean inter-token latency at
    `rate`, seconds)."""
    model: str
    gpu: str
    weight_precision: Precision
    tps: tuple[int, ...]
    pp: int
    mix: TrafficMix
    measured: float
    """Output tokens/s per GPU (`ttft`, `itl`: seconds)."""
    held_out: bool
    batch: int = 0
    targets: LatencyTargets = field(default_factory=LatencyTargets)
    rate: float = 0.0
    """Requests/s offered (`itl` rows)."""
    engine: str = ""
    """The engine and version that measured the row (`trtllm-0.20`, `triton-trtllm-0.14`,
    `mlperf-tensorrt-v4.1`, `mlperf-vllm-v5.1`)."""
    profile: str = ""
    """The engine profile the row is predicted under where `engine` names none: an MLPerf
    submission's own serving engine (`mlperf_profile`); empty: `engine`'s, else the
    default."""
    max_sequences: int = 0
    """The run's own cap on sequences in flight (`vllm_throughput.csv` `max_num_seqs`, set
    on the command line); 0: the engine profile's default."""

    @property
    def kv_precision(self) -> Precision:
        """TensorRT-LLM FP8/FP4 checkpoints and MLPerf submissions run an FP8 KV cache."""
        return default_kv_precision(self.weight_precision)

    @property
    def group(self) -> str:
        """The efficiency group the row belongs to: `<generation>/<precision>`."""
        return f"{GENERATIONS.get(self.gpu, 'default')}/{self.weight_precision}"


def engine_name(version: str) -> str:
    """`trtllm-0.20` for a TensorRT-LLM doc version `v0.20` (`v0.9.0` -> `trtllm-0.9`)."""
    parts = version.removeprefix("v").split(".")
    return "trtllm-" + ".".join(parts[:2])


def calibration_dir() -> Path:
    """`$FLEETPLAN_CALIBRATION_DIR`, else `calibration/data` in the clone."""
    env = os.environ.get("FLEETPLAN_CALIBRATION_DIR")
    return Path(env) if env else DATA_DIR


def _held_out(key: str) -> bool:
    """Deterministic 1-in-3 hold-out by a CRC of the row's configuration."""
    return zlib.crc32(key.encode()) % 3 == 0


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _trtllm_rows(path: Path, skipped: Counter) -> list[Row]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for raw in csv.DictReader(handle):
            version = raw["trtllm_version_stated"].split(" ")[0]
            section = raw["section"]
            model = TRT_MODELS.get(raw["model"])
            gpu = TRT_GPUS.get(raw["gpu"])
            precision = TRT_PRECISIONS.get(raw["precision"])
            if model is None or gpu is None or precision is None:
                skipped[f"trtllm: {raw['model']} on {raw['gpu']} not in the catalogs"] += 1
                continue
            unit = raw["unit"]
            tp, pp = int(raw["tp"]), int(raw["pp"] or 1)
            isl, osl = float(raw["isl"]), float(raw["osl"])
            value = float(raw["value"])
            if section == "Throughput Measurements":
                kind = "offline"
                per_gpu = _float(raw["derived_value_per_gpu"])
                measured = per_gpu if "whole" in unit and per_gpu else value
            elif section.startswith("Low Latency"):
                kind, measured = "ttft", value / 1e3
            elif version == "v0.9.0" and "PER GPU" in unit:
                kind, measured = "static", value
            else:
                skipped[f"trtllm {version}: {section} (units ambiguous or superseded)"] += 1
                continue
            key = f"{version}|{model}|{gpu}|{precision}|{tp}|{pp}|{isl:g}|{osl:g}"
            fitted = engine_name(version) in FITTED_TRTLLM
            held_out = kind != "offline" or not fitted or _held_out(key)
            rows.append(
                Row(
                    label=f"trtllm {version} {model} {gpu} {precision} tp{tp}pp{pp} "
                    f"{isl:g}/{osl:g}" + (f" bs{raw['batch_size']}" if kind == "static" else ""),
                    source="trtllm",
                    kind=kind,
                    model=model,
                    gpu=gpu,
                    weight_precision=precision,
                    tps=(tp,),
                    pp=pp,
                    mix=TrafficMix.fixed(isl, osl),
                    measured=measured,
                    held_out=held_out,
                    batch=int(raw["batch_size"] or 0),
                    engine=engine_name(version),
                )
            )
    return rows


def _lowest_precision(gpu: str) -> Precision:
    spec = gpu_catalog()[gpu]
    for precision in (Precision.FP4, Precision.FP8):
        if spec.supports(precision):
            return precision
    return Precision.BF16


def mlperf_profile(framework: str) -> str:
    """The engine profile an MLPerf submission is predicted under, by the serving engine its
    `framework` names: a vLLM submission (AMD's, on MI300X and MI325X) under the catalog's
    vLLM profile of its version, the newest not newer than it, else the oldest (`vLLM
    0.6.5` -> `vllm-0.9`, the profile fitted on AMD's own vLLM throughput pages); empty
    for TensorRT and any engine no profile stands for (the default profile predicts it)."""
    found = re.search(r"vLLM (\d+)\.(\d+)", framework)
    vllm = sorted(
        (tuple(int(x) for x in name.removeprefix("vllm-").split(".")), name)
        for name in engine_profiles()
        if name.startswith("vllm-")
    )
    if found is None or not vllm:
        return ""
    version = (int(found.group(1)), int(found.group(2)))
    older = [name for key, name in vllm if key <= version]
    return older[-1] if older else vllm[0][1]


def _mlperf_rows(path: Path, skipped: Counter) -> list[Row]:
    rows = []
    with path.open(encoding="utf-8") as handle:
        for raw in csv.DictReader(handle):
            gpu = MLPERF_GPUS.get(raw["accelerator"])
            benchmark = raw["benchmark"].removesuffix("-99.9").removesuffix("-99")
            workload = MLPERF_WORKLOADS.get(benchmark)
            if gpu is None or workload is None:
                skipped[f"mlperf: {raw['accelerator']} / {raw['benchmark']} not modelled"] += 1
                continue
            per_node = int(raw["accelerators_per_node"])
            tps = tuple(tp for tp in (1, 2, 4, 8) if tp <= per_node)
            server = raw["scenario"] == "Server"
            profile = mlperf_profile(raw["framework"])
            runner = "vllm" if profile else "tensorrt"
            rows.append(
                Row(
                    label=f"mlperf {raw['round']} {raw['submitter']} {raw['benchmark']} "
                    f"{raw['scenario']} {gpu}x{raw['total_accelerators_from_system_json']}",
                    source="mlperf",
                    kind="server" if server else "offline",
                    model=workload.model,
                    gpu=gpu,
                    weight_precision=_lowest_precision(gpu),
                    tps=tps,
                    pp=1,
                    mix=workload.mix,
                    measured=float(raw["derived_tokens_per_s_per_accelerator"]),
                    held_out=True,
                    targets=LatencyTargets(MLPERF_TTFT_S, MLPERF_TPOT_S)
                    if server
                    else LatencyTargets(),
                    engine=f"mlperf-{runner}-{raw['round']}",
                    profile=profile,
                )
            )
    return rows


SERVING_GPUS = {"H100 80GB HBM3": "h100-sxm", "H200 131GB HBM3": "h200"}
SERVING_MODELS = {"LLaMA 3.1 8B": "llama-3.1-8b"}


def _serving_rows(path: Path, skipped: Counter) -> list[Row]:
    """Online-serving rows at a finite Poisson request rate: mean inter-token latency."""
    rows = []
    with path.open(encoding="utf-8") as handle:
        for raw in csv.DictReader(handle):
            gpu = SERVING_GPUS.get(raw["gpu"])
            model = SERVING_MODELS.get(raw["model"])
            offered = _float(raw["load_value"])
            rate = _float(raw["throughput_req_s"])  # achieved, not offered
            if offered is None or math.isinf(offered):  # INF: every request at once
                rate = None
            itl_ms = _float(raw["itl_or_tpot_mean_ms"])
            if gpu is None or model is None or rate is None or itl_ms is None:
                skipped[f"serving: {raw['model']} on {raw['gpu']} at {raw['load_value']}"] += 1
                continue
            isl, osl = float(raw["isl"]), float(raw["osl"])
            key = f"serving|{model}|{gpu}|{isl:g}|{osl:g}|{rate:g}"
            rows.append(
                Row(
                    label=f"serving trtllm {raw['engine_version']} {model} {gpu} bf16 "
                    f"{isl:g}/{osl:g} at {rate:g} req/s (mean ITL s)",
                    source="serving",
                    kind="itl",
                    model=model,
                    gpu=gpu,
                    weight_precision=TRT_PRECISIONS.get(raw["precision"], Precision.BF16),
                    tps=(int(raw["tp"]),),
                    pp=int(raw["pp"] or 1),
                    mix=TrafficMix.fixed(isl, osl),
                    measured=itl_ms / 1e3,
                    held_out=_held_out(key),
                    rate=rate,
                    engine=f"triton-trtllm-{raw['engine_version'].removesuffix('.0')}",
                )
            )
    return rows


def load_rows(directory: Path | None = None) -> tuple[list[Row], Counter]:
    """Every usable calibration row, and a count of the skipped ones by reason."""
    directory = directory or calibration_dir()
    skipped: Counter = Counter()
    rows = _trtllm_rows(directory / "trtllm_perf.csv", skipped)
    rows += _mlperf_rows(directory / "mlperf.csv", skipped)
    rows += _serving_rows(directory / "serving_benchmarks.csv", skipped)
    return rows, skipped
