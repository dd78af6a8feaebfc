"""Fit the performance model's efficiency factors to published measurements.

Reads `calibration/data/` (TensorRT-LLM throughput tables and MLPerf Inference results,
each row with its source; `calibration/data/README.md` names them), predicts every usable
row with `models.serving.capacity`, and fits the efficiency factors in two regimes, apart:

- latency: the step overhead on a deterministic subset of the online-serving latency
  rows (the throughput factors held); the all-reduce latency is a physical floor
  (`ALLREDUCE_FLOOR_S`), since no latency row measures a TP > 1 decode step;
- throughput: per ENGINE PROFILE (`PROFILES`: a TensorRT-LLM version with max-throughput
  rows) one set per GPU generation and one pooled set, on a deterministic subset of that
  version's max-throughput rows, the latency constants held.

With --write it writes them to `models/physics/catalog/efficiency.yaml`. Everything else is held
out: a third of the TensorRT-LLM and serving rows (by a hash of the row's
configuration), every MLPerf row, and the TensorRT-LLM v0.9 first-token-latency and
static-batching rows.

    .venv/bin/python -m calibration.calibrate            # fit and print, write nothing
    .venv/bin/python -m calibration.calibrate --write    # fit and write efficiency.yaml
    .venv/bin/python -m calibration.calibrate --write-engines   # vLLM/SGLang profiles only
    make calibrate        # --write, then --write-engines (the engine profiles borrow the
                          # TensorRT-LLM sets just written), then calibration.bands --write

The data directory defaults to `calibration/data` in the clone; set
FLEETPLAN_CALIBRATION_DIR to use another. Only numpy is needed. `make bench`
(tests/bench/test_calibration.py) prints the report against the catalog's factors and
writes nothing.

How a row becomes a prediction:
- TensorRT-LLM "Throughput Measurements" rows (v0.17 engine and v0.20 PyTorch backend)
  are offline: every request queued at once, fixed lengths, KV cache in most of free
  memory. Prediction: `replica_capacity` with no latency target at the row's TP x PP,
  output tokens/s per GPU. The measurement is per GPU: `derived_value_per_gpu` where the
  unit is the whole group, else `value`. FP8 and FP4 rows run an FP8 KV cache; FP16
  rows are modelled as bf16 (same size, same tensor rate).
- MLPerf Offline rows: the same, for the dataset's mix, at the TP that gives the most
  tokens/s per GPU among those that fit in the system's node (the submitter chooses the
  layout; the CSV does not say which). Weights at the lowest precision the GPU has tensor
  cores for (FP4 on B200, FP8 elsewhere), KV cache FP8. MLPerf Server rows: capacity at
  the round's p99 TTFT and TPOT limits, Poisson arrivals, same TP choice.
- TensorRT-LLM v0.9 "first token latency" rows: prefill of one prompt, batch 1.
- TensorRT-LLM v0.9 static-batching rows: the batch prefilled at once, then `osl`
  decode steps at that batch.
- Online-serving rows (TensorRT-LLM 0.14, Llama 3.1 8B, bf16) at a finite Poisson rate:
  the mean inter-token latency is the iteration time at the batch that Little's law gives
  for that rate (`operating_point`). Split like the max-throughput rows: they pin the
  fixed per-step overhead that throughput rows alone cannot separate from bandwidth.
Rows of models or GPUs not in the catalogs (GH200, H100 PCIe/NVL, Mistral, Falcon, ...)
are counted as skipped.
"""

import argparse
import datetime
import math
from pathlib import Path

import numpy as np

from calibration.engine_errors import row_errors
from calibration.engines import (
    ENGINE_GENERATIONS,
    REQUEST_NAMES,
    EngineData,
    engine_gpu_settings,
    engine_settings,
    fallbacks,
    fit_engine_profiles,
    load_engine_data,
)
from calibration.rows import GENERATIONS, Row, load_rows
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import Efficiency, efficiency_for, engine_profiles
from models.physics.memory import layout_problem
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.profiles.fitting import from_vector, nelder_mead, to_vector
from models.serving.capacity import replica_capacity
from models.serving.frontier import operating_point
from models.serving.replica import ReplicaConfig, Role, ServingContext

