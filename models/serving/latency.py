"""Latency at a given load: what TTFT and TPOT users see at a request rate or a concurrency.

The capacity model (`models.serving.capacity`) answers "how much load at the SLO"; this module
answers the other direction for one unified replica (or one of a pool of n replicas
behind one router), with the same step-time model and the same queueing formulas.

Notation as in `models.serving.capacity`: P prompt tokens (mean, p99, spread cv_p), O output
tokens, h the prefix-cache hit rate, B the mean decode batch, t(B) one iteration with B
decode tokens and Q(B) = B P (1-h) / O prompt tokens riding along
(the mean of decode-only and prompt-carrying iterations, `models.serving.batch_model`, each
priced by `models.physics.step_time.StepModel.iteration_s`), c = P + O (1 + cv_o^2) / 2 the mean
context.

Open loop (Poisson arrivals at R requests/s per replica)
    The Little's-law fixed point: requests finish at rate(B) = B / (O t(B)), increasing
    in B, so the batch at a load is the B with rate(B) = R (bisection). At that batch:
        in flight   = R x (mean TTFT + O t(B))          (Little's law)
        KV resident = B x c x KV bytes per token
        TPOT mean   = t(B);   TPOT p99 as the planner (`models.serving.batch_model`: the Poisson
                      batch and the share of prompt-carrying iterations in quadrature)
        TTFT        = o + residual + own prefill S(P) + queue wait W for the prefill lane
                      (o the profile's fixed cost of a request before the engine,
                      `Efficiency.request_overhead_s`: the arrivals reach the engine o
                      later, which leaves their queueing as it is)
    The prefill lane serves prompts at r = (pp x chunk - B) / t(B, lane full) tokens/s,
    one prompt in P (1-h) / r seconds; the wait is M/G/c with c = pool replicas fed at
    c R (`models.serving.queueing`). Mean: o + t(B)(1 - e^-B)/2 + S(P) + Wq mean
    (Allen-Cunneen); p50: o + the same residual + S(P50) + Wq p50 (P50 the lognormal median
    P exp(-sigma^2/2)); p99: the planner's own p99 TTFT at that batch and pool
    (`models.serving.capacity.throughput_frontier`). The replica saturates at the smaller of
    its offline maximum rate (KV memory, the engine's batch cap, the token budget) and
    the rate at which the prefill lane's utilisation R P (1-h) / r reaches 1; past it
    the queue grows without bound and the result says `saturated`.

Speculative decoding (the configuration's `speculation`): an iteration is one
speculation cycle t(B) (`models.physics.speculative.SpeculativeSteps`, the planner's), each
sequence advancing E tokens on average and taking k + 1 positions of the token budget,
so rate(B) = B E / (O t(B)), Q(B) = B E P (1-h) / O, the lane has pp x chunk - B (k + 1)
tokens and TPOT mean = t(B) / E; E = 1 and k = 0 without it (as
`models.serving.batch_model.BatchModel`).

Closed loop (C users, each sending the next request as soon as the last completes)
    Every user is always in the system: C = B + X x mean TTFT with X = rate(B) the
    throughput (Little's law on the decode and the TTFT phases; a user whose request is
    still in front of the engine, the overhead o, counts in the TTFT phase). The right side rises
    with B, so B solves it by bisection, with the TTFT wait taken from the open-loop
    formula at rate X (an upper bound for a finite population). When C exceeds what the
    replica holds at its batch ceiling B_max, the throughput stays at X_max = rate(B_max)
    and the C - C(B_max) extra users queue in front of the replica: each waits
    (C - C(B_max)) / X_max on top of the TTFT at the ceiling (`saturated`).

Assumptions: a unified replica with chunked prefill (prefill-only and decode-only
replicas are not covered); arrivals Poisson; the engine's token budget pp x chunk per
iteration; the p99s are the planner's (`models.serving.capacity`), so a plan's promised latency
and this module agree at the plan's load.
"""

import math
from dataclasses import dataclass
from functools import cache

from models.physics.speculative import SpeculativeSteps
from models.physics.step_time import StepModel
from models.serving.batch_model import BatchModel, group_loaded_steps
from models.serving.capacity import replica_capacity
from models.serving.closed_loop import (
    FIXED,
    ClosedLoopRun,
    LengthSpread,
    closed_loop_lengths,
    replay_closed_loop,
)
from models.serving.closed_loop.preempting import replay_preempting
from models.serving.edge_search import bisect_edge
from models.serving.frontier import throughput_frontier
from models.serving.prefix_kv import pool_mix_tokens
from models.serving.queueing import mgc_mean_wait_s, wait_quantile_s
from models.serving.replica import LatencyTargets, Role, ServingContext
from models.serving.replica_layout import decode_steps, replica_step_model

