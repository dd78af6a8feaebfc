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
included); the pool's load is the requests completed over the run. A request reaches the
engine the profile's request overhead after its user sends it
(`Efficiency.request_overhead_s`), as in perf's replay (`models.serving.closed_loop`).

A disaggregated pair (one prefill pool feeding one decode pool) runs the same client with
C users per decode replica (`traffic.closed_loop_pair_trace`): TTFT on the prefill row
(the KV transfer included), TPOT on the decode row, set against `perf --prefill-workers
--decode-workers` (`models.serving.disaggregated`) in the row's note.
"""

import math

import numpy as np

from models.schema.quantities import counted
from models.serving.disaggregated import PairLayout, pair_at_concurrency, pair_sides
from models.serving.latency import (
    LoadLatency,
    latency_at_concurrency,
    latency_at_concurrency_as_tools_run_it,
)
from models.serving.replica import ServingContext
from models.serving.replica_layout import kv_transfer_bytes
from solver.simulate.disaggregated import cached_tokens, prefill_lanes, replica_engine
from solver.simulate.results import Latencies, PoolSimulation, measured_ms, pool_fields
from solver.simulate.results import quantile as _quantile
from solver.simulate.traffic import closed_loop_pair_trace, closed_loop_trace, token_lengths

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
        request_overhead_s=serving.efficiency.request_overhead_s,
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
        f"closed loop, {start}: {counted(users, 'user')}, "
        f"{counted(requests_per_user, 'request')} each; mean TTFT "
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
            meets_slo=_meets(ttft, slo.ttft_p99_ms) and _meets(tpot, slo.tpot_p99_ms),
            requests_measured=total,
            unfinished=int(np.isnan(trace.finish_s).sum()),
            preemptions=trace.preemptions,
            mean_batch=trace.busy_batch_s / horizon_s / replicas,
            note=note,
        ),
        trace.events,
    )


def _meets(values_s: np.ndarray, target_ms: float | None) -> bool:
    """The run's p99 (NaN: never served, infinitely late) within the target. A closed
    loop's run is not stationary (the first wave queues most), so the p99 is judged as
    the tools print it, not within `meets_p99`'s sampling error of a steady stream."""
    return target_ms is None or _quantile(values_s, 0.99) * 1e3 <= target_ms


def _mean_ms(values: np.ndarray, digits: int = 1) -> str:
    mean = float(np.mean(values)) if values.size else math.nan
    return "-" if math.isnan(mean) else f"{mean * 1e3:,.{digits}f}"


def simulate_closed_pair(
    workload,
    prefill: tuple,
    decode: tuple,
    users_per_decode_replica: int,
    requests_per_user: int,
    start: str,
    rng_seed: list[int],
    dispatch: str,
) -> tuple[list[PoolSimulation], int]:
    """A disaggregated pair (one prefill pool, one decode pool, each given as
    (pool, config, mix, efficiency, replicas)) under the closed-loop client, C users per
    decode replica (`traffic.closed_loop_pair_trace`), set against `perf
    --prefill-workers --decode-workers` (`models.serving.disaggregated`), the KV over
    the same link (the slower side's NICs). Rows: the prefill pool's TTFT, the decode
    pool's TPOT."""
    (p_pool, p_config, mix, p_eff, p_count), (d_pool, d_config, _, d_eff, d_count) = (
        prefill,
        decode,
    )
    layout = PairLayout(
        ServingContext(p_config, mix, p_eff), ServingContext(d_config, mix, d_eff), p_count, d_count
    )
    _, _, _, link, _ = pair_sides(layout)
    users = users_per_decode_replica * d_count
    total = users * requests_per_user
    if start == "burst":
        prompts = np.full(total, max(1, round(mix.prompt_mean_tokens)), dtype=int)
        outputs = np.full(total, max(2, round(mix.output_mean_tokens)), dtype=int)
        start_s = np.zeros(users)
    else:
        rng = np.random.default_rng(rng_seed)
        prompts = token_lengths(workload.prompt_tokens, total, rng)
        outputs = np.maximum(2, token_lengths(workload.output_tokens, total, rng))
        steady = pair_at_concurrency(layout, users, "steady").point
        start_s = np.arange(users) / steady.throughput_requests_per_s  # over C / X
    lanes_engine, lanes = prefill_lanes(layout.prefill, p_count)
    run = closed_loop_pair_trace(
        lanes_engine,
        lanes,
        replica_engine(layout.decode, d_count),
        d_count,
        start_s,
        requests_per_user,
        prompts,
        outputs,
        np.array([kv_transfer_bytes(p_config, float(p)) / link for p in prompts]),
        dispatch,
        request_overhead_s=p_eff.request_overhead_s,
    )
    try:
        perf = pair_at_concurrency(
            layout, users, "burst" if start == "burst" else "steady", requests_per_user
        ).point
    except ValueError:  # a burst too long for perf's replay: nothing to compare
        perf = None
    ttft, tpot = run["ttft_s"], run["tpot_s"]
    horizon_s = max(run["end_s"], 1e-9)
    slo = workload.slo
    note = (
        f"closed loop, {start}: {counted(users, 'user')}, "
        f"{counted(requests_per_user, 'request')} each; mean TTFT "
        f"{_mean_ms(ttft)} ms, TPOT {_mean_ms(tpot, 2)} ms"
    )
    if perf is not None:
        note += (
            f" (perf --prefill-workers {p_count} --decode-workers {d_count} --concurrency "
            f"{users} --arrivals {'burst' if start == 'burst' else 'steady'}: "
            f"{perf.ttft_mean_s * 1e3:,.1f} / {perf.tpot_mean_s * 1e3:,.2f} ms)"
        )
    rows = []
    for pool, count, values, metric in (
        (p_pool, p_count, ttft, "ttft"),
        (d_pool, d_count, tpot, "tpot"),
    ):
        percentiles = {
            f"{metric}_p50_ms": measured_ms(_quantile(values, 0.5)),
            f"{metric}_p99_ms": measured_ms(_quantile(values, 0.99)),
        }
        other = "tpot" if metric == "ttft" else "ttft"
        target = slo.ttft_p99_ms if metric == "ttft" else slo.tpot_p99_ms
        rows.append(
            PoolSimulation(
                **pool_fields(pool),
                replicas=count,
                load_requests_per_s=total / horizon_s,
                simulated=Latencies(
                    **percentiles, **{f"{other}_p50_ms": None, f"{other}_p99_ms": None}
                ),
                analytic=None,
                ttft_p99_target_ms=target if metric == "ttft" else None,
                tpot_p99_target_ms=target if metric == "tpot" else None,
                meets_slo=_meets(values, target),
                requests_measured=total,
                unfinished=int(np.isnan(run["finish_s"]).sum()),
                preemptions=run["preemptions"] if metric == "tpot" else 0,
                mean_batch=run["decode_busy_batch_s"] / horizon_s / count
                if metric == "tpot"
                else 0.0,
                note=note,
            )
        )
    return rows, run["events"]
