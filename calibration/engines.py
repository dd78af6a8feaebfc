"""vLLM and SGLang engine profiles fitted on public measurements.

Reads three files of `calibration/data/` (`calibration/data/README.md` names every source):

- `sglang_serving.csv`: closed-loop runs of `sglang.bench_serving --max-concurrency C`
  (C users start together; each sends its next request when the last completes), with
  the tool's output tokens/s, mean TTFT and mean TPOT. Predicted by the closed-loop
  replay the fleetplan calibrate command uses (`models.profiles.fit.predict`: the
  iteration-by-iteration burst of `models.serving.closed_loop`), at the run's mean
  prompt and output lengths (totals / requests), each request's lengths drawn about
  them as the tool drew them (`length_distribution`: uniform over [R x L, L] for the
  random runs, `--random-range-ratio R`; a lognormal for a dataset's; `length_spread`).
- `vllm_serving.csv`: runs of `vllm bench serve`, in the same columns and replayed the
  same way; most send every request at once (no rate or concurrency limit), which the
  replay reads as as many users as requests (`all_at_once`).
- `vllm_throughput.csv`: vLLM offline throughput runs (every request at once), predicted
  as the TensorRT-LLM max-throughput rows are (`replica_capacity` with no latency
  target): output tokens/s per GPU (the page's "tokens/s" read as the 8-GPU server's
  output tokens: its ratios between shapes are those of output throughput, 0.55 for
  2048/2048 : 128/2048 here, 0.47-0.53 in trtllm_perf.csv; as total tokens 0.29).

Runs on the ShareGPT dataset are held out (as MLPerf rows are for TensorRT-LLM): their
lengths follow conversations, replayed as a lognormal with an assumed coefficient of
variation of 1 (the pages give only totals); so is a run whose `held_out_reason` says why.

A profile is named `<engine>-<major>.<minor>` (`vllm-0.10` holds 0.10.1 and 0.10.2). Each
(profile, GPU generation) with rows gets one set of factors, fitted on the rows not held
out (one in three, by a CRC of the run's configuration), starting from and falling back
to the default TensorRT-LLM profile:

    loss(f) = mean over rows r and figures m of log(predicted_rm(f) / measured_rm)^2

(a row the model cannot place costs a 3x miss). What a group's rows can pin is fitted,
the rest stays as the TensorRT-LLM profile has it (layout physics, the all-reduce floor,
the per-sequence cost) but for the engine's documented settings (`ENGINE_SETTINGS`, by device
`engine_gpu_settings`: vLLM's and SGLang's memory reserves), which start the fit:
- offline rows: the prefill and decode FLOP fractions and the HBM fraction, on output
  tokens/s (as the TensorRT-LLM throughput fit);
- all-at-once runs (every request sent at once, `all_at_once`): offline max throughput
  that prints latencies, so fitted as offline rows are, the FLOP and HBM fractions on
  output tokens/s only (`THROUGHPUT_FIGURES`). Their TPOT is not a decode step: with the
  queue full, each step mixes decodes with another prompt's prefill chunk, so it measures
  the engine's schedule; their TTFT is the queue. Both are reported, never fitted: fitted
  on them, vLLM 0.11's Hopper step overhead came out at 14 ms, where its closed-loop run
  of Qwen3-8B on one H100 at C = 4 (TPOT 7.4 ms; not in the catalog, so skipped; replayed
  from its config.json) is what 1.9 ms predicts (8.0 ms on TensorRT-LLM's Hopper
  fractions, 9.0 on this fit's; 14 ms would predict about 20);
- closed-loop runs: the fixed step overhead (the engine's scheduler and launches), on
  output tokens/s and mean TPOT (`FIT_FIGURES`); then the request overhead
  (`request_overhead_s`: HTTP, tokenisation, scheduling and the first token's
  detokenisation, which the tool counts in TTFT) on the one-user runs' mean TTFT only
  (`fit_request_overhead`), and the step overhead once more with it in place. Mean TTFT
  under load is reported, never fitted: it is what the replay's waves (lengths drawn as
  the tool drew them, so they de-synchronise) and the overhead predict; so are the median
  TTFT where a row gives it (`ttft_median_ms`: the replay's p50,
  `engine_errors.row_errors(medians=...)`) and the median inter-token latency
  (`itl_median_ms`: the replay's median gap between a request's tokens), which tells a
  TPOT error's decode iteration from the prefill iterations between decode steps (a mean
  TPOT is both; the median gap is the decode step alone where fewer than half the gaps
  carry a prefill).
A profile's `fallback` is the engine's previous version, the oldest the default TensorRT-LLM
profile: a generation an engine has no rows of runs on TensorRT-LLM's factors, and says so,
but for the engine's own step and request overheads (the medians of its closed-loop fits:
`models.physics.efficiency.HOST_COSTS`).
"""

