"""Calibration benchmark: the performance model against published measurements.

Run by `make bench`, on the measurements shipped in `calibration/data/` (or the folder
FLEETPLAN_CALIBRATION_DIR names). Prints, for every usable row, the prediction with the catalog's
efficiency factors, the measurement and the error; then the median absolute percentage
error and the Spearman rank correlation, for the rows the factors were fitted on and for
the held-out rows (see calibration/calibrate.py for the split and the assumptions).
Missing data is an error, never a skip.
"""

import math

import numpy as np

from calibration.calibrate import abs_pct_errors, catalog_efficiency, predict, spearman
from calibration.engine_errors import catalog_efficiency as engine_catalog_efficiency
from calibration.engine_errors import row_errors
from calibration.engines import load_engine_data
from calibration.rows import GENERATIONS, MLPERF_WORKLOADS, Row, calibration_dir, load_rows
from models.physics.efficiency import efficiency_for

LATENCY = ("ttft", "itl")


def _summary(name: str, rows: list[Row], predicted: np.ndarray) -> tuple[float, float]:
    measured = np.array([row.measured for row in rows])
    ok = ~np.isnan(predicted)
    errors = abs_pct_errors(predicted[ok], measured[ok])
    median = float(np.median(errors)) if ok.any() else math.nan
    rho = spearman(predicted[ok], measured[ok]) if ok.sum() > 2 else math.nan
    unplaced = int((~ok).sum())
    print(
        f"  {name:34s} rows {ok.sum():4d}  median |error| {median:5.1f}%  "
        f"Spearman {rho:5.3f}" + (f"  (no layout fits: {unplaced})" if unplaced else "")
    )
    return median, rho


def test_calibration_data_is_present() -> None:
    """The report must run from a fresh clone: the data is in the repository."""
    for name in (
        "trtllm_perf.csv",
        "mlperf.csv",
        "serving_benchmarks.csv",
        "sglang_serving.csv",
        "vllm_throughput.csv",
    ):
        assert (calibration_dir() / name).is_file(), f"missing {calibration_dir() / name}"


def test_calibration_report() -> None:
    rows, skipped = load_rows()
    predicted = np.array([predict(row, catalog_efficiency(row)) for row in rows])

    print("\n\nfleetplan performance model vs published measurements")
    print("(throughput rows: output tokens/s per GPU; first-token and ITL rows: seconds)\n")
    print(f"{'row':86s} {'split':8s} {'predicted':>10s} {'measured':>10s} {'error':>8s}")
    for row, value in zip(rows, predicted, strict=True):
        split = "held-out" if row.held_out else "fit"
        if math.isnan(value):
            print(f"{row.label:86s} {split:8s} {'no fit':>10s} {row.measured:10.4g}")
            continue
        error = (value - row.measured) / row.measured * 100
        print(f"{row.label:86s} {split:8s} {value:10.4g} {row.measured:10.4g} {error:+7.1f}%")

    print("\nsummary (median absolute % error, Spearman rank correlation):")
    results = {}
    for name, select in (
        ("fit: TensorRT-LLM offline", lambda r: not r.held_out and r.kind == "offline"),
        (
            "held-out: TensorRT-LLM offline",
            lambda r: r.held_out and r.source == "trtllm" and r.kind == "offline",
        ),
        ("held-out: MLPerf Offline", lambda r: r.source == "mlperf" and r.kind == "offline"),
        ("held-out: MLPerf Server (at SLO)", lambda r: r.kind == "server"),
        ("held-out: TRT-LLM v0.9 static batch", lambda r: r.kind == "static"),
        ("held-out: TRT-LLM v0.9 first token", lambda r: r.kind == "ttft"),
        ("fit: serving mean ITL at a rate", lambda r: r.kind == "itl" and not r.held_out),
        ("held-out: serving mean ITL", lambda r: r.kind == "itl" and r.held_out),
        ("all latency rows (ITL and TTFT)", lambda r: r.kind in LATENCY),
        ("held-out: all throughput rows", lambda r: r.held_out and r.kind not in LATENCY),
        ("all throughput rows", lambda r: r.kind not in LATENCY),
    ):
        mask = np.array([select(row) for row in rows])
        subset = [row for row, keep in zip(rows, mask, strict=True) if keep]
        results[name] = _summary(name, subset, predicted[mask])
    print("\nper engine (every row the engine measured; latency rows in seconds):")
    for engine in sorted({row.engine for row in rows}):
        for kind in ("throughput", "latency"):
            mask = np.array(
                [r.engine == engine and ((r.kind in LATENCY) == (kind == "latency")) for r in rows]
            )
            if mask.any():
                subset = [row for row, keep in zip(rows, mask, strict=True) if keep]
                _summary(f"{engine} {kind}", subset, predicted[mask])
    print("\nper generation (max-throughput rows, fit and held out):")
    for generation in sorted(set(GENERATIONS.values()) | {"default"}):
        mask = np.array(
            [r.kind == "offline" and GENERATIONS.get(r.gpu, "default") == generation for r in rows]
        )
        if mask.any():
            subset = [row for row, keep in zip(rows, mask, strict=True) if keep]
            _summary(
                f"{generation} (borrowed)" if generation == "default" else generation,
                subset,
                predicted[mask],
            )
    print(f"\nskipped rows (model or GPU not in the catalogs): {sum(skipped.values())}")
    print("MLPerf workload assumptions:")
    for name, workload in MLPERF_WORKLOADS.items():
        print(f"  {name}: {workload.source}")

    # Guard rails, loose on purpose: they catch a broken model, not a 5% drift.
    fit_median, fit_rho = results["fit: TensorRT-LLM offline"]
    held_median, held_rho = results["held-out: TensorRT-LLM offline"]
    assert fit_median < 20 and held_median < 25
    assert fit_rho > 0.9 and held_rho > 0.9


