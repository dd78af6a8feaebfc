"""Capacity of one replica configuration at the SLO, and the factor that limits it.

Notation: P prompt tokens (mean P, p99 P99, spread cv_p), O output tokens (mean O,
spread cv_o), h the prefix-cache hit rate, B the mean number of sequences decoding.

Unified replica (prefill and decode on the same GPUs, chunked prefill)
    Little's law as a fixed point. Each iteration of length t(B) advances the B decoding
    sequences by a token, so requests finish at lambda = B / (O t(B)), and in the same
    iteration the new requests' prompts must be prefilled: lambda t P (1-h) = B P (1-h) / O
    prompt tokens ride along with the decode tokens on average ("chunked prefill steals
    decode time"). They ride as whole prompts (up to the token budget) in a share f(B) of
    the iterations, the rest are pure decode (`models.serving.batch_model`, "Chunked-prefill
    interference"). Parametrising by B resolves the fixed point exactly:
        t(B) = f t_mix + (1-f) t_dec, the iterations at B decode tokens (mean context c)
               with a chunk of Q(B) / f prompt tokens and with none, Q(B) = B P (1-h) / O
        c    = P + O (1 + cv_o^2) / 2        (length-biased: long replies decode longer)
    and every bound is monotone in B:
        kv_memory      B99 (P + O) <= KV capacity, B99 = B + 2.326 sqrt(B) (the number of
                       sequences in the system is Poisson for Poisson arrivals)
        compute        Q(B) <= pp x chunk - B: the engine's token budget per iteration
        engine         B <= max_batch_sequences
        tpot           TPOT99(B) <= TPOT target: the Poisson batch B99 and the share of
                       prompt-carrying iterations a reply sees, in quadrature
        ttft_queueing  p99 TTFT(B) <= TTFT target
    The largest feasible B gives the capacity lambda(B): the edge of the SLO test, found
    by Brent's method on the log of the larger p99-to-target ratio to a relative 1e-12
    (`models.serving.edge_search`; ~10 evaluations where a bisection took 48).
    TTFT: prompts queue for the prefill lane, whose rate when saturated is
    r = Q_max / t(B, Q_max); the wait is M/G/1 with service P (1-h) / r and service SCV
    cv_p^2 (`models.serving.queueing.wait_quantile_s`; M/G/c in a pool, see "Pools" below). A
    prompt then takes its own prefill time S(P), plus the residual of the iteration in
    progress, t(B) (1 - e^-B) (the engine is busy unless the Poisson number of resident
    sequences is 0), length-biased over the mixture. A prompt that waited is not alone
    in the iteration that ends its prefill: the engine takes every waiting prompt into
    the next iteration in arrival order, so those that arrived while it waited ride
    behind it, rho x (W99 + residual) seconds of lane work at lane utilisation
    rho = lambda P (1-h) / r, up to the room its last iteration leaves
    (`models.serving.batch_model.ride_s`, the prefill-only model's term). The p99 combines the
    p99 wait with its ride and the p99 prompt's extra prefill time in quadrature:
        TTFT99 = o + residual + S(P) + sqrt((W99 + ride)^2 + (S(P99) - S(P))^2)
    exact with no queue (o + S(P99)). Against the simulator (one B200, Llama-3.3-70B fp8,
    1,500/400 tokens, 6 x 20 min at the planned capacity) the simulated p99 TTFT is
    within 1% of the target; without the ride it was 22% above it. o is the engine
    profile's fixed cost of a request before the engine (`Efficiency.request_overhead_s`:
    HTTP, tokenisation, scheduling, which benchmark tools count in every TTFT; 0 for the
    TensorRT-LLM profiles): a constant each request pays once, outside the engine's
    queue (an arrival stream shifted by a constant queues as the unshifted one), so it
    moves every TTFT quantile by o, never raises a capacity, and puts a TTFT target
    tighter than o out of reach at any load.

Pools: replicas behind one router (M/G/c). The replicas of one configuration serving one
workload in one region sit behind one router. The model assumes the router sends each
request at arrival to the replica with the least prompt work queued for prefill (least
work left, which waits exactly as one central FCFS queue: see
`models.serving.queueing.pooled_wait_p99_s`), so the prompt queue of a pool of
c = `pool_replicas` replicas is M/G/c: c lanes, each with service P (1-h) / r, fed at
c lambda. Two things change with c, the wait:
    W99 = `wait_quantile_s`(c lambda, P (1-h) / r, cv_p^2, c, 0.99)
and the spread of the batch a reply lives through, which a router that keeps the
replicas' batches even narrows to sqrt(B / c) (the p99 TPOT's B_hi,
`models.serving.batch_model.BatchModel.batch_high`). A prompt's own prefill S(P), the residual
of the iteration in progress, the quadrature and the other decode-side bounds (KV memory,
the engine's batch cap, the NICs) are per replica. At a fixed per-lane utilisation the
Erlang C chance to wait and the conditional mean wait S (1 + cs^2) / (2 c (1 - rho)) both
fall as c grows, so W99 never rises with c, nor does B_hi, and the capacity per replica
never falls: pool_replicas = 1 is the single FCFS server with a lone replica's batch, and
pool_replicas = math.inf (no queueing wait while each lane is below saturation, no batch
spread) is the ceiling every finite pool stays under. When the prefill takes most of the
TTFT target the difference is large: 32K prompts whose prefill takes 1.2 s of a 2 s
target leave a single server ~3% utilisation, while ten replicas behind one queue run
above half.

Prefill-only replica (disaggregated): prompts/s. The replica prefills full chunks at
r tokens/s; lambda <= r / (P (1-h)) (compute) and lambda x KV bytes per prompt <= the
replica's NICs (interconnect). TTFT = the request overhead o + residual of the iteration in
progress + wait + the iteration(s) that complete the prompt + KV transfer to the decode
pool, with the
same M/G/1 wait (M/G/c in a pool) and quadrature: a prompt's first token comes when the
whole iteration it shares ends, and the prompts that arrived while it waited fill that
iteration up to the token budget (`models.serving.prefill_model`, where the model and its
conservative side are stated).

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

Speculative decoding (a configuration's `speculation`, `models.physics.speculative`): an iteration
is one speculation cycle (k draft steps and a verify pass of k + 1 positions per
sequence) that advances every sequence E tokens; `models.serving.batch_model` states how the
rate, the token budget and the TPOT follow, and every bound above holds as written.

Where the pieces live: the replica as functions of its batch B in `models.serving.batch_model`,
the `reason` sentences in `models.serving.capacity_reasons`, the throughput frontier and the
operating point at a rate in `models.serving.frontier` (still importable from here).
"""