import csv
import math
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.rows import GENERATIONS, Row, calibration_dir
from calibration.sglang_defaults import sglang_defaults
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import Efficiency, efficiency_for
from models.physics.precision import Precision
from models.profiles.fit import predict as replay_figures
from models.profiles.fitting import from_vector, nelder_mead, to_vector
from models.profiles.measurements import Measurement
from models.serving.capacity import replica_capacity
from models.serving.closed_loop import FIXED, LengthSpread
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix

ENGINE_GENERATIONS = {"mi300x": "cdna3"}
"""GPUs with rows of an engine profile but none of TensorRT-LLM's, by generation: written
into each profile with rows of them (its own `generation_of`), so that under the
TensorRT-LLM profiles they still borrow through `efficiency_like`."""
BASE_ENGINE = "trtllm-0.20"  # every engine profile starts from it and finally falls back to it
ENGINE_SETTINGS = {
    "vllm": {"memory_reserve_fraction": 0.10, "max_batch_sequences": 1024, "kv_preemption": True},
    "sglang": {"prefill_first": True},
}
"""Each engine's documented defaults the model holds as factors (never fitted), written
into each of its profiles (`settings`): vLLM gives weights, activations and KV cache at
most `gpu_memory_utilization` = 0.9 of the device (vLLM `CacheConfig`; gpustack's runs keep
it, AMD's pages do not say), 10% of HBM unused (TensorRT-LLM's 5% is the class default),
and keeps at most 1,024 sequences in flight on a GPU of 70 GiB or more (`max_num_seqs`;
256 on smaller ones and the A100: `VLLM_SERVER_SMALL_GPU`; an offline row that sets its own
cap runs at it: `Row.max_sequences`), and gives a sequence KV blocks as it computes, the
newest recomputed when the cache is full (`Efficiency.kv_preemption`: the V1 scheduler,
`models.serving.closed_loop.preempting`). SGLang prefills alone (`Efficiency.prefill_first`)."""
VLLM_SERVER_SMALL_GPU = {"prefill_chunk_tokens": 2048, "max_batch_sequences": 256}
"""`vllm serve`'s defaults on a GPU of under `VLLM_LARGE_GPU_GIB` or an A100: 2,048 tokens
an iteration (`max_num_batched_tokens`) and 256 sequences (`max_num_seqs`), where a larger
GPU keeps 8,192 and 1,024 (vllm-project/vllm vllm/engine/arg_utils.py
`EngineArgs._set_default_args` at 99d7eb5d6a512cfcc5a2b104f24ebf2d6cda772b, a v0.11 tree:
"Setting large `max_num_batched_tokens` for A100 reduces throughput, see PR #17885";
earlier V1 releases gave the larger budget to H100 and H200 only). Written into each vLLM
profile as `settings_by_gpu` for the GPUs the rule picks (`engine_gpu_settings`): the
gpustack A100 runs of vllm_serving.csv keep the defaults."""
VLLM_LARGE_GPU_GIB = 70
"""vLLM's device-memory threshold (GiB) for its larger defaults."""
THROUGHPUT_NAMES = ("prefill_flops_fraction", "decode_flops_fraction", "hbm_fraction")
"""Fitted where a group has offline rows."""
LATENCY_NAMES = ("step_overhead_s",)
"""Fitted where a group has closed-loop runs."""
FIT_FIGURES = ("output_tokens_per_s", "tpot_mean_ms")
"""The figures of a closed-loop run the fit uses (module docstring: why not TTFT)."""
THROUGHPUT_FIGURES = ("output_tokens_per_s",)
"""The figure of an all-at-once run the fit uses (`all_at_once`; module docstring)."""
FIT_REQUESTS_PER_USER = 3
"""Requests per user in the replay the fit runs (as `models.profiles.fit`)."""
FIT_STEPS = 120
"""Nelder-Mead steps of one group's fit."""
REFIT_STEPS = 40
"""Nelder-Mead steps of the step overhead's refit with the request overhead in place."""
REQUEST_NAMES = ("request_overhead_s",)
"""Fitted on a group's one-user closed-loop runs only (`fit_request_overhead`)."""
MISS_LOG = math.log(3.0)
"""What a row the model cannot place costs in the loss: a 3x miss."""
REPORT_REQUESTS_PER_USER = 10
"""Requests per user in the replay a report runs: the whole run, up to 10 per user."""


