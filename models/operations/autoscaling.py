"""Warm headroom for a reactive autoscaler, and the signal and thresholds it should use.

Lag. A replica asked for at time t serves at t + L, where

    L = detection_s + replica_start_s

detection_s is the metric window plus the decision (`policy.scale_detection_s`);
replica_start_s is the GPU's start time (`Instance.replica_start_s`: catalog, or
`policy.replica_start_s`, or a `gpus[]` entry), which holds node provisioning when no
node is free, the container image pull, loading the weights (weight bytes over the
storage or network read rate) and engine warm-up (graph capture, KV allocation). The
planner takes it as one number; to split it, time each stage in the cold-path load test.

Headroom. The autoscaler keeps the pool at the demand it sees plus a headroom H. Demand
seen at t is d(t - L) (the capacity it sizes arrives L later), so the SLO holds while
d(t - L) + H >= d(t) for every t:

    H = b x max_t [d(t) - d(t - L)]     requests/s  (b = `policy.burst_factor` >= 1)

for the day moving linearly between hour centres (`models.operations.time_periods`); for
L <= 1 h this is b x (steepest slope, requests/s per s) x L. The maximum is taken over
every lag up to L (`largest_rise_rps`): on the cyclic day d(t) - d(t - L) alone falls
again once L passes the day's rise (at L = 24 h it is 0, yesterday's rate taken for a
forecast), and a slower start would then plan less headroom than a faster one. In replicas:
ceil(H / C), C the capacity of one replica at the SLO. The autoscaler's ceiling is the
day's peak P: capacity beyond it is never needed, and min(d(t - L) + H, P) >= d(t)
still holds. In hour h the pool then runs at most

    warm_h = min(max over t in h of d(t - L) + H, P)      (`warm_rps_by_hour`)

the rate the program's hourly row must cover. The peak hour's need is P, as today; the
headroom costs only the hours off the peak. A flat day gives H = 0 and every hour the
peak: today's plan. `burst_factor` steepens the ramps, not the peak level (which the
profile or `peak_to_average` sets).

Flattening. Raising every hour to the peak (the static plan) never lowers any warm_h.
Raising only some hours can: filling a trough between two peaks removes the ramp out
of it, H falls, and the hours far from the peak need less warm capacity.

Signal. Under continuous batching GPU utilisation (the fraction of time a kernel is
running) reads near 100% as soon as a single sequence is decoding: the engine launches
a step every few milliseconds whatever the batch size. It says nothing about how much
more load fits, and rises only once latency is already rising. The quantities that
move with load are the sequences resident in the KV cache (KV-cache usage) and the
prompts waiting for prefill (queue depth). Thresholds, per replica, for a pool that
runs at target utilisation u* = 1 - H / (n C) of its SLO capacity at its peak size n:

    kv_usage_scale_out    = u* x B / B_max           (B the mean batch at capacity C,
                                                      B_max the sequences that fit)
    queue_depth_scale_out = lambda Wq at lambda = u* C, Wq the M/G/1 mean wait of the
                            prefill lane (service S = prefill time of a mean prompt,
                            cs^2 = prompt-length cv^2)
    queue_depth_slo_edge  = T / S - 1                (a prompt behind q others waits
                                                      about q S; past this the p99
                                                      TTFT target T is gone)

The KV threshold uses Little's law at a fixed duration: below capacity steps are
shorter, so the true usage at u* C is somewhat lower and the alarm fires a little late;
the queue-depth threshold does not have that bias and should lead. B, B_max and S are a
replica's in a pool of size n, the same pool whose capacity C is credited: a replica's
batch at C is B = C x B_n / q(n) (`resident_batch`, Little's law at the duration of a
request in that pool), never a lone replica's batch B_1 at q(1) against a pooled C.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.operations.time_periods import (
    HOURS_PER_DAY,
    Ramp,
    lagged_peak_rps,
    largest_rise_rps,
    steepest_ramp,
)
from models.serving.queueing import mg1_mean_wait_s

GPU_UTILISATION_NOTE = (
    "GPU utilisation is the wrong scaling signal under continuous batching: the engine "
    "runs a decode step every few milliseconds as soon as one sequence is resident, so "
    "utilisation reads near 100% at a small fraction of capacity and cannot tell how "
    "much more load fits; it moves only after latency has. Scale on KV-cache usage "
    "(resident sequences) and on the prefill queue depth, which grow with load."
)
"""The report's explanation of the signal choice."""


def lag_s(replica_start_s: float, detection_s: float) -> float:
    """L = detection_s + replica_start_s: from a rise to capacity that serves it."""
    if replica_start_s < 0 or detection_s < 0:
        raise ValueError(
            f"replica_start_s and detection_s must be >= 0, got {replica_start_s}, {detection_s}"
        )
    return replica_start_s + detection_s


def headroom_rps(ramp_rps_per_s: float, lag: float, burst_factor: float = 1.0) -> float:
    """H = b x ramp x L for a steady ramp (requests/s per s) over a lag of L seconds."""
    if ramp_rps_per_s < 0 or lag < 0 or burst_factor < 1:
        raise ValueError(
            "need ramp >= 0, lag >= 0 and burst_factor >= 1, got "
            f"{ramp_rps_per_s}, {lag}, {burst_factor}"
        )
    return burst_factor * ramp_rps_per_s * lag