import math

from models.physics.efficiency import Efficiency
from models.physics.memory import MemoryBudget
from models.physics.pass_parts import PassParts
from models.physics.step_time import StepModel
from models.serving.batch_model import (
    Z_P99,
    BatchModel,
    BatchPoint,
    offline_lockstep,
    within_target,
)
from models.serving.capacity_reasons import (
    comm_share_reason,
    limit_reason,
    nic_receive_reason,
    prefill_reason,
    prefill_unreachable_reason,
    slo_unreachable_reason,
)
from models.serving.edge_search import find_edge, signed_margin
from models.serving.prefill_model import prefill_lane
from models.serving.prefix_kv import pool_size_matters, prefix_mix
from models.serving.replica import (
    LatencyTargets,
    Limit,
    MixTokens,
    ReplicaCapacity,
    ReplicaConfig,
    Role,
    TrafficMix,
)
from models.serving.replica_layout import (
    ReplicaFit,
    decode_steps,
    fit_replica,
    kv_transfer_bytes,
    kv_transfer_s,
    nic_bytes_per_s,
)

INTERCONNECT_SHARE = 0.5
"""A step spending more than this share of its time in all-reduces and hops is reported
as limited by the interconnect."""
UNLIMITED_POOL = math.inf
"""`pool_replicas` of a pool so large that prompts never wait while a lane has room: the
ceiling of the capacity per replica over all pool sizes."""


