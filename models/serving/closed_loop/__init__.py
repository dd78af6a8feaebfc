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
Per token after a request's first: its inter-token gap (ITL), from the sequence's previous
token to the end of the iteration that produces it, a prefill iteration between them
included; the tools print the median over every gap of every request, which reads the
decode iteration alone wherever fewer than half the gaps carry a prefill.

`prefill_first` (SGLang's schedule, `Efficiency.prefill_first`): an iteration with prompts
to prefill runs them alone, up to T tokens, and the B decoding sequences wait for it; an
iteration with none is a decode iteration. A sequence's O - 1 further tokens then take
O - 1 decode iterations, however many prefill iterations come between them.

Lengths: the tools draw each request's lengths from a distribution (`LengthSpread`:
fixed; uniform over [m (1 - s), m (1 + s)] about the mean m, what `--random-range-ratio`
draws; lognormal with a coefficient of variation, a dataset's conversation lengths). The
replay draws them deterministically by quantiles: the k-th request sent (in send order,
over all users) gets the prompt quantile u_k and the output quantile v_k of the R2
sequence (u_k, v_k) = frac(1/2 + (k + 1) (1/g, 1/g^2)), g the plastic number, whose every
prefix covers the unit square evenly, so a short run's mean lengths match the
distribution's and the two lengths are not correlated. Requests of different lengths
finish at different iterations, so the waves de-synchronise as they do in the real runs;
with fixed lengths every request is (P, O) and the replay is the bunched one.

A request reaches the engine `request_overhead_s` after it is sent (the engine's fixed
cost per request: HTTP, tokenisation, scheduling, detokenising the first token, all of
which a benchmark tool counts in TTFT): it counts once in each TTFT and once in each
user's loop; the engine runs other requests meanwhile.

Assumptions: P is the new prompt tokens after any prefix hit; one replica (a pool behind a
router that splits users evenly replays the same per replica); no preemption (a seated
sequence keeps its KV: the seats are whole requests at the mean lengths, TensorRT-LLM's
`GUARANTEED_NO_EVICT`). vLLM's scheduler, which gives KV on demand and recomputes the newest
sequence when the cache is full, is `models.serving.closed_loop.preempting`.
"""

import itertools
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

IterationTime = Callable[[int, float], float]
"""t(B, q): seconds of one iteration with B decoding sequences and q prompt tokens."""

MAX_ITERATIONS = 2_000_000
"""A replay longer than this is refused: users x requests x (O + prefill iterations) past
any benchmark a planner would replay (10 requests of 256 users with 32K outputs is
~330,000 iterations at full batch)."""
SHAPES = ("fixed", "uniform", "lognormal")
PLASTIC = 1.324717957244746
"""g, the real root of g^3 = g + 1: the R2 sequence's base (module docstring)."""
_NORMAL = NormalDist()


@dataclass(frozen=True)
class LengthSpread:
    """How each request's prompt and output lengths spread about their means (module
    docstring). `prompt` and `output` are, for `uniform`, the half-width s as a fraction of
    the mean (lengths over [m (1 - s), m (1 + s)], 0 <= s <= 1), for `lognormal` the
    coefficient of variation; `fixed` ignores them."""

    shape: str = "fixed"
    prompt: float = 0.0
    output: float = 0.0

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"length spread {self.shape!r} is not one of {', '.join(SHAPES)}")
        limit = 1.0 if self.shape == "uniform" else math.inf
        for name, value in (("prompt", self.prompt), ("output", self.output)):
            if not 0 <= value <= limit:
                raise ValueError(
                    f"{self.shape} {name} spread must be in [0, {limit:g}], got {value!r}"
                )

    @classmethod
    def uniform_range(cls, ratio: float) -> "LengthSpread":
        """Uniform lengths over [ratio x L, L] (`--random-range-ratio` as `sglang.bench_serving`
        draws it): mean m = L (1 + ratio) / 2, half-width L (1 - ratio) / 2 = m s with
        s = (1 - ratio) / (1 + ratio), for prompts and outputs alike."""
        if not 0 <= ratio <= 1:
            raise ValueError(f"a range ratio must be in [0, 1], got {ratio!r}")
        half = (1 - ratio) / (1 + ratio)
        return cls("uniform", half, half)

    def quantile(self, u: float, mean: int, spread: float) -> int:
        """The length at quantile u in (0, 1) of a distribution with this shape, the mean
        `mean` and `spread`, rounded to whole tokens, at least 1."""
        if self.shape == "fixed" or spread == 0:
            return mean
        if self.shape == "uniform":
            value = mean * (1 + spread * (2 * u - 1))
        else:
            sigma = math.sqrt(math.log1p(spread**2))
            value = mean * math.exp(sigma * _NORMAL.inv_cdf(u) - sigma**2 / 2)
        return max(1, round(value))

    def draw(self, count: int, prompt_tokens: int, output_tokens: int) -> list[tuple[int, int]]:
        """(prompt, output) of the first `count` requests sent, by the R2 quantiles."""
        a1, a2 = 1 / PLASTIC, 1 / PLASTIC**2
        out = []
        for k in range(count):
            u, v = (0.5 + (k + 1) * a1) % 1.0, (0.5 + (k + 1) * a2) % 1.0
            out.append(
                (
                    self.quantile(u, prompt_tokens, self.prompt),
                    self.quantile(v, output_tokens, self.output),
                )
            )
        return out