EFFICIENCY_YAML = (
    Path(__file__).resolve().parents[1] / "models" / "physics" / "catalog" / "efficiency.yaml"
)
THROUGHPUT_FACTORS = (
    "prefill_flops_fraction",
    "decode_flops_fraction",
    "hbm_fraction",
    "scaleup_fraction",
    "sequence_overhead_s",
)
"""Fitted on max-throughput rows, per engine profile and generation."""
LATENCY_FACTORS = ("step_overhead_s",)
"""Fitted on latency rows (online serving at a low rate), with the throughput factors
held at their fit."""
FITTED = THROUGHPUT_FACTORS + LATENCY_FACTORS + ("allreduce_latency_s",)
"""Every factor `efficiency.yaml` states; every other factor keeps its documented default."""
PROFILES = {"trtllm-0.20": "trtllm-0.17", "trtllm-0.17": None}
"""Engine profiles fitted (those with max-throughput rows), each with the profile it falls
back to for a generation it has no rows of."""
DEFAULT_ENGINE = "trtllm-0.20"
"""The newest engine version with data."""
NCCL_TUNING = (
    "NVIDIA/nccl src/graph/tuning.cc latency model (quoted in github.com/NVIDIA/nccl/"
    "issues/1334): ring all-reduce, LL protocol, base 6.6 us + 2 (n - 1) steps x per-hop "
    "0.6 us over NVLink (1.0 us over PCIe), at n = 8"
)
ALLREDUCE_FLOOR_S = {
    "default": 6.6e-6 + 2 * 7 * 0.6e-6,
    "ampere": 6.6e-6 + 2 * 7 * 0.6e-6,
    "hopper": 6.6e-6 + 2 * 7 * 0.6e-6,
    "blackwell": 6.6e-6 + 2 * 7 * 0.6e-6,
    "ada": 6.6e-6 + 2 * 7 * 1.0e-6,
}
"""Physical floor of one small-message all-reduce by generation: 15.0 us over NVLink,
20.6 us over PCIe (L40S), from `NCCL_TUNING`. Custom one-shot and NVLink-SHARP kernels
are faster still (about 6 us at 2 GPUs on an HGX H100: github.com/NVIDIA/nccl/issues/1259),
so this is a conservative floor. No latency row measures a TP > 1 decode step, so the
all-reduce latency is never fitted: fitted on throughput rows it absorbed other costs
(57-144 us)."""


def catalog_efficiency(row: Row) -> Efficiency:
    """The efficiency factors the catalog gives the row's GPU and precision, under the
    row's engine profile when the catalog has one (`Row.profile` where the row names the
    profile of the engine that ran it), else the default profile."""
    engine = row.profile or row.engine
    engine = engine if engine in engine_profiles() else None
    return efficiency_for(row.gpu, row.weight_precision, engine=engine)


def predict(row: Row, efficiency: Efficiency) -> float:
    """The model's figure for a row (tokens/s per GPU, or seconds for `ttft`); nan when no
    layout fits."""
    gpu = gpu_catalog()[row.gpu]
    llm = llm_catalog()[row.model]
    if row.kind == "itl":
        config = ReplicaConfig(
            gpu, llm, row.weight_precision, row.kv_precision, row.tps[0], row.pp, Role.UNIFIED
        )
        point = operating_point(ServingContext(config, row.mix, efficiency), row.rate)
        return math.nan if point is None else point.decode_step_s
    if row.kind in ("ttft", "static"):
        tp = row.tps[0]
        if layout_problem(gpu, llm, row.weight_precision, row.kv_precision, tp, row.pp):
            return math.nan
        steps = step_model(gpu, llm, row.weight_precision, row.kv_precision, tp, row.pp, efficiency)
        isl, osl = row.mix.prompt_mean_tokens, row.mix.output_mean_tokens
        if row.kind == "ttft":
            return steps.prefill_s(isl)
        batch = row.batch
        prefill_s = steps.pass_s(0.0, 0.0, batch * isl, batch * isl * isl / 2) + steps.overhead_s
        decode_s = osl * steps.decode_step_s(batch, isl + osl / 2)
        return batch * osl / (prefill_s + decode_s) / (tp * row.pp)
    best = math.nan
    for tp in row.tps:
        config = ReplicaConfig(
            gpu, llm, row.weight_precision, row.kv_precision, tp, row.pp, Role.UNIFIED
        )
        capacity = replica_capacity(config, row.mix, row.targets, efficiency)
        if capacity.fits and capacity.meets_slo:
            value = capacity.output_tokens_per_s_per_gpu
            best = value if math.isnan(best) else max(best, value)
    return best


