"""A unified pool under the benchmark tools' closed-loop client: C users per replica,
each sending its next request when the last completes (`solver.simulate.traffic.
closed_loop_trace`), set against `perf --concurrency C` (`models.serving.latency`).

Two ways to start, as `perf --arrivals`:
- `burst`: every user sends at t = 0 and every request has the mix's mean prompt and
  output (what `vllm bench serve --max-concurrency`, genai-perf/aiperf and trtllm-bench
  run with fixed lengths); the analytic side is `perf --arrivals burst`
  (`latency_at_concurrency_as_tools_run_it`), which replays the same client on the step
  model.
- `staggered`: lengths drawn from the workload's distributions and the users' first
  sends spread evenly over one request's mean cycle, C / X (X the steady closed-loop
  throughput per replica, `latency_at_concurrency`), so no wave forms; the analytic side
  is `perf --arrivals steady`.
Every request is measured (a closed-loop benchmark reports them all, the first wave
included); the pool's load is the requests completed over the run.
"""

import math

import numpy as np

from models.serving.latency import (
    LoadLatency,
    latency_at_concurrency,
    latency_at_concurrency_as_tools_run_it,
)
from models.serving.replica import ServingContext
from solver.simulate.disaggregated import cached_tokens, replica_engine
from solver.simulate.results import Latencies, PoolSimulation, measured_ms, meets_p99, pool_fields
from solver.simulate.results import quantile as _quantile
from solver.simulate.traffic import closed_loop_trace, token_lengths

CLOSED_LOOP = ("burst", "staggered")
"""The closed-loop starts `simulate --arrivals` takes beside `open`."""


def _analytic(serving: ServingContext, users: int, replicas: int, start: str) -> LoadLatency | None:
    try:
        if start == "burst":
            return latency_at_concurrency_as_tools_run_it(serving, users, replicas)
        return latency_at_concurrency(serving, users, replicas)
    except ValueError:  # a burst too long for perf's replay: nothing to compare
        return None


def simulate_closed_pool(
    pool,
    workload,
    serving: ServingContext,
    replicas: int,
    users_per_replica: int,
    requests_per_user: int,
    start: str,
    rng_seed: list[int],
    dispatch: str,
) -> tuple[PoolSimulation, int]:
    """One unified pool of `replicas` replicas with `users_per_replica` x replicas users
    behind its router (module docstring). Returns the row and the events simulated."""
    users = users_per_replica * replicas
    total = users * requests_per_user
    mix = serving.mix
    if start == "burst":
        prompts = np.full(total, max(1, round(mix.prompt_mean_tokens)), dtype=int)
        outputs = np.full(total, max(1, round(mix.output_mean_tokens)), dtype=int)
        start_s = np.zeros(users)
    else:
        rng = np.random.default_rng(rng_seed)
        prompts = token_lengths(workload.prompt_tokens, total, rng)
        outputs = token_lengths(workload.output_tokens, total, rng)
        steady = latency_at_concurrency(serving, users_per_replica, replicas)
        cycle_s = users_per_replica / steady.throughput_requests_per_s
        start_s = np.arange(users) * cycle_s / users
    cached = cached_tokens(prompts, serving, replicas)
    trace = closed_loop_trace(
        replica_engine(serving, replicas),
        replicas,
        start_s,
        requests_per_user,
        prompts - cached,
        outputs,
        cached,
        dispatch,
    )
    ttft, tpot = trace.ttft_s, trace.tpot_s
    simulated = Latencies(
        ttft_p50_ms=measured_ms(_quantile(ttft, 0.5)),
        ttft_p99_ms=measured_ms(_quantile(ttft, 0.99)),
        tpot_p50_ms=measured_ms(_quantile(tpot, 0.5)),
        tpot_p99_ms=measured_ms(_quantile(tpot, 0.99)),
    )
    load = _analytic(serving, users_per_replica, replicas, start)
    analytic = (
        None
        if load is None
        else Latencies(
            ttft_p50_ms=measured_ms(load.ttft_p50_s),
            ttft_p99_ms=measured_ms(load.ttft_p99_s),
            tpot_p50_ms=measured_ms(load.tpot_mean_s),
            tpot_p99_ms=measured_ms(load.tpot_p99_s),
        )
    )
    slo = workload.slo
    horizon_s = max(trace.end_s, 1e-9)
    note = (
        f"closed loop, {start}: {users:,} users, {requests_per_user} requests each; mean TTFT "
        f"{_mean_ms(ttft)} ms, TPOT {_mean_ms(tpot, 2)} ms"
    )
    if load is not None:
        note += (
            f" (perf --concurrency {users_per_replica} --arrivals "
            f"{'burst' if start == 'burst' else 'steady'}: {load.ttft_mean_s * 1e3:,.1f} / "
            f"{load.tpot_mean_s * 1e3:,.2f} ms)"
        )
    return (
        PoolSimulation(
            **pool_fields(pool),
            replicas=replicas,
            load_requests_per_s=total / horizon_s,
            simulated=simulated,
            analytic=analytic,
            ttft_p99_target_ms=slo.ttft_p99_ms,
            tpot_p99_target_ms=slo.tpot_p99_ms,
            meets_slo=meets_p99(ttft, slo.ttft_p99_ms) and meets_p99(tpot, slo.tpot_p99_ms),
            requests_measured=total,
            unfinished=int(np.isnan(trace.finish_s).sum()),
            preemptions=trace.preemptions,
            mean_batch=trace.busy_batch_s / horizon_s / replicas,
            note=note,
        ),
        trace.events,
    )


def _mean_ms(values: np.ndarray, digits: int = 1) -> str:
    mean = float(np.mean(values)) if values.size else math.nan
    return "-" if math.isnan(mean) else f"{mean * 1e3:,.{digits}f}"
