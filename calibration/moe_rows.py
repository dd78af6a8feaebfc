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

Layout families (`MoeRow.family`, `FAMILIES`): `TP` (experts tensor-parallel, ep = dp =
1), `DEP` (attention data parallelism with expert parallelism, tp = 1), `EP+TP` (expert
parallelism inside tensor-parallel attention groups). How the rows' errors are reported:
calibration.moe_report; how the MoE constants are fitted on them: calibration.moe.
"""

import csv
import math
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from calibration.trtllm_bench import RUN_REQUESTS, bench_caps, bench_requests
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import Efficiency, UnknownEngine, efficiency_for, generation_of
from models.physics.memory import default_kv_precision
from models.physics.precision import Precision
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix

MOE_FILE = "trtllm_perf_moe.csv"
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