def pooling_can_lift(
    capacity: ReplicaCapacity, mix: TrafficMix | None = None, tpot: bool = False
) -> bool:
    """Whether the program credits a larger pool with more per replica than this one:
    when the p99 TTFT's queueing is what stops the rate (`ttft_queueing`: the M/G/c wait
    falls with the pool's size), when the mix's hit rate depends on the pool's size
    (prefix affinity, `models.serving.prefix_kv.pool_size_matters`), and with `tpot`
    (`policy.credit_tpot_pooling`) when the p99 TPOT stops it (`tpot`, or a decode
    side's `interconnect`: a TPOT edge named after its all-reduces).

    A TPOT-limited capacity rises with the pool, but by little (a slowed replica is sent
    fewer prompts and a congestion is shared over the pool's lanes,
    `models.serving.tail.reply_life`, "Pools"; the batch a reply lives through spreads as
    1 / sqrt(n), `models.serving.batch_model.BatchModel.batch_high`: 13-26% from a lone
    replica to a pool of 8 for tests/models/serving/test_pool_slo.py's TPOT-limited ones).
    The program credits it as it credits a TTFT-limited one (`policy.credit_tpot_pooling`,
    on by default), so that the credit at every pool size never falls when a target
    loosens: a lone replica that is TTFT-limited
    has a ladder whose every size includes the TPOT's pooling, and a looser TTFT target
    that leaves the same replica TPOT-limited must keep it (issue 35: credited flat at
    q(1), chat TTFT 1000 -> 1200 -> 1500 ms cost more at each step). The verifier checks
    the same q(n) at the pool's real size, and the simulator confirms the pooled p99 TPOT
    (tests/models/serving/test_pool_slo.py). With the option off the program credits such
    a candidate flat at q(1), which every pool size carries: a smaller program (fewer pool
    binaries) and a conservative plan, reported at its real size
    (`solver.candidates.pools.assess_pools`).

    Any other limit (KV memory, the token budget, the engine's batch cap) is a cap on the
    batch that the pool's size does not move: the largest feasible batch stays at that
    cap, so the capacity is the same at every pool size (to the search's precision,
    1e-12)."""
    if not (capacity.fits and capacity.meets_slo):
        return False
    if tpot and capacity.limit is Limit.TPOT:
        return True
    if tpot and capacity.limit is Limit.INTERCONNECT and capacity.config.role is not Role.PREFILL:
        return True
    return capacity.limit is Limit.TTFT_QUEUEING or (mix is not None and pool_size_matters(mix))


def holds_at_tighter_ttft(capacity: ReplicaCapacity, tighter: LatencyTargets) -> bool:
    """Whether a capacity taken at the normal targets holds unchanged at `tighter` (the
    TTFT target less a round trip): its limit is not the TTFT's queueing and its p99 TTFT
    at the operating point already meets the tighter target. The largest batch (or rate)
    meeting every bound is then the same (the p99 TTFT rises with load, so every smaller
    load the search tries meets the tighter target too), and recomputing it would take
    the same search to the same answer (to its precision, 1e-12)."""
    target = tighter.ttft_p99_s
    return (
        target is not None
        and capacity.fits
        and capacity.meets_slo
        and capacity.limit is not Limit.TTFT_QUEUEING
        and capacity.ttft_p99_s <= target
    )


