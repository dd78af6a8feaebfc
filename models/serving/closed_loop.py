"""Closed-loop benchmark clients replayed iteration by iteration: C users that start together.

Benchmark tools (`vllm bench serve --max-concurrency`, genai-perf/aiperf, trtllm-bench) hold
C requests in flight: all C are sent at t = 0, and each user sends its next request the
moment its last one completes. With fixed prompt and output lengths the first wave's C
prompts queue behind each other's prefill, and later waves keep much of that bunching,
because a wave's requests finish in the order they were prefilled and come back while the
engine's token budget is shared with C decoding sequences. A steady (Poisson) arrival
model misses that queue, which is why it reads the tools' TTFT too low.

The replay is deterministic and uses only what one engine iteration is:
- the engine runs iterations; each of the B decoding sequences advances one token, and
  prompt tokens fill what is left of the token budget T (chunked prefill): up to T - B
  prompt tokens, handed out first come, first served, a prompt split across iterations
  where the budget runs out;
- a sequence is admitted (seated) while fewer than S sequences are seated (S: the
  engine's sequence cap, the KV cache's or its max batch), else it waits in the queue;
- an iteration with B decoding sequences and q prompt tokens takes t(B, q) seconds (the
  roofline step model, `models.physics.step_time.StepModel.iteration_s`);
- a prompt's first token comes at the end of the iteration that finishes its prefill;
  each of its O - 1 further tokens takes one iteration; it completes after the iteration
  that produced its O-th token, and its user sends the next request at once.
Per request: TTFT = first token - sent, TPOT = (completion - first token) / (O - 1).

Assumptions: fixed lengths (P new prompt tokens after any prefix hit, O output tokens);
one replica (a pool behind a router that splits users evenly replays the same per
replica); no preemption (a seated sequence keeps its KV).
"""

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

IterationTime = Callable[[int, float], float]
"""t(B, q): seconds of one iteration with B decoding sequences and q prompt tokens."""

MAX_ITERATIONS = 2_000_000
"""A replay longer than this is refused: users x requests x (O + prefill iterations) past
any benchmark a planner would replay (10 requests of 256 users with 32K outputs is
~330,000 iterations at full batch)."""


@dataclass(frozen=True)
class ClosedLoopRun:
    """What the tool would report for one replica."""

    users: int
    requests: int
    """Requests completed (users x requests per user)."""
    duration_s: float
    """From the first send to the last completion."""
    throughput_requests_per_s: float
    output_tokens_per_s: float
    mean_decode_batch: float
    """Decoding sequences per iteration, weighted by iteration time."""
    ttft_mean_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_mean_s: float
    tpot_p99_s: float


def _quantile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank quantile of sorted values (what the benchmark tools print)."""
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def replay_closed_loop(
    iteration_s: IterationTime,
    budget_tokens: int,
    max_sequences: int,
    users: int,
    requests_per_user: int,
    prompt_tokens: int,
    output_tokens: int,
) -> ClosedLoopRun:
    """Replay `users` closed-loop clients, each sending `requests_per_user` requests of
    `prompt_tokens` new prompt tokens and `output_tokens` output tokens (see the module
    docstring). Raises ValueError for arguments that cannot run (no budget, no seat, a
    replay past `MAX_ITERATIONS`)."""
    if users < 1 or requests_per_user < 1:
        raise ValueError(
            f"users and requests per user must be >= 1, got {users}, {requests_per_user}"
        )
    if prompt_tokens < 1 or output_tokens < 1:
        raise ValueError(
            f"prompt and output tokens must be >= 1, got {prompt_tokens}, {output_tokens}"
        )
    if max_sequences < 1 or budget_tokens <= 0:
        raise ValueError(
            f"the engine needs a seat and a token budget, got {max_sequences} seats, "
            f"{budget_tokens} tokens per iteration"
        )
    total = users * requests_per_user
    prefill_iterations = math.ceil(total * prompt_tokens / max(budget_tokens - 1, 1))
    if total * output_tokens / min(max_sequences, users) + prefill_iterations > MAX_ITERATIONS:
        raise ValueError(
            f"a replay of {total:,} requests of {output_tokens:,} output tokens is past "
            f"{MAX_ITERATIONS:,} iterations"
        )

    waiting: deque[tuple[int, float]] = deque((user, 0.0) for user in range(users))
    prefilling: deque[list] = deque()  # [user, sent_s, prompt tokens left]
    finishing: dict[int, list[tuple[int, float, float]]] = {}  # iteration -> (user, sent, first)
    left = dict.fromkeys(range(users), requests_per_user)
    decoding = 0
    now = 0.0
    batch_time = 0.0
    ttfts: list[float] = []
    tpots: list[float] = []
    iteration = 0
    while waiting or prefilling or decoding:
        while waiting and decoding + len(prefilling) < max_sequences:
            user, sent = waiting.popleft()
            prefilling.append([user, sent, prompt_tokens])
        budget = budget_tokens - decoding
        served, done = 0, []
        for entry in prefilling:
            if served >= budget:
                break
            take = min(entry[2], budget - served)
            entry[2] -= take
            served += take
            if entry[2] == 0:
                done.append(entry)
        if served == 0 and decoding == 0:
            raise ValueError("the engine cannot run: no decoding sequence and no prompt budget")
        step = iteration_s(decoding, float(served))
        now += step
        batch_time += decoding * step
        for _ in done:
            prefilling.popleft()  # first come, first served: the finished ones lead
        completed = finishing.pop(iteration, [])
        decoding -= len(completed)
        for _user, _sent, first in completed:
            tpots.append((now - first) / (output_tokens - 1))
        for user, sent, _left in done:
            ttfts.append(now - sent)
            if output_tokens == 1:
                completed.append((user, sent, now))
            else:
                finishing.setdefault(iteration + output_tokens - 1, []).append((user, sent, now))
                decoding += 1
        for user, _, _ in completed:
            left[user] -= 1
            if left[user]:
                waiting.append((user, now))
        iteration += 1

    ttfts.sort()
    tpots.sort()
    return ClosedLoopRun(
        users=users,
        requests=total,
        duration_s=now,
        throughput_requests_per_s=total / now,
        output_tokens_per_s=total * output_tokens / now,
        mean_decode_batch=batch_time / now,
        ttft_mean_s=sum(ttfts) / len(ttfts),
        ttft_p50_s=_quantile(ttfts, 0.5),
        ttft_p99_s=_quantile(ttfts, 0.99),
        tpot_mean_s=sum(tpots) / len(tpots) if tpots else 0.0,
        tpot_p99_s=_quantile(tpots, 0.99) if tpots else 0.0,
    )