# --- statistics --------------------------------------------------------------------------


def abs_pct_errors(predicted: np.ndarray, measured: np.ndarray) -> np.ndarray:
    """|predicted - measured| / measured x 100."""
    return np.abs(predicted - measured) / measured * 100


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (average ranks for ties), numpy only."""

    def ranks(x: np.ndarray) -> np.ndarray:
        order = np.argsort(x, kind="mergesort")
        ranked = np.empty(len(x))
        ranked[order] = np.arange(len(x), dtype=float)
        for value in np.unique(x):
            tied = x == value
            if tied.sum() > 1:
                ranked[tied] = ranked[tied].mean()
        return ranked

    ra, rb = ranks(a), ranks(b)
    return float(np.corrcoef(ra, rb)[0, 1])


# --- fitting -----------------------------------------------------------------------------


def _loss(rows: list[Row], efficiency: Efficiency) -> float:
    """Mean squared log error; a row the model cannot place costs as much as a 3x miss."""
    errors = []
    for row in rows:
        value = predict(row, efficiency)
        errors.append(math.log(value / row.measured) ** 2 if value > 0 else math.log(3) ** 2)
    return float(np.mean(errors))


def fit(rows: list[Row], base: Efficiency, names: tuple[str, ...]) -> Efficiency:
    """The factors `names` that minimise the mean squared log error over `rows`, every
    other factor as in `base`."""
    best = nelder_mead(lambda v: _loss(rows, from_vector(v, base, names)), to_vector(base, names))
    return from_vector(best, base, names)


def generation(row: Row) -> str:
    """The row's GPU generation (`default` for a GPU with no rows of its own)."""
    return GENERATIONS.get(row.gpu, "default")


def latency_constants(key: str, overhead_s: float) -> dict[str, float]:
    """The latency-regime factors of a generation (or `default`): the all-reduce floor and
    the step overhead fitted on the latency rows."""
    floor = ALLREDUCE_FLOOR_S.get(key, ALLREDUCE_FLOOR_S["default"])
    return {"allreduce_latency_s": floor, "step_overhead_s": overhead_s}


def fit_latency(rows: list[Row], base: Efficiency) -> Efficiency:
    """The step overhead on the latency rows not held out (online serving at a finite
    rate), every throughput factor held at `base`."""
    latency_rows = [row for row in rows if row.kind == "itl" and not row.held_out]
    return fit(latency_rows, base, LATENCY_FACTORS)


def throughput_rows(rows: list[Row], engine: str) -> list[Row]:
    """The max-throughput rows of an engine profile that the fit may use."""
    return [r for r in rows if r.engine == engine and r.kind == "offline" and not r.held_out]


def fit_profile(rows: list[Row], engine: str, overhead_s: float) -> dict[str, Efficiency]:
    """One engine profile: a pooled `default` set and one set per generation, the
    throughput factors fitted on the profile's max-throughput rows with the latency
    factors held at `latency_constants`."""
    fit_rows = throughput_rows(rows, engine)
    base = Efficiency(**latency_constants("default", overhead_s), sequence_overhead_s=5e-6)
    fitted = {"default": fit(fit_rows, base, THROUGHPUT_FACTORS)}
    for key in sorted({generation(row) for row in fit_rows}):
        group = [row for row in fit_rows if generation(row) == key]
        start = fitted["default"].model_copy(update=latency_constants(key, overhead_s))
        fitted[key] = fit(group, start, THROUGHPUT_FACTORS)
    return fitted


