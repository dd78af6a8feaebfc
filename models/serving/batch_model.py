"""The unified (or decode-only) replica as functions of its mean batch B.

`models.serving.capacity` states the model; this module holds its moving parts, shared by the
capacity search (`models.serving.capacity`), the throughput frontier (`models.serving.frontier`)
and the latency at a load (`models.serving.latency`): the mean iteration t(B) with prompts
riding along as whole chunks and the p99 TTFT and TPOT at B (`BatchModel`). Beside it: the
traffic mix in tokens (`models.serving.replica.MixTokens`), the iteration mixture's law
and its shared tables (`models.serving.iteration_mixture`), the replica layout's memory
budget, step model and KV transfer between disaggregated replicas
(`models.serving.replica_layout`), the M/G/c prompt wait of a pool
(`models.serving.queueing.pooled_wait_p99_s`), and the bisection of the throughput frontier
(`models.serving.edge_search.bisect_edge`; the capacity searches use Brent's method there).

Chunked-prefill interference (the iteration mixture)
    A continuous-batching engine does not spread prefill evenly over iterations: the
    prompts that arrived during an iteration go whole into the next one, up to the
    token budget left beside the decode tokens (vLLM `max_num_batched_tokens`,
    TensorRT-LLM `max_num_tokens`). A 1,500-token prompt turns a memory-bound decode
    iteration into a compute-bound one several times longer, while most iterations carry
    no prompt at all. As many requests start as finish, so on average
        mu(B) = B / O          prompts join each iteration
    and the number K that join one iteration is taken to be Poisson(mu) (arrivals are
    Poisson; the longer iterations that gather more arrivals are ignored). K prompts make
    an iteration of
        t_k = iteration(B decode tokens, k P (1-h) prompt tokens)   when they fit the
              lane pp x chunk - B, else k P (1-h) / lane iterations at a full lane
    and t_0 is pure decode. The K prompts' lengths spread (cv_p): their tokens are taken
    as a lognormal of mean K P (1-h) and squared cv cv_p^2 / K (Fenton-Wilkinson), and
    the mean iteration and its second moment are averages over iterations (weights
    Poisson(k; mu) x the tokens' law x iterations of each):
        t(B) = E[t_K],   E[t^2] = E[t_K^2]
    in closed form over the lognormal, t being piecewise linear in the tokens
    (`models.serving.iteration_mixture.LoadCurve`). Pricing each length matters where
    the roofline has its kink among the prompts: an iteration is the larger of its
    weight read and its compute, convex in the prompt tokens, so spread lengths make the
    mean iteration longer than the mean length's (Jensen). An MoE decode reads ~all its
    experts' weights while a prompt token costs only the active experts' FLOPs, so the
    kink sits near a typical prompt (moe-ep's Qwen3-235B at TP2: the mean 2,000-token
    prompt's iteration was 1.1% short of the simulator's mixed iterations). Prompt
    tokens are conserved (Q(B) = mu P (1-h) per iteration on average). Grouping matters:
    a decode iteration is memory-bound, so the first few hundred prompt tokens in it
    ride in the weight read's shadow once per iteration, not once per prompt. Every
    iteration time is `StepModel.iteration_s`, the function the simulator
    (`solver.simulate`) prices its iterations with.

    TPOT: a reply of m = O - 1 tokens lives T = m t_0(B_T) + U + A(T) (work
    conservation: each of its iterations is a decode step plus the prompt tokens riding
    in it): A(T) the prefill work of the prompts that reach the replica while it lives
    but for its last gap (an iteration's prompts are chosen at its start: a 2-token reply
    meets only U), each prompt whole (a prompt longer than the lane fills consecutive
    iterations of the same reply), U the prompts queued behind it at its first token,
    whole (those that arrived while it waited), t_0(B_T) the decode step at the batch
    the congestion slows every sequence to (Little's law at the reply's mean gap tau:
    B_T = B tau / t(B)).
    A reply that meets more prompt work lives longer and meets more: T is a busy period.
    The p99 reply's mean gap tau solves
        P(U + A(m tau) > m tau - m t_0(B_T)) = 1%
    with A compound Poisson (prompts at lambda = B / (O t(B)), their whole work scaled
    to the mixture's prefill share rho = lambda E[s]; no prompt with probability
    e^-lambda T (1 - 1/m), else lognormal of the moments given one) and U queued with
    the pool's probability of waiting (`models.serving.tail.reply_life`, which derives it
    and its pool limits). The batch's own Poisson spread (sd sqrt(B), amplified by feedback near
    capacity: a larger batch lengthens every iteration, so sequences stay longer:
    linear response gives sd sqrt(B) / (1 - g), g = B t'(B) / t(B) the step's
    elasticity; in a pool the router keeps each replica's batch at its share, sqrt(B /
    n)) lengthens the decode step alone, in quadrature:
        B_hi   = B + 2.326 sqrt(B / n) / (1 - g)
        TPOT99 = t(B) + sqrt((tau - t(B))^2 + (t_0(B_hi) - t_0(B))^2)
    Over replies whose lengths spread with cv_o, E[1/m] = (1 + cv_o^2) / m (lognormal
    lengths): the solve counts m / (1 + cv_o^2) iterations.
    A mix whose every reply is one token (O = p99 O = 1) has no reply with a TPOT (m = 0;
    the simulator times replies of two tokens or more): its p99 TPOT is 0, so that a
    TPOT target never sizes it (it sized a 1-token classifier at 7x a 400-token chat).
    Against the simulator (tests/bench/test_short_reply_tpot_bench.py, at the planned
    capacity, 3 seeds; tests/models/serving/test_pool_slo.py asserts three configurations):
    what the earlier model missed and this one counts, measured at its capacity for a
    50 ms target: the 8B's 4,000 / p99 16,000-token prompts on a lone replica measured
    51-74 ms p99 TPOT (the congestions of long prompts: the top 1% of replies lived at a
    batch of 75 against a mean of 20, and met 5.9 s of prefill in 8.2 s of life), pools
    of 4 of it 53-60 ms; its independent iterations at the tail batch priced 50. The
    same model was 1.5-8x pessimistic on short replies (2-10 tokens: a prompt at the tail
    batch's rate, where a 2-token reply at 0.1 requests/s meets one in 0.6% of them).
    The TPOT-limited capacity rises with the pool size; the program credits it on the
    pool ladder (`policy.credit_tpot_pooling`, on by default; off: flat at q(1), a lower
    bound at every size; `models.serving.capacity.pooling_can_lift` says why), and reports
    each pool at its real size.

Speculative decoding (`models.physics.speculative`)
    With speculation an iteration is one speculation cycle: k draft steps and a verify
    pass of k + 1 positions per sequence, emitting E tokens per sequence on average. So
    every sequence advances E tokens per iteration: prompts join at mu(B) = B E / O, the
    decode tokens take B (k + 1) of the token budget, the rate is B E / (O t(B)), and the
    TPOT is t(B) / E; a reply lives through (O - 1) / E cycles, and the tokens a cycle
    emits spread too (Var[X], `models.physics.speculative.tokens_variance`): over a reply of n
    tokens the mean time per token has variance t^2 Var[X] / (E^3 n) from that alone,
    added in quadrature. Without speculation E = k + 1 = 1 and every formula above is
    unchanged.
"""

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

