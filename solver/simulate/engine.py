"""A discrete-event simulation of a pool of serving replicas behind one router.

Each replica is an iteration-level engine (continuous batching, as vLLM and
TensorRT-LLM schedule):

- Every iteration advances every decoding sequence by one token (a speculating replica:
  one speculation cycle, `ReplicaEngine.tokens_per_step` = E tokens of KV on average,
  each request's O - 1 tokens taking the cycles drawn for it) and spends what is left
  of the token budget (pp x chunk tokens, as `models.serving.capacity`) on prompts in FIFO
  order (chunked prefill mixed into the decode step). Its duration is the planner's own
  `StepModel.iteration_s(B, mean context, prompt tokens, their mean attended context)`
  with the actual batch, contexts and chunk of that iteration: the simulation tests the
  queueing and batching assumptions, never the roofline.
- A prompt is admitted when its KV fits in the free cache (the whole prompt is reserved
  at admission) and the batch is under the engine's cap; the iteration that finishes a
  prompt's prefill produces its first token (TTFT), and each later iteration one more.
- KV limit: when the decoding sequences' next tokens would not fit, the most recently
  admitted sequence is preempted (recompute: its KV is freed and it goes back to the
  front of the queue, to prefill its prompt and the tokens it had written again).
- A request with no prompt tokens to prefill (a decode-only replica of a disaggregated
  pair: the prompt's KV arrives with it, `cached_tokens` = the prompt) starts decoding at
  the first iteration boundary where its KV fits and the batch has room.
- Request overhead: a request reaches the router and its engine `request_overhead_s`
  after it arrives (the engine profile's fixed cost of a request: HTTP, tokenisation,
  scheduling, `Efficiency.request_overhead_s`), and its TTFT counts from its arrival. An
  open-loop stream shifted by a constant queues exactly as the unshifted one, so every
  TTFT moves by the overhead and nothing else does: the planner's term.
- Router: each request is dispatched on arrival to one replica, which keeps its own
  FIFO queue (there is no central queue):
  `least_prefill` (default, the router the planner assumes): the replica with the fewest
  prompt tokens queued for prefill (waiting, or admitted and not yet prefilled), ties to
  the fewest outstanding requests. This is least-work-left dispatch for the prompt
  lanes: an arrival waits for the least remaining prompt work in the pool, which is the
  wait it would have in one central FCFS queue before the c lanes (M/G/c), the
  planner's model (`models.serving.queueing.pooled_wait_p99_s`). NVIDIA Dynamo's KV router
  counts the prompt tokens a worker has to prefill in its cost, llm-d's scheduler scores
  queue depth.
  `jsq`: the fewest outstanding requests (waiting + prefilling + running). The count is
  dominated by running decodes, so prompts are spread nearly blind to the prompt
  backlog: at a pool's planned capacity the p99 TTFT of pools of 2-8 replicas is 10-50%
  above the M/G/c model.
  `round_robin`: in turn.

Between two events the decode batch is fixed and the iteration time is affine in the
iteration count (every term of the step is affine in the KV tokens read, which grow by
B per iteration), so a run of pure-decode iterations is advanced in one step: the events
are arrivals, prefill iterations, completions and preemptions, not tokens. That keeps an
hour of a 100 requests/s pool to a few seconds of one core.

Engine effects can be switched off one at a time (`Effects`) to measure what each does
to the tail: batching (iteration time independent of the batch, held at a reference
batch), preemption (unlimited KV cache), chunked-prefill interference (a mixed
iteration costs the larger of its decode and its prefill parts, as if they overlapped
perfectly) and head-of-line blocking (prompts prefilled shortest first).
"""

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from models.physics.speculative import SpeculativeSteps
from models.physics.step_time import StepModel

DISPATCHES = ("least_prefill", "jsq", "round_robin")
"""Router policies of `simulate_pool` (its docstring)."""


@dataclass(frozen=True)
class Effects:
    """Engine effects, each on by default (a real engine); off removes it."""

    batching: bool = True
    """Iteration time depends on the batch. Off: every iteration is priced at
    `reference_batch` sequences of `reference_context` tokens."""
    preemption: bool = True
    """The KV cache is finite and a full cache preempts. Off: unlimited KV."""
    interference: bool = True
    """Prompt tokens riding in a decode iteration lengthen it. Off: a mixed iteration
    costs max(decode part, prefill part), the prefill part being what the prompt tokens
    add to the shared iteration (plus the fixed overhead), as if the two overlapped."""
    hol_blocking: bool = True
    """Prompts are admitted in arrival order. Off: shortest prompt first."""
    reference_batch: float = 1.0
    reference_context: float = 1.0


