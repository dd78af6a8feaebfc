"""The throughput frontier of a replica: what each user sees against what each GPU
produces, batch size by batch size, and the operating point at a given request rate.

Both read the unified/decode replica of `models.serving.batch_model` (the model stated in
`models.serving.capacity`) and take the KV capacity from `models.serving.capacity.replica_capacity`.
"""

import math
from dataclasses import dataclass

from models.serving.batch_model import BatchModel, BatchPoint, batch_p99, within_target
from models.serving.capacity import check_pool_replicas, replica_capacity
from models.serving.edge_search import bisect_edge
from models.serving.prefix_kv import pool_mix_tokens
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, ServingContext
from models.serving.replica_layout import decode_steps, replica_step_model

BISECTION_STEPS = 48
"""Halvings of the operating point's batch bracket: a relative precision of ~1e-14."""


@dataclass(frozen=True)
class FrontierPoint:
    """One batch size of a replica: what each user sees and what each GPU produces."""

    batch: float
    """Mean sequences decoding."""
    decode_step_s: float
    """Iteration time at this batch (prefill riding along for a unified replica)."""
    tokens_per_s_per_user: float
    """E / decode_step_s: the speed each stream sees (E = 1 without speculation, else the
    tokens a speculation cycle emits; the step is then one cycle)."""
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
    serving: ServingContext,
    targets: LatencyTargets,
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
    config, efficiency = serving.config, serving.efficiency
    capacity = replica_capacity(config, serving.mix, LatencyTargets(), efficiency)
    if not capacity.fits or config.role is Role.PREFILL:
        return []
    model = _frontier_model(serving, pool_replicas)
    m = model.mix
    kv_sequences = m.kv_sequences(capacity.kv_capacity_tokens)
    engine_cap = float(efficiency.max_batch_sequences * config.dp)  # one cap per DP group
    limit = min(kv_sequences, engine_cap, model.lane_batch_limit())
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
        ttft_ok = within_target(point.ttft_p99_s, targets.ttft_p99_s, check=model.prefill)
        meets = ttft_ok and within_target(point.tpot_p99_s, targets.tpot_p99_s)
        fits = occupancy <= kv_sequences
        points.append(_frontier_point(config, model, point, fits_memory=fits, meets_slo=meets))
    return points


def operating_point(serving: ServingContext, requests_per_s: float) -> FrontierPoint | None:
    """The state of a unified or decode replica serving `requests_per_s`: the mean batch
    B that solves lambda(B) = rate (the Little's-law fixed point), its step time, p99 TTFT
    and TPOT. None when the layout does not fit, the role is prefill, or the rate exceeds
    the replica's offline maximum."""
    config = serving.config
    offline = replica_capacity(config, serving.mix, LatencyTargets(), serving.efficiency)
    if not offline.fits or config.role is Role.PREFILL or requests_per_s > offline.requests_per_s:
        return None
    model = _frontier_model(serving)
    _, batch = bisect_edge(
        lambda b: model.point(b).rate < requests_per_s, 0.0, offline.batch, BISECTION_STEPS
    )
    fits = batch_p99(batch) <= model.mix.kv_sequences(offline.kv_capacity_tokens)
    return _frontier_point(config, model, model.point(batch), fits_memory=fits, meets_slo=True)


def _frontier_model(serving: ServingContext, pool_replicas: float = 1) -> BatchModel:
    """The unified/decode model behind the frontier and the operating point (no KV
    transfer counted in a decode replica's TTFT; the profile's request overhead in a
    unified one's), with the pool's prefix cache
    (`models.serving.prefix_kv.pool_mix_tokens`, as the capacity takes it)."""
    config, efficiency = serving.config, serving.efficiency
    steps = replica_step_model(config, efficiency)
    return BatchModel(
        decode_steps(config, efficiency, steps),  # a speculation cycle when configured
        pool_mix_tokens(serving, pool_replicas),
        config.role,
        0.0,
        0.0,
        pool_replicas,
        request_overhead_s=efficiency.request_overhead_s,
    )


def _frontier_point(
    config: ReplicaConfig, model: BatchModel, point: BatchPoint, fits_memory: bool, meets_slo: bool
) -> FrontierPoint:
    """The frontier record of the operating point `point` of `model`."""
    return FrontierPoint(
        batch=point.batch,
        decode_step_s=point.step_s,
        tokens_per_s_per_user=model.advance / point.step_s,  # E tokens per cycle
        output_tokens_per_s_per_gpu=point.rate * model.mix.output / config.gpus,
        requests_per_s=point.rate,
        ttft_p99_s=point.ttft_p99_s,
        tpot_p99_s=point.tpot_p99_s,
        fits_memory=fits_memory,
        meets_slo=meets_slo,
        bound=model.parts(point.batch).bound,
    )