from models.physics.moe import resident_context_cv
from models.physics.speculative import SpeculativeSteps, tokens_variance
from models.physics.step_time import PassParts, StepModel
from models.serving.iteration_mixture import (
    GRID_RATIO,
    GRID_RATIO_DP,
    LOW_SIGMAS,
    RARE_COUNT,
    IterationMixture,
    LoadCurve,
    keep_mixture,
    kept_mixture,
    load_curve,
    lognormal_points,
    mixture_side,
    poisson_points,
)
from models.serving.queueing import pooled_wait_p99_s
from models.serving.replica import MixTokens, Role
from models.serving.tail.reply_life import ReplyLife

Z_P99 = 2.326347874
"""Standard normal quantile at 0.99."""


def group_loaded_steps(
    steps: StepModel, mix: MixTokens, role: Role, lockstep: bool = False
) -> StepModel:
    """`steps` with the busiest attention-DP group's loads for `mix`
    (`StepModel.with_group_loads`): a unified replica's groups prefill whole prompts of
    the mix's new prompt tokens, and resident contexts spread by `resident_context_cv`.
    The planner (`BatchModel`) and the simulator price iterations with it alike.

    `lockstep`: the groups run in step (`offline_lockstep`): every group admits the same
    prompts in the same iterations and holds the same contexts, so each carries 1/dp
    of every load (`with_group_loads(0, 0)`)."""
    if lockstep:
        return steps.with_group_loads(0.0, 0.0)
    return steps.with_group_loads(
        mix.new_prompt if role is Role.UNIFIED else 0.0,
        resident_context_cv(mix.prompt, mix.prompt_scv, mix.output, mix.output_scv),
    )