BISECTION_STEPS = 60
"""Halvings of the batch bracket: a relative precision of ~1e-18 of the bracket."""


@dataclass(frozen=True)
class LoadLatency:
    """What one replica does at a load: the fixed point and the latencies users see.

    Latencies are math.inf when the replica is saturated in open loop (the queue grows
    without bound)."""

    mode: str
    """`rate` (open loop) or `concurrency` (closed loop)."""
    offered: float
    """The load asked for: requests/s per replica, or concurrent users per replica."""
    pool_replicas: int
    saturated: bool
    saturation_requests_per_s: float
    """Largest rate per replica the replica sustains (open loop: the queue stays finite)."""
    throughput_requests_per_s: float
    """Completed requests/s per replica."""
    in_flight: float
    """Requests in the replica, waiting or running (Little's law)."""
    batch: float
    """Mean sequences decoding."""
    kv_bytes_resident: float
    """KV cache of the decoding sequences, bytes, whole replica."""
    step_s: float
    """Iteration time at the batch, prefill riding along."""
    lane_utilisation: float
    """Busy share of the prefill lane: R x P (1-h) / r."""
    ttft_mean_s: float
    ttft_p50_s: float
    ttft_p99_s: float
    tpot_mean_s: float
    tpot_p99_s: float
    arrivals: str = "steady"
    """Closed loop: `burst` (all users start together, fixed lengths: the benchmark tools'
    client, replayed by `models.serving.closed_loop`) or `steady` (staggered arrivals, the
    fixed point of the module docstring); open loop: `steady` (Poisson)."""


