"""The closed-loop replay under vLLM's scheduler: KV blocks on demand, recompute when full.

`models.serving.closed_loop` seats a request only while fewer than S sequences are
seated, S the sequences whose whole prompt and reply fit in the KV cache at the mean
lengths (TensorRT-LLM's `GUARANTEED_NO_EVICT`: a request is scheduled only with room for
all of it). vLLM's V1 scheduler does not reserve: it gives a sequence KV blocks for the
tokens it computes this iteration and, when the cache runs out, evicts the newest
sequence and recomputes it later (vllm-project/vllm `vllm/v1/core/sched/scheduler.py`,
`Scheduler.schedule`, read at 00024d314514900f361ad072af6931e403b7f589; the V1 rule since
0.8):
- the RUNNING requests first, oldest first: each gets KV slots for its next tokens
  (`allocate_slots`); where the cache cannot give them, the newest running request is
  preempted (`self.running.pop()` under the default FCFS policy): its blocks are freed
  and it goes back to the head of the waiting queue with `num_computed_tokens = 0`, so it
  is prefilled again over its prompt and every token it had generated, then decodes on;
- the WAITING requests next, first come first served, only in an iteration that
  preempted no one (`if not preempted_reqs`), while fewer than `max_num_seqs` run, the
  token budget lasts and the cache holds the chunk scheduled now (the prompt's first
  `min(prompt, budget left)` tokens, not its whole length).
So when every request arrives at once, the engine seats as many as the cache holds
*prompts* for (up to `max_num_seqs`), and the batch it decodes is larger than
capacity / (P + O); as the replies grow the cache fills and the newest are recomputed,
which costs prefill work and stalls those replies (their TPOT takes the wait).

The replay here is `closed_loop.replay_requests`'s, iteration by iteration, with that
rule: `kv_tokens` is the cache's capacity in tokens; a sequence holds the tokens it has
computed (a prompt's prefilled chunks; a decoding sequence its prompt and one token per
decode iteration it ran: the token an iteration produces is written by the next); block
rounding (16 tokens) is left out. A preempted request's TTFT stays its first one; its
output counts once; its TPOT runs from its first token to its last, the wait included;
its gap to the token after its recompute is one inter-token gap. Chunked prefill as
`closed_loop`: decodes take one token of the budget each, prompts the rest.

Assumptions: one replica; no prefix cache (a recomputed prompt is prefilled again in
full; vLLM's prefix cache would find its blocks only if no one reused them); no
speculative tokens.
"""

from collections import deque
from collections.abc import Sequence

from models.serving.closed_loop import (
    MAX_ITERATIONS,
    ClosedLoopRun,
    IterationTime,
    record_token_gaps,
    run_summary,
)


class _Engine:
    """The replay's state: the queue, the running requests and the KV they hold."""

    def __init__(self, kv_tokens: float, users: int, lengths, request_overhead_s: float):
        self.kv_tokens = kv_tokens
        self.queue = deque(lengths)
        self.overhead_s = request_overhead_s
        # waiting: [user, sent_s, ready_s, tokens to prefill, outputs left, first_s, O, last_s]
        self.waiting: deque[list] = deque()
        # prefilling: [user, sent_s, tokens left, outputs left, first_s, O, last_s, tokens]
        self.prefilling: deque[list] = deque()
        # decoding, in the order they were seated: id -> [user, sent, first, O, start, end, base]
        self.decoding: dict[int, list] = {}
        self.finishing: dict[int, list[int]] = {}  # decode step -> ids ending there
        self.kv_used = 0.0
        self.cached: dict[int, float] = {}  # preempted request -> its blocks still cached
        self.next_id = 0
        self.preemptions = 0
        for user in range(min(users, len(self.queue))):
            self.send(user, 0.0)

    def send(self, user: int, now: float) -> None:
        if self.queue:
            prompt, output = self.queue.popleft()
            ready = now + self.overhead_s
            self.waiting.append([user, now, ready, prompt, output, None, output, now, None])

    def running(self) -> int:
        return len(self.decoding) + len(self.prefilling)

    def preempt_newest(self, step: int, now: float) -> list | None:
        """Evict the newest running request (a prompt being prefilled, else the sequence
        seated last) to the head of the queue; return the prefill entry evicted (None
        for a decoding one)."""
        self.preemptions += 1
        if self.prefilling:
            entry = self.prefilling.pop()
            user, sent, left, outputs, first, total, last, tokens = entry
            key = self.uncache(tokens - left)
            self.waiting.appendleft([user, sent, now, tokens, outputs, first, total, last, key])
            return entry
        key = next(reversed(self.decoding))
        user, sent, first, total, start, end, base = self.decoding.pop(key)
        self.finishing[end].remove(key)
        ran = step - start  # decode iterations it ran: each wrote one token
        cached = self.uncache(base + ran)
        generated = total - (end - start + 2) + 1 + ran  # tokens out so far
        # recomputed: its prompt and every token it generated (the last one not yet written)
        tokens = base + ran + 1
        self.waiting.appendleft(
            [user, sent, now, tokens, total - generated, first, total, now, cached]
        )
        return None

    def uncache(self, tokens: float) -> int:
        """Free a preempted request's `tokens` of KV into the prefix cache: free for
        others, its own again while no allocation has evicted them. Returns their key."""
        self.kv_used -= tokens
        key = self.next_id
        self.next_id += 1
        self.cached[key] = tokens
        return key

    def touch(self, key: int | None, tokens: int) -> float:
        """A preempted request readmitted: the tokens of its own still cached (at most
        all but its last token, which it must compute), held again. Returns them."""
        hit = min(self.cached.pop(key, 0.0), tokens - 1) if key is not None else 0.0
        self.kv_used += hit
        return hit

    def evict(self) -> None:
        """Evict the oldest cached blocks while the cache holds more than its capacity."""
        excess = self.kv_used + sum(self.cached.values()) - self.kv_tokens
        while excess > 0 and self.cached:
            key = next(iter(self.cached))
            take = min(self.cached[key], excess)
            self.cached[key] -= take
            excess -= take
            if self.cached[key] <= 0:
                del self.cached[key]

    def seat(self, entry: list, step: int) -> None:
        """A prompt whose prefill completed decodes on from decode step `step`."""
        user, sent, _left, outputs, first, total, _last, tokens = entry
        key = self.next_id
        self.next_id += 1
        end = step + outputs - 2
        self.decoding[key] = [user, sent, first, total, step, end, tokens]
        self.finishing.setdefault(end, []).append(key)


