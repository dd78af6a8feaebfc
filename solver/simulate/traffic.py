"""Synthetic traffic for the simulator: arrival times and token lengths, seeded, and the
benchmark tools' closed-loop client (users that send their next request when the last
completes)."""

import heapq
import math
from collections.abc import Sequence

import numpy as np

from models.schema.traffic import TokenDistribution

# the engine's replica and its event loop drive the closed-loop client as they drive
# `simulate_pool`; only the source of the arrivals differs
from solver.simulate.engine import DISPATCHES, Effects, PoolTrace, ReplicaEngine, _Replica


def arrival_times_s(
    rate: float, duration_s: float, burstiness_cv: float, rng: np.random.Generator
) -> np.ndarray:
    """Arrival times in [0, duration_s) at mean `rate` requests/s.

    Inter-arrival times are gamma with coefficient of variation `burstiness_cv`
    (shape k = 1 / cv^2, scale = 1 / (rate k)): cv = 1 is a Poisson stream, cv > 1
    bursty, cv < 1 smoother than Poisson.
    """
    if rate <= 0 or duration_s <= 0:
        return np.zeros(0)
    if burstiness_cv <= 0:
        raise ValueError(f"burstiness must be > 0, got {burstiness_cv}")
    shape = 1 / burstiness_cv**2
    expected = rate * duration_s
    draws = int(expected + 6 * math.sqrt(expected) * max(burstiness_cv, 1) + 16)
    gaps = rng.gamma(shape, 1 / (rate * shape), size=draws)
    times = np.cumsum(gaps)
    while times[-1] < duration_s:
        more = np.cumsum(rng.gamma(shape, 1 / (rate * shape), size=draws)) + times[-1]
        times = np.concatenate([times, more])
    return times[times < duration_s]


def token_lengths(
    distribution: TokenDistribution, count: int, rng: np.random.Generator
) -> np.ndarray:
    """`count` lengths (whole tokens, at least 1) from a `{mean, p99}` lognormal (sigma
    from `TokenDistribution.cv`: sigma^2 = ln(1 + cv^2), mu = ln(mean) - sigma^2 / 2)
    or from the histogram's buckets."""
    if distribution.histogram is not None:
        buckets = distribution.buckets()
        tokens = np.array([t for t, _ in buckets])
        weights = np.array([w for _, w in buckets])
        return np.maximum(1, np.rint(rng.choice(tokens, size=count, p=weights))).astype(int)
    mean, cv = distribution.mean_tokens, distribution.cv
    if cv == 0:
        return np.full(count, max(1, round(mean)), dtype=int)
    sigma_sq = math.log1p(cv**2)
    draws = rng.lognormal(math.log(mean) - sigma_sq / 2, math.sqrt(sigma_sq), size=count)
    return np.maximum(1, np.rint(draws)).astype(int)


def speculation_cycles(
    output_tokens: np.ndarray, tokens: int, acceptance_rate: float, rng: np.random.Generator
) -> np.ndarray:
    """Speculation cycles each request takes to decode its O - 1 tokens after the first:
    a cycle of k drafted tokens emits X = min(G, k + 1) tokens, G geometric with success
    1 - a (the accepted prefix and the target's own token: P(X = j) = a^(j-1) (1 - a) for
    j <= k, P(X = k + 1) = a^k, E[X] = (1 - a^(k+1)) / (1 - a), the planner's E,
    `models.physics.speculative`); the cycles are the fewest whose tokens reach O - 1."""
    cycles = np.zeros(len(output_tokens), dtype=int)
    for index, output in enumerate(output_tokens):
        need = int(output) - 1
        if need <= 0:
            continue
        if acceptance_rate >= 1.0:
            emitted = np.full(need, tokens + 1)
        else:
            emitted = np.minimum(rng.geometric(1.0 - acceptance_rate, size=need), tokens + 1)
        cycles[index] = int(np.searchsorted(np.cumsum(emitted), need)) + 1
    return cycles