@dataclass(frozen=True)
class EngineRun:
    """One closed-loop benchmark run of an engine, in the model's terms."""

    label: str
    engine: str
    """The profile (`sglang-0.5`)."""
    version: str
    """The version as published (`0.5.6`)."""
    run: Measurement
    held_out: bool
    source: str
    spread: LengthSpread = FIXED
    """How the tool drew each request's lengths (`length_distribution`)."""
    ttft_median_ms: float | None = None
    """The tool's median TTFT where the row gives it: reported, never fitted."""
    itl_median_ms: float | None = None
    """The tool's median inter-token latency where the row gives it: the decode iteration
    alone where fewer than half the gaps carry a prefill; reported, never fitted."""

    @property
    def generation(self) -> str:
        return generation(self.run.gpu)


@dataclass(frozen=True)
class EngineData:
    """Every engine row: closed-loop runs and offline max-throughput rows."""

    runs: list[EngineRun]
    offline: list[Row]
    versions: dict[str, set[str]]
    """The engine versions as published behind each profile."""

    def profiles(self) -> list[str]:
        """Profile names, newest version first within each engine."""
        names = {r.engine for r in self.runs} | {r.engine for r in self.offline}
        return sorted(names, key=_version_key, reverse=True)


def generation(gpu: str) -> str:
    """A GPU's calibrated generation (`default` for one with no rows)."""
    return GENERATIONS.get(gpu) or ENGINE_GENERATIONS.get(gpu, "default")


def profile_name(engine: str, version: str) -> str:
    """`vllm-0.10` for vLLM 0.10.2; `sglang-0.5` for SGLang 0.5.6."""
    return f"{engine}-" + ".".join(version.split(".")[:2])


def _version_key(name: str) -> tuple:
    engine, _, version = name.partition("-")
    return (engine, tuple(int(part) for part in version.split(".")))


def fallbacks(profiles: list[str]) -> dict[str, str]:
    """Each profile's fallback: the same engine's next older profile, else `BASE_ENGINE`."""
    chain = {}
    for name in profiles:
        engine = name.partition("-")[0]
        older = [
            p
            for p in profiles
            if p.partition("-")[0] == engine and _version_key(p) < _version_key(name)
        ]
        chain[name] = max(older, key=_version_key) if older else BASE_ENGINE
    return chain


def _held_out(key: str) -> bool:
    """Deterministic 1-in-3 hold-out by a CRC of the row's configuration (as `rows`)."""
    return zlib.crc32(key.encode()) % 3 == 0


def length_spread(text: str) -> LengthSpread:
    """A `length_distribution` cell as the replay draws it: `fixed`; `uniform-range:R`
    (uniform over [R x L, L], `--random-range-ratio R` as `sglang.bench_serving` draws
    it); `lognormal-cv:C` (a dataset's lengths, coefficient of variation C). Raises
    ValueError naming the cell for anything else."""
    shape, _, value = text.strip().partition(":")
    try:
        if shape == "fixed" and not value:
            return FIXED
        if shape == "uniform-range":
            return LengthSpread.uniform_range(float(value))
        if shape == "lognormal-cv":
            return LengthSpread("lognormal", float(value), float(value))
    except ValueError as error:
        raise ValueError(f"length_distribution {text!r}: {error}") from None
    raise ValueError(
        f"length_distribution {text!r} is not fixed, uniform-range:R or lognormal-cv:C"
    )