def replay_preempting(
    iteration_s: IterationTime,
    budget_tokens: int,
    max_sequences: int,
    kv_tokens: float,
    users: int,
    lengths: Sequence[tuple[int, int]],
    request_overhead_s: float = 0.0,
) -> ClosedLoopRun:
    """`closed_loop.replay_requests` under vLLM's rule (module docstring): at most
    `max_sequences` running, KV slots on demand from a cache of `kv_tokens` tokens, the
    newest running request recomputed when the cache is full. Raises ValueError for a
    request that cannot run alone (its prompt and reply past the cache) or a replay past
    `MAX_ITERATIONS`."""
    if request_overhead_s < 0:
        raise ValueError(f"the request overhead must be >= 0 s, got {request_overhead_s!r}")
    longest = max((prompt + output - 1 for prompt, output in lengths), default=0)
    if longest > kv_tokens:
        raise ValueError(
            f"a request of {longest:,} tokens does not fit a KV cache of {kv_tokens:,.0f} tokens"
        )
    engine = _Engine(kv_tokens, users, lengths, request_overhead_s)
    total = len(lengths)
    now = batch_time = 0.0
    output_total = step = iterations = 0
    ttfts: list[float] = []
    tpots: list[float] = []
    gaps: list[tuple[float, int]] = []
    last_token_s = 0.0
    fresh: list[float] = []
    waiting, prefilling, decoding = engine.waiting, engine.prefilling, engine.decoding
    while waiting or prefilling or decoding:
        iterations += 1
        if iterations > MAX_ITERATIONS:
            raise ValueError(
                f"a replay of {total:,} requests is past {MAX_ITERATIONS:,} iterations"
            )
        if not prefilling and not decoding and waiting[0][2] > now:
            now = waiting[0][2]  # the engine idles until the next request reaches it
        # running requests first: every decoding sequence needs one more token of KV
        preempted = False
        while decoding and engine.kv_used + len(decoding) > kv_tokens:
            engine.preempt_newest(step, now)
            preempted = True
        budget = budget_tokens - len(decoding)
        need = len(decoding)
        served, done = 0, []
        for entry in list(prefilling):
            if served >= budget:
                break
            take = min(entry[2], budget - served)
            while engine.kv_used + need + served + take > kv_tokens:
                preempted = True
                if engine.preempt_newest(step, now) is entry:
                    break
            else:
                entry[2] -= take
                served += take
                if entry[2] == 0:
                    done.append(entry)
                continue
            break  # this prompt was evicted: those behind it were evicted before it
        if not preempted:  # then the waiting requests, first come first served
            while (
                waiting
                and waiting[0][2] <= now
                and engine.running() < max_sequences
                and served < budget
            ):
                head = waiting[0]
                hit = engine.touch(head[8], head[3])  # its own blocks the prefix cache kept
                take = min(head[3] - hit, budget - served)
                if engine.kv_used + need + served + take > kv_tokens:
                    if hit:  # back to the cache, where it was
                        engine.kv_used -= hit
                        engine.cached[head[8]] = hit
                    break
                user, sent, _ready, tokens, outputs, first, total_o, last, _key = waiting.popleft()
                entry = [user, sent, tokens - hit - take, outputs, first, total_o, last, tokens]
                prefilling.append(entry)
                served += take
                if entry[2] == 0:
                    done.append(entry)
        if served == 0 and not decoding:
            raise ValueError("the engine cannot run: no decoding sequence and no room")
        advancing = len(decoding)
        dt = iteration_s(advancing, float(served))
        now += dt
        batch_time += advancing * dt
        engine.kv_used += advancing + served
        engine.evict()
        if advancing:
            record_token_gaps(gaps, now, last_token_s, advancing, fresh)
            last_token_s, fresh = now, []
        for _ in done:
            prefilling.popleft()  # first come, first served: the finished ones lead
        completed = []
        for key in engine.finishing.pop(step, []):
            user, sent, first, total_o, start, end, base = decoding.pop(key)
            engine.kv_used -= base + (end - start + 1)
            completed.append((user, first, total_o))
        step += 1
        for entry in done:
            user, sent, _left, outputs, first, total_o, last, tokens = entry
            if first is None:
                ttfts.append(now - sent)
                output_total += total_o
                first = entry[4] = now
            else:
                gaps.append((now - last, 1))  # the token after its recompute
            if outputs == 1:
                engine.kv_used -= tokens
                completed.append((user, first, total_o))
            else:
                engine.seat(entry, step)
                fresh.append(now)
        for user, first, total_o in completed:
            if total_o > 1:
                tpots.append((now - first) / (total_o - 1))
            engine.send(user, now)
    return run_summary(users, total, now, output_total, batch_time, ttfts, tpots, gaps)
