"""The simulator (`solver.simulate`): against M/G/1 closed forms on a single-server
engine, Little's law on a simulated trace, determinism, burstiness, and the CLI."""

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from cli.exit_codes import ExitCode
from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import StepModel, step_model
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, TrafficMix
from solver.simulate.engine import ReplicaEngine, simulate_pool
from solver.simulate.results import meets_p99
from solver.simulate.traffic import arrival_times_s

ITERATION_S = 1e-3
"""The toy engine's iteration: a fixed overhead, nothing else."""


def _single_server() -> ReplicaEngine:
    """An engine whose every iteration takes ITERATION_S and prefills one token: a
    prompt of P tokens is served in P x ITERATION_S, one prompt at a time, FIFO."""
    zero = dict.fromkeys(
        [
            "prefill_linear_flops_per_token",
            "decode_linear_flops_per_token",
            "prefill_attention_flops_per_pair",
            "decode_attention_flops_per_pair",
            "dense_weight_bytes",
            "expert_weight_bytes",
            "kv_bytes_per_token",
            "allreduce_latency_s",
            "allreduce_s_per_token",
            "hop_latency_s",
            "hop_s_per_token",
        ],
        0.0,
    )
    rates = dict.fromkeys(
        [
            "prefill_linear_flops_per_s",
            "decode_linear_flops_per_s",
            "prefill_attention_flops_per_s",
            "decode_attention_flops_per_s",
            "hbm_bytes_per_s",
        ],
        1.0,
    )
    steps = StepModel(
        tp=1,
        pp=1,
        chunk_tokens=1,
        overhead_s=ITERATION_S,
        experts=0,
        experts_per_token=0,
        allreduces_per_pass=0,
        **zero,
        **rates,
    )
    return ReplicaEngine(steps, math.inf, 10**9)


TOKEN_S = 1e-5
"""The exponential server's prefill time per prompt token."""


def _exponential_server(chunk_tokens: int) -> ReplicaEngine:
    """`_single_server`'s step with no fixed overhead, a prompt token prefilled in TOKEN_S
    and `chunk_tokens` of them a step, and a batch cap of one: a prompt of P tokens is
    served in P x TOKEN_S over ceil(P / chunk) iterations, one prompt at a time, FIFO."""
    steps = replace(
        _single_server().steps,
        chunk_tokens=chunk_tokens,
        overhead_s=0.0,
        prefill_linear_flops_per_token=TOKEN_S,
    )
    return ReplicaEngine(steps, math.inf, 1)


