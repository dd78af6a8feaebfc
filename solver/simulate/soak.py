"""The batch an hourly plan soaks into an interactive pool, replayed beside the pool's own
requests (`Hour.batch_soak`: each hour a batch workload may soak the idle capacity of the
unified interactive pools of its model, README "Planning over the day").

Each soak names the batch, the interactive pool (workload, region, configuration key) and
its requests/s. In the replayed hour (scenario `none`: in a loss the batch yields, as the
plan has it) the pool gets, beside its interactive arrivals, a Poisson stream of each
soaked batch at the plan's rate, its lengths drawn from the batch workload's own prompt
and output distributions. A soak of a configuration that several of the hour's pools run
is split over them as the interactive load is, in proportion to n q(n).

Priority: none. Batch and interactive requests go to the same router and queue in one
FIFO per replica, in arrival order, as vLLM and SGLang schedule by default (their `fcfs`
policy; the plan's deploy files set no priority), sharing each iteration's token budget,
batch slots and KV cache. That is the engine as deployed; the planner's model instead
charges each soaked batch request/s q_top / C_b of the pool's interactive capacity, C_b
the batch's rate on one replica at the pool's TPOT target (a time share; README "What it
does not model yet"), and does not see a batch prompt queued ahead of a chat prompt.
Batch prompts find no prefix cache.

The batch stream is drawn from its own seed (the run's, then the pool's, then 1 and the
batch's index), so the interactive requests are the same with and without the soak: the
interactive p99 beside the batch is read from the same interactive requests.

The batch is judged by throughput, not latency (a batch has a deadline, no TTFT/TPOT
target): the batch requests that finish between the later of the warm-up and the time the
pool takes to fill with the batch (`filled_s`) and the end of the arrivals, per second,
against the plan's rate. In a stable pool they average the rate; a
`SHORTFALL` is fewer than rate x span less `SHORTFALL_SIGMAS` Poisson standard deviations
(sqrt(rate x span)): the pool does not keep up with the batch the plan gave it.
"""

import math
from dataclasses import dataclass

import numpy as np

from solver.plan.time_records import BatchSoak
from solver.simulate.results import SoakReplay
from solver.simulate.traffic import arrival_times_s, token_lengths

SHORTFALL_SIGMAS = 3.0
"""Poisson standard deviations below the planned count of finished batch requests at
which the replay names a shortfall (a stable pool falls that short 0.13% of runs)."""


@dataclass(frozen=True)
class PoolSoak:
    """The batch one replayed pool soaks: (batch workload, requests/s) of each."""

    batches: tuple[tuple[object, float], ...] = ()


def pool_soaks(
    instance,
    soaks: tuple[BatchSoak, ...],
    workload: str,
    region: str,
    shares: list,
    closed: bool = False,
) -> tuple[list[PoolSoak], set[int]]:
    """Per share of `shares` (`replay._shares`: (pool, ..., n q(n))) the batch it soaks,
    and the indices of `soaks` placed on one of them. A soak of a configuration several
    pools run is split in proportion to their n q(n). A closed loop (`closed`: users, no
    rate) places none."""
    placed: set[int] = set()
    per_share: list[list[tuple[object, float]]] = [[] for _ in shares]
    for index, soak in enumerate(soaks if not closed else ()):
        if soak.requests_per_s <= 0 or (soak.workload, soak.region) != (workload, region):
            continue
        matching = [i for i, share in enumerate(shares) if share[0].key == soak.configuration]
        weight = sum(shares[i][-1] for i in matching)
        batch = next((w for w in instance.workloads if w.name == soak.batch), None)
        if not matching or weight <= 0 or batch is None:  # batch None: an instance
            continue  # without the batch workload; the soak is then named
        placed.add(index)
        for i in matching:
            per_share[i].append((batch, soak.requests_per_s * shares[i][-1] / weight))
    return [PoolSoak(tuple(b)) for b in per_share], placed