def offline_lockstep(mix: MixTokens, offline: bool) -> bool:
    """Whether a replica's attention-DP groups run in lockstep: an offline run (every
    request queued at once, no latency target) with fixed prompt and output lengths.
    Each group starts a full batch in the same iteration, prefills it under the same
    token budget and, the lengths being equal, retires and refills its sequences in the
    same iterations as every other group, cycle after cycle, so no group carries more
    prompts or longer contexts than another: the busiest group's share of every load is
    1/dp. With Poisson arrivals or spread lengths a prompt lands on one group at random
    (`models.physics.moe`, "Attention data parallelism")."""
    return offline and mix.prompt_scv == 0 and mix.output_scv == 0


def batch_p99(batch: float) -> float:
    """p99 of a Poisson number of sequences with mean `batch`: B + 2.326 sqrt(B)."""
    return batch + Z_P99 * math.sqrt(max(batch, 0.0))


def ride_s(
    utilisation: float, waited_s: float, prompt_tokens: float, lane_tokens: float, lane_s: float
) -> float:
    """Other prompts' tokens in the iteration that completes a prompt which waited
    `waited_s`, in seconds: min(room, rho x waited), room = (ceil(P / L) L - P) x t_L / L.

    The engine puts every waiting prompt into the next iteration in arrival order, up to
    the lane's L tokens, and every prompt in it gets its first token when the whole
    iteration ends. So the prompts that arrived while this one waited (rho x waited
    seconds of lane work at lane utilisation rho = lambda P / (L / t_L)) are behind it
    in the same iteration, up to the room its last iteration leaves; t_L the time of a
    full lane iteration. Conservative side: the prompt sits at the head of its last
    iteration with everything that arrived while it waited behind it. The same term as a
    prefill-only replica's (`models.serving.prefill_model.PrefillLane.ride_s`)."""
    if lane_tokens <= 0:
        return math.inf
    iterations = max(math.ceil(prompt_tokens / lane_tokens - 1e-12), 1)
    room_s = (iterations * lane_tokens - prompt_tokens) * lane_s / lane_tokens
    return min(room_s, utilisation * waited_s)


def within_target(value: float, target: float | None, check: bool = True) -> bool:
    """Whether `value` meets `target` (always, with no target or `check` False)."""
    return not check or target is None or value <= target


@dataclass(frozen=True)
class BatchPoint:
    """The state of a unified or decode replica at a mean batch B."""

    batch: float
    step_s: float
    rate: float
    tpot_p99_s: float
    ttft_p99_s: float


