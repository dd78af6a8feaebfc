"""Capacity of one replica configuration at the SLO, and the factor that limits it.

Notation: P prompt tokens (mean P, p99 P99, spread cv_p), O output tokens (mean O,
spread cv_o), h the prefix-cache hit rate, B the mean number of sequences decoding.

Unified replica (prefill and decode on the same GPUs, chunked prefill)
    Little's law as a fixed point. Each iteration of length t(B) advances the B decoding
    sequences by a token, so requests finish at lambda = B / (O t(B)), and in the same
    iteration the new requests' prompts must be prefilled: lambda t P (1-h) = B P (1-h) / O
    prompt tokens ride along with the decode tokens ("chunked prefill steals decode
    time"). Parametrising by B resolves the fixed point exactly:
        t(B) = iteration(B decode tokens at mean context c, Q(B) = B P (1-h) / O prompt tokens)
        c    = P + O (1 + cv_o^2) / 2        (length-biased: long replies decode longer)
    and every bound is monotone in B:
        kv_memory      B99 (P + O) <= KV capacity, B99 = B + 2.326 sqrt(B) (the number of
                       sequences in the system is Poisson for Poisson arrivals)
        compute        Q(B) <= pp x chunk - B: the engine's token budget per iteration
        engine         B <= max_batch_sequences
        tpot           t(B99) <= TPOT target
        ttft_queueing  p99 TTFT(B) <= TTFT target
    The largest feasible B (bisection, 48 steps) gives the capacity lambda(B).
    TTFT: prompts queue for the prefill lane, whose rate when saturated is
    r = Q_max / t(B, Q_max); the wait is M/G/1 with service P (1-h) / r and service SCV
    cv_p^2 (`models.queueing.wait_quantile_s`; M/G/c in a pool, see "Pools" below). A
    prompt then takes its own prefill time S(P), plus the residual of the iteration in
    progress, t(B) (1 - e^-B) (the engine is busy unless the Poisson number of resident
    sequences is 0). The p99 combines the p99 wait and the p99 prompt's extra prefill time
    in quadrature:
        TTFT99 = residual + S(P) + sqrt(W99^2 + (S(P99) - S(P))^2)
    exact with no queue (S(P99)) and with fixed lengths (W99 + S(P)).

Pools: replicas behind one router (M/G/c). The replicas of one configuration serving one
workload in one region sit behind one router. The model assumes the router queues prompts
centrally and hands each to a replica whose prefill lane is free (join-the-shortest-queue
with a central queue approximates that closely), so the prompt queue of a pool of
c = `pool_replicas` replicas is M/G/c: c lanes, each with service P (1-h) / r, fed at
c lambda. Only the wait changes with c:
    W99 = `wait_quantile_s`(c lambda, P (1-h) / r, cv_p^2, c, 0.99)
A prompt's own prefill S(P), the residual of the iteration in progress and the quadrature
are per replica, and so are every decode-side bound (KV memory, TPOT, the engine's batch
cap, the NICs): `pool_replicas` changes nothing else. At a fixed per-lane utilisation the
Erlang C chance to wait and the conditional mean wait S (1 + cs^2) / (2 c (1 - rho)) both
fall as c grows, so W99 never rises with c and the capacity per replica never falls:
pool_replicas = 1 is the single FCFS server (the old numbers exactly), and
pool_replicas = math.inf (no queueing wait while each lane is below saturation) is the
ceiling every finite pool stays under. When the prefill takes most of the TTFT target the
difference is large: 32K prompts whose prefill takes 1.2 s of a 2 s target leave a single
server ~3% utilisation, while ten replicas behind one queue run above half.

Prefill-only replica (disaggregated): prompts/s. The replica prefills full chunks at
r tokens/s; lambda <= r / (P (1-h)) (compute) and lambda x KV bytes per prompt <= the
replica's NICs (interconnect). TTFT = wait + own prefill + KV transfer to the decode
pool, with the same M/G/1 wait (M/G/c in a pool) and quadrature.

Decode-only replica (disaggregated): generations/s = B / (O t(B)) with no prefill in the
step, bounded by KV memory (the prompt's KV arrives with the request), the engine's
batch cap, TPOT and the NICs that receive the KV.

Offline (no latency target): the batch is as large as memory, the engine and the token
budget allow; the capacity is the maximum throughput.

Limits, named after the bound that stops B (or the rate) from growing: `kv_memory`,
`tpot`, `ttft_queueing`; `compute` when prompts fill the token budget (or a prefill
replica is saturated); at the engine's batch cap, the roof the step hits there
(`compute` or `hbm_bandwidth`); `interconnect` when all-reduces and hops take more than
half of each pass at the operating point, or the NICs cannot carry the KV transfers.

`replica_capacity` never raises: a layout that is impossible (TP not dividing the heads,
a precision the GPU lacks) or does not fit returns fits=False with the reason, and a
configuration that cannot meet the SLO at any load returns meets_slo=False with the best
TTFT and TPOT it reaches.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

from models.efficiency import Efficiency
from models.memory import (
    GIB,
    MemoryBudget,
    does_not_fit_message,
    kv_bytes_per_token,
    layout_problem,
    memory_budget,
    smallest_fitting_tp,
)
from models.precision import Precision
from models.queueing import wait_quantile_s
from models.replica import LatencyTargets, Limit, ReplicaCapacity, ReplicaConfig, Role, TrafficMix
from models.step_time import PassParts, StepModel, step_model

Z_P99 = 2.326347874
"""Standard normal quantile at 0.99."""
BISECTION_STEPS = 48
"""Steps of the bisection over the batch (or the rate): a relative precision of ~1e-14."""
INTERCONNECT_SHARE = 0.5
"""A step spending more than this share of its time in all-reduces and hops is reported
as limited by the interconnect."""
UNLIMITED_POOL = math.inf
"""`pool_replicas` of a pool so large that prompts never wait while a lane has room: the
ceiling of the capacity per replica over all pool sizes."""


def pooled_wait_p99_s(
    rate: float, service_s: float, service_scv: float, pool_replicas: float = 1
) -> float:
    """p99 wait of a prompt for a prefill lane when `pool_replicas` replicas, each fed
    `rate` prompts/s, share one queue: M/G/c with c = pool_replicas and arrivals c x rate,
    `models.queueing.wait_quantile_s(c x rate, service_s, cs^2, c, 0.99)`.

    c = 1 is the single FCFS server. `UNLIMITED_POOL` (math.inf) is the limit c -> inf
    at a fixed per-lane utilisation rho = rate x service_s: no wait while rho < 1,
    math.inf from rho >= 1 (never below any finite pool's wait)."""
    if math.isinf(pool_replicas):
        return 0.0 if rate * service_s < 1 else math.inf
    servers = int(pool_replicas)
    return wait_quantile_s(servers * rate, service_s, service_scv, servers, 0.99)


def pooling_can_lift(capacity: ReplicaCapacity) -> bool:
    """Whether a larger pool could carry more per replica than this one: only when the
    p99 TTFT's queueing is what stops the rate (`ttft_queueing`).

    Any other limit is met with the TTFT to spare, and a larger pool only lowers the
    TTFT: the largest feasible batch (or rate) stays where the other bound put it (the
    bisection takes the same steps), so the capacity is the same at every pool size."""
    return capacity.fits and capacity.meets_slo and capacity.limit is Limit.TTFT_QUEUEING


def _bisect(ok: Callable[[float], bool], low: float, high: float) -> tuple[float, float]:
    """Bisection for the edge of a monotone predicate, true at `low` and false beyond the
    edge: `BISECTION_STEPS` halvings of [low, high], keeping `ok(low)`. Returns the final
    (low, high) bracket."""
    for _ in range(BISECTION_STEPS):
        mid = (low + high) / 2
        if ok(mid):
            low = mid
        else:
            high = mid
    return low, high


def check_pool_replicas(pool_replicas: float) -> None:
    """Raise ValueError unless `pool_replicas` is a whole number >= 1 or math.inf."""
    if not (math.isinf(pool_replicas) or float(pool_replicas).is_integer()) or pool_replicas < 1:
        raise ValueError(f"pool_replicas must be a whole number >= 1, got {pool_replicas}")


def batch_p99(batch: float) -> float:
    """p99 of a Poisson number of sequences with mean `batch`: B + 2.326 sqrt(B)."""
    return batch + Z_P99 * math.sqrt(max(batch, 0.0))


def kv_transfer_s(config: ReplicaConfig, prompt_tokens: float, efficiency: Efficiency) -> float:
    """Seconds to ship a prompt's KV cache from a prefill replica to a decode replica over
    the replica's NICs: P x KV bytes per token / (gpus x NIC bytes/s x scaleout_fraction)."""
    return _kv_transfer_bytes(config, prompt_tokens) / _nic_bytes_per_s(config, efficiency)


def _kv_transfer_bytes(config: ReplicaConfig, prompt_tokens: float) -> float:
    """KV bytes of a prompt of `prompt_tokens` tokens: P x KV bytes per token."""
    return prompt_tokens * kv_bytes_per_token(config.llm, config.kv_precision)


def _nic_bytes_per_s(config: ReplicaConfig, efficiency: Efficiency) -> float:
    """What the replica's NICs carry: gpus x NIC bytes/s x scaleout_fraction."""
    return config.gpus * config.gpu.scaleout_bytes_per_s * efficiency.scaleout_fraction


@dataclass(frozen=True)
class _Mix:
    """The traffic mix reduced to what the model uses, in tokens."""

    prompt: float
    prompt_p99: float
    prompt_scv: float
    output: float
    output_p99: float
    hit: float
    context: float
    """Mean context a decode step attends to: P + O (1 + cv_o^2) / 2."""
    footprint: float
    """KV tokens one sequence holds: P + O."""

    @classmethod
    def of(cls, mix: TrafficMix) -> "_Mix":
        prompt = max(mix.prompt_mean_tokens, 1.0)
        output = max(mix.output_mean_tokens, 1.0)
        return cls(
            prompt=prompt,
            prompt_p99=max(mix.prompt_p99_tokens, prompt),
            prompt_scv=mix.prompt_cv**2,
            output=output,
            output_p99=max(mix.output_p99_tokens, output),
            hit=min(max(mix.prefix_cache_hit_rate, 0.0), 0.999),
            context=prompt + output * (1 + mix.output_cv**2) / 2,
            footprint=prompt + output,
        )

    @property
    def new_prompt(self) -> float:
        """Prompt tokens that need prefill compute: P (1 - h)."""
        return self.prompt * (1 - self.hit)

    @property
    def new_prompt_p99(self) -> float:
        """New tokens of a p99 prompt: P99 (1 - h)."""
        return self.prompt_p99 * (1 - self.hit)

    @property
    def cached_prompt(self) -> float:
        """Prompt tokens served from the prefix cache: P h."""
        return self.prompt * self.hit


@dataclass(frozen=True)
class _Point:
    """The state of a unified or decode replica at a mean batch B."""

    batch: float
    step_s: float
    rate: float
    tpot_p99_s: float
    ttft_p99_s: float


class _UnifiedModel:
    """The unified/decode replica as functions of the batch B (see the module docstring)."""

    def __init__(
        self,
        steps: StepModel,
        mix: _Mix,
        role: Role,
        transfer_s: float,
        transfer_p99_s: float,
        pool_replicas: float = 1,
    ):
        self.steps = steps
        self.mix = mix
        self.pool_replicas = pool_replicas
        self.prefill = role is Role.UNIFIED
        self.transfer_s = transfer_s
        self.transfer_p99_s = transfer_p99_s
        self.budget_tokens = steps.pp * steps.chunk_tokens
        self.prefill_context = mix.cached_prompt + mix.new_prompt / 2

    def prefill_tokens(self, batch: float) -> float:
        """Prompt tokens per iteration: Q(B) = B P (1-h) / O (0 for a decode replica)."""
        return batch * self.mix.new_prompt / self.mix.output if self.prefill else 0.0

    def lane_batch_limit(self) -> float:
        """Largest B whose prompts fit the token budget: B + Q(B) <= pp x chunk."""
        if not self.prefill:
            return math.inf
        return self.budget_tokens / (1 + self.mix.new_prompt / self.mix.output)

    def step_s(self, batch: float) -> float:
        """t(B): one iteration with B decode tokens and Q(B) prompt tokens."""
        return self.steps.iteration_s(
            batch, self.mix.context, self.prefill_tokens(batch), self.prefill_context
        )

    def parts(self, batch: float) -> PassParts:
        """The stage pass of t(B), split into its roofline terms."""
        return self.steps.iteration_parts(
            batch, self.mix.context, self.prefill_tokens(batch), self.prefill_context
        )

    def own_prefill_s(self, batch: float, prompt_new: float, lane_tokens: float) -> float:
        """S(P): iterations a prompt of `prompt_new` new tokens needs when it has the lane."""
        mix, steps = self.mix, self.steps
        tokens = min(lane_tokens, self.prefill_tokens(batch) + prompt_new)
        one = steps.iteration_s(batch, mix.context, tokens, self.prefill_context)
        return one * max(1.0, prompt_new / lane_tokens)

    def ttft_p99_s(self, batch: float, step_s: float, rate: float) -> float:
        """p99 TTFT at batch B (unified): residual + S(P) + sqrt(W99^2 + (S(P99)-S(P))^2),
        W99 the M/G/c wait of the replica's pool (`pooled_wait_p99_s`)."""
        if not self.prefill:
            return self.transfer_p99_s
        mix, steps = self.mix, self.steps
        lane_tokens = self.budget_tokens - batch
        if lane_tokens <= 0:
            return math.inf
        full_s = steps.iteration_s(batch, mix.context, lane_tokens, self.prefill_context)
        lane_rate = lane_tokens / full_s
        service_s = mix.new_prompt / lane_rate
        wait_s = pooled_wait_p99_s(rate, service_s, mix.prompt_scv, self.pool_replicas)
        if math.isinf(wait_s):
            return math.inf
        own_s = self.own_prefill_s(batch, mix.new_prompt, lane_tokens)
        own_p99_s = self.own_prefill_s(batch, mix.new_prompt_p99, lane_tokens)
        residual_s = step_s * (1 - math.exp(-batch))
        return residual_s + own_s + math.hypot(wait_s, own_p99_s - own_s)

    def point(self, batch: float) -> _Point:
        """The operating point at mean batch B."""
        step_s = self.step_s(batch)
        rate = batch / (self.mix.output * step_s)
        tpot_s = self.step_s(batch_p99(batch))
        return _Point(batch, step_s, rate, tpot_s, self.ttft_p99_s(batch, step_s, rate))


def _not_fitting(
    config: ReplicaConfig,
    reason: str,
    budget: MemoryBudget | None = None,
    limit: Limit = Limit.KV_MEMORY,
) -> ReplicaCapacity:
    return ReplicaCapacity(
        config=config,
        fits=False,
        meets_slo=False,
        requests_per_s=0.0,
        limit=limit,
        reason=reason,
        weight_bytes_per_gpu=budget.weight_bytes_per_gpu if budget else 0.0,
        kv_bytes_per_token=budget.kv_bytes_per_token if budget else 0.0,
        kv_capacity_tokens=budget.kv_capacity_tokens if budget else 0.0,
        max_batch=0,
        batch=0.0,
        prefill_s=math.inf,
        decode_step_s=math.inf,
        ttft_p99_s=math.inf,
        tpot_p99_s=math.inf,
        best_ttft_p99_s=math.inf,
        best_tpot_s=math.inf,
        output_tokens_per_s=0.0,
        kv_transfer_bytes_per_request=0.0,
    )


def _memory_remedy(config: ReplicaConfig, efficiency: Efficiency, tokens: float) -> str:
    """What to change so that `tokens` of KV fit: the first layouts that would, trying a
    larger TP, then lower weight precisions, then more pipeline stages."""
    gpu, llm = config.gpu, config.llm
    options = []
    precisions = [config.weight_precision] + [
        p
        for p in (Precision.FP8, Precision.FP4)
        if p.bytes_per_element < config.weight_precision.bytes_per_element and gpu.supports(p)
    ]
    for precision in precisions:
        kv = config.kv_precision if precision is config.weight_precision else Precision.FP8
        for pp in sorted({config.pp, config.pp * 2, config.pp * 4}):
            tp = smallest_fitting_tp(gpu, llm, precision, kv, pp, efficiency, tokens)
            current = (config.tp, config.pp, config.weight_precision)
            if tp is not None and (tp, pp, precision) != current:
                layout = f"TP>={tp}" if tp > 1 else "TP=1"
                options.append(layout + (f" x PP={pp}" if pp > 1 else "") + f" at {precision}")
                break
        if len(options) == 2:
            break
    if options:
        return "Use " + ", or ".join(options) + " (or a GPU with more memory)."
    return f"No layout of {llm.name} on up to 4 nodes of {gpu.name} fits; use a larger GPU."


def _step_model(config: ReplicaConfig, efficiency: Efficiency) -> StepModel:
    """The step model of the replica's layout."""
    return step_model(
        config.gpu,
        config.llm,
        config.weight_precision,
        config.kv_precision,
        config.tp,
        config.pp,
        efficiency,
    )


def _bound_limit(parts: PassParts) -> Limit:
    """The limit a batch capped by the engine hits: the roof that takes most of the step."""
    if parts.comm_s > INTERCONNECT_SHARE * parts.total_s:
        return Limit.INTERCONNECT
    return Limit.COMPUTE if parts.compute_s >= parts.memory_s else Limit.HBM_BANDWIDTH


def replica_capacity(
    config: ReplicaConfig,
    mix: TrafficMix,
    targets: LatencyTargets,
    efficiency: Efficiency,
    pool_replicas: float = 1,
) -> ReplicaCapacity:
    """The largest request rate one replica sustains within the targets, and why not more.

    Pure and deterministic; about a millisecond (the Erlang C recursion adds ~c steps per
    wait for a pool of c). Never raises for a configuration that is impossible, does not
    fit or cannot meet the SLO: it returns fits/meets_slo False, requests_per_s 0.0 and a
    `reason` with the numbers (see the module docstring for the model). `requests_per_s`
    counts whole requests (unified), prompts (prefill) or generations (decode).

    Args:
        config, mix, targets, efficiency: the replica, its traffic, the SLO, the
            achievable fractions of peak.
        pool_replicas: identical replicas behind one router sharing one prompt queue
            (M/G/c, c = pool_replicas; see "Pools" in the module docstring): the
            capacity is per replica, never lower for a larger pool, and 1 gives the
            single server. `UNLIMITED_POOL` gives the ceiling over all pool sizes.

    Raises:
        ValueError: pool_replicas is not a whole number >= 1 (or math.inf).
    """
    check_pool_replicas(pool_replicas)
    problem = layout_problem(
        config.gpu,
        config.llm,
        config.weight_precision,
        config.kv_precision,
        config.tp,
        config.pp,
    )
    if problem is not None:
        return _not_fitting(config, f"{config.label}: {problem}")
    m = _Mix.of(mix)
    llm = config.llm
    if m.prompt_p99 + m.output_p99 > llm.max_context_tokens:
        return _not_fitting(
            config,
            f"{config.label}: a p99 request of {m.prompt_p99:,.0f} + {m.output_p99:,.0f} tokens "
            f"exceeds the {llm.max_context_tokens:,}-token context window of {llm.name}",
        )
    budget = memory_budget(
        config.gpu,
        llm,
        config.weight_precision,
        config.kv_precision,
        config.tp,
        config.pp,
        efficiency,
    )
    needed = m.prompt_p99 if config.role is Role.PREFILL else m.prompt_p99 + m.output_p99
    if budget.kv_capacity_tokens < needed:
        remedy = _memory_remedy(config, efficiency, needed)
        return _not_fitting(
            config, does_not_fit_message(budget, needed, config.label, remedy), budget
        )
    steps = _step_model(config, efficiency)
    if config.role is Role.PREFILL:
        return _prefill_capacity(config, m, targets, efficiency, budget, steps, pool_replicas)
    return _batch_capacity(config, m, targets, efficiency, budget, steps, pool_replicas)


def _batch_capacity(
    config: ReplicaConfig,
    m: _Mix,
    targets: LatencyTargets,
    efficiency: Efficiency,
    budget: MemoryBudget,
    steps: StepModel,
    pool_replicas: float = 1,
) -> ReplicaCapacity:
    """Unified and decode-only replicas: the largest feasible mean batch B."""
    decode = config.role is Role.DECODE
    transfer_s = kv_transfer_s(config, m.prompt, efficiency) if decode else 0.0
    transfer_p99_s = kv_transfer_s(config, m.prompt_p99, efficiency) if decode else 0.0
    model = _UnifiedModel(steps, m, config.role, transfer_s, transfer_p99_s, pool_replicas)
    max_batch = budget.max_sequences(m.footprint)
    offline = targets.is_offline
    kv_sequences = budget.kv_capacity_tokens / m.footprint

    # Closed-form caps on B, each with the limit it names.
    if offline:
        kv_cap = kv_sequences
    else:  # B99 <= kv_sequences  <=>  sqrt(B) <= (-z + sqrt(z^2 + 4 kv)) / 2
        root = (-Z_P99 + math.sqrt(Z_P99**2 + 4 * kv_sequences)) / 2
        kv_cap = root * root
    caps = [
        (kv_cap, Limit.KV_MEMORY),
        (float(efficiency.max_batch_sequences), None),
        (model.lane_batch_limit() * (1.0 if offline else 0.999), Limit.COMPUTE),
    ]
    transfer_bytes = _kv_transfer_bytes(config, m.prompt)
    nic = _nic_bytes_per_s(config, efficiency)
    if decode:
        caps.append((_nic_batch_cap(model, nic / transfer_bytes, kv_cap), Limit.INTERCONNECT))
    cap, cap_limit = min(caps, key=lambda item: item[0])
    if cap_limit is None:  # the engine's batch cap: name the roof the step hits there
        cap_limit = _bound_limit(model.parts(cap))

    best_tpot_s = steps.decode_step_s(1.0, m.context)
    best_ttft_s = (
        model.own_prefill_s(0.0, m.new_prompt_p99, model.budget_tokens)
        if not decode
        else transfer_p99_s
    )
    common = {
        "config": config,
        "fits": True,
        "weight_bytes_per_gpu": budget.weight_bytes_per_gpu,
        "kv_bytes_per_token": budget.kv_bytes_per_token,
        "kv_capacity_tokens": budget.kv_capacity_tokens,
        "max_batch": max_batch,
        "prefill_s": steps.prefill_s(m.new_prompt, m.cached_prompt),
        "best_ttft_p99_s": best_ttft_s,
        "best_tpot_s": best_tpot_s,
        "kv_transfer_bytes_per_request": transfer_bytes if decode else 0.0,
    }

    def feasible(point: _Point) -> bool:
        return _within(point.ttft_p99_s, targets.ttft_p99_s, check=not decode) and _within(
            point.tpot_p99_s, targets.tpot_p99_s
        )

    if offline:
        batch, limit = cap, cap_limit
    else:
        floor = model.point(1e-9)
        if not feasible(floor):
            return _slo_unreachable(config, targets, common, floor, best_ttft_s, best_tpot_s)
        top = model.point(cap)
        if feasible(top):
            batch, limit = cap, cap_limit
        else:
            batch, high = _bisect(lambda b: feasible(model.point(b)), 1e-9, cap)
            limit = _slo_limit(model.point(high), targets, decode)
            if limit is Limit.TPOT:
                bound = _bound_limit(model.parts(batch))
                limit = Limit.INTERCONNECT if bound is Limit.INTERCONNECT else limit
    point = model.point(batch)
    rate = point.rate
    if limit is Limit.INTERCONNECT and decode and cap_limit is Limit.INTERCONNECT and batch == cap:
        reason = (
            f"receiving {transfer_bytes / 2**20:,.1f} MiB of prompt KV per request saturates "
            f"{nic / 1e9:,.1f} GB/s of NICs at {rate:,.2f} generations/s"
        )
    elif limit is Limit.INTERCONNECT:
        parts = model.parts(batch)
        reason = (
            f"all-reduces and hops take {parts.comm_s / parts.total_s:.0%} of each stage pass "
            f"({steps.allreduces_per_pass} all-reduces per pass) at mean batch {batch:,.1f}"
        )
        if targets.tpot_p99_s is not None and batch < cap:
            reason += f"; p99 TPOT {point.tpot_p99_s * 1e3:.1f} ms reaches the target"
    else:
        reason = _reason(config, limit, point, m, budget, targets, efficiency, pool_replicas)
    return ReplicaCapacity(
        **common,
        meets_slo=True,
        requests_per_s=rate,
        limit=limit,
        reason=reason,
        batch=batch,
        decode_step_s=point.step_s,
        ttft_p99_s=point.ttft_p99_s,
        tpot_p99_s=point.tpot_p99_s,
        output_tokens_per_s=rate * m.output,
    )


def _nic_batch_cap(model: _UnifiedModel, max_rate: float, high: float) -> float:
    """Largest B whose generation rate the NICs can feed with KV (bisection)."""
    if model.point(high).rate <= max_rate:
        return math.inf
    low, _ = _bisect(lambda b: model.point(b).rate <= max_rate, 0.0, high)
    return low


def _within(value: float, target: float | None, check: bool = True) -> bool:
    return not check or target is None or value <= target


def _slo_limit(point: _Point, targets: LatencyTargets, decode: bool) -> Limit:
    """Which target a slightly larger batch breaks (the larger relative excess)."""
    ttft_excess = (
        point.ttft_p99_s / targets.ttft_p99_s
        if targets.ttft_p99_s is not None and not decode
        else 0.0
    )
    tpot_excess = point.tpot_p99_s / targets.tpot_p99_s if targets.tpot_p99_s is not None else 0.0
    return Limit.TTFT_QUEUEING if ttft_excess >= tpot_excess else Limit.TPOT


def _slo_unreachable(
    config: ReplicaConfig,
    targets: LatencyTargets,
    common: dict,
    floor: _Point,
    best_ttft_s: float,
    best_tpot_s: float,
) -> ReplicaCapacity:
    """A configuration that misses a target even at vanishing load."""
    misses = []
    limit = Limit.TPOT
    if targets.tpot_p99_s is not None and floor.tpot_p99_s > targets.tpot_p99_s:
        misses.append(
            f"p99 TPOT >= {best_tpot_s * 1e3:.1f} ms even at batch 1 "
            f"(target {targets.tpot_p99_s * 1e3:g} ms)"
        )
    if targets.ttft_p99_s is not None and floor.ttft_p99_s > targets.ttft_p99_s:
        limit = Limit.COMPUTE
        misses.append(
            f"p99 TTFT >= {best_ttft_s * 1e3:.0f} ms with no queue "
            f"(target {targets.ttft_p99_s * 1e3:g} ms)"
        )
    reason = f"{config.label} cannot meet the SLO at any load: " + "; ".join(misses)
    return ReplicaCapacity(
        **common,
        meets_slo=False,
        requests_per_s=0.0,
        limit=limit,
        reason=reason,
        batch=0.0,
        decode_step_s=floor.step_s,
        ttft_p99_s=math.inf,
        tpot_p99_s=math.inf,
        output_tokens_per_s=0.0,
    )


def _reason(
    config: ReplicaConfig,
    limit: Limit,
    point: _Point,
    m: _Mix,
    budget: MemoryBudget,
    targets: LatencyTargets,
    efficiency: Efficiency,
    pool_replicas: float = 1,
) -> str:
    """One sentence with the numbers behind the limit."""
    b = point.batch
    if limit is Limit.KV_MEMORY:
        return (
            f"KV cache holds {budget.kv_capacity_tokens:,.0f} tokens = "
            f"{budget.kv_capacity_tokens / m.footprint:,.1f} sequences of "
            f"{m.footprint:,.0f} tokens ({max(budget.kv_room_bytes_per_gpu, 0) / GIB:.1f} GiB "
            f"per GPU); mean batch {b:,.1f}"
        )
    if limit is Limit.TPOT:
        return (
            f"p99 TPOT {point.tpot_p99_s * 1e3:.1f} ms at mean batch {b:,.1f} reaches the "
            f"{targets.tpot_p99_s * 1e3:g} ms target"  # type: ignore[operator]
        )
    if limit is Limit.TTFT_QUEUEING:
        return (
            f"p99 TTFT {point.ttft_p99_s * 1e3:.0f} ms at {point.rate:,.2f} requests/s"
            f"{_per_replica_in_pool(pool_replicas)} reaches the "
            f"{targets.ttft_p99_s * 1e3:g} ms target"  # type: ignore[operator]
        )
    if limit is Limit.COMPUTE:
        return (
            f"prompt and decode tokens fill the {efficiency.prefill_chunk_tokens:,}-token "
            f"budget of every iteration (or the step is compute-bound) at batch {b:,.1f}"
        )
    if limit is Limit.HBM_BANDWIDTH:
        return (
            f"engine batch cap {efficiency.max_batch_sequences:,} sequences; the "
            f"{point.step_s * 1e3:.1f} ms step streams weights and KV cache"
        )
    return f"links set the pace at batch {b:,.1f}"


def _per_replica_in_pool(pool_replicas: float) -> str:
    """' per replica in a pool of 8 behind one queue' (nothing for a single replica)."""
    if pool_replicas == 1:
        return ""
    size = "an unlimited pool" if math.isinf(pool_replicas) else f"a pool of {pool_replicas:g}"
    return f" per replica in {size} behind one queue"


def _prefill_capacity(
    config: ReplicaConfig,
    m: _Mix,
    targets: LatencyTargets,
    efficiency: Efficiency,
    budget: MemoryBudget,
    steps: StepModel,
    pool_replicas: float = 1,
) -> ReplicaCapacity:
    """Prefill-only replica: prompts/s within the TTFT target (queue + prefill + transfer)."""
    token_rate = steps.prefill_tokens_per_s(m.new_prompt, m.cached_prompt)
    compute_rate = token_rate / m.new_prompt
    transfer_bytes = _kv_transfer_bytes(config, m.prompt)
    nic = _nic_bytes_per_s(config, efficiency)
    nic_rate = nic / transfer_bytes
    own_s = steps.prefill_s(m.new_prompt, m.cached_prompt)
    own_p99_s = steps.prefill_s(m.new_prompt_p99, m.prompt_p99 * m.hit)
    transfer_s = kv_transfer_s(config, m.prompt, efficiency)
    transfer_p99_s = kv_transfer_s(config, m.prompt_p99, efficiency)
    service_s = m.new_prompt / token_rate
    base_s = own_s + transfer_s
    extra_s = own_p99_s + transfer_p99_s - base_s

    def ttft_at(rate: float) -> float:
        wait_s = pooled_wait_p99_s(rate, service_s, m.prompt_scv, pool_replicas)
        return base_s + math.hypot(wait_s, extra_s)

    best_ttft_s = own_p99_s + transfer_p99_s
    if compute_rate <= nic_rate:
        cap, cap_limit = compute_rate, Limit.COMPUTE
    else:
        cap, cap_limit = nic_rate, Limit.INTERCONNECT
    common = {
        "config": config,
        "fits": True,
        "weight_bytes_per_gpu": budget.weight_bytes_per_gpu,
        "kv_bytes_per_token": budget.kv_bytes_per_token,
        "kv_capacity_tokens": budget.kv_capacity_tokens,
        "max_batch": budget.max_sequences(m.prompt),
        "prefill_s": own_s,
        "best_ttft_p99_s": best_ttft_s,
        "best_tpot_s": 0.0,
        "kv_transfer_bytes_per_request": transfer_bytes,
        "decode_step_s": 0.0,
        "tpot_p99_s": 0.0,
    }
    if targets.ttft_p99_s is None:
        rate, limit = cap, cap_limit
        ttft_s = math.inf
    elif best_ttft_s > targets.ttft_p99_s:
        return ReplicaCapacity(
            **common,
            meets_slo=False,
            requests_per_s=0.0,
            limit=Limit.COMPUTE,
            reason=(
                f"{config.label} cannot meet the SLO at any load: p99 TTFT >= "
                f"{best_ttft_s * 1e3:.0f} ms with no queue (prefill {own_p99_s * 1e3:.0f} ms + "
                f"KV transfer {transfer_p99_s * 1e3:.0f} ms of a {m.prompt_p99:,.0f}-token "
                f"prompt; target {targets.ttft_p99_s * 1e3:g} ms)"
            ),
            batch=0.0,
            ttft_p99_s=math.inf,
            output_tokens_per_s=0.0,
        )
    else:
        target_s = targets.ttft_p99_s
        rate, _ = _bisect(lambda r: ttft_at(r) <= target_s, 0.0, cap)
        # A pool large enough leaves no wait short of saturation: then the cap binds.
        limit = Limit.TTFT_QUEUEING if rate < cap * (1 - 1e-9) else cap_limit
        ttft_s = ttft_at(rate)
    if limit is Limit.TTFT_QUEUEING:
        reason = (
            f"p99 TTFT {ttft_s * 1e3:.0f} ms (prefill {own_s * 1e3:.0f} ms + KV transfer "
            f"{transfer_s * 1e3:.1f} ms + queue) at {rate:,.2f} prompts/s"
            f"{_per_replica_in_pool(pool_replicas)} reaches the "
            f"{targets.ttft_p99_s * 1e3:g} ms target"  # type: ignore[operator]
        )
    elif limit is Limit.COMPUTE:
        reason = f"prefill compute: {token_rate:,.0f} prompt tokens/s at full chunks"
    else:
        reason = (
            f"KV transfer of {transfer_bytes / 2**20:,.1f} MiB per prompt saturates "
            f"{nic / 1e9:,.1f} GB/s of NICs"
        )
    return ReplicaCapacity(
        **common,
        meets_slo=True,
        requests_per_s=rate,
        limit=limit,
        reason=reason,
        batch=rate * service_s,
        ttft_p99_s=ttft_s,
        output_tokens_per_s=rate,
    )


# --- the throughput frontier -----------------------------------------------------------


@dataclass(frozen=True)
class FrontierPoint:
    """One batch size of a replica: what each user sees and what each GPU produces."""

    batch: float
    """Mean sequences decoding."""
    decode_step_s: float
    """Iteration time at this batch (prefill riding along for a unified replica)."""
    tokens_per_s_per_user: float
    """1 / decode_step_s: the speed each stream sees."""
    output_tokens_per_s_per_gpu: float
    requests_per_s: float
    ttft_p99_s: float
    tpot_p99_s: float
    fits_memory: bool
    """Whether the KV cache holds this batch (its p99 with latency targets)."""
    meets_slo: bool
    """Whether p99 TTFT and TPOT are within the targets (True without targets)."""
    bound: str
    """Which roof the step hits: `compute`, `memory` or `interconnect`."""


def throughput_frontier(
    config: ReplicaConfig,
    mix: TrafficMix,
    targets: LatencyTargets,
    efficiency: Efficiency,
    batches: list[float] | None = None,
    pool_replicas: float = 1,
) -> list[FrontierPoint]:
    """Throughput per GPU against tokens/s per user across batch sizes, for a unified or
    decode replica: the frontier the SLO cuts. Default batches: powers of two up to the
    memory limit (and the memory limit itself). Empty when the layout is impossible or
    does not fit, or for a prefill replica. The p99 TTFT of each point is that of a
    replica in a pool of `pool_replicas` behind one queue.
    """
    check_pool_replicas(pool_replicas)
    capacity = replica_capacity(config, mix, LatencyTargets(), efficiency)
    if not capacity.fits or config.role is Role.PREFILL:
        return []
    model = _frontier_model(config, mix, efficiency, pool_replicas)
    m = model.mix
    kv_sequences = capacity.kv_capacity_tokens / m.footprint
    limit = min(kv_sequences, float(efficiency.max_batch_sequences), model.lane_batch_limit())
    if batches is None:
        batches = []
        b = 1.0
        while b < limit:
            batches.append(b)
            b *= 2
        batches.append(max(math.floor(limit), 1.0))
    points = []
    for batch in batches:
        point = model.point(batch)
        occupancy = batch if targets.is_offline else batch_p99(batch)
        meets = _within(point.ttft_p99_s, targets.ttft_p99_s, check=model.prefill) and _within(
            point.tpot_p99_s, targets.tpot_p99_s
        )
        fits = occupancy * m.footprint <= capacity.kv_capacity_tokens
        points.append(_frontier_point(config, model, point, fits_memory=fits, meets_slo=meets))
    return points


def operating_point(
    config: ReplicaConfig,
    mix: TrafficMix,
    efficiency: Efficiency,
    requests_per_s: float,
) -> FrontierPoint | None:
    """The state of a unified or decode replica serving `requests_per_s`: the mean batch
    B that solves lambda(B) = rate (the Little's-law fixed point), its step time, p99 TTFT
    and TPOT. None when the layout does not fit, the role is prefill, or the rate exceeds
    the replica's offline maximum."""
    offline = replica_capacity(config, mix, LatencyTargets(), efficiency)
    if not offline.fits or config.role is Role.PREFILL or requests_per_s > offline.requests_per_s:
        return None
    model = _frontier_model(config, mix, efficiency)
    _, batch = _bisect(lambda b: model.point(b).rate < requests_per_s, 0.0, offline.batch)
    fits = batch_p99(batch) * model.mix.footprint <= offline.kv_capacity_tokens
    return _frontier_point(config, model, model.point(batch), fits_memory=fits, meets_slo=True)


def _frontier_model(
    config: ReplicaConfig, mix: TrafficMix, efficiency: Efficiency, pool_replicas: float = 1
) -> _UnifiedModel:
    """The unified/decode model behind the frontier and the operating point (no KV
    transfer counted in a decode replica's TTFT)."""
    return _UnifiedModel(
        _step_model(config, efficiency), _Mix.of(mix), config.role, 0.0, 0.0, pool_replicas
    )


def _frontier_point(
    config: ReplicaConfig, model: _UnifiedModel, point: _Point, fits_memory: bool, meets_slo: bool
) -> FrontierPoint:
    """The frontier record of the operating point `point` of `model`."""
    return FrontierPoint(
        batch=point.batch,
        decode_step_s=point.step_s,
        tokens_per_s_per_user=1 / point.step_s,
        output_tokens_per_s_per_gpu=point.rate * model.mix.output / config.gpus,
        requests_per_s=point.rate,
        ttft_p99_s=point.ttft_p99_s,
        tpot_p99_s=point.tpot_p99_s,
        fits_memory=fits_memory,
        meets_slo=meets_slo,
        bound=model.parts(point.batch).bound,
    )