def _serving_runs(path: Path, skipped: Counter) -> list[EngineRun]:
    runs = []
    with path.open(encoding="utf-8") as handle:
        for line, raw in enumerate(csv.DictReader(handle), start=2):
            model, gpu = raw["model"], raw["gpu"]
            if model not in llm_catalog() or gpu not in gpu_catalog():
                skipped[f"{path.name}: {model} on {gpu} not in the catalogs"] += 1
                continue
            requests = int(raw["num_prompts"])
            concurrency = int(raw["concurrency"])
            isl = float(raw["total_input_tokens"]) / requests
            osl = float(raw["total_output_tokens"]) / requests
            version, ep = raw["engine_version"], int(raw.get("ep") or 1)
            engine = profile_name(raw["engine"], version)
            key = f"{engine}|{version}|{model}|{gpu}|{raw['tp']}|{isl:.0f}|{osl:.0f}|{concurrency}"
            key += f"|ep{ep}" if ep > 1 else ""
            run = Measurement(
                source=f"{path.name}:{line}",
                model=model,
                gpu=gpu,
                precision=Precision(raw["precision"]),
                kv_precision=Precision(raw["kv_precision"]),
                tp=int(raw["tp"]),
                pp=1,
                prompt_tokens=isl,
                output_tokens=osl,
                concurrency=concurrency,
                requests=requests,
                output_tokens_per_s=float(raw["output_tok_s"]),
                ttft_mean_ms=float(raw["ttft_mean_ms"]),
                tpot_mean_ms=float(raw["tpot_mean_ms"]),
                ep=ep,
            )
            layout = f"tp{raw['tp']}" + (f" ep{ep}" if ep > 1 else "")
            label = f"{raw['engine']} {version} {model} {gpu} {raw['precision']} {layout} "
            label += f"{isl:.0f}/{osl:.0f} c{concurrency}"
            source = f"{raw['source_repo']}@{raw['source_commit']}:{raw['source_path']}"
            source += f" {raw['section']}"
            reason = (raw.get("held_out_reason") or "").strip()
            held_out = raw["dataset"].startswith("sharegpt") or bool(reason) or _held_out(key)
            try:
                spread = length_spread(raw.get("length_distribution") or "fixed")
            except ValueError as error:
                raise ValueError(f"{path.name}:{line}: {error}") from None
            median = float(raw.get("ttft_median_ms") or 0) or None
            itl = float(raw.get("itl_median_ms") or 0) or None
            runs.append(
                EngineRun(label, engine, version, run, held_out, source, spread, median, itl)
            )
    return runs


def _offline_rows(path: Path, skipped: Counter) -> tuple[list[Row], dict[str, set[str]]]:
    rows, versions = [], {}
    with path.open(encoding="utf-8") as handle:
        for raw in csv.DictReader(handle):
            model, gpu = raw["model"], raw["gpu"]
            if model not in llm_catalog() or gpu not in gpu_catalog():
                skipped[f"{path.name}: {model} on {gpu} not in the catalogs"] += 1
                continue
            isl, osl, tp = float(raw["input_len"]), float(raw["output_len"]), int(raw["tp"])
            output_per_gpu = float(raw["throughput_tok_s"]) / tp
            engine = profile_name(raw["engine"], raw["engine_version"])
            versions.setdefault(engine, set()).add(raw["engine_version"])
            precision = Precision(raw["precision"])
            key = f"{engine}|{raw['engine_version']}|{model}|{gpu}|{precision}|{tp}|{isl:g}|{osl:g}"
            rows.append(
                Row(
                    label=f"{raw['engine']} {raw['engine_version']} {model} {gpu} {precision} "
                    f"tp{tp} {isl:g}/{osl:g} offline",
                    source=raw["engine"],
                    kind="offline",
                    model=model,
                    gpu=gpu,
                    weight_precision=precision,
                    tps=(tp,),
                    pp=1,
                    mix=TrafficMix.fixed(isl, osl),
                    measured=output_per_gpu,
                    held_out=_held_out(key),
                    engine=engine,
                    max_sequences=int(raw.get("max_num_seqs") or 0),
                )
            )
    return rows, versions