def with_batch(
    soak: PoolSoak | None,
    arrivals: np.ndarray,
    prompts: np.ndarray,
    outputs: np.ndarray,
    cached: np.ndarray,
    duration_s: float,
    rng_seed: list,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The interactive requests with the soaked batch's merged in arrival order, and
    which batch each request is (-1: interactive; i: `soak.batches[i]`)."""
    kind = np.full(arrivals.size, -1)
    if soak is None or not soak.batches:
        return arrivals, prompts, outputs, cached, kind
    parts = [(arrivals, prompts, outputs, cached, kind)]
    for index, (batch, rate) in enumerate(soak.batches):
        rng = np.random.default_rng([*rng_seed, 1, index])
        at = arrival_times_s(rate, duration_s, 1.0, rng)  # Poisson: the plan's mean rate
        parts.append(
            (
                at,
                token_lengths(batch.prompt_tokens, at.size, rng),
                token_lengths(batch.output_tokens, at.size, rng),
                np.zeros(at.size),
                np.full(at.size, index),
            )
        )
    merged = [np.concatenate(column) for column in zip(*parts, strict=True)]
    order = np.argsort(merged[0], kind="stable")
    return tuple(column[order] for column in merged)  # type: ignore[return-value]


def batch_replays(
    soak: PoolSoak | None,
    kind: np.ndarray,
    arrival_s: np.ndarray,
    finish_s: np.ndarray,
    duration_s: float,
    warmup_s: float,
) -> tuple[SoakReplay, ...]:
    """Each soaked batch's requests injected and its throughput over the measured span
    (finished in [start, end of arrivals), per second, the start `filled_s`: the later of
    the warm-up and the time the pool takes to fill with the batch) against the plan's
    rate."""
    if soak is None:
        return ()
    rows = []
    for index, (batch, rate) in enumerate(soak.batches):
        mine = kind == index
        done = finish_s[mine]
        start_s = filled_s(arrival_s[mine], done, warmup_s)
        span_s = max(duration_s - start_s, 0.0)
        finished = int(((done >= start_s) & (done < duration_s)).sum())
        expected = rate * span_s
        rows.append(
            SoakReplay(
                batch=batch.name,
                planned_requests_per_s=rate,
                injected=int(mine.sum()),
                measured_from_s=min(start_s, duration_s),
                finished_in_span=finished,
                achieved_requests_per_s=finished / span_s if span_s > 0 else 0.0,
                unfinished=int(np.isnan(done).sum()),
                shortfall=span_s > 0
                and finished < expected - SHORTFALL_SIGMAS * math.sqrt(expected),
            )
        )
    return tuple(rows)


FILL_REQUESTS = 10
"""The batch requests, at least, whose time in the pool says how long it takes to fill."""


def filled_s(arrival_s: np.ndarray, finish_s: np.ndarray, warmup_s: float) -> float:
    """When a batch's finishes per second can average its rate: the later of the warm-up
    and the longest time in the pool (finish - arrival, the drain included) of the batch
    requests that arrived in the warm-up, at least the first `FILL_REQUESTS`.

    A request arriving at a finishes at a + d, so in a pool that keeps up (d at most D)
    the finishes in [s, T) are the arrivals in [s - d, T - d), rate x (T - s) on average
    once s >= D; from an empty pool at t = 0 there are none before the first d, and
    counting from a warm-up shorter than D read a false shortfall (a 20 s replay of
    diurnal-chat-batch's 04:00 soak: 1.94 of 3.30 requests/s, 'SHORTFALL'; 600 s: 3.31).
    The first requests find the pool empty, so an overloaded pool's growing backlog does
    not move the start."""
    first = max(int((arrival_s < warmup_s).sum()), FILL_REQUESTS)
    stays = finish_s[:first] - arrival_s[:first]
    stays = stays[~np.isnan(stays)]
    return max(warmup_s, float(stays.max()) if stays.size else 0.0)