def closed_loop_trace(
    engine: ReplicaEngine,
    replicas: int,
    start_s: np.ndarray,
    requests_per_user: int,
    prompt_tokens: np.ndarray,
    output_tokens: np.ndarray,
    cached_tokens: np.ndarray | None = None,
    dispatch: str = "least_prefill",
    request_overhead_s: float = 0.0,
) -> PoolTrace:
    """The benchmark tools' closed-loop client on a pool: user u sends its first request
    at `start_s[u]` and each next one the moment the last completes, `requests_per_user`
    in all (C = len(start_s) users). Requests are numbered in the order they are sent;
    request i has `prompt_tokens[i]` tokens to prefill (after `cached_tokens[i]` hits)
    and `output_tokens[i]` output tokens. The replicas, the router and every engine
    effect are `solver.simulate.engine.simulate_pool`'s (its replica and event loop);
    only the arrivals differ: a send waits for its user's completion, not a clock.
    A request reaches the router `request_overhead_s` after it is sent (as in
    `simulate_pool`; its TTFT counts from the send). At one instant the engines' events
    fire before the entries (as `simulate_pool` fires the events up to an arrival first)."""
    users, total = _closed_loop_size(dispatch, start_s, requests_per_user, prompt_tokens)
    trace = PoolTrace(
        arrival_s=np.full(total, np.nan),
        first_token_s=np.full(total, np.nan),
        finish_s=np.full(total, np.nan),
        output_tokens=np.asarray(output_tokens[:total], dtype=int),
    )
    prompt = [int(p) for p in prompt_tokens[:total]]
    output = [int(o) for o in output_tokens[:total]]
    cached = [0.0] * total if cached_tokens is None else [float(c) for c in cached_tokens[:total]]
    pool = [_Replica(engine, Effects(), trace, prompt, output, cached) for _ in range(replicas)]
    in_flight: list[dict[int, int]] = [{} for _ in range(replicas)]  # request -> user
    left = [requests_per_user] * users
    overhead_s = request_overhead_s
    sends = [(float(at) + overhead_s, user) for user, at in enumerate(start_s)]  # entries
    heapq.heapify(sends)
    heap: list = []
    sent = turn = 0
    while sends or heap:
        if heap and (not sends or heap[0][0] <= sends[0][0]):
            _, index, epoch = heapq.heappop(heap)
            replica = pool[index]
            if epoch != replica.epoch or replica.kind == "idle":
                continue
            replica.fire()
            replica.epoch += 1
            if replica.kind != "idle":
                heapq.heappush(heap, (replica.event_s, index, replica.epoch))
            done = [r for r in in_flight[index] if not math.isnan(trace.finish_s[r])]
            for request in done:
                user = in_flight[index].pop(request)
                left[user] -= 1
                if left[user]:
                    heapq.heappush(sends, (float(trace.finish_s[request]) + overhead_s, user))
            continue
        at_s, user = heapq.heappop(sends)
        request, sent = sent, sent + 1
        trace.arrival_s[request] = at_s - overhead_s
        target, turn = _route(pool, dispatch, turn)
        in_flight[target][request] = user
        replica = pool[target]
        moved = replica.arrive(request, at_s)
        if replica.kind == "mixed" and replica.now == at_s:
            replica.schedule()  # the iteration starting now is planned again with it
            moved = True
        if moved:
            replica.epoch += 1
            heapq.heappush(heap, (replica.event_s, target, replica.epoch))
    trace.end_s = max((r.now for r in pool), default=0.0)
    return trace


def _route(pool: list, dispatch: str, turn: int) -> tuple[int, int]:
    """(replica, next turn) for a request, as `simulate_pool`'s router picks it."""
    replicas = len(pool)
    if dispatch == "round_robin":
        return turn, (turn + 1) % replicas
    if dispatch == "jsq":
        target = min(range(replicas), key=lambda r: (pool[r].outstanding(), (r - turn) % replicas))
    else:
        target = min(
            range(replicas),
            key=lambda r: (pool[r].backlog_tokens, pool[r].outstanding(), (r - turn) % replicas),
        )
    return target, (target + 1) % replicas