def fit_all(rows: list[Row]) -> tuple[dict[str, dict[str, Efficiency]], float]:
    """Every engine profile's sets, and the step overhead fitted on the latency rows.

    The latency fit comes first, with the throughput factors the catalog gives Hopper
    under the default profile (the latency rows are all Hopper); the throughput fits then
    hold it fixed.
    """
    hopper = efficiency_for("h100-sxm", Precision.BF16)
    start = hopper.model_copy(update=latency_constants("hopper", hopper.step_overhead_s))
    overhead_s = fit_latency(rows, start).step_overhead_s
    profiles = {engine: fit_profile(rows, engine, overhead_s) for engine in PROFILES}
    return profiles, overhead_s


def _errors(rows: list[Row], efficiency: Efficiency) -> np.ndarray:
    """Signed % errors of the rows the model places."""
    predicted = np.array([predict(r, efficiency) for r in rows])
    measured = np.array([r.measured for r in rows])
    ok = ~np.isnan(predicted)
    return (predicted[ok] - measured[ok]) / measured[ok] * 100


ENGINE_NOTE = (
    "# vLLM and SGLang profiles (vllm-*, sglang-*: calibration/engines.py) are fitted per",
    "# generation, one row in three held out: on calibration/data/vllm_throughput.csv",
    "# (offline max throughput: FLOP and HBM fractions), sglang_serving.csv and",
    "# vllm_serving.csv (benchmark runs replayed as the tool ran them: the FLOP and HBM",
    "# fractions on the output tok/s of runs that send every request at once; the step",
    "# overhead, on output tok/s and mean TPOT of closed-loop runs; the request overhead, on",
    "# the one-user runs' mean TTFT); the rest as trtllm-0.20. A generation a profile has no",
    "# rows of falls back to the engine's older version, then to trtllm-0.20.",
)
"""The header lines that describe the vLLM and SGLang profiles."""


def splice_engine_profiles(current: str, engine_text: str) -> str:
    """`current` (the text of `efficiency.yaml`) with its `generation_of` map written from
    `GENERATIONS`, its vLLM and SGLang profiles replaced by `engine_text`, and every
    TensorRT-LLM profile kept as written (their fit moves with the physics; `--write`
    refits them)."""
    lines = current.splitlines()
    out: list[str] = []
    index, keep = 0, True
    while index < len(lines):
        line = lines[index]
        if line.startswith("default_engine:") and ENGINE_NOTE[0] not in lines:
            out += [*ENGINE_NOTE, ""]
        if line == "generation_of:":
            out.append(line)
            out += [f"  {gpu}: {gen}" for gpu, gen in GENERATIONS.items()]
            index += 1
            while index < len(lines) and lines[index].startswith("  "):
                index += 1
            continue
        if line.startswith("  ") and not line.startswith("   ") and line.endswith(":"):
            keep = line.strip().startswith("trtllm-")  # a profile under `engines:`
        if keep:
            out.append(line)
        index += 1
    return "\n".join(out).rstrip("\n") + "\n" + engine_text