@dataclass(frozen=True)
class Headroom:
    """The warm headroom of one pool (one workload, one region, one configuration)."""

    lag_s: float
    """L = detection + replica start."""
    ramp: Ramp
    """The steepest rise between neighbouring hours."""
    burst_factor: float
    headroom_rps: float
    """H = b x max_t [d(t) - d(t - L)]."""
    capacity_rps_per_replica: float
    warm_rps_by_hour: tuple[float, ...]
    """Per UTC hour: min(max over the hour of d(t - L) + H, P), the rate the warm pool
    covers."""

    @property
    def headroom_replicas(self) -> int:
        """ceil(H / C): replicas kept running ahead of the ramp (forgives 1e-9 of noise)."""
        return math.ceil(round(self.headroom_rps / self.capacity_rps_per_replica, 9))

    @property
    def warm_replicas_by_hour(self) -> tuple[int, ...]:
        """Per UTC hour: ceil(warm rate / C)."""
        return tuple(
            math.ceil(round(rate / self.capacity_rps_per_replica, 9))
            for rate in self.warm_rps_by_hour
        )


def pool_headroom(
    demand_rps: Sequence[float],
    capacity_rps_per_replica: float,
    replica_start_s: float,
    detection_s: float = 60.0,
    burst_factor: float = 1.0,
) -> Headroom:
    """The headroom and hourly warm rate of a pool serving `demand_rps` (24 UTC hours).

    Raises:
        ValueError: a non-positive capacity, negative times, a burst factor below 1.
    """
    if capacity_rps_per_replica <= 0:
        raise ValueError(f"capacity_rps_per_replica must be > 0, got {capacity_rps_per_replica}")
    lag = lag_s(replica_start_s, detection_s)
    if burst_factor < 1:
        raise ValueError(f"burst_factor must be >= 1, got {burst_factor}")
    headroom = burst_factor * largest_rise_rps(demand_rps, lag)
    peak = max(demand_rps)
    warm = tuple(
        min(lagged_peak_rps(demand_rps, hour, lag) + headroom, peak)
        for hour in range(HOURS_PER_DAY)
    )
    return Headroom(
        lag_s=lag,
        ramp=steepest_ramp(demand_rps),
        burst_factor=burst_factor,
        headroom_rps=headroom,
        capacity_rps_per_replica=capacity_rps_per_replica,
        warm_rps_by_hour=warm,
    )


@dataclass(frozen=True)
class ScalingThresholds:
    """When a replica's metrics say the pool should grow."""

    target_utilization: float
    """u* = 1 - H / (n C): load over SLO capacity at which the pool adds replicas."""
    kv_usage_at_capacity: float
    """B / B_max: share of KV sequence slots in use at the SLO capacity."""
    kv_usage_scale_out: float
    """u* x B / B_max."""
    queue_depth_scale_out: float
    """Mean prompts waiting for prefill per replica at u* C (M/G/1)."""
    queue_depth_slo_edge: float
    """T / S - 1: prompts queued ahead beyond which the TTFT target cannot hold."""
    note: str = GPU_UTILISATION_NOTE

    @property
    def queue_trigger(self) -> float:
        """The queue depth to scale out at: the M/G/1 depth at u* C where the prefill lane
        is below saturation, else the SLO edge; 0 when neither is finite (no TTFT target
        and a saturated lane). The lane saturates (u* C S >= 1) where a replica's capacity
        batches prompts into shared prefill steps, so C exceeds 1 / S of one prompt alone."""
        if math.isfinite(self.queue_depth_scale_out):
            return self.queue_depth_scale_out
        edge = self.queue_depth_slo_edge
        return edge if math.isfinite(edge) else 0.0


def resident_batch(rate_rps: float, pool_batch: float, pool_rps: float) -> float:
    """Sequences resident in one replica at `rate_rps`, by Little's law at the duration
    a request spends in a replica of the pool at its capacity:

        B = rate x D,  D = pool_batch / pool_rps     (B_n at q(n): D = B_n / q(n))

    (`pool_batch` when the pool's capacity is not positive)."""
    if pool_rps <= 0:
        return pool_batch
    return rate_rps * pool_batch / pool_rps


def scaling_thresholds(
    capacity_rps_per_replica: float,
    headroom_rps: float,
    peak_replicas: int,
    mean_batch: float,
    max_batch: float,
    prefill_s: float,
    prompt_cv: float,
    ttft_p99_s: float | None,
) -> ScalingThresholds:
    """Scale-out thresholds on KV-cache usage and queue depth (see the module text).

    Args:
        capacity_rps_per_replica: C, requests/s of one replica at the SLO.
        headroom_rps: H of the pool.
        peak_replicas: n, the pool's replicas at its peak hour.
        mean_batch, max_batch: B at capacity and the sequences that fit (B_max);
            `ReplicaCapacity.batch` and `.max_batch`.
        prefill_s: S, prefill time of a mean prompt (`ReplicaCapacity.prefill_s`).
        prompt_cv: coefficient of variation of prompt length.
        ttft_p99_s: T, or None without a TTFT target (the edge is then infinite).

    Raises:
        ValueError: non-positive capacity, pool, batch limit or prefill time.
    """
    if capacity_rps_per_replica <= 0 or peak_replicas < 1 or max_batch <= 0 or prefill_s <= 0:
        raise ValueError(
            "need capacity > 0, peak_replicas >= 1, max_batch > 0 and prefill_s > 0, got "
            f"{capacity_rps_per_replica}, {peak_replicas}, {max_batch}, {prefill_s}"
        )
    target = max(0.0, 1 - headroom_rps / (peak_replicas * capacity_rps_per_replica))
    usage = min(mean_batch / max_batch, 1.0)
    rate = target * capacity_rps_per_replica
    queue = rate * mg1_mean_wait_s(rate, prefill_s, prompt_cv**2)
    edge = math.inf if ttft_p99_s is None else max(ttft_p99_s / prefill_s - 1, 0.0)
    return ScalingThresholds(
        target_utilization=target,
        kv_usage_at_capacity=usage,
        kv_usage_scale_out=target * usage,
        queue_depth_scale_out=queue,
        queue_depth_slo_edge=edge,
    )