def closed_loop_pair_trace(
    prefill_engine: ReplicaEngine,
    prefill_lanes: int,
    decode_engine: ReplicaEngine,
    decode_replicas: int,
    start_s: np.ndarray,
    requests_per_user: int,
    prompt_tokens: np.ndarray,
    output_tokens: np.ndarray,
    transfer_s: np.ndarray,
    dispatch: str = "least_prefill",
    request_overhead_s: float = 0.0,
) -> dict:
    """The closed-loop client on a disaggregated pair: user u sends its first request at
    `start_s[u]`, the prefill lanes (`prefill_lanes` replicas of `prefill_engine`, one
    output token: the first) prefill it, its KV lands `transfer_s[i]` after its first
    token at the decode pool (`decode_replicas` of `decode_engine`, the prompt's KV
    already resident, O - 1 tokens to decode), and its user sends the next request the
    moment the decode pool finishes it; a request reaches the prefill router
    `request_overhead_s` after it is sent. Both pools are `simulate_pool`'s replicas and
    router; at one instant the engines' events land first, then the KV, then the entries.
    Returns per request (in send order) `arrival_s`, `ttft_s` (first token + transfer -
    sent, the planner's), `tpot_s` ((finish - first token - transfer) / (O - 1)),
    `finish_s`, and `end_s`, `preemptions`, `events`, `decode_busy_batch_s`."""
    users, total = _closed_loop_size(dispatch, start_s, requests_per_user, prompt_tokens)
    outputs = np.asarray(output_tokens[:total], dtype=int)
    traces = [
        PoolTrace(
            arrival_s=np.full(total, np.nan),
            first_token_s=np.full(total, np.nan),
            finish_s=np.full(total, np.nan),
            output_tokens=tokens,
        )
        for tokens in (np.ones(total, dtype=int), outputs)
    ]
    prompts = [int(p) for p in prompt_tokens[:total]]
    pools = [
        [
            _Replica(prefill_engine, Effects(), traces[0], prompts, [1] * total, [0.0] * total)
            for _ in range(prefill_lanes)
        ],
        [
            _Replica(
                decode_engine,
                Effects(),
                traces[1],
                [0] * total,
                outputs.tolist(),
                [float(p) for p in prompts],
            )
            for _ in range(decode_replicas)
        ],
    ]
    in_flight: list[list[dict[int, int]]] = [[{} for _ in pool] for pool in pools]
    left = [requests_per_user] * users
    owner = [0] * total
    audible_s = np.full(total, np.nan)
    overhead_s = request_overhead_s
    sends = [(float(at) + overhead_s, user) for user, at in enumerate(start_s)]  # entries
    heapq.heapify(sends)
    landings: list[tuple[float, int]] = []  # (KV lands at the decode pool, request)
    heap: list = []
    sent = 0
    turns = [0, 0]

    def enter(side: int, request: int, at_s: float) -> None:
        pool = pools[side]
        target, turns[side] = _route(pool, dispatch, turns[side])
        in_flight[side][target][request] = owner[request]
        replica = pool[target]
        traces[side].arrival_s[request] = at_s
        moved = replica.arrive(request, at_s)
        if replica.kind == "mixed" and replica.now == at_s:
            replica.schedule()  # the iteration starting now is planned again with it
            moved = True
        if moved:
            replica.epoch += 1
            heapq.heappush(heap, (replica.event_s, side, target, replica.epoch))

    while sends or landings or heap:
        next_s = min(sends[0][0] if sends else math.inf, landings[0][0] if landings else math.inf)
        if heap and heap[0][0] <= next_s:
            _, side, index, epoch = heapq.heappop(heap)
            replica = pools[side][index]
            if epoch != replica.epoch or replica.kind == "idle":
                continue
            replica.fire()
            replica.epoch += 1
            if replica.kind != "idle":
                heapq.heappush(heap, (replica.event_s, side, index, replica.epoch))
            trace, flying = traces[side], in_flight[side][index]
            for request in [r for r in flying if not math.isnan(trace.finish_s[r])]:
                user = flying.pop(request)
                if side == 0:
                    audible_s[request] = trace.first_token_s[request] + transfer_s[request]
                    heapq.heappush(landings, (float(audible_s[request]), request))
                else:
                    left[user] -= 1
                    if left[user]:
                        heapq.heappush(sends, (float(trace.finish_s[request]) + overhead_s, user))
            continue
        if landings and landings[0][0] <= (sends[0][0] if sends else math.inf):
            at_s, request = heapq.heappop(landings)
            enter(1, request, at_s)
            continue
        at_s, user = heapq.heappop(sends)
        request, sent = sent, sent + 1
        owner[request] = user
        enter(0, request, at_s)
        traces[0].arrival_s[request] = at_s - overhead_s  # sent: its TTFT counts from here
    arrival_s = traces[0].arrival_s
    finish_s = traces[1].finish_s
    many = outputs > 1
    tpot_s = np.full(total, np.nan)
    tpot_s[many] = (finish_s[many] - audible_s[many]) / (outputs[many] - 1)
    return {
        "arrival_s": arrival_s,
        "ttft_s": audible_s - arrival_s,
        "tpot_s": tpot_s,
        "finish_s": finish_s,
        "end_s": max((r.now for pool in pools for r in pool), default=0.0),
        "preemptions": traces[0].preemptions + traces[1].preemptions,
        "events": traces[0].events + traces[1].events,
        "decode_busy_batch_s": traces[1].busy_batch_s,
    }


def _closed_loop_size(
    dispatch: str, start_s: Sequence[float], requests_per_user: int, prompt_tokens: Sequence
) -> tuple[int, int]:
    """(users, requests) of a closed loop, or ValueError for an unknown dispatch or too
    few lengths for every user's requests."""
    if dispatch not in DISPATCHES:
        raise ValueError(f"dispatch must be one of {', '.join(DISPATCHES)}, got {dispatch!r}")
    users = len(start_s)
    total = users * requests_per_user
    if users < 1 or requests_per_user < 1 or len(prompt_tokens) < total:
        raise ValueError(
            f"{users} users x {requests_per_user} requests need {total} lengths, "
            f"got {len(prompt_tokens)}"
        )
    return users, total