class _Replica:
    """The unified replica as functions of the mean batch B (see the module docstring)."""

    def __init__(self, serving: ServingContext, pool_replicas: int):
        config, mix, efficiency = serving.config, serving.mix, serving.efficiency
        if config.role is not Role.UNIFIED:
            raise ValueError(
                f"latency at a load covers unified replicas; {config.label} is {config.role}"
            )
        self.serving = serving
        self.pool_replicas = pool_replicas
        self.offline = replica_capacity(config, mix, LatencyTargets(), efficiency, pool_replicas)
        if not self.offline.fits:
            raise ValueError(self.offline.reason)
        tokens = pool_mix_tokens(serving, pool_replicas)  # the pool's prefix cache
        # the busiest attention-DP group's loads, as the planner and the simulator price them
        raw = replica_step_model(config, efficiency)
        self.steps: StepModel = group_loaded_steps(raw, tokens, Role.UNIFIED)
        self.iteration: StepModel | SpeculativeSteps = (
            self.steps if config.speculation is None else decode_steps(config, efficiency, raw)
        )
        """One iteration: the plain step, or a speculation cycle (as `models.serving.capacity`)."""
        self.output = tokens.output
        hit = tokens.hit
        prompt = tokens.prompt
        self.new_prompt = prompt * (1 - hit)
        sigma_sq = math.log1p(mix.prompt_cv**2)
        self.new_prompt_p50 = self.new_prompt * math.exp(-sigma_sq / 2)
        self.prompt_scv = mix.prompt_cv**2
        self.context = tokens.context
        self.prefill_context = (prompt * hit + self.new_prompt / 2) * (1 + self.prompt_scv)
        """Token-weighted mean context of a prompt token (`BatchModel.prefill_context`)."""
        self.budget_tokens = self.steps.pp * self.steps.chunk_tokens
        self.batch_ceiling = self.offline.batch
        self.overhead_s = efficiency.request_overhead_s
        """o: the profile's fixed cost of a request before the engine, in every TTFT."""
        self.model = BatchModel(
            self.iteration,
            tokens,
            Role.UNIFIED,
            0.0,
            0.0,
            pool_replicas,
            request_overhead_s=self.overhead_s,
        )

    def prefill_tokens(self, batch: float) -> float:
        """Q(B) = B E P (1-h) / O (E = 1 without speculation)."""
        return batch * self.model.advance * self.new_prompt / self.output

    def step_s(self, batch: float) -> float:
        """t(B): the planner's mean iteration, prompts riding along as whole chunks
        (`models.serving.batch_model.BatchModel.step_s`)."""
        return self.model.step_s(batch)

    def rate(self, batch: float) -> float:
        """Requests/s finishing at batch B: B E / (O t(B)) (E tokens an iteration)."""
        return batch * self.model.advance / (self.output * self.step_s(batch))

    def tpot_mean_s(self, batch: float) -> float:
        """t(B) / E: the mean time between a sequence's tokens."""
        return self.step_s(batch) / self.model.advance

    def lane_service_s(self, batch: float) -> float:
        """One mean prompt's time on the prefill lane: P (1-h) / r (inf with no lane)."""
        lane_tokens = self.model.lane_tokens(batch)
        if lane_tokens <= 0:
            return math.inf
        full_s = self.iteration.iteration_s(batch, self.context, lane_tokens, self.prefill_context)
        return self.new_prompt * full_s / lane_tokens

    def own_prefill_s(self, batch: float, prompt_new: float) -> float:
        """S(p): the iterations a prompt of `prompt_new` new tokens needs on the lane."""
        lane_tokens = self.model.lane_tokens(batch)
        tokens = min(lane_tokens, self.prefill_tokens(batch) + prompt_new)
        one = self.iteration.iteration_s(batch, self.context, tokens, self.prefill_context)
        return one * max(1.0, prompt_new / lane_tokens)

    def stable(self, batch: float) -> bool:
        """Whether batch B is within the ceiling and the lane's utilisation below 1."""
        return batch <= self.batch_ceiling and self.rate(batch) * self.lane_service_s(batch) < 1

    def saturation_batch(self) -> float:
        """The largest stable batch (bisection; the ceiling when the lane never saturates)."""
        if self.stable(self.batch_ceiling):
            return self.batch_ceiling
        return bisect_edge(self.stable, 0.0, self.batch_ceiling, BISECTION_STEPS)[0]

    def batch_at_rate(self, rate: float) -> float:
        """The fixed point: the B with rate(B) = `rate` (within the ceiling)."""
        low, _ = bisect_edge(
            lambda b: self.rate(b) <= rate, 0.0, self.batch_ceiling, BISECTION_STEPS
        )
        return low

    def ttft_mean_s(self, batch: float, rate: float) -> float:
        """o + residual/2 + S(P) + mean M/G/c wait."""
        return (
            self.overhead_s
            + self._residual_s(batch) / 2
            + self.own_prefill_s(batch, self.new_prompt)
            + (self._wait_s(batch, rate, None))
        )

    def ttft_p50_s(self, batch: float, rate: float) -> float:
        """o + residual/2 + S(P50) + median M/G/c wait."""
        return (
            self.overhead_s
            + self._residual_s(batch) / 2
            + self.own_prefill_s(batch, self.new_prompt_p50)
            + (self._wait_s(batch, rate, 0.5))
        )

    def p99s(self, batch: float) -> tuple[float, float]:
        """(p99 TTFT, p99 TPOT) at batch B: the planner's own numbers."""
        (point,) = throughput_frontier(
            self.serving, LatencyTargets(), batches=[batch], pool_replicas=self.pool_replicas
        )
        return point.ttft_p99_s, point.tpot_p99_s

    def point(
        self,
        mode: str,
        offered: float,
        batch: float,
        throughput: float,
        saturated: bool,
        saturation_rate: float,
        extra_wait_s: float = 0.0,
    ) -> LoadLatency:
        """The record at batch B with throughput X; `extra_wait_s` queued in front."""
        ttft_p99_s, tpot_p99_s = self.p99s(batch)
        ttft_mean_s = self.ttft_mean_s(batch, throughput) + extra_wait_s
        step_s = self.step_s(batch)
        return LoadLatency(
            mode=mode,
            offered=offered,
            pool_replicas=self.pool_replicas,
            saturated=saturated,
            saturation_requests_per_s=saturation_rate,
            throughput_requests_per_s=throughput,
            in_flight=throughput * (ttft_mean_s + self.output * self.tpot_mean_s(batch)),
            batch=batch,
            kv_bytes_resident=batch * self.context * self.offline.kv_bytes_per_token,
            step_s=step_s,
            lane_utilisation=throughput * self.lane_service_s(batch),
            ttft_mean_s=ttft_mean_s,
            ttft_p50_s=self.ttft_p50_s(batch, throughput) + extra_wait_s,
            ttft_p99_s=ttft_p99_s + extra_wait_s,
            tpot_mean_s=self.tpot_mean_s(batch),
            tpot_p99_s=tpot_p99_s,
        )

    def _residual_s(self, batch: float) -> float:
        """The iteration in progress when a prompt arrives (the planner's, length-biased
        over the mixture of decode and mixed iterations)."""
        return self.model.residual_s(batch)

    def _wait_s(self, batch: float, rate: float, quantile: float | None) -> float:
        """The M/G/c wait for a lane (mean when `quantile` is None)."""
        service_s = self.lane_service_s(batch)
        if math.isinf(service_s) or rate * service_s >= 1:
            return math.inf
        c = self.pool_replicas
        if quantile is None:
            return mgc_mean_wait_s(c * rate, service_s, self.prompt_scv, c)
        return wait_quantile_s(c * rate, service_s, self.prompt_scv, c, quantile)


