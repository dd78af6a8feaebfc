"""Replay a disaggregated pair: the prefill pools and the decode pools of one workload in
one region (one weight precision), with the KV transfer between them.

One request stream at the phase's load is drawn (Poisson, or gamma with a stated
coefficient of variation) and split at random over the prefill pools in proportion to
their capacity (a random split of the stream keeps each part of a Poisson stream
Poisson). Each prefill pool replays its requests on its replicas (the planner's step
model, chunked prefill, the KV limit, the router's queue; a replica of pp > 1 stages as
pp lanes of one chunk, `models.serving.prefill_model`) with one output token: the
iteration that finishes a prompt produces its first token. The prompt's KV then crosses
to a decode replica over the prefill replica's NICs in `kv_transfer_s` (the planner's
transfer time; the NICs are taken as uncontended, so a transfer is a pure delay):

    TTFT = prefill first token + transfer - arrival

(a request reaches the prefill pool's router the profile's request overhead after it
arrives, `Efficiency.request_overhead_s`, so its TTFT holds it as the planner's does)

(the planner's definition of a disaggregated TTFT: wait + own prefill + transfer). The
requests then arrive, in the order their KV lands, at the decode pools (split at random
in proportion to capacity), whose replicas admit them with the prompt's KV already
resident (no prompt tokens to prefill) and decode the O - 1 remaining tokens, with the
decode pool's own router queue, KV limit and preemption (recompute of the written
tokens). TPOT is what the user sees after the first token:

    TPOT = (decode finish - (prefill first token + transfer)) / (O - 1)

so a wait for a decode slot counts against TPOT.

The analytic numbers are the planner's at the same per-replica load: for a prefill pool
its p99 TTFT (`models.serving.prefill_model`: the iteration in progress, the M/G/c wait, the
iteration(s) that complete the prompt, the transfer); for a decode pool
`models.serving.frontier.operating_point`'s p99 TPOT and mean step.
"""

import numpy as np

from models.serving.batch_model import group_loaded_steps
from models.serving.capacity import replica_capacity
from models.serving.frontier import operating_point
from models.serving.prefill_model import prefill_lane
from models.serving.prefix_kv import pool_kv, pool_mix_tokens
from models.serving.replica import LatencyTargets, Role, ServingContext
from models.serving.replica_layout import decode_steps, kv_transfer_s, replica_step_model
from solver.simulate.engine import CycleSteps, Effects, ReplicaEngine, simulate_pool
from solver.simulate.traffic import arrival_times_s, token_lengths

ALL_ON = Effects()
"""Every engine effect on (a real engine)."""


def prefill_ttft_p99_s(serving: ServingContext, rate: float, pool_replicas: int) -> float:
    """p99 TTFT of a prefill-only replica at `rate` prompts/s, one of `pool_replicas`
    behind one router: the planner's `models.serving.prefill_model.PrefillLane.ttft_p99_s`
    (residual iteration + own prefill and the prompts riding in its last iteration +
    transfer, the M/G/c wait in quadrature with the p99 prompt's extra; math.inf at or
    past saturation)."""
    config, efficiency = serving.config, serving.efficiency
    steps = replica_step_model(config, efficiency)
    tokens = pool_mix_tokens(serving, pool_replicas)
    lane = prefill_lane(config, tokens, efficiency, steps, pool_replicas)
    return lane.ttft_p99_s(rate)


def replica_engine(serving: ServingContext, pool_replicas: int = 1) -> ReplicaEngine:
    """One replica of a pool of `pool_replicas` as the simulator runs it: the planner's
    step model and engine batch cap, and the KV cache that holds as many whole sequences
    as the planner's: the engine charges each sequence its whole prompt and output, so
    the declared prefixes the pool holds once per replica in HBM
    (`models.serving.prefix_kv.pool_mix_tokens`: H tokens of copies, S of a mean request's
    prompt in them) appear as the equivalent cache
        K_sim = (K - H) / (P + O - S) x (P + O)
    (K without shared prefixes). With attention DP the step model carries the planner's
    busiest-group loads (`models.serving.batch_model.group_loaded_steps`: a unified
    replica's groups prefill whole prompts), so both price a DEP prefill alike."""
    config, efficiency = serving.config, serving.efficiency
    offline = replica_capacity(config, serving.mix, LatencyTargets(), efficiency)
    tokens = pool_mix_tokens(serving, pool_replicas)
    steps = group_loaded_steps(replica_step_model(config, efficiency), tokens, config.role)
    capacity = tokens.kv_sequences(offline.kv_capacity_tokens) * (tokens.prompt + tokens.output)
    if speculates(config):
        cycle = decode_steps(config, efficiency, steps)
        return ReplicaEngine(
            CycleSteps(cycle),
            capacity,
            efficiency.max_batch_sequences,
            tokens_per_step=cycle.expected_tokens,
            positions_per_step=cycle.tokens + 1,
        )
    return ReplicaEngine(steps, capacity, efficiency.max_batch_sequences)


def speculates(config) -> bool:
    """A unified replica without attention DP that decodes speculatively: the engine
    replays its cycles (`replica_engine`); a decode-only or DP replica that speculates it
    does not (`solver.simulate.replay` names it instead)."""
    return config.speculation is not None and config.role is Role.UNIFIED and config.dp == 1


