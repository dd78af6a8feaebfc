"""Synthetic traffic for the simulator: arrival times and token lengths, seeded, and the
benchmark tools' closed-loop client (users that send their next request when the last
completes)."""

import heapq
import math

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


def closed_loop_trace(
    engine: ReplicaEngine,
    replicas: int,
    start_s: np.ndarray,
    requests_per_user: int,
    prompt_tokens: np.ndarray,
    output_tokens: np.ndarray,
    cached_tokens: np.ndarray | None = None,
    dispatch: str = "least_prefill",
) -> PoolTrace:
    """The benchmark tools' closed-loop client on a pool: user u sends its first request
    at `start_s[u]` and each next one the moment the last completes, `requests_per_user`
    in all (C = len(start_s) users). Requests are numbered in the order they are sent;
    request i has `prompt_tokens[i]` tokens to prefill (after `cached_tokens[i]` hits)
    and `output_tokens[i]` output tokens. The replicas, the router and every engine
    effect are `solver.simulate.engine.simulate_pool`'s (its replica and event loop);
    only the arrivals differ: a send waits for its user's completion, not a clock.
    At one instant the engines' events fire before the sends (as `simulate_pool` fires
    the events up to an arrival first)."""
    if dispatch not in DISPATCHES:
        raise ValueError(f"dispatch must be one of {', '.join(DISPATCHES)}, got {dispatch!r}")
    users = len(start_s)
    total = users * requests_per_user
    if users < 1 or requests_per_user < 1 or len(prompt_tokens) < total:
        raise ValueError(
            f"{users} users x {requests_per_user} requests need {total} lengths, "
            f"got {len(prompt_tokens)}"
        )
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
    sends = [(float(at), user) for user, at in enumerate(start_s)]
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
                    heapq.heappush(sends, (float(trace.finish_s[request]), user))
            continue
        at_s, user = heapq.heappop(sends)
        request, sent = sent, sent + 1
        trace.arrival_s[request] = at_s
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