@dataclass(frozen=True)
class CycleSteps:
    """A speculation cycle as the engine's iteration (`models.physics.speculative.
    SpeculativeSteps.iteration_s`: k draft steps and the verify pass, prompt tokens riding
    along), with the target's pipeline stages, chunk and step overhead."""

    cycle: SpeculativeSteps

    @property
    def pp(self) -> int:
        """Pipeline stages of the target."""
        return self.cycle.steps.pp

    @property
    def chunk_tokens(self) -> int:
        """Prompt tokens per stage per iteration (the target's chunk)."""
        return self.cycle.steps.chunk_tokens

    @property
    def overhead_s(self) -> float:
        """The target's fixed step overhead."""
        return self.cycle.steps.overhead_s

    def iteration_s(
        self,
        batch: float,
        context_tokens: float,
        prefill_tokens: float = 0.0,
        prefill_context_tokens: float = 0.0,
    ) -> float:
        """One cycle at batch B."""
        return self.cycle.iteration_s(batch, context_tokens, prefill_tokens, prefill_context_tokens)


@dataclass(frozen=True)
class ReplicaEngine:
    """What the simulation needs of one replica configuration."""

    steps: StepModel | CycleSteps
    kv_capacity_tokens: float
    max_batch_sequences: int
    budget_tokens: int | None = None
    """Tokens per iteration when not pp x chunk (a prefill lane: one chunk)."""
    tokens_per_step: float = 1.0
    """KV tokens a decoding sequence writes per iteration: 1, or the E tokens a
    speculation cycle emits on average (`steps` is then the cycle)."""
    positions_per_step: int = 1
    """Token-budget positions a decoding sequence takes in an iteration: 1, or the k + 1
    a speculation cycle verifies (the planner's lane, pp x chunk - B (k + 1))."""

    @property
    def token_budget(self) -> int:
        """Tokens per iteration: pp x chunk (as `models.serving.capacity`) unless stated."""
        if self.budget_tokens is not None:
            return self.budget_tokens
        return self.steps.pp * self.steps.chunk_tokens


@dataclass
class PoolTrace:
    """Per-request times of one simulated pool (NaN where a request never got there)."""

    arrival_s: np.ndarray
    first_token_s: np.ndarray
    finish_s: np.ndarray
    output_tokens: np.ndarray
    preemptions: int = 0
    events: int = 0
    busy_batch_s: float = 0.0
    """Integral over time of the decoding batch, summed over replicas (sequence-seconds)."""
    end_s: float = 0.0

    @property
    def ttft_s(self) -> np.ndarray:
        """first token - arrival."""
        return self.first_token_s - self.arrival_s

    @property
    def tpot_s(self) -> np.ndarray:
        """(finish - first token) / (output - 1), requests of two tokens or more."""
        many = self.output_tokens > 1
        return (self.finish_s[many] - self.first_token_s[many]) / (self.output_tokens[many] - 1)


@dataclass
class _Prefill:
    request: int
    new_tokens: int
    """Tokens to prefill (prompt, or prompt + written tokens after a preemption)."""
    cached_tokens: float
    remaining_steps: int
    """Decode iterations left after the first token of this prefill."""
    done: int = 0