def render_yaml(
    profiles: dict[str, dict[str, Efficiency]], overhead_s: float, rows: list[Row]
) -> str:
    """The text of `efficiency.yaml`."""
    latency_rows = [r for r in rows if r.kind == "itl" and not r.held_out]
    lines = [
        "# Calibrated efficiency factors of the performance model (models/physics/efficiency.py).",
        "#",
        f"# Written by `python -m calibration.calibrate --write` on {datetime.date.today()};",
        "# do not edit by hand: change the model or the data and re-run it.",
        "#",
        "# One set of factors per ENGINE PROFILE (a serving engine and version with data) and",
        "# GPU generation. Throughput factors (" + ", ".join(THROUGHPUT_FACTORS) + ")",
        "# are fitted on the profile's TensorRT-LLM max-throughput rows",
        "# (calibration/data/trtllm_perf.csv, offline, fixed ISL/OSL), two in three by a hash",
        "# of the configuration; the rest, every MLPerf row and the v0.9 rows are held out",
        "# (tests/bench/test_calibration.py reports them all, per engine and generation).",
        "# Latency factors are fitted apart, so that neither regime bends the other:",
        f"# - step_overhead_s: {overhead_s * 1e3:.3g} ms, fitted on {len(latency_rows)} "
        "latency rows (serving_benchmarks.csv:",
        "#   mean inter-token latency of Llama 3.1 8B at a low request rate, TensorRT-LLM 0.14",
        "#   under Triton, H100 and H200) with the throughput factors held; every",
        "#   TensorRT-LLM profile and generation uses it (the overhead is host-side scheduling).",
        "# - allreduce_latency_s: a physical floor, never fitted (no latency row measures a",
        f"#   TP > 1 decode step): {NCCL_TUNING}.",
        "# A GPU with no rows of its own names the GPU it borrows from (`efficiency_like` in",
        "# models/physics/catalog/gpus.yaml); `default` (pooled over the profile's rows) serves",
        "# inline GPUs that name none.",
        *ENGINE_NOTE,
        "",
        f"default_engine: {DEFAULT_ENGINE}",
        "",
        "generation_of:",
    ]
    lines += [f"  {gpu}: {gen}" for gpu, gen in GENERATIONS.items()]
    lines += ["", "engines:"]
    for engine, fitted in profiles.items():
        fit_rows = throughput_rows(rows, engine)
        held = [r for r in rows if r.engine == engine and r.kind == "offline" and r.held_out]
        lines.append(f"  {engine}:")
        fallback = PROFILES[engine]
        if fallback:
            lines.append(f"    fallback: {fallback}  # for generations with no {engine} rows")
        gpus = sorted({r.gpu for r in fit_rows})
        lines.append(
            f"    data: TensorRT-LLM {engine.split('-')[1]} max-throughput rows on "
            + ", ".join(gpus)
        )
        lines.append("    by_key:")
        for key, efficiency in fitted.items():
            group = [r for r in fit_rows if key == "default" or generation(r) == key]
            group_held = [r for r in held if key == "default" or generation(r) == key]
            fit_err = np.abs(_errors(group, efficiency))
            held_err = np.abs(_errors(group_held, efficiency)) if group_held else np.array([])
            note = f"{len(group)} fit rows, median |error| {np.median(fit_err):.1f}%"
            if held_err.size:
                note += f"; {held_err.size} held out, {np.median(held_err):.1f}%"
            lines.append(f"      {key}:  # {note}")
            for name in FITTED:
                lines.append(f"        {name}: {getattr(efficiency, name):.4g}")
    return "\n".join(lines) + "\n"


def _group_note(group: list) -> str:
    """Median |error| of a group's fitted figures, fit and held out (`engine_errors.RowError`),
    and of its mean TTFT at one user (what the request overhead is fitted on) and under
    load (which no constant is fitted on)."""

    def median(errors: list) -> str:
        values = [abs(e.error_pct) for e in errors]
        return f"{len(values)} at {np.nanmedian(values):.1f}%" if values else "none"

    fitted = [  # an all-at-once run's TPOT is reported, not fitted (calibration/engines.py)
        e
        for e in group
        if e.figure != "ttft_mean_ms" and not (e.all_at_once and e.figure == "tpot_mean_ms")
    ]
    note = (
        f"median |error| of fitted figures: fit {median([e for e in fitted if not e.held_out])}, "
        f"held out {median([e for e in fitted if e.held_out])}"
    )
    ttft = [e for e in group if e.figure == "ttft_mean_ms"]
    if not ttft:
        return note
    lone = [e for e in ttft if e.concurrency == 1]
    loaded = [e for e in ttft if e.concurrency > 1]
    return (
        f"{note}; mean TTFT at C = 1 (fit the request overhead) {median(lone)}, "
        f"under load {median(loaded)}"
    )


SETTINGS_BY_GPU_SOURCE = {
    "vllm": "(vllm serve on an A100 or under 70 GiB: vllm/engine/arg_utils.py, "
    "calibration/engines.py)",
    "sglang": "(launch_server's chunk and memory reserve by device memory, at TP1: "
    "calibration/sglang_defaults.py)",
}
"""Where an engine's `settings_by_gpu` come from, written beside them."""