def _check_pool(pool_replicas: int) -> None:
    if pool_replicas < 1 or int(pool_replicas) != pool_replicas:
        raise ValueError(f"pool_replicas must be a whole number >= 1, got {pool_replicas}")


def saturation_rate(serving: ServingContext, pool_replicas: int = 1) -> float:
    """Largest request rate per replica at which the queue stays finite: the smaller of
    the offline maximum (KV memory, batch cap, token budget) and the rate at which the
    prefill lane is busy all the time. Raises ValueError for a non-unified or
    non-fitting replica."""
    _check_pool(pool_replicas)
    replica = _Replica(serving, pool_replicas)
    return replica.rate(replica.saturation_batch())


def latency_at_rate(
    serving: ServingContext, requests_per_s: float, pool_replicas: int = 1
) -> LoadLatency:
    """Open loop: Poisson arrivals at `requests_per_s` per replica, the replica one of
    `pool_replicas` sharing one prompt queue (see the module docstring).

    At or past the saturation rate the result has `saturated` True, the batch at its
    stable edge and infinite latencies. Raises ValueError for a negative rate, a
    non-unified replica or one that does not fit.
    """
    if requests_per_s < 0:
        raise ValueError(f"requests_per_s must be >= 0, got {requests_per_s}")
    _check_pool(pool_replicas)
    replica = _Replica(serving, pool_replicas)
    edge = replica.saturation_batch()
    edge_rate = replica.rate(edge)
    if requests_per_s >= edge_rate:
        step_s = replica.step_s(edge)
        return LoadLatency(
            mode="rate",
            offered=requests_per_s,
            pool_replicas=pool_replicas,
            saturated=True,
            saturation_requests_per_s=edge_rate,
            throughput_requests_per_s=edge_rate,
            in_flight=math.inf,
            batch=edge,
            kv_bytes_resident=edge * replica.context * replica.offline.kv_bytes_per_token,
            step_s=step_s,
            lane_utilisation=min(edge_rate * replica.lane_service_s(edge), 1.0),
            ttft_mean_s=math.inf,
            ttft_p50_s=math.inf,
            ttft_p99_s=math.inf,
            tpot_mean_s=replica.tpot_mean_s(edge),
            tpot_p99_s=replica.model.tpot_p99_s(edge),
        )
    batch = replica.batch_at_rate(requests_per_s)
    return replica.point("rate", requests_per_s, batch, requests_per_s, False, edge_rate)