@dataclass
class _Replica:
    engine: ReplicaEngine
    effects: Effects
    trace: PoolTrace
    prompt: list
    output: list
    cached: list
    decode_steps: list | None = None
    """Iterations each request decodes after its first token (None: O - 1, no speculation)."""
    now: float = 0.0
    steps_done: int = 0
    epoch: int = 0
    waiting: deque = field(default_factory=deque)
    short_first: list = field(default_factory=list)
    prefilling: list = field(default_factory=list)
    running: dict = field(default_factory=dict)
    """request -> (start step, kv tokens at start, end step), in admission order."""
    ends: list = field(default_factory=list)
    kv_base: float = 0.0
    """sum over running of (kv tokens at start - E x start step): kv = base + n x E x
    steps_done (E = `ReplicaEngine.tokens_per_step`)."""
    reserved: float = 0.0
    backlog_tokens: int = 0
    """Prompt tokens queued for prefill: waiting, and not yet prefilled of those admitted."""
    kind: str = "idle"
    event_s: float = math.inf
    span: tuple = (0.0, 0, 0.0, 0.0)
    """(start s, iterations, first iteration s, growth per iteration s) of a decode run."""
    chunk: list = field(default_factory=list)

    # -- queue --------------------------------------------------------------------------

    def outstanding(self) -> int:
        return len(self.waiting) + len(self.short_first) + len(self.prefilling) + len(self.running)

    def enqueue(self, item: _Prefill, front: bool = False) -> None:
        self.backlog_tokens += item.new_tokens - item.done
        if not self.effects.hol_blocking:
            heapq.heappush(self.short_first, (item.new_tokens, item.request, item))
        elif front:
            self.waiting.appendleft(item)
        else:
            self.waiting.append(item)

    def _head(self) -> _Prefill | None:
        if not self.effects.hol_blocking:
            return self.short_first[0][2] if self.short_first else None
        return self.waiting[0] if self.waiting else None

    def _pop_head(self) -> None:
        if not self.effects.hol_blocking:
            heapq.heappop(self.short_first)
        else:
            self.waiting.popleft()

    # -- time ---------------------------------------------------------------------------

    def kv_tokens(self) -> float:
        return self.kv_base + len(self.running) * self.steps_done * self.engine.tokens_per_step

    def iteration_s(
        self, batch: int, kv_tokens: float, prompt_tokens: float, pairs: float
    ) -> float:
        steps, fx = self.engine.steps, self.effects
        prompt_context = pairs / prompt_tokens if prompt_tokens else 0.0
        if fx.batching:
            decode_batch, context = batch, (kv_tokens / batch if batch else 0.0)
        else:
            decode_batch = fx.reference_batch if batch else 0.0
            context = fx.reference_context
        if fx.interference or not (batch and prompt_tokens):
            return steps.iteration_s(decode_batch, context, prompt_tokens, prompt_context)
        decode_s = steps.iteration_s(decode_batch, context)
        shared_s = steps.iteration_s(decode_batch, context, prompt_tokens, prompt_context)
        return max(decode_s, shared_s - decode_s + steps.overhead_s)

    def span_end_s(self, iterations: int) -> float:
        start, _, first, growth = self.span
        return start + iterations * first + growth * iterations * (iterations - 1) / 2

    # -- scheduling ---------------------------------------------------------------------

    def schedule(self) -> None:
        """Choose the next iteration (or run of iterations) at the boundary `now`."""
        engine = self.engine
        capacity = engine.kv_capacity_tokens if self.effects.preemption else math.inf
        batch = len(self.running)
        budget = engine.token_budget - batch * engine.positions_per_step
        while budget > 0:
            head = self._head()
            if head is None or batch + len(self.prefilling) >= engine.max_batch_sequences:
                break
            need = head.new_tokens + head.cached_tokens
            # A request that starts decoding at once (its KV arrived with it) also needs
            # the next step's token of every sequence then running, itself included;
            # admitted without it, the decode step would preempt it straight back
            # (unwritten, so at once re-admitted: a livelock at a full cache).
            step = (batch + 1) * engine.tokens_per_step if head.new_tokens <= 0 else 0
            if self.kv_tokens() + self.reserved + need + step > capacity:
                if batch or self.prefilling or need + step <= capacity:
                    break
                capacity = need + step  # a prompt longer than the cache runs alone
            self._pop_head()
            self.reserved += need
            budget -= 1  # one token at least per admitted prompt
            if head.new_tokens <= 0:  # its KV arrived with it (a decode-only replica)
                self._start_decoding(head, self.now)
                batch = len(self.running)
                continue
            self.prefilling.append(head)
        budget = engine.token_budget - batch * engine.positions_per_step
        chunk, tokens, pairs = [], 0, 0.0
        for item in self.prefilling:
            if budget <= 0:
                break
            take = min(item.new_tokens - item.done, budget)
            pairs += take * (item.cached_tokens + item.done + take / 2)
            chunk.append((item, take))
            tokens += take
            budget -= take
        if tokens:
            self.kind, self.chunk = "mixed", chunk
            self.event_s = self.now + self.iteration_s(batch, self.kv_tokens(), tokens, pairs)
            return
        if not batch:
            self.kind, self.event_s = "idle", math.inf
            return
        kv = self.kv_tokens()
        free = capacity - kv - self.reserved
        written = batch * engine.tokens_per_step  # KV tokens one iteration adds
        room = math.floor(free / written) if math.isfinite(free) else 1 << 62
        if room <= 0:
            self._preempt()
            self.schedule()
            return
        until_end = self.ends[0][0] - self.steps_done
        iterations = max(1, min(until_end, room))
        first = self.iteration_s(batch, kv, 0, 0.0)
        growth = self.iteration_s(batch, kv + written, 0, 0.0) - first
        self.span = (self.now, iterations, first, growth)
        self.kind = "decode"
        self.event_s = self.span_end_s(iterations)

    def arrive(self, request: int, at_s: float) -> bool:
        """Queue a new request; True when the next event moved (re-push it)."""
        item = _Prefill(
            request, self.prompt[request], self.cached[request], self._decode_steps(request)
        )
        self.enqueue(item)
        if self.kind == "idle":
            self.now = max(self.now, at_s)
            self.schedule()
            return True
        if self.kind != "decode":
            return False
        start, planned, first, growth = self.span
        k = self._iterations_until(at_s - start, first, growth)
        if k >= planned:
            return False
        self.span = (start, k, first, growth)
        self.event_s = self.span_end_s(k)
        return True

    def _decode_steps(self, request: int) -> int:
        """Iterations `request` decodes after its first token."""
        if self.decode_steps is None:
            return self.output[request] - 1
        return self.decode_steps[request]

    @staticmethod
    def _iterations_until(elapsed_s: float, first: float, growth: float) -> int:
        """Smallest k with k first + growth k (k - 1) / 2 >= elapsed."""
        if elapsed_s <= 0:
            return 0
        if growth <= 1e-15 * first:
            k = math.ceil(elapsed_s / first)
        else:
            a, b = growth / 2, first - growth / 2
            k = math.ceil((-b + math.sqrt(b * b + 4 * a * elapsed_s)) / (2 * a))
        while k > 0 and (k - 1) * first + growth * (k - 1) * (k - 2) / 2 >= elapsed_s:
            k -= 1
        while k * first + growth * k * (k - 1) / 2 < elapsed_s:
            k += 1
        return k

    def fire(self) -> None:
        """Finish the iteration (or run) that ends at `event_s`, then schedule the next."""
        trace = self.trace
        end_s = self.event_s
        batch = len(self.running)
        trace.events += 1
        if self.kind == "mixed":
            trace.busy_batch_s += batch * (end_s - self.now)
            self.steps_done += 1
            for item, take in self.chunk:
                item.done += take
                self.backlog_tokens -= take
            finished = [item for item in self.prefilling if item.done >= item.new_tokens]
            if finished:
                self.prefilling = [i for i in self.prefilling if i.done < i.new_tokens]
                for item in finished:
                    self._start_decoding(item, end_s)
        elif self.kind == "decode":
            start, iterations, _, _ = self.span
            trace.busy_batch_s += batch * (end_s - start)
            self.steps_done += iterations
        self.now = end_s
        self._finish_due(end_s)
        self.schedule()

    def _start_decoding(self, item: _Prefill, at_s: float) -> None:
        request = item.request
        self.reserved -= item.new_tokens + item.cached_tokens
        if math.isnan(self.trace.first_token_s[request]):
            self.trace.first_token_s[request] = at_s
        if item.remaining_steps <= 0:
            self.trace.finish_s[request] = at_s
            return
        end = self.steps_done + item.remaining_steps
        kv_start = item.new_tokens + item.cached_tokens
        self.running[request] = (self.steps_done, kv_start, end)
        self.kv_base += kv_start - self.steps_done * self.engine.tokens_per_step
        heapq.heappush(self.ends, (end, request))

    def _finish_due(self, at_s: float) -> None:
        while self.ends and self.ends[0][0] <= self.steps_done:
            end, request = heapq.heappop(self.ends)
            state = self.running.get(request)
            if state is None or state[2] != end:
                continue  # preempted since
            del self.running[request]
            self.kv_base -= state[1] - state[0] * self.engine.tokens_per_step
            self.trace.finish_s[request] = at_s

    def _preempt(self) -> None:
        """Recompute preemption of the most recently admitted sequence."""
        request, (start, kv_start, end) = self.running.popitem()
        self.kv_base -= kv_start - start * self.engine.tokens_per_step
        written = round((self.steps_done - start) * self.engine.tokens_per_step)
        cached = self.cached[request]
        item = _Prefill(request, int(kv_start - cached + written), cached, end - self.steps_done)
        self.enqueue(item, front=True)
        self.trace.preemptions += 1