def test_single_server_matches_mm1_mean_and_p99():
    """Geometric prompt lengths of mean 10,000 tokens: service ~ exponential with mean
    S = 10,000 x 10 us = 100 ms (squared coefficient of variation 1 - 1/10,000), each
    prompt prefilled in chunks of 2,500 tokens (4 iterations on average, the last one
    partial); at rho = 0.5 M/M/1 gives mean sojourn S / (1 - rho) and p99
    S ln(100) / (1 - rho).

    The tolerances come from the sample size. Consecutive sojourns are correlated (a busy
    period's requests wait together), the more so as rho nears 1: 400 independent M/M/1
    runs (Lindley's recursion) of 20,000 requests at rho = 0.5 put the standard error of
    the mean sojourn at 2.1% and of the p99 at 4.5%, what 60,000 requests give at rho =
    0.7. So 6% is 3 standard errors of the mean and 10% 2.2 of the p99 (the seed is
    fixed: the draw does not change from run to run)."""
    rng = np.random.default_rng(7)
    mean_tokens, rho, requests = 10_000, 0.5, 20_000
    service_s = mean_tokens * TOKEN_S
    arrivals = arrival_times_s(rho / service_s, requests * service_s / rho, 1.0, rng)
    prompts = rng.geometric(1 / mean_tokens, size=arrivals.size)
    server = _exponential_server(mean_tokens // 4)
    trace = simulate_pool(server, 1, arrivals, prompts, np.ones(arrivals.size, int))
    sojourn = trace.ttft_s[arrivals > 100 * service_s]
    assert sojourn.mean() == pytest.approx(service_s / (1 - rho), rel=0.06)
    assert np.quantile(sojourn, 0.99) == pytest.approx(
        service_s * math.log(100) / (1 - rho), rel=0.10
    )


GPU = catalog.gpu("h100-sxm")
LLM = catalog.llm("llama-3.1-8b")
CONFIG = ReplicaConfig(GPU, LLM, Precision.BF16, Precision.BF16, 1, 1)
EFFICIENCY = efficiency_for(GPU, Precision.BF16)


def _real_engine() -> ReplicaEngine:
    steps = step_model(GPU, LLM, Precision.BF16, Precision.BF16, 1, 1, EFFICIENCY)
    offline = replica_capacity(CONFIG, TrafficMix.fixed(500, 200), LatencyTargets(), EFFICIENCY)
    return ReplicaEngine(steps, offline.kv_capacity_tokens, EFFICIENCY.max_batch_sequences)


def _chat_trace(seed: int, cv: float = 1.0, rate: float = 12.0, replicas: int = 2):
    rng = np.random.default_rng(seed)
    arrivals = arrival_times_s(rate, 300.0, cv, rng)
    prompts = np.full(arrivals.size, 500)
    outputs = rng.integers(50, 350, size=arrivals.size)
    return simulate_pool(_real_engine(), replicas, arrivals, prompts, outputs)


def test_littles_law_holds_on_the_trace():
    """Time-averaged decoding sequences = throughput x mean decode time."""
    trace = _chat_trace(3)
    assert not np.isnan(trace.finish_s).any()
    decode_s = trace.finish_s - trace.first_token_s
    throughput = trace.arrival_s.size / trace.end_s
    assert trace.busy_batch_s / trace.end_s == pytest.approx(throughput * decode_s.mean(), rel=0.02)


def test_same_seed_same_trace():
    a, b = _chat_trace(5), _chat_trace(5)
    assert np.array_equal(a.first_token_s, b.first_token_s)
    assert np.array_equal(a.finish_s, b.finish_s)


def test_burstiness_raises_p99_ttft_at_the_same_rate():
    poisson = _chat_trace(11, cv=1.0, rate=25.0, replicas=1)
    bursty = _chat_trace(11, cv=4.0, rate=25.0, replicas=1)
    assert np.quantile(bursty.ttft_s, 0.99) > 1.5 * np.quantile(poisson.ttft_s, 0.99)


def test_a_small_kv_cache_preempts_and_still_finishes_everything():
    engine = _real_engine()
    tight = ReplicaEngine(engine.steps, 20 * 700, engine.max_batch_sequences)
    rng = np.random.default_rng(2)
    arrivals = arrival_times_s(8.0, 60.0, 1.0, rng)
    trace = simulate_pool(
        tight, 1, arrivals, np.full(arrivals.size, 500), np.full(arrivals.size, 200)
    )
    assert trace.preemptions > 0
    assert not np.isnan(trace.finish_s).any()


def test_simulate_cli_reports_every_pool_and_is_deterministic(run_cli, tmp_path):
    """Two 15 s replays of unified's plan (its one pool simulated, SLO met) write the same
    file, with every pool's fields (60 s a replay took 2.8 s of CPU, 15 s 1.4 s)."""
    plan = tmp_path / "plan.json"
    instance = "instances/unified.yaml"
    assert run_cli("solve", instance, "--json", str(plan)).exit_code == ExitCode.OK
    outputs = []
    for name in ("a.json", "b.json"):
        result = run_cli(
            "simulate", instance, str(plan), "--duration-s", "15", "--json", str(tmp_path / name)
        )
        assert result.exit_code in (ExitCode.OK, ExitCode.CHECK_FAILED), result.stderr
        outputs.append((tmp_path / name).read_text())
    assert outputs[0] == outputs[1]
    data = json.loads(outputs[0])
    for pool in data["pools"]:
        assert pool.keys() >= {
            "workload",
            "region",
            "role",
            "gpu",
            "tp",
            "pp",
            "replicas",
            "load_requests_per_s",
            "simulated",
            "analytic",
            "meets_slo",
        }
        assert pool["simulated"].keys() == {
            "ttft_p50_ms",
            "ttft_p99_ms",
            "tpot_p50_ms",
            "tpot_p99_ms",
        }
    exit_code = ExitCode.OK if all(p["meets_slo"] is not False for p in data["pools"]) else 1
    assert result.exit_code == exit_code


def test_simulate_cli_unknown_scenario_is_bad_input(run_cli, tmp_path):
    plan = tmp_path / "plan.json"
    run_cli("solve", "instances/unified.yaml", "--json", str(plan))
    result = run_cli("simulate", "instances/unified.yaml", str(plan), "--scenario", "nope")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "nope" in result.stderr


def test_a_decode_only_replica_at_a_full_cache_admits_only_what_can_take_a_step():
    """Two requests whose 500-token KV arrives with them (a decode replica of a pair) on a
    cache of 2 x 500 + 1 tokens: both fit, but the first step writes one token per
    sequence, 2 > 1 free. The second waits for the first to finish (200 steps) rather
    than being admitted and preempted unwritten in a loop."""
    engine = _real_engine()
    prompt, output = 500, 200
    tight = ReplicaEngine(engine.steps, 2 * prompt + 1, engine.max_batch_sequences)
    trace = simulate_pool(
        tight,
        1,
        np.zeros(2),
        np.zeros(2, dtype=int),
        np.full(2, output),
        np.full(2, float(prompt)),
    )
    assert not np.isnan(trace.finish_s).any()
    assert trace.preemptions == 0
    first, second = sorted(trace.finish_s)
    assert trace.first_token_s.max() == pytest.approx(first, rel=1e-12)  # waited for it
    assert second > first


def test_a_p99_target_is_judged_within_sampling_error():
    """2,000 latencies in arrival order, 3% of them over a 50 ms target. Spread evenly
    (every 33rd) the 20 slices' shares barely vary, so 3% is a miss. Bunched in one
    slice (a busy period: 60 of that slice's 100) the slices' shares are 0.6 and 19 x 0:
    standard error sqrt((0.57^2 + 19 x 0.03^2) / 19) / sqrt(20) = 0.030, and 3% is within
    1% + 2.326 x 0.030. Without a target, or at 1% over it, the target is kept."""
    spread = np.full(2000, 0.040)
    spread[::33][:60] = 0.060
    bunched = np.full(2000, 0.040)
    bunched[100:160] = 0.060
    assert not meets_p99(spread, 50.0)
    assert meets_p99(bunched, 50.0)
    standard_error = math.sqrt((0.57**2 + 19 * 0.03**2) / 19) / math.sqrt(20)
    assert 0.01 + 2.326 * standard_error > 0.03
    assert meets_p99(spread, None)
    one_percent = np.full(2000, 0.040)
    one_percent[::100] = 0.060
    assert meets_p99(one_percent, 50.0)
    never_served = np.full(2000, np.nan)
    assert not meets_p99(never_served, 50.0)