def cached_tokens(prompts: np.ndarray, serving: ServingContext, pool_replicas: int) -> np.ndarray:
    """Prompt tokens each request finds in the pool's prefix cache: floor(P x h), h the
    pool's hit rate (`models.serving.prefix_kv.pool_kv`, the plan's `prefix_hit_rate`)."""
    return np.floor(prompts * pool_kv(serving, pool_replicas).hit_rate)


def prefill_lanes(serving: ServingContext, replicas: int) -> tuple[ReplicaEngine, int]:
    """The engine and count of a prefill pool's lanes: with pp > 1 stages each replica
    keeps pp iterations of one chunk in flight (vLLM's virtual engines; each lane's
    iteration is its pp stage passes, `StepModel.iteration_s` with no decode batch), so
    the pool is replicas x pp lanes of one chunk each, a 1/pp share of the KV cache."""
    engine = replica_engine(serving, replicas)
    lanes = engine.steps.pp
    if lanes == 1:
        return engine, replicas
    lane = ReplicaEngine(
        engine.steps,
        engine.kv_capacity_tokens / lanes,
        engine.max_batch_sequences,
        budget_tokens=engine.steps.chunk_tokens,
    )
    return lane, replicas * lanes


def _split(shares: list[float], count: int, rng: np.random.Generator) -> np.ndarray:
    """Which of the pools (index) each of `count` requests goes to, in proportion."""
    weights = np.asarray(shares, dtype=float)
    weights = (
        weights / weights.sum() if weights.sum() > 0 else np.full(len(shares), 1 / len(shares))
    )
    return rng.choice(len(shares), size=count, p=weights)


def simulate_pair(
    workload,
    mix,
    prefill: list[tuple],
    decode: list[tuple],
    load: float,
    rng: np.random.Generator,
    duration_s: float,
    burstiness_cv: float,
    dispatch: str,
    effects: Effects = ALL_ON,
) -> dict:
    """Replay one disaggregated pair (module docstring).

    Args:
        prefill, decode: per pool (config, efficiency, replicas, capacity share).
        load: requests/s of the pair (all pools together).

    Returns a dict with `arrival_s`, `ttft_s`, `tpot_s` (per request, NaN where never
    served), `output_tokens`, and per pool (in the order given) `prefill_pools` /
    `decode_pools`: (request indices, preemptions, events).
    """
    arrivals = arrival_times_s(load, duration_s, burstiness_cv, rng)
    count = arrivals.size
    prompts = token_lengths(workload.prompt_tokens, count, rng)
    outputs = token_lengths(workload.output_tokens, count, rng)
    first_audible_s = np.full(count, np.nan)
    finish_s = np.full(count, np.nan)
    prefill_out, decode_out = [], []
    which = _split([share for *_, share in prefill], count, rng)
    for index, (config, efficiency, replicas, _) in enumerate(prefill):
        members = np.flatnonzero(which == index)
        serving = ServingContext(config, mix, efficiency)
        cached = cached_tokens(prompts[members], serving, replicas)
        engine, lanes = prefill_lanes(serving, replicas)
        trace = simulate_pool(
            engine,
            lanes,
            arrivals[members],
            prompts[members] - cached,
            np.ones(members.size, dtype=int),
            cached,
            effects,
            dispatch=dispatch,
            request_overhead_s=efficiency.request_overhead_s,
        )
        transfer_s = np.array(
            [kv_transfer_s(config, float(p), efficiency) for p in prompts[members]]
        )
        first_audible_s[members] = trace.first_token_s + transfer_s
        prefill_out.append((members, trace.preemptions, trace.events))
    which = _split([share for *_, share in decode], count, rng)
    for index, (config, efficiency, replicas, _) in enumerate(decode):
        members = np.flatnonzero((which == index) & ~np.isnan(first_audible_s))
        members = members[np.argsort(first_audible_s[members], kind="stable")]
        trace = simulate_pool(
            replica_engine(ServingContext(config, mix, efficiency), replicas),
            replicas,
            first_audible_s[members],
            np.zeros(members.size, dtype=int),
            outputs[members],
            prompts[members].astype(float),
            effects,
            dispatch=dispatch,
        )
        finish_s[members] = trace.finish_s
        decode_out.append((members, trace.preemptions, trace.events, trace.busy_batch_s))
    many = outputs > 1
    tpot_s = np.full(count, np.nan)
    tpot_s[many] = (finish_s[many] - first_audible_s[many]) / (outputs[many] - 1)
    return {
        "arrival_s": arrivals,
        "ttft_s": first_audible_s - arrivals,
        "tpot_s": tpot_s,
        "finish_s": finish_s,
        "output_tokens": outputs,
        "prefill_pools": prefill_out,
        "decode_pools": decode_out,
    }


def decode_analytic(serving: ServingContext, rate: float) -> tuple[float | None, float | None]:
    """(mean step s, p99 TPOT s) of a decode replica at `rate` generations/s, or Nones
    past its offline maximum."""
    point = operating_point(serving, rate)
    if point is None:
        return None, None
    return point.decode_step_s, point.tpot_p99_s