FIXED = LengthSpread()
"""Every request at the mean lengths."""


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
    itl_p50_s: float = 0.0
    """Median inter-token gap over every token after a request's first (module
    docstring); 0 when no request has a second token."""


def _quantile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank quantile of sorted values (what the benchmark tools print)."""
    rank = max(1, math.ceil(q * len(sorted_values)))
    return sorted_values[rank - 1]


def record_token_gaps(
    gaps: list[tuple[float, int]], now: float, last_token_s: float, advancing: int, fresh: list
) -> None:
    """An iteration ending at `now` gives each of the `advancing` decoding sequences a
    token: those that decoded before the last first tokens waited since `last_token_s`,
    each of the `fresh` ones (their first tokens' times) since its own first token."""
    if advancing > len(fresh):
        gaps.append((now - last_token_s, advancing - len(fresh)))
    gaps.extend((now - first_s, 1) for first_s in fresh)


def _weighted_median(gaps: list[tuple[float, int]]) -> float:
    """Nearest-rank median of values each counted `weight` times (0 for none)."""
    total = sum(weight for _value, weight in gaps)
    if total == 0:
        return 0.0
    ordered = sorted(gaps)
    ranks = itertools.accumulate(weight for _value, weight in ordered)
    rank = math.ceil(0.5 * total)
    return next(value for (value, _w), seen in zip(ordered, ranks, strict=True) if seen >= rank)


def run_summary(
    users: int,
    requests: int,
    duration_s: float,
    output_tokens: int,
    batch_time: float,
    ttfts: list[float],
    tpots: list[float],
    gaps: list[tuple[float, int]],
) -> ClosedLoopRun:
    """What the tool reports of a finished replay (every replay of this package): its
    rates over `duration_s`, the mean decode batch from `batch_time` (decoding sequences
    x iteration seconds, summed), and the TTFT, TPOT and inter-token `gaps`' statistics."""
    ttfts, tpots = sorted(ttfts), sorted(tpots)
    return ClosedLoopRun(
        users=users,
        requests=requests,
        duration_s=duration_s,
        throughput_requests_per_s=requests / duration_s,
        output_tokens_per_s=output_tokens / duration_s,
        mean_decode_batch=batch_time / duration_s,
        ttft_mean_s=sum(ttfts) / len(ttfts),
        ttft_p50_s=_quantile(ttfts, 0.5),
        ttft_p99_s=_quantile(ttfts, 0.99),
        tpot_mean_s=sum(tpots) / len(tpots) if tpots else 0.0,
        tpot_p99_s=_quantile(tpots, 0.99) if tpots else 0.0,
        itl_p50_s=_weighted_median(gaps),
    )


def replay_closed_loop(
    iteration_s: IterationTime,
    budget_tokens: int,
    max_sequences: int,
    users: int,
    requests_per_user: int,
    prompt_tokens: int,
    output_tokens: int,
    spread: LengthSpread = FIXED,
    request_overhead_s: float = 0.0,
    prefill_first: bool = False,
) -> ClosedLoopRun:
    """Replay `users` closed-loop clients, each sending `requests_per_user` requests of
    mean `prompt_tokens` new prompt tokens and mean `output_tokens` output tokens, spread
    as `spread` draws them, each reaching the engine `request_overhead_s` after it is sent
    (see the module docstring). Raises ValueError for arguments that cannot run (no
    budget, no seat, a replay past `MAX_ITERATIONS`)."""
    lengths = closed_loop_lengths(
        budget_tokens, max_sequences, users, requests_per_user, prompt_tokens, output_tokens, spread
    )
    return replay_requests(
        iteration_s, budget_tokens, max_sequences, users, lengths, request_overhead_s, prefill_first
    )


def closed_loop_lengths(
    budget_tokens: int,
    max_sequences: int,
    users: int,
    requests_per_user: int,
    prompt_tokens: int,
    output_tokens: int,
    spread: LengthSpread = FIXED,
) -> list[tuple[int, int]]:
    """The (prompt, output) of every request `replay_closed_loop` sends, in send order,
    after the checks it raises ValueError on (no budget, no seat, past `MAX_ITERATIONS`)."""
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
    return spread.draw(total, prompt_tokens, output_tokens)


def replay_requests(
    iteration_s: IterationTime,
    budget_tokens: int,
    max_sequences: int,
    users: int,
    lengths: Sequence[tuple[int, int]],
    request_overhead_s: float = 0.0,
    prefill_first: bool = False,
) -> ClosedLoopRun:
    """The replay of `replay_closed_loop` with the lengths given: `lengths[k]` is the
    (prompt, output) of the k-th request sent, the first `users` at t = 0, each later one
    when a user's last request completes; the run ends when all are done."""
    if request_overhead_s < 0:
        raise ValueError(f"the request overhead must be >= 0 s, got {request_overhead_s!r}")
    total = len(lengths)
    queue = deque(lengths)
    # waiting: (user, sent_s, ready_s, prompt, output), in send order (ready_s rises)
    waiting: deque[tuple[int, float, float, int, int]] = deque()
    prefilling: deque[list] = deque()  # [user, sent_s, prompt tokens left, output]
    finishing: dict[int, list[tuple[int, float, float, int]]] = {}  # it -> (user, sent, first, O)

    def send(user: int, now: float) -> None:
        if queue:
            prompt, output = queue.popleft()
            waiting.append((user, now, now + request_overhead_s, prompt, output))

    for user in range(min(users, total)):
        send(user, 0.0)
    decoding = 0
    now = 0.0
    batch_time = 0.0
    output_total = 0
    ttfts: list[float] = []
    tpots: list[float] = []
    decode_step = 0  # the decode iterations run so far (every iteration unless prefill_first)
    gaps: list[tuple[float, int]] = []  # (inter-token gap, tokens that waited it)
    last_token_s = 0.0  # when the sequences decoding before the last first tokens got one
    fresh: list[float] = []  # first tokens since then, of sequences that decode on
    while waiting or prefilling or decoding:
        if not prefilling and not decoding and waiting[0][2] > now:
            now = waiting[0][2]  # the engine idles until the next request reaches it
        while waiting and decoding + len(prefilling) < max_sequences and waiting[0][2] <= now:
            user, sent, _ready, prompt, output = waiting.popleft()
            prefilling.append([user, sent, prompt, output])
        if not prefilling and decoding and decode_step < min(finishing):
            # Decode iterations that complete nothing and admit no one: the body below
            # would run them one at a time with no prompt and no change of batch. Run
            # them here, the same arithmetic in the same order (the same floats), until
            # the iteration a sequence completes in or one in which a request is seated.
            step = iteration_s(decoding, 0.0)
            until = min(finishing)
            seated_at = waiting[0][2] if waiting and decoding < max_sequences else math.inf
            while decode_step < until:
                now += step
                batch_time += decoding * step
                record_token_gaps(gaps, now, last_token_s, decoding, fresh)
                last_token_s, fresh = now, []
                decode_step += 1
                if seated_at <= now:
                    break
            continue
        alone = prefill_first and bool(prefilling)  # a prefill batch: the decodes wait
        budget = budget_tokens if alone else budget_tokens - decoding
        if prefill_first and not alone:
            budget = 0
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
        advancing = 0 if alone else decoding
        step = iteration_s(advancing, float(served))
        now += step
        batch_time += advancing * step
        if advancing:  # every decoding sequence gets a token: its gap since its last one
            record_token_gaps(gaps, now, last_token_s, advancing, fresh)
            last_token_s, fresh = now, []
        for _ in done:
            prefilling.popleft()  # first come, first served: the finished ones lead
        completed = []
        if not alone:
            completed = finishing.pop(decode_step, [])
            decode_step += 1
        decoding -= len(completed)
        for _user, _sent, first, output in completed:
            tpots.append((now - first) / (output - 1))
        for user, sent, _left, output in done:
            ttfts.append(now - sent)
            output_total += output
            if output == 1:
                completed.append((user, sent, now, output))
            else:
                finishing.setdefault(decode_step + output - 2, []).append((user, sent, now, output))
                decoding += 1
                fresh.append(now)
        for user, _, _, _ in completed:
            send(user, now)

    return run_summary(users, total, now, output_total, batch_time, ttfts, tpots, gaps)