def simulate_pool(
    engine: ReplicaEngine,
    replicas: int,
    arrival_s: np.ndarray,
    prompt_tokens: np.ndarray,
    output_tokens: np.ndarray,
    cached_tokens: np.ndarray | None = None,
    effects: Effects = Effects(),
    dispatch: str = "least_prefill",
    drain_s: float = 600.0,
    request_overhead_s: float = 0.0,
    decode_steps: np.ndarray | None = None,
) -> PoolTrace:
    """Replay `arrival_s` (sorted) on `replicas` replicas behind one router.

    Args:
        engine: the replica's step model, KV cache and batch cap.
        replicas: replicas in the pool.
        arrival_s, prompt_tokens, output_tokens: one entry per request; prompt tokens
            are those to prefill (after prefix-cache hits), `cached_tokens` the hits.
        effects: engine effects on or off.
        dispatch: the router's policy (module docstring): `least_prefill` (fewest
            prompt tokens queued for prefill, then fewest outstanding), `jsq` (fewest
            outstanding requests) or `round_robin`.
        drain_s: how long after the last arrival to keep serving; requests unfinished
            then keep NaN times (an unstable pool).
        request_overhead_s: each request reaches the router this long after it arrives
            (the module docstring's request overhead); its TTFT counts from its arrival.
        decode_steps: iterations each request decodes after its first token (default
            O - 1; with speculation the cycles its O - 1 tokens take, each cycle writing
            `engine.tokens_per_step` KV tokens on average).
    """
    if dispatch not in DISPATCHES:
        raise ValueError(f"dispatch must be one of {', '.join(DISPATCHES)}, got {dispatch!r}")
    if replicas < 1:
        raise ValueError(f"replicas must be >= 1, got {replicas}")
    if request_overhead_s < 0:
        raise ValueError(f"the request overhead must be >= 0 s, got {request_overhead_s!r}")
    count = len(arrival_s)
    trace = PoolTrace(
        arrival_s=np.asarray(arrival_s, dtype=float),
        first_token_s=np.full(count, np.nan),
        finish_s=np.full(count, np.nan),
        output_tokens=np.asarray(output_tokens, dtype=int),
    )
    prompt = [int(p) for p in prompt_tokens]
    output = [int(o) for o in output_tokens]
    cached = [0.0] * count if cached_tokens is None else [float(c) for c in cached_tokens]
    steps = None if decode_steps is None else [int(d) for d in decode_steps]
    pool = [
        _Replica(engine, effects, trace, prompt, output, cached, steps) for _ in range(replicas)
    ]
    heap: list = []
    arrivals = (trace.arrival_s + request_overhead_s).tolist()  # when each reaches the engine
    turn = 0
    for request, at_s in enumerate(arrivals):
        while heap and heap[0][0] <= at_s:
            _fire_next(heap, pool)
        if dispatch == "jsq":
            target = min(
                range(replicas), key=lambda r: (pool[r].outstanding(), (r - turn) % replicas)
            )
            turn = (target + 1) % replicas
        elif dispatch == "least_prefill":
            target = min(
                range(replicas),
                key=lambda r: (
                    pool[r].backlog_tokens,
                    pool[r].outstanding(),
                    (r - turn) % replicas,
                ),
            )
            turn = (target + 1) % replicas
        else:
            target, turn = turn, (turn + 1) % replicas
        replica = pool[target]
        if replica.arrive(request, at_s):
            replica.epoch += 1
            heapq.heappush(heap, (replica.event_s, target, replica.epoch))
    stop_s = (arrivals[-1] if arrivals else 0.0) + drain_s
    while heap and heap[0][0] <= stop_s:
        _fire_next(heap, pool)
    trace.end_s = max((r.now for r in pool), default=0.0)
    return trace


def _fire_next(heap: list, pool: list) -> None:
    _, index, epoch = heapq.heappop(heap)
    replica = pool[index]
    if epoch != replica.epoch or replica.kind == "idle":
        return
    replica.fire()
    replica.epoch += 1
    if replica.kind != "idle":
        heapq.heappush(heap, (replica.event_s, index, replica.epoch))