def _setting(value: float | bool) -> str:
    """An engine setting as efficiency.yaml holds it: a count whole (16384, not 1.638e+04),
    a fraction to 4 significant digits, a switch true or false."""
    if isinstance(value, bool):
        return str(value).lower()
    return str(int(value)) if float(value).is_integer() else f"{value:.4g}"


def render_engine_profiles(data: EngineData, fitted: dict[str, dict[str, Efficiency]]) -> str:
    """The vLLM and SGLang profiles' part of `efficiency.yaml` (under `engines:`), each set
    with its fit and held-out median |error| over every figure of its rows."""
    chain = fallbacks(list(fitted))
    lines = []
    for engine, sets in fitted.items():
        gpus = sorted({r.run.gpu for r in data.runs if r.engine == engine})
        gpus += sorted({r.gpu for r in data.offline if r.engine == engine} - set(gpus))
        lines.append(f"  {engine}:")
        lines.append(f"    fallback: {chain[engine]}  # for generations with no {engine} rows")
        own = {gpu: ENGINE_GENERATIONS[gpu] for gpu in gpus if gpu in ENGINE_GENERATIONS}
        if own:
            lines.append("    generation_of:  # GPUs with rows of this engine only")
            lines += [f"      {gpu}: {name}" for gpu, name in own.items()]
        settings, by_gpu = engine_settings(engine), engine_gpu_settings(engine)
        if settings or by_gpu:
            note = "  # the engine's defaults at every generation, never fitted"
            lines.append(f"    settings:{' {}' if not settings else ''}{note}")
            lines += [f"      {name}: {_setting(value)}" for name, value in settings.items()]
            if by_gpu:
                lines.append(
                    "    settings_by_gpu:  # the engine's defaults on these GPUs "
                    + SETTINGS_BY_GPU_SOURCE[engine.partition("-")[0]]
                )
                for gpu, values in by_gpu.items():
                    lines.append(f"      {gpu}:")
                    lines += [f"        {name}: {_setting(v)}" for name, v in values.items()]
        versions = sorted(data.versions[engine])
        files = sorted(
            {r.run.source.partition(":")[0] for r in data.runs if r.engine == engine}
            | {"vllm_throughput.csv" for r in data.offline if r.engine == engine}
        )
        lines.append(
            f"    data: {engine.partition('-')[0]} {', '.join(versions)} rows on "
            f"{', '.join(gpus)} (calibration/data/{', '.join(files)})"
        )
        lines.append("    by_key:")
        for generation, efficiency in sets.items():
            errors = row_errors(data, lambda *_, e=efficiency: e)
            group = [e for e in errors if e.engine == engine and e.generation == generation]
            lines.append(f"      {generation}:  # {_group_note(group)}")
            for factor in FITTED:
                lines.append(f"        {factor}: {getattr(efficiency, factor):.4g}")
            for factor in REQUEST_NAMES:  # fitted where the group has one-user runs
                if getattr(efficiency, factor):
                    lines.append(f"        {factor}: {getattr(efficiency, factor):.4g}")
    return "\n".join(lines) + "\n" if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write efficiency.yaml")
    parser.add_argument(
        "--write-engines",
        action="store_true",
        help="refit the vLLM and SGLang profiles only and write them into efficiency.yaml, "
        "every TensorRT-LLM set kept as the file has it",
    )
    args = parser.parse_args()
    data, engine_skipped = load_engine_data()
    engine_text = render_engine_profiles(data, fit_engine_profiles(data))
    if args.write_engines:
        text = splice_engine_profiles(EFFICIENCY_YAML.read_text(encoding="utf-8"), engine_text)
        print(engine_text)
        EFFICIENCY_YAML.write_text(text, encoding="utf-8")
        print(f"wrote the vLLM and SGLang profiles into {EFFICIENCY_YAML}")
        return
    rows, skipped = load_rows()
    profiles, overhead_s = fit_all(rows)
    text = render_yaml(profiles, overhead_s, rows) + engine_text
    print(text)
    print(f"skipped rows: {sum(skipped.values()) + sum(engine_skipped.values())}")
    if args.write:
        EFFICIENCY_YAML.write_text(text, encoding="utf-8")
        print(f"wrote {EFFICIENCY_YAML}")


if __name__ == "__main__":
    main()