POINTS_KEPT = 32768
"""Operating points kept (`BatchModel.point`), over every model, the least recently used
dropped first (~400 bytes each with their key: 13 MB). The capacity searches of one
configuration at several TTFT targets (`solver.candidates.pools`) start from the same
bracket and evaluate the same batches: the 20-region x 30-workload x 6-GPU generated
instance asked for 40,493 points, 21,379 distinct."""
_POINTS: OrderedDict[tuple, tuple[float, float, float, float]] = OrderedDict()
"""(decode side, pool, transfer, transfer p99, request overhead, batch) -> the point's
(step, rate, p99 TPOT, p99 TTFT), least recently used first."""
_POINTS_LOCK = threading.Lock()
"""Held while `_POINTS` is read or changed (the physics runs on several threads:
`models.serving.iteration_mixture._MIXTURES_LOCK`)."""

FEEDBACK_GAIN_CAP = 0.9
"""Largest feedback gain g of the batch on its own step time (`BatchModel.batch_high`)."""


class BatchModel:
    """The unified/decode replica as functions of the batch B (the model is stated in the
    `models.serving.capacity` docstring, "Unified replica" and "Pools")."""

    def __init__(
        self,
        steps: StepModel | SpeculativeSteps,
        mix: MixTokens,
        role: Role,
        transfer_s: float,
        transfer_p99_s: float,
        pool_replicas: float = 1,
        request_overhead_s: float = 0.0,
        lockstep: bool = False,
    ):
        if request_overhead_s < 0:
            raise ValueError(f"the request overhead must be >= 0 s, got {request_overhead_s!r}")
        if isinstance(steps, StepModel):  # the busiest attention-DP group's loads
            steps = group_loaded_steps(steps, mix, role, lockstep)
        self.steps = steps
        plain = steps.steps if isinstance(steps, SpeculativeSteps) else steps
        self.advance = 1.0
        """Tokens a sequence advances per iteration: E with speculation, else 1."""
        self.positions = 1.0
        """Decode positions a sequence takes of the token budget: k + 1, else 1."""
        self.advance_variance = 0.0
        """Var[X] of the tokens one cycle emits (0 without speculation)."""
        if isinstance(steps, SpeculativeSteps):
            spec = steps.speculation
            self.advance = spec.expected_tokens
            self.positions = float(spec.tokens + 1)
            self.advance_variance = tokens_variance(spec.acceptance_rate, spec.tokens)
        self.mix = mix
        self.pool_replicas = pool_replicas
        self.prefill = role is Role.UNIFIED
        self.transfer_s = transfer_s
        self.transfer_p99_s = transfer_p99_s
        self.request_overhead_s = request_overhead_s if self.prefill else 0.0
        """The engine profile's fixed cost of a request before the engine (HTTP,
        tokenisation, scheduling; `Efficiency.request_overhead_s`), in every TTFT of a
        unified replica; a decode replica's requests paid it at the prefill side."""
        self.budget_tokens = plain.pp * plain.chunk_tokens
        self.prefill_context = (mix.cached_prompt + mix.new_prompt / 2) * (1 + mix.prompt_scv)
        """Context a prompt token attends to, token-weighted over prompt lengths: a prompt
        of P tokens (hits h P) puts P (1-h) tokens in at h P + P (1-h) / 2 each, so the
        mean over tokens is E[P^2] / E[P] (h + (1-h) / 2) = (cached + new / 2)(1 + cv_p^2)
        (long prompts carry more tokens, each attending further)."""
        self._side = mixture_side(steps, mix, self.prefill)
        self.single_token = mix.output_p99 <= 1.0
        """Every reply is its first token: none has a TPOT (module docstring, "TPOT")."""

    def prefill_tokens(self, batch: float) -> float:
        """Q(B) = B E P (1-h) / O: prompt tokens per iteration on average (0 for a decode
        replica; E = 1 without speculation)."""
        if not self.prefill:
            return 0.0
        return batch * self.advance * self.mix.new_prompt / self.mix.output

    def lane_batch_limit(self) -> float:
        """Largest B whose prompts fit the token budget: B (k + 1) + Q(B) <= pp x chunk
        (k + 1 = 1 without speculation)."""
        if not self.prefill:
            return math.inf
        return self.budget_tokens / (
            self.positions + self.advance * self.mix.new_prompt / self.mix.output
        )

    def lane_tokens(self, batch: float) -> float:
        """Prompt tokens an iteration has room for beside the decode tokens:
        pp x chunk - B (k + 1)."""
        return self.budget_tokens - batch * self.positions

    def prompts_per_iteration(self, batch: float) -> float:
        """mu(B) = B E / O: prompts arriving per iteration on average (as many requests
        start as finish; 0 for a decode replica)."""
        return batch * self.advance / self.mix.output if self.prefill else 0.0

    def decode_only_s(self, batch: float) -> float:
        """t_0(B): an iteration with no prompt tokens."""
        return self.steps.iteration_s(batch, self.mix.context)

    def mixture(self, batch: float) -> IterationMixture:
        """The iterations at mean batch B as the module docstring's mixture: K ~
        Poisson(mu) prompts per iteration, k of them an iteration of
        t_k = iteration(B, k P (1-h)), or k P (1-h) / lane iterations at a full lane
        when they exceed it."""
        cached = kept_mixture(self._side, batch)
        if cached is not None:
            return cached
        mean_prompts = self.prompts_per_iteration(batch)
        lane_tokens = self.lane_tokens(batch)
        if mean_prompts <= 0:
            decode_s = self.decode_only_s(batch)
            result = IterationMixture(decode_s, decode_s**2, 0.0, decode_s)
        elif lane_tokens <= 0:
            result = IterationMixture(math.inf, math.inf, 1.0, math.inf)
        else:
            result = self._mixture(batch, mean_prompts, lane_tokens)
        keep_mixture(self._side, batch, result)
        return result

    def _mixture(self, batch: float, mean_prompts: float, lane_tokens: float) -> IterationMixture:
        mix = self.mix
        new_prompt = mix.new_prompt
        points = poisson_points(mean_prompts)
        if mix.prompt_scv <= 0 or new_prompt <= 0:  # one length: t at each count's load
            return self._fixed_mixture(batch, points, lane_tokens)
        curve = self._load_curve(batch, points, lane_tokens)
        iterations, time_s, square_s, mixed = curve.sums(points, new_prompt, mix.prompt_scv)
        return IterationMixture(
            time_s / iterations, square_s / iterations, mixed / iterations, curve.times_s[0]
        )

    def _load_curve(
        self, batch: float, points: list[tuple[float, float]], lane_tokens: float
    ) -> LoadCurve:
        """The iteration at B in its prompt tokens (`LoadCurve`): t at 0, at each kink
        and at the lane where it is piecewise linear (a dense model), else on a grid
        from `LOW_SIGMAS` below the fewest prompts' tokens (`load_curve`)."""
        mix, steps = self.mix, self.steps

        def times_at(loads: list[float]) -> list[float]:
            return steps.iterations_s(batch, mix.context, loads, self.prefill_context)

        kinks = steps.prompt_kinks(batch) if isinstance(steps, StepModel) else None
        if kinks is not None:
            loads = [0.0, *(x for x in kinks if 0 < x < lane_tokens), lane_tokens]
            return LoadCurve.through(loads, times_at(loads))
        low_tokens = min(
            (
                k
                * mix.new_prompt
                * math.exp(-LOW_SIGMAS * math.sqrt(math.log1p(mix.prompt_scv / k)))
                for k, weight in points
                if k > 0 and weight >= RARE_COUNT
            ),
            default=mix.new_prompt,
        )
        ratio = GRID_RATIO_DP if getattr(steps, "dp", 1) > 1 else GRID_RATIO
        return load_curve(times_at, low_tokens, lane_tokens, ratio)

    def _fixed_mixture(
        self, batch: float, points: list[tuple[float, float]], lane_tokens: float
    ) -> IterationMixture:
        """The mixture of prompts of one length: k of them an iteration of
        t(min(k P (1-h), L)), max(1, k P (1-h) / L) times."""
        mix, new_prompt = self.mix, self.mix.new_prompt
        # each load once (every count past the lane times a full lane), t_0 and all of them
        # in one call (a StepModel works the decode side out once)
        loads = sorted(
            {
                k * new_prompt if k * new_prompt < lane_tokens else lane_tokens
                for k, _ in points
                if k * new_prompt > 0
            }
        )
        decode_s, *loaded_s = self.steps.iterations_s(
            batch, mix.context, [0.0, *loads], self.prefill_context
        )
        # each load's t and t^2 once; a count below the lane runs once (count 1.0, and
        # weight x 1.0 is weight to the bit), so only the counts past it divide
        time_at = {load: (one_s, one_s**2) for load, one_s in zip(loads, loaded_s, strict=True)}
        decode_square_s = decode_s**2
        iterations = time_s = square_s = mixed = 0.0
        for prompts, weight in points:
            tokens = prompts * new_prompt
            if tokens <= 0:
                iterations += weight
                time_s += weight * decode_s
                square_s += weight * decode_square_s
                continue
            if tokens < lane_tokens:
                one_s, one_square_s = time_at[tokens]
            else:  # max(1, k P / L) full lanes
                weight *= max(1.0, tokens / lane_tokens)
                one_s, one_square_s = time_at[lane_tokens]
            mixed += weight
            iterations += weight
            time_s += weight * one_s
            square_s += weight * one_square_s
        return IterationMixture(
            time_s / iterations, square_s / iterations, mixed / iterations, decode_s
        )

    def step_s(self, batch: float) -> float:
        """t(B): the mean iteration of the mixture (module docstring)."""
        return self.mixture(batch).mean_s

    def tpot_p99_s(self, batch: float) -> float:
        """p99 TPOT at mean batch B: t(B) + hypot(tau - t(B), t_0(B_hi) - t_0(B)), tau the
        mean gap of the p99 reply's life (`reply_life`: the prompts' whole prefill work it
        meets, the backlog behind it and the batch it is slowed to), B_hi the p99 of the
        batch's own spread (`batch_high`); with speculation over E tokens a cycle and the
        spread of the tokens a cycle emits in quadrature (module docstring, "TPOT"); 0
        where every reply is one token (`single_token`)."""
        if self.single_token:
            return 0.0
        mean_s = self.step_s(batch)
        if math.isinf(mean_s):
            return math.inf
        e, tokens = self.advance, max(self.mix.output - 1, 1.0)
        tail_s = self.reply_life(batch, max(tokens / e, 1.0)).tail_s()
        decode_s = self.decode_only_s(batch)
        batch_dev_s = self.decode_only_s(self.batch_high(batch)) - decode_s
        if self.advance == 1.0:
            return mean_s + math.hypot(tail_s - mean_s, batch_dev_s)
        spread_s = Z_P99 * mean_s * math.sqrt(self.advance_variance / (e * tokens))
        return (mean_s + math.hypot(tail_s - mean_s, batch_dev_s, spread_s)) / e

    def reply_life(self, batch: float, iterations: float) -> ReplyLife:
        """A reply of `iterations` iterations at mean batch B (`ReplyLife`): its lengths'
        spread counted as m / (1 + cv_o^2) iterations, the prompts reaching the replica
        at lambda = B E / (O t(B)) with their whole work scaled to the mixture's prefill
        share (`prompt_work`), t_0 affine in the batch between B and 2B (or B + 1)."""
        mixture = self.mixture(batch)
        mean_s, decode_s = mixture.mean_s, mixture.decode_only_s
        rate = self.prompts_per_iteration(batch) / mean_s
        work_s = work_square_s2 = 0.0
        lane_s = mean_s
        if rate > 0 and mixture.prefill_share > 0:
            work_s, work_square_s2 = self.prompt_work(batch)
            scale = mixture.prefill_share / (rate * work_s)
            work_s, work_square_s2 = work_s * scale, work_square_s2 * scale**2
            lane_s = self.steps.iteration_s(
                batch, self.mix.context, self.lane_tokens(batch), self.prefill_context
            )
        step = max(batch, 1.0)
        slope_s = (self.decode_only_s(batch + step) - decode_s) / step
        return ReplyLife(
            iterations=iterations / (1 + self.mix.output_scv),
            batch=batch,
            mean_s=mean_s,
            decode_s=decode_s,
            decode_slope_s=max(slope_s, 0.0),
            full_lane_s=max(lane_s, mean_s),
            rate=rate if work_s > 0 else 0.0,
            work_s=work_s,
            work_square_s2=work_square_s2,
            pool=self.pool_replicas,
            lane_busy=1.0 - (1.0 - mixture.mixed_share) * decode_s / mean_s,
        )

    def prompt_work(self, batch: float) -> tuple[float, float]:
        """(E[s], E[s^2]) of one prompt's prefill beyond the decode step at B, whole:
        s = c (t(min(P (1-h), L)) - t_0), c = max(1, P (1-h) / L) iterations of a lane of
        L tokens, over the lognormal lengths at 9 Gauss-Hermite points (one length where
        they do not spread)."""
        mix, lane, steps = self.mix, self.lane_tokens(batch), self.steps
        points = lognormal_points(mix.new_prompt, mix.prompt_scv)
        decode_s = self.decode_only_s(batch)
        hit = mix.cached_prompt / mix.new_prompt if mix.new_prompt > 0 else 0.0
        times_s = [
            steps.iteration_s(batch, mix.context, min(tokens, lane), tokens * (hit + 0.5))
            for tokens, _ in points
        ]
        first = second = 0.0
        for (tokens, weight), time_s in zip(points, times_s, strict=True):
            work_s = max(1.0, tokens / lane) * (time_s - decode_s)
            first += weight * work_s
            second += weight * work_s * work_s
        return first, second

    def batch_high(self, batch: float) -> float:
        """The p99 batch a reply lives through: B + 2.326 sqrt(B / n) / (1 - g), the
        Poisson spread of the pool's n B sequences shared over its n replicas (a router
        that sends each request to the replica with the fewest in flight keeps their
        batches even), amplified by the step's feedback g = B t'(B) / t(B) (a larger
        batch lengthens every iteration, so sequences stay longer and the batch grows
        further; g capped at 0.9). n = 1 is a lone replica; an unlimited pool has none."""
        pool = self.pool_replicas
        if batch <= 0 or math.isinf(pool):
            return batch
        step = max(1e-3 * batch, 1e-3)
        mean_s = self.step_s(batch)
        gain = batch * (self.step_s(batch + step) - mean_s) / (step * mean_s)
        gain = min(max(gain, 0.0), FEEDBACK_GAIN_CAP)
        return batch + Z_P99 * math.sqrt(batch / pool) / (1 - gain)

    def residual_s(self, batch: float) -> float:
        """The iteration a prompt arrives in, whole: length-biased over the mixture,
        E[t^2] / E[t], times the chance the engine is busy, 1 - e^-B (the Poisson number
        of resident sequences is not 0)."""
        mixture = self.mixture(batch)
        if math.isinf(mixture.mean_s):
            return math.inf
        return mixture.second_moment_s2 / mixture.mean_s * (1 - math.exp(-batch))

    def parts(self, batch: float) -> PassParts:
        """The stage pass of an iteration at B with Q(B) prompt tokens spread evenly,
        split into its roofline terms (for naming the roof, not for timing)."""
        return self.steps.iteration_parts(
            batch, self.mix.context, self.prefill_tokens(batch), self.prefill_context
        )

    def own_prefill_s(
        self,
        batch: float,
        prompt_new: float,
        lane_tokens: float,
        prompt_context: float | None = None,
    ) -> float:
        """S(P): iterations a prompt of `prompt_new` new tokens needs when it has the lane,
        its tokens attending to `prompt_context` tokens on average (default: the mix's
        token-weighted mean), the Q(B) others' to the mix's mean."""
        mix, steps = self.mix, self.steps
        others = self.prefill_tokens(batch)
        tokens = min(lane_tokens, others + prompt_new)
        context = self.prefill_context
        if prompt_context is not None:
            context = (prompt_new * prompt_context + others * context) / (prompt_new + others)
        one = steps.iteration_s(batch, mix.context, tokens, context)
        return one * max(1.0, prompt_new / lane_tokens)

    def ttft_p99_s(self, batch: float, step_s: float, rate: float) -> float:
        """p99 TTFT at batch B (unified):
            overhead + residual + S(P) + sqrt((W99 + ride)^2 + (S(P99) - S(P))^2),
        the overhead the profile's fixed cost of a request before the engine
        (`request_overhead_s`: a constant every request pays once, never queued, so it
        shifts every quantile and leaves the engine's queue as it is), W99 the M/G/c wait
        of the replica's pool (`pooled_wait_p99_s`), the residual the length-biased
        iteration in progress (`residual_s`), the ride the prompts that arrived while it
        waited and finish in its iteration (`ride_s`)."""
        if not self.prefill:
            return self.transfer_p99_s
        mix, steps = self.mix, self.steps
        lane_tokens = self.lane_tokens(batch)
        if lane_tokens <= 0:
            return math.inf
        full_s = steps.iteration_s(batch, mix.context, lane_tokens, self.prefill_context)
        lane_rate = lane_tokens / full_s
        service_s = mix.new_prompt / lane_rate
        wait_s = pooled_wait_p99_s(rate, service_s, mix.prompt_scv, self.pool_replicas)
        if math.isinf(wait_s):
            return math.inf
        own_s = self.own_prefill_s(batch, mix.new_prompt, lane_tokens)
        p99_context = mix.prompt_p99 * mix.hit + mix.new_prompt_p99 / 2
        own_p99_s = self.own_prefill_s(batch, mix.new_prompt_p99, lane_tokens, p99_context)
        residual_s = self.residual_s(batch)
        ride = ride_s(rate * service_s, wait_s + residual_s, mix.new_prompt, lane_tokens, full_s)
        queued_s = math.hypot(wait_s + ride, own_p99_s - own_s)
        return self.request_overhead_s + residual_s + own_s + queued_s

    def point(self, batch: float) -> BatchPoint:
        """The operating point at mean batch B, kept by value (`POINTS_KEPT`): it depends
        on the decode side (`mixture_side`: step model, mix, prefill or not), the pool
        size, the transfer times and the request overhead, and on nothing else."""
        key = (
            self._side,
            self.pool_replicas,
            self.transfer_s,
            self.transfer_p99_s,
            self.request_overhead_s,
            batch,
        )
        with _POINTS_LOCK:
            found = _POINTS.get(key)
            if found is not None:
                _POINTS.move_to_end(key)
        if found is None:
            step_s = self.step_s(batch)
            rate = batch * self.advance / (self.mix.output * step_s)
            tpot_s = self.tpot_p99_s(batch)
            ttft_s = self.ttft_p99_s(batch, step_s, rate)
            # a NaN is neither within a target nor beyond it: every verdict on it would be
            # an accident of the comparison's spelling (one check per point computed)
            assert not (math.isnan(tpot_s) or math.isnan(ttft_s)), (
                f"the latency model gave p99 TPOT {tpot_s} s and p99 TTFT {ttft_s} s at "
                f"mean batch {batch:g} (step {step_s} s, {rate} requests/s)"
            )
            found = (step_s, rate, tpot_s, ttft_s)
            with _POINTS_LOCK:
                if len(_POINTS) >= POINTS_KEPT:
                    _POINTS.popitem(last=False)
                _POINTS[key] = found
        return BatchPoint(batch, *found)  # the batch as asked (3 and 3.0 are one key)