def latency_at_concurrency(
    serving: ServingContext, concurrency: float, pool_replicas: int = 1
) -> LoadLatency:
    """Closed loop: `concurrency` users per replica, each sending its next request when
    the last completes (see the module docstring). Past the batch ceiling the throughput
    stays at its maximum and the extra users' queue adds to every TTFT. Raises
    ValueError for a concurrency below 1, a non-unified replica or one that does not fit.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be >= 1, got {concurrency}")
    _check_pool(pool_replicas)
    replica = _Replica(serving, pool_replicas)
    edge = replica.saturation_batch()
    edge_rate = replica.rate(edge)

    def users(batch: float) -> float:
        rate = replica.rate(batch)
        return batch + rate * replica.ttft_mean_s(batch, rate)

    held = users(edge)
    if concurrency > held:
        extra_s = (concurrency - held) / edge_rate
        return replica.point(
            "concurrency", concurrency, edge, edge_rate, True, edge_rate, extra_wait_s=extra_s
        )
    batch, _ = bisect_edge(lambda b: users(b) <= concurrency, 0.0, edge, BISECTION_STEPS)
    rate = replica.rate(batch)
    return replica.point("concurrency", concurrency, batch, rate, False, edge_rate)


REQUESTS_PER_USER = 10
"""Requests each closed-loop user sends in a burst replay: benchmark runs send several
waves (`vllm bench serve` sends --num-prompts, often 10 x the concurrency); the first,
fully bunched wave weighs 1/10 of the mean."""


def latency_at_concurrency_burst(
    serving: ServingContext,
    concurrency: int,
    requests_per_user: int = REQUESTS_PER_USER,
    spread: LengthSpread = FIXED,
) -> ClosedLoopRun:
    """Closed loop as benchmark tools run it: `concurrency` users per replica start
    together (the mix's mean prompt, less prefix hits, and mean output; fixed lengths
    unless `spread` draws them spread about those means) and each sends its next request
    when the last completes, replayed iteration by iteration on the replica's step model
    (`models.serving.closed_loop`), each request reaching the engine the profile's
    `request_overhead_s` after it is sent. Seats: the replica's batch ceiling at the
    offline maximum (KV memory, the engine's batch cap); budget: pp x chunk tokens per
    iteration. Under a profile with `kv_preemption` (vLLM), the engine's sequence cap as
    seats and the KV cache in tokens, given on demand, the newest sequence recomputed when
    it is full (`models.serving.closed_loop.preempting`). Raises ValueError as
    `latency_at_concurrency`.
    """
    if concurrency < 1 or int(concurrency) != concurrency:
        raise ValueError(f"concurrency must be a whole number >= 1, got {concurrency}")
    replica = _Replica(serving, 1)
    context, prefill_context = replica.context, replica.prefill_context
    steps = replica.steps

    @cache  # a replay repeats few (B, q) pairs: full batches decoding, full chunks
    def iteration_s(batch: int, prompt_tokens: float) -> float:
        return steps.iteration_s(batch, context, prompt_tokens, prefill_context)

    prompt_tokens, output_tokens = max(1, round(replica.new_prompt)), max(1, round(replica.output))
    efficiency = serving.efficiency
    if efficiency.kv_preemption and not efficiency.prefill_first:
        # vLLM: KV on demand up to the engine's sequence cap, the newest recomputed when full
        seats = efficiency.max_batch_sequences * serving.config.dp
        lengths = closed_loop_lengths(
            int(replica.budget_tokens), seats, int(concurrency), requests_per_user,
            prompt_tokens, output_tokens, spread,
        )  # fmt: skip
        return replay_preempting(
            iteration_s,
            int(replica.budget_tokens),
            seats,
            replica.offline.kv_capacity_tokens,
            int(concurrency),
            lengths,
            efficiency.request_overhead_s,
        )
    return replay_closed_loop(
        iteration_s,
        budget_tokens=int(replica.budget_tokens),
        max_sequences=max(1, math.floor(replica.batch_ceiling)),
        users=int(concurrency),
        requests_per_user=requests_per_user,
        prompt_tokens=prompt_tokens,
        output_tokens=output_tokens,
        spread=spread,
        request_overhead_s=efficiency.request_overhead_s,
        prefill_first=efficiency.prefill_first,
    )


def latency_at_concurrency_as_tools_run_it(
    serving: ServingContext,
    concurrency: int,
    pool_replicas: int = 1,
    requests_per_user: int = REQUESTS_PER_USER,
    spread: LengthSpread = FIXED,
) -> LoadLatency:
    """`latency_at_concurrency_burst` as a `LoadLatency` record (arrivals `burst`, the
    lengths as `spread` draws them: fixed by default, as the tools' random dataset at
    range ratio 1): the
    replay's means and nearest-rank p99s, its throughput and mean decode batch; in flight
    is the users (a closed loop holds every user in the system); the iteration is the
    mean TPOT; the prefill lane's busy share is the steady model's at the replay's
    throughput; saturated when the users outnumber the seats (the rest queue in front)."""
    _check_pool(pool_replicas)
    run = latency_at_concurrency_burst(serving, concurrency, requests_per_user, spread)
    replica = _Replica(serving, pool_replicas)
    edge_rate = replica.rate(replica.saturation_batch())
    lane_s = replica.lane_service_s(run.mean_decode_batch)
    return LoadLatency(
        mode="concurrency",
        offered=concurrency,
        pool_replicas=pool_replicas,
        saturated=concurrency > math.floor(replica.batch_ceiling),
        saturation_requests_per_s=edge_rate,
        throughput_requests_per_s=run.throughput_requests_per_s,
        in_flight=float(concurrency),
        batch=run.mean_decode_batch,
        kv_bytes_resident=(
            run.mean_decode_batch * replica.context * replica.offline.kv_bytes_per_token
        ),
        step_s=run.tpot_mean_s,
        lane_utilisation=min(1.0, run.throughput_requests_per_s * lane_s)
        if math.isfinite(lane_s)
        else 1.0,
        ttft_mean_s=run.ttft_mean_s,
        ttft_p50_s=run.ttft_p50_s,
        ttft_p99_s=run.ttft_p99_s,
        tpot_mean_s=run.tpot_mean_s,
        tpot_p99_s=run.tpot_p99_s,
        arrivals="burst",
    )