def load_engine_data(directory: Path | None = None) -> tuple[EngineData, Counter]:
    """The engine rows of `directory` (default: `calibration_dir()`), and the skipped."""
    directory = directory or calibration_dir()
    skipped: Counter = Counter()
    runs = _serving_runs(directory / "sglang_serving.csv", skipped)
    if (directory / "vllm_serving.csv").exists():  # an older data folder may not have it
        runs += _serving_runs(directory / "vllm_serving.csv", skipped)
    offline, versions = _offline_rows(directory / "vllm_throughput.csv", skipped)
    for run in runs:
        versions.setdefault(run.engine, set()).add(run.version)
    return EngineData(runs, offline, versions), skipped


# --- prediction ----------------------------------------------------------------------------


def predict_offline(row: Row, efficiency: Efficiency) -> float:
    """Output tokens/s per GPU at maximum throughput (nan when no layout fits), at the
    row's own sequence cap where it sets one (`Row.max_sequences`)."""
    if row.max_sequences:
        efficiency = efficiency.model_copy(update={"max_batch_sequences": row.max_sequences})
    config = ReplicaConfig(
        gpu_catalog()[row.gpu],
        llm_catalog()[row.model],
        row.weight_precision,
        row.kv_precision,
        row.tps[0],
        row.pp,
        Role.UNIFIED,
    )
    capacity = replica_capacity(config, row.mix, LatencyTargets(), efficiency)
    ok = capacity.fits and capacity.meets_slo
    return capacity.output_tokens_per_s_per_gpu if ok else math.nan


def predict_run(
    run: EngineRun,
    efficiency: Efficiency,
    requests_per_user: int,
    lengths: bool = True,
    median: bool = False,
) -> dict[str, float]:
    """The three figures the tool prints (and the p50 TTFT with `median`), replayed as the
    tool ran the run: its lengths drawn as the tool drew them (`lengths`; else every
    request at the mean lengths, the replay before length spreads); empty when no layout fits."""
    spread = run.spread if lengths else FIXED
    return replay_figures(run.run, efficiency, requests_per_user, spread, median)


# --- fitting -------------------------------------------------------------------------------


def all_at_once(run: EngineRun) -> bool:
    """Whether every request of `run` was sent at once (as many users as requests, more
    than one): an offline max-throughput run that prints latencies (module docstring)."""
    return run.run.concurrency > 1 and run.run.requests <= run.run.concurrency


def _loss(runs: list[EngineRun], offline: list[Row], efficiency: Efficiency) -> float:
    terms = []
    for row in offline:
        value = predict_offline(row, efficiency)
        terms.append(math.log(value / row.measured) ** 2 if value > 0 else MISS_LOG**2)
    for run in runs:
        predicted = predict_run(run, efficiency, FIT_REQUESTS_PER_USER)
        for figure in THROUGHPUT_FIGURES if all_at_once(run) else FIT_FIGURES:
            measured = getattr(run.run, figure)
            if measured is None:
                continue
            value = predicted.get(figure, 0.0)
            terms.append(math.log(value / measured) ** 2 if value > 0 else MISS_LOG**2)
    return float(np.mean(terms)) if terms else 0.0


def fit_request_overhead(runs: list[EngineRun], efficiency: Efficiency) -> Efficiency:
    """`efficiency` with the request overhead o fitted on the one-user runs of `runs` (none:
    o = 0). A lone user's request never queues, so each of its TTFTs is o plus its own
    prefill and the replay's mean TTFT is TTFT(0) + o exactly; o is the median over those
    runs of measured mean TTFT - TTFT(0), at least 0 (each run replayed whole, up to
    `REPORT_REQUESTS_PER_USER` requests, as the report replays it)."""
    bare = efficiency.model_copy(update={"request_overhead_s": 0.0})
    residuals = []
    for run in runs:
        if run.run.concurrency != 1 or run.run.ttft_mean_ms is None:
            continue
        predicted = predict_run(run, bare, REPORT_REQUESTS_PER_USER)  # the whole run
        if "ttft_mean_ms" in predicted:
            residuals.append((run.run.ttft_mean_ms - predicted["ttft_mean_ms"]) / 1e3)
    overhead = max(0.0, float(np.median(residuals))) if residuals else 0.0
    return efficiency.model_copy(update={"request_overhead_s": overhead})