def check_pool_replicas(pool_replicas: float) -> None:
    """Raise ValueError unless `pool_replicas` is a whole number >= 1 or math.inf."""
    if not (math.isinf(pool_replicas) or float(pool_replicas).is_integer()) or pool_replicas < 1:
        raise ValueError(f"pool_replicas must be a whole number >= 1, got {pool_replicas}")


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
    fitted: ReplicaFit | None = None,
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
        fitted: `fit_replica(config, mix, efficiency)` where the caller holds it (it
            asks several pool sizes: `models.serving.replica_layout`); None: worked
            out here.

    Raises:
        ValueError: pool_replicas is not a whole number >= 1 (or math.inf).
    """
    check_pool_replicas(pool_replicas)
    fit = fit_replica(config, mix, efficiency) if fitted is None else fitted
    if fit.not_fitting is not None:
        return fit.not_fitting
    m, budget, steps = fit.tokens, fit.budget, fit.steps
    assert m is not None and budget is not None and steps is not None  # it fits
    m = prefix_mix(m, mix, config, budget, steps, pool_replicas)
    if config.role is Role.PREFILL:
        return _prefill_capacity(config, m, targets, efficiency, budget, steps, pool_replicas)
    return batch_capacity(config, m, targets, efficiency, budget, steps, pool_replicas)


def batch_capacity(
    config: ReplicaConfig,
    m: MixTokens,
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
    cycle = decode_steps(config, efficiency, steps)  # a speculation cycle, or `steps`
    overhead_s = efficiency.request_overhead_s  # in every TTFT of a unified replica
    offline = targets.is_offline
    lockstep = offline_lockstep(m, offline)  # attention-DP groups in step
    model = BatchModel(
        cycle, m, config.role, transfer_s, transfer_p99_s, pool_replicas, overhead_s, lockstep
    )
    kv_sequences = m.kv_sequences(budget.kv_capacity_tokens)
    max_batch = int(kv_sequences) if m.shared_kv_tokens else budget.max_sequences(m.footprint)

    # Closed-form caps on B, each with the limit it names.
    if offline:
        kv_cap = kv_sequences
    else:  # B99 <= kv_sequences  <=>  sqrt(B) <= (-z + sqrt(z^2 + 4 kv)) / 2
        root = (-Z_P99 + math.sqrt(Z_P99**2 + 4 * kv_sequences)) / 2
        kv_cap = root * root
    caps = [
        (kv_cap, Limit.KV_MEMORY),
        (float(efficiency.max_batch_sequences * config.dp), None),  # one cap per DP group
        (model.lane_batch_limit() * (1.0 if offline else 0.999), Limit.COMPUTE),
    ]
    transfer_bytes = kv_transfer_bytes(config, m.prompt)
    nic = nic_bytes_per_s(config, efficiency)
    if decode:
        caps.append((_nic_batch_cap(model, nic / transfer_bytes, kv_cap), Limit.INTERCONNECT))
    cap, cap_limit = min(caps, key=lambda item: item[0])
    if cap_limit is None:  # the engine's batch cap: name the roof the step hits there
        cap_limit = _bound_limit(model.parts(cap))

    best_tpot_s = (
        steps.decode_step_s(1.0, m.context) if cycle is steps else cycle.tpot_s(1.0, m.context)  # type: ignore[union-attr]
    )
    best_tpot_s = 0.0 if model.single_token else best_tpot_s  # no reply has a TPOT
    best_ttft_s = (
        model.request_overhead_s + model.own_prefill_s(0.0, m.new_prompt_p99, model.budget_tokens)
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

    points: dict[float, BatchPoint] = {}  # the search's points, for the ends it returns

    def point_at(batch: float) -> BatchPoint:
        if batch not in points:
            points[batch] = model.point(batch)
        return points[batch]

    def feasible(point: BatchPoint) -> bool:
        ttft_ok = within_target(point.ttft_p99_s, targets.ttft_p99_s, check=not decode)
        return ttft_ok and within_target(point.tpot_p99_s, targets.tpot_p99_s)

    def margin(point: BatchPoint) -> float:
        """log of the larger ratio of a p99 to its target, signed by `feasible`."""
        ratio = point.tpot_p99_s / targets.tpot_p99_s if targets.tpot_p99_s is not None else 0.0
        if targets.ttft_p99_s is not None and not decode:
            ratio = max(ratio, point.ttft_p99_s / targets.ttft_p99_s)
        return signed_margin(math.log(ratio) if ratio > 0 else -math.inf, feasible(point))

    if offline:
        batch, limit = cap, cap_limit
    else:
        floor = point_at(1e-9)
        if not feasible(floor):
            return _slo_unreachable(
                config, targets, common, floor, best_ttft_s, best_tpot_s, model.request_overhead_s
            )
        top = point_at(cap)
        if feasible(top):
            batch, limit = cap, cap_limit
        else:
            batch, high = find_edge(
                lambda b: margin(point_at(b)), 1e-9, cap, margin(floor), margin(top)
            )
            limit = _slo_limit(point_at(high), targets, decode)
            if limit is Limit.TPOT:
                bound = _bound_limit(model.parts(batch))
                limit = Limit.INTERCONNECT if bound is Limit.INTERCONNECT else limit
    point = point_at(batch)
    rate = point.rate
    if limit is Limit.INTERCONNECT and decode and cap_limit is Limit.INTERCONNECT and batch == cap:
        reason = nic_receive_reason(transfer_bytes, nic, rate)
    elif limit is Limit.INTERCONNECT:
        tpot_reached = targets.tpot_p99_s is not None and batch < cap
        reason = comm_share_reason(
            model.parts(batch),
            steps.allreduces_per_pass,
            batch,
            point.tpot_p99_s if tpot_reached else None,
            0 if steps.experts_layout is None else steps.experts_layout.alltoall_collectives,
        )
    else:
        reason = limit_reason(limit, point, m, budget, targets, efficiency, pool_replicas)
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


def _nic_batch_cap(model: BatchModel, max_rate: float, high: float) -> float:
    """Largest B whose generation rate the NICs can feed with KV (`find_edge` on the
    rate's excess over the NICs' rate)."""

    def margin(batch: float) -> float:
        rate = model.point(batch).rate
        return signed_margin(rate / max_rate - 1, rate <= max_rate)

    top = margin(high)
    if top <= 0:
        return math.inf
    low, _ = find_edge(margin, 0.0, high, high_margin=top)
    return low


def _slo_limit(point: BatchPoint, targets: LatencyTargets, decode: bool) -> Limit:
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
    floor: BatchPoint,
    best_ttft_s: float,
    best_tpot_s: float,
    overhead_s: float = 0.0,
) -> ReplicaCapacity:
    """A configuration that misses a target even at vanishing load (`overhead_s` the
    request overhead in its TTFT, named in the reason)."""
    # missed: not within the target (a NaN included, which the reason then names)
    tpot_missed = targets.tpot_p99_s is not None and not floor.tpot_p99_s <= targets.tpot_p99_s
    ttft_missed = targets.ttft_p99_s is not None and not floor.ttft_p99_s <= targets.ttft_p99_s
    return ReplicaCapacity(
        **common,
        meets_slo=False,
        requests_per_s=0.0,
        limit=Limit.COMPUTE if ttft_missed else Limit.TPOT,
        reason=slo_unreachable_reason(
            config.label,
            targets,
            tpot_missed,
            ttft_missed,
            best_ttft_s,
            best_tpot_s,
            overhead_s,
            (floor.ttft_p99_s, floor.tpot_p99_s),
        ),
        batch=0.0,
        decode_step_s=floor.step_s,
        ttft_p99_s=math.inf,
        tpot_p99_s=math.inf,
        output_tokens_per_s=0.0,
    )


def _prefill_capacity(
    config: ReplicaConfig,
    m: MixTokens,
    targets: LatencyTargets,
    efficiency: Efficiency,
    budget: MemoryBudget,
    steps: StepModel,
    pool_replicas: float = 1,
) -> ReplicaCapacity:
    """Prefill-only replica: prompts/s within the TTFT target (queue + prefill + transfer)."""
    lane = prefill_lane(config, m, efficiency, steps, pool_replicas)
    token_rate, own_s, own_p99_s = lane.token_rate, lane.own_s, lane.own_p99_s
    transfer_s, transfer_p99_s = lane.transfer_s, lane.transfer_p99_s
    compute_rate = token_rate / m.new_prompt
    transfer_bytes = kv_transfer_bytes(config, m.prompt)
    nic = nic_bytes_per_s(config, efficiency)
    nic_rate = nic / transfer_bytes
    service_s = lane.service_s
    ttft_at = lane.ttft_p99_s

    best_ttft_s = lane.request_overhead_s + own_p99_s + transfer_p99_s
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
            reason=prefill_unreachable_reason(
                config.label,
                best_ttft_s,
                own_p99_s,
                transfer_p99_s,
                m.prompt_p99,
                targets.ttft_p99_s,
                lane.request_overhead_s,
            ),
            batch=0.0,
            ttft_p99_s=math.inf,
            output_tokens_per_s=0.0,
        )
    else:
        target_s = targets.ttft_p99_s

        def margin(rate: float) -> float:
            ttft_s = ttft_at(rate)
            assert not math.isnan(ttft_s), f"the prefill lane's p99 TTFT at {rate} prompts/s is NaN"
            return signed_margin(math.log(ttft_s / target_s), ttft_s <= target_s)

        top = margin(cap)
        rate = cap if top <= 0 else find_edge(margin, 0.0, cap, high_margin=top)[0]
        # A pool large enough leaves no wait short of saturation: then the cap binds.
        limit = Limit.TTFT_QUEUEING if rate < cap * (1 - 1e-9) else cap_limit
        ttft_s = ttft_at(rate)
    reason = prefill_reason(
        limit,
        ttft_s,
        own_s,
        transfer_s,
        rate,
        pool_replicas,
        targets,
        token_rate,
        transfer_bytes,
        nic,
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
