"""Online-serving validation: `perf --rate` (models.serving.latency) and the simulator against the
rows of ../shared/calibration/serving_benchmarks.csv (TensorRT-LLM, Llama 3.1 8B BF16 on
one H100 or H200, fixed-length synthetic requests, 500 requests per rate).

Prints, per row, the measured mean TTFT and mean ITL, the analytic and the simulated
values, and their errors; then the median absolute percentage error of each. Rows at rate
INF (all 500 requests at once) are a burst: `perf` answers them with the closed-loop replay
(models.serving.closed_loop, 500 users sending one request each), the simulator replays
them as 500 arrivals at t = 0. The simulator replays each rate as 500 Poisson arrivals (as the
benchmark does), seed 0.
"""

import csv
import math

import numpy as np
import pytest

from calibration.rows import calibration_dir
from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.serving.capacity import replica_capacity
from models.serving.latency import latency_at_concurrency_burst, latency_at_rate
from models.serving.replica import LatencyTargets, ReplicaConfig, ServingContext, TrafficMix
from solver.simulate.engine import ReplicaEngine, simulate_pool
from solver.simulate.traffic import arrival_times_s

CSV = calibration_dir() / "serving_benchmarks.csv"
GPUS = {"H100 80GB HBM3": "h100-sxm", "H200 131GB HBM3": "h200"}
pytestmark = pytest.mark.skipif(not CSV.exists(), reason=f"{CSV} not found")


def _pct(predicted: float, measured: float) -> float:
    return (predicted - measured) / measured * 100


def test_serving_latency_against_published_rows():
    rows = list(csv.DictReader(CSV.open()))
    errors = {"ttft perf": [], "itl perf": [], "ttft sim": [], "itl sim": []}
    print()
    print(
        f"{'gpu':9} {'isl':>4} {'osl':>4} {'rate':>4} | {'TTFT':>6} {'perf':>7} {'sim':>7} | "
        f"{'ITL':>4} {'perf':>6} {'sim':>6}   (ms; measured, predicted)"
    )
    for row in rows:
        gpu = catalog.gpu(GPUS[row["gpu"]])
        llm = catalog.llm("llama-3.1-8b")
        config = ReplicaConfig(gpu, llm, Precision.BF16, Precision.BF16, 1, 1)
        efficiency = efficiency_for(gpu, Precision.BF16)
        isl, osl = int(row["isl"]), int(row["osl"])
        mix = TrafficMix.fixed(isl, osl)
        ttft_ms, itl_ms = float(row["ttft_mean_ms"]), float(row["itl_or_tpot_mean_ms"])
        requests = int(row["num_requests"])
        steps = step_model(gpu, llm, Precision.BF16, Precision.BF16, 1, 1, efficiency)
        offline = replica_capacity(config, mix, LatencyTargets(), efficiency)
        engine = ReplicaEngine(steps, offline.kv_capacity_tokens, efficiency.max_batch_sequences)
        if row["load_value"] == "INF":
            arrivals = np.zeros(requests)
            burst = latency_at_concurrency_burst(
                ServingContext(config, mix, efficiency), requests, 1
            )
            perf_ttft, perf_itl = burst.ttft_mean_s * 1e3, burst.tpot_mean_s * 1e3
        else:
            rate = float(row["load_value"])
            rng = np.random.default_rng(0)
            arrivals = arrival_times_s(rate, 10 * requests / rate, 1.0, rng)[:requests]
            load = latency_at_rate(ServingContext(config, mix, efficiency), rate)
            perf_ttft = load.ttft_mean_s * 1e3
            perf_itl = load.tpot_mean_s * 1e3
        trace = simulate_pool(
            engine, 1, arrivals, np.full(arrivals.size, isl), np.full(arrivals.size, osl)
        )
        sim_ttft = float(np.nanmean(trace.ttft_s)) * 1e3
        sim_itl = float(np.nanmean(trace.tpot_s)) * 1e3
        for name, value, measured in (
            ("ttft perf", perf_ttft, ttft_ms),
            ("itl perf", perf_itl, itl_ms),
            ("ttft sim", sim_ttft, ttft_ms),
            ("itl sim", sim_itl, itl_ms),
        ):
            if math.isfinite(value):
                errors[name].append(_pct(value, measured))
        print(
            f"{GPUS[row['gpu']]:9} {isl:>4} {osl:>4} {row['load_value']:>4} | "
            f"{ttft_ms:>6.0f} {perf_ttft:>7.1f} {sim_ttft:>7.1f} | "
            f"{itl_ms:>4.0f} {perf_itl:>6.1f} {sim_itl:>6.1f}"
        )
    for name, values in errors.items():
        values = np.array(values)
        print(
            f"{name}: median |error| {np.median(np.abs(values)):.0f}%, "
            f"mean error {values.mean():+.0f}% over {values.size} rows"
        )
    assert all(errors.values())