def _median_line(name: str, errors: list) -> float:
    values = [abs(e.error_pct) for e in errors if not math.isnan(e.predicted)]
    median = float(np.median(values)) if values else math.nan
    bias = float(np.median([e.error_pct for e in errors])) if errors else math.nan
    print(
        f"  {name:58s} figures {len(values):3d}  median |error| {median:6.1f}%  bias {bias:+6.1f}%"
    )
    return median


def test_engine_profiles_report() -> None:
    """vLLM and SGLang rows (calibration/engines.py) against the catalog's profiles and,
    for comparison, against the default TensorRT-LLM profile the planner used before
    (`before`): by engine, generation, model family, GPU and layout, fit and held out."""
    data, skipped = load_engine_data()
    after = row_errors(data, engine_catalog_efficiency, medians=True)
    before = row_errors(
        data, lambda _engine, gpu, precision: efficiency_for(gpu, precision), medians=True
    )

    print("\n\nvLLM and SGLang rows vs the model (closed-loop runs replayed as the tool ran them)")
    print(f"{'row':64s} {'figure':20s} {'split':8s} {'predicted':>10s} {'measured':>10s} error")
    for e in after:
        split = "held-out" if e.held_out else "fit"
        print(
            f"{e.label:64s} {e.figure:20s} {split:8s} {e.predicted:10.4g} {e.measured:10.4g} "
            f"{e.error_pct:+6.1f}%"
        )
    for title, errors in (
        ("after (the engine's own profile)", after),
        ("before (trtllm-0.20)", before),
    ):
        print(
            f"\n{title}: median |error| by engine, generation, family, GPU, layout, figure, split"
        )
        groups: dict[str, list] = {}
        for e in errors:
            split = "held-out" if e.held_out else "fit"
            name = f"{e.engine} {e.generation} {e.family} {e.gpu} {e.layout} {e.figure} {split}"
            groups.setdefault(name, []).append(e)
        for name, group in sorted(groups.items()):
            _median_line(name, group)

    print(
        "\nrecent engines under load (closed-loop runs at concurrency >= 16; targets: TPOT < 15%,"
    )
    print("TTFT < 30% median |error|); the engine's profile (after) and trtllm-0.20; runs that")
    print("send every request at once (vllm_serving.csv: offline throughput) apart, as `burst`:")
    results = {}
    for figure in (
        "tpot_mean_ms",
        "itl_median_ms",
        "ttft_mean_ms",
        "ttft_median_ms",
        "output_tokens_per_s",
    ):
        for title, errors in (("after", after), ("trtllm-0.20", before)):
            for split, select in (("all", lambda e: True), ("held-out", lambda e: e.held_out)):
                for burst in (False, True):
                    group = [
                        e
                        for e in errors
                        if e.kind == "closed-loop"
                        and e.concurrency >= 16
                        and e.figure == figure
                        and e.all_at_once == burst
                        and select(e)
                    ]
                    name = f"{figure} {title} {split}" + (" burst" if burst else "")
                    results[(figure, title, split, burst)] = _median_line(name, group)
    fixed = row_errors(data, _without_request_overhead, lengths=False)
    _under_load_by_engine({"trtllm-0.20": before, "fixed-length replay": fixed, "after": after})
    print(f"\nskipped engine rows (model or GPU not in the catalogs): {sum(skipped.values())}")

    # Guard rails, loose on purpose: every row places, and the fitted throughput stays sane.
    assert all(not math.isnan(e.predicted) for e in after)
    offline_fit = [abs(e.error_pct) for e in after if e.kind == "offline" and not e.held_out]
    assert np.median(offline_fit) < 25
    assert results[("tpot_mean_ms", "after", "all", False)] < 50
    # the tools' length spread and the request overhead must beat the fixed-length replay
    loaded = [
        e for e in fixed if e.kind == "closed-loop" and e.concurrency >= 16 and not e.all_at_once
    ]
    fixed_ttft = np.median([abs(e.error_pct) for e in loaded if e.figure == "ttft_mean_ms"])
    assert results[("ttft_mean_ms", "after", "all", False)] < fixed_ttft


def _without_request_overhead(engine: str, gpu: str, precision):
    """The engine's catalog profile with no request overhead: with `lengths=False`, the
    closed-loop replay as it was before the tools' length spread and the overhead."""
    return engine_catalog_efficiency(engine, gpu, precision).model_copy(
        update={"request_overhead_s": 0.0}
    )


def _under_load_by_engine(variants: dict[str, list]) -> None:
    """Mean TTFT and TPOT median |error| of the closed-loop runs at C >= 16, per engine and
    split, under each variant: `trtllm-0.20` (the default profile, replayed as now),
    `fixed-length replay` (the engine's profile, every request at the mean lengths and no
    request overhead: the replay before) and `after` (lengths drawn as the tool drew them,
    the profile's request overhead)."""
    print("\nunder load by engine (closed-loop runs at C >= 16): median |error| and bias")
    engines = sorted({e.engine for e in variants["after"] if e.kind == "closed-loop"})
    for engine in engines:
        for figure in ("ttft_mean_ms", "ttft_median_ms", "tpot_mean_ms", "itl_median_ms"):
            for split in ("fit", "held-out"):
                for name, errors in variants.items():
                    group = [
                        e
                        for e in errors
                        if e.engine == engine
                        and e.kind == "closed-loop"
                        and e.concurrency >= 16
                        and e.figure == figure
                        and e.held_out == (split == "held-out")
                    ]
                    if group:
                        _median_line(f"{engine} {figure} {split} {name}", group)