def fit_group(
    runs: list[EngineRun], offline: list[Row], base: Efficiency, steps: int = FIT_STEPS
) -> Efficiency:
    """The factors that minimise the loss (module docstring) over one group's rows, every
    other factor as in `base`: the FLOP and HBM fractions where offline rows or
    all-at-once runs pin them, the step overhead where closed-loop runs do; with
    closed-loop runs, then the request overhead on the one-user runs
    (`fit_request_overhead`), the step overhead refitted with it (the overhead lengthens
    each user's loop, so a one-user run's tokens/s) and the request overhead once more on
    that."""
    closed = [run for run in runs if not all_at_once(run)]
    throughput = offline or len(closed) < len(runs)
    names = (THROUGHPUT_NAMES if throughput else ()) + (LATENCY_NAMES if closed else ())
    start = base.model_copy(update={"request_overhead_s": 0.0})
    best = nelder_mead(
        lambda v: _loss(runs, offline, from_vector(v, start, names)), to_vector(start, names), steps
    )
    fitted = from_vector(best, start, names)
    if not closed:
        return fitted
    fitted = fit_request_overhead(runs, fitted)
    best = nelder_mead(
        lambda v: _loss(runs, offline, from_vector(v, fitted, LATENCY_NAMES)),
        to_vector(fitted, LATENCY_NAMES),
        REFIT_STEPS,
    )
    return fit_request_overhead(runs, from_vector(best, fitted, LATENCY_NAMES))


def engine_settings(profile: str) -> dict[str, float]:
    """The settings of `profile`'s engine (`ENGINE_SETTINGS`; {} for one with none)."""
    return dict(ENGINE_SETTINGS.get(profile.partition("-")[0], {}))


def engine_gpu_settings(profile: str) -> dict[str, dict[str, float]]:
    """The settings `profile`'s engine picks by device, per catalog GPU: vLLM's
    `VLLM_SERVER_SMALL_GPU` on the A100s and every GPU under `VLLM_LARGE_GPU_GIB`; SGLang's
    prefill chunk and memory reserve on every one (`calibration.sglang_defaults`)."""
    engine = profile.partition("-")[0]
    if engine != "vllm":
        gpus = sorted(gpu_catalog().items()) if engine == "sglang" else []
        return {name: sglang_defaults(spec.hbm_gib) for name, spec in gpus}
    return {
        name: dict(VLLM_SERVER_SMALL_GPU)
        for name, spec in sorted(gpu_catalog().items())
        if spec.hbm_gib < VLLM_LARGE_GPU_GIB or name.startswith("a100")
    }


def base_efficiency(gpu: str, precision: Precision, profile: str = BASE_ENGINE) -> Efficiency:
    """Where a group's fit starts: the default TensorRT-LLM profile's factors, with the
    settings of `profile`'s engine (`engine_settings`, and `engine_gpu_settings` of the
    GPU)."""
    base = efficiency_for(gpu, precision, engine=BASE_ENGINE)
    by_gpu = engine_gpu_settings(profile).get(gpu, {})
    return base.model_copy(update={**engine_settings(profile), **by_gpu})


def groups(data: EngineData, profile: str) -> dict[str, tuple[list[EngineRun], list[Row]]]:
    """A profile's fit rows (not held out) by GPU generation."""
    out: dict[str, tuple[list[EngineRun], list[Row]]] = {}
    for run in data.runs:
        if run.engine == profile and not run.held_out:
            out.setdefault(run.generation, ([], []))[0].append(run)
    for row in data.offline:
        if row.engine == profile and not row.held_out:
            out.setdefault(generation(row.gpu), ([], []))[1].append(row)
    return dict(sorted(out.items()))


def fit_engine_profiles(data: EngineData) -> dict[str, dict[str, Efficiency]]:
    """Every engine profile's factor sets by generation. A version whose rows are all held
    out (vLLM 0.16's) gets no profile: the catalog reads it under its engine's newest older
    one, as it reads any newer release."""
    fitted: dict[str, dict[str, Efficiency]] = {}
    for profile in data.profiles():
        sets = {}
        for generation, (runs, offline) in groups(data, profile).items():
            first = runs[0].run if runs else None
            gpu = first.gpu if first else offline[0].gpu
            precision = first.precision if first else offline[0].weight_precision
            base = base_efficiency(gpu, precision, profile)
            sets[generation] = fit_group(runs, offline, base)
        if sets:
            fitted[profile] = sets
    return fitted
