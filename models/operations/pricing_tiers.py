"""Reserved, on-demand and spot GPUs: the committed base for a day of hourly needs, and
the extra spot replicas that keep a pool whole through interruptions.

Committed base (one GPU offer). n_h GPUs are needed in hour h (weight w_h hours per
day, from `models.operations.time_periods.aggregate_periods`). A committed GPU costs r every hour;
an on-demand GPU costs p only in the hours it runs. Committing c GPUs costs per day

    cost(c) = r c W + p sum_h w_h max(n_h - c, 0),        W = sum_h w_h (24)

convex and piecewise linear in c, with slope r W - p H(c) where H(c) = sum of w_h over
hours with n_h > c. Raising c pays while H(c) p > W r: one more committed GPU is worth
it when it would otherwise run on demand in more than q = W r / p hours a day (the
newsvendor rule: commit the need that is exceeded in more than the break-even hours).
So c* is the smallest need level at which H(c) <= q, i.e. one of the n_h; at H(c) = q
exactly every c in that step costs the same and the smaller is taken. r >= p gives
q >= W: commit nothing. A cap M on on-demand GPUs forces c >= max_h n_h - M; the cost
is convex, so the capped optimum is max(c*, max n - M).

Spot. A spot replica is taken back at `spot_interruptions_per_hour` = lambda (Poisson,
independent between replicas) and its replacement serves after the replica start time
T (plus detection). A replica alternates up (mean 1/lambda) and down (T), so the
chance it is down at a random moment is

    u = lambda T / (1 + lambda T)                         (renewal, T in hours)

and the replicas down out of n are Binomial(n, u), taken as Poisson(n u) (a little
heavier-tailed, so conservative). Holding k replicas' worth of service with
confidence a needs the smallest n with P(Poisson(n u) <= n - k) >= a. Interruptions
are in reality correlated (a provider reclaims a whole type or zone at once), which
independence understates: for interactive SLOs the margin is a floor, and spot is
safest for batch work, whose lost work is only redone. Batch on spot keeps the share
(1 - u) of its replica time and loses, per interruption, the work in flight: about half
a request's duration d for each sequence, so its goodput is (1 - u)(1 - lambda d / 2).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class Commitment:
    """The committed base for one offer and what the day costs with it."""

    committed_gpus: float
    """c*: GPUs committed (paid every hour)."""
    breakeven_hours: float
    """q = W r / p: a committed GPU pays off when it would run on demand longer."""
    hours_above: float
    """H(c*): hours per day with need above the committed base (on-demand hours)."""
    on_demand_gpu_hours_per_day: float
    """sum_h w_h max(n_h - c*, 0)."""
    cost_per_day: float
    """r c* W + p x on-demand GPU-hours."""
    all_on_demand_cost_per_day: float
    """p sum_h w_h n_h: no commitment."""
    peak_reserved_cost_per_day: float
    """r W max n: everything committed at the peak."""


def daily_cost(
    committed_gpus: float,
    need_gpus: Sequence[float],
    reserved_price_per_gpu_hour: float,
    on_demand_price_per_gpu_hour: float,
    weight_hours: Sequence[float] | None = None,
) -> float:
    """cost(c) = r c W + p sum_h w_h max(n_h - c, 0), USD per day."""
    weights = _weights(need_gpus, weight_hours)
    on_demand = math.fsum(
        w * max(n - committed_gpus, 0.0) for n, w in zip(need_gpus, weights, strict=True)
    )
    return (
        reserved_price_per_gpu_hour * committed_gpus * math.fsum(weights)
        + on_demand_price_per_gpu_hour * on_demand
    )


def committed_base(
    need_gpus: Sequence[float],
    reserved_price_per_gpu_hour: float,
    on_demand_price_per_gpu_hour: float,
    weight_hours: Sequence[float] | None = None,
    max_on_demand_gpus: float | None = None,
) -> Commitment:
    """The cost-minimising committed GPU count for hourly needs (see the module text).

    Args:
        need_gpus: GPUs needed in each hour (or period).
        reserved_price_per_gpu_hour: r, paid for every committed GPU every hour.
        on_demand_price_per_gpu_hour: p, paid per GPU-hour used above the commitment.
        weight_hours: hours each entry stands for; default 1 each.
        max_on_demand_gpus: at most this many GPUs above the commitment in any hour.

    Raises:
        ValueError: a non-positive price, a negative need or weight, mismatched lengths.
    """
    if reserved_price_per_gpu_hour <= 0 or on_demand_price_per_gpu_hour <= 0:
        raise ValueError(
            "prices must be > 0, got reserved "
            f"{reserved_price_per_gpu_hour} and on-demand {on_demand_price_per_gpu_hour}"
        )
    weights = _weights(need_gpus, weight_hours)
    if any(n < 0 for n in need_gpus):
        raise ValueError(f"need_gpus must be >= 0, got {list(need_gpus)}")
    total_hours = math.fsum(weights)
    breakeven = total_hours * reserved_price_per_gpu_hour / on_demand_price_per_gpu_hour
    committed = 0.0
    for level in sorted({0.0, *need_gpus}):
        if _hours_above(level, need_gpus, weights) <= breakeven:
            committed = float(level)
            break
    if max_on_demand_gpus is not None:
        committed = max(committed, max(need_gpus, default=0.0) - max_on_demand_gpus)
    on_demand_hours = math.fsum(
        w * max(n - committed, 0.0) for n, w in zip(need_gpus, weights, strict=True)
    )
    return Commitment(
        committed_gpus=committed,
        breakeven_hours=breakeven,
        hours_above=_hours_above(committed, need_gpus, weights),
        on_demand_gpu_hours_per_day=on_demand_hours,
        cost_per_day=daily_cost(
            committed, need_gpus, reserved_price_per_gpu_hour, on_demand_price_per_gpu_hour, weights
        ),
        all_on_demand_cost_per_day=on_demand_price_per_gpu_hour
        * math.fsum(w * n for n, w in zip(need_gpus, weights, strict=True)),
        peak_reserved_cost_per_day=reserved_price_per_gpu_hour
        * total_hours
        * max(need_gpus, default=0.0),
    )


def spot_down_fraction(interruptions_per_hour: float, replica_start_s: float) -> float:
    """u = lambda T / (1 + lambda T): the share of time a spot replica is down, T the
    seconds its replacement takes to serve (in hours inside)."""
    if interruptions_per_hour < 0 or replica_start_s < 0:
        raise ValueError(
            "interruptions_per_hour and replica_start_s must be >= 0, got "
            f"{interruptions_per_hour} and {replica_start_s}"
        )
    lost_h = interruptions_per_hour * replica_start_s / SECONDS_PER_HOUR
    return lost_h / (1 + lost_h)


def poisson_quantile(mean: float, confidence: float) -> int:
    """The smallest k with P(Poisson(mean) <= k) >= confidence."""
    if mean < 0 or not 0 < confidence < 1:
        raise ValueError(f"need mean >= 0 and 0 < confidence < 1, got {mean}, {confidence}")
    term = cumulative = math.exp(-mean)
    k = 0
    while cumulative < confidence:
        k += 1
        term *= mean / k
        cumulative += term
    return k


def spot_margin(down_fraction: float, max_replicas: int, confidence: float) -> float:
    """beta = max_{1 <= n <= N} (Q(n u, a) - n u): replicas down beyond the expected n u
    that bound the Poisson quantile at every pool size up to N (u `down_fraction`, N
    `max_replicas`, a `confidence`; solver.program.families.spot_pools)."""
    return max(
        (
            poisson_quantile(n * down_fraction, confidence) - n * down_fraction
            for n in range(1, max(max_replicas, 1) + 1)
        ),
        default=0.0,
    )


@dataclass(frozen=True)
class SpotMargin:
    """Spot replicas that hold a serving count through interruptions."""

    needed_replicas: int
    """k: replicas that must be serving."""
    down_fraction: float
    """u: share of time one spot replica is down."""
    expected_down_replicas: float
    """n u at the chosen n."""
    spot_replicas: int
    """n: the smallest count with P(Poisson(n u) <= n - k) >= confidence."""
    confidence: float

    @property
    def margin_replicas(self) -> int:
        """n - k: spares bought against interruptions."""
        return self.spot_replicas - self.needed_replicas


def spot_replicas_for(
    needed_replicas: int,
    interruptions_per_hour: float,
    replica_start_s: float,
    confidence: float = 0.99,
) -> SpotMargin:
    """The fewest spot replicas that keep `needed_replicas` serving with `confidence`.

    Raises:
        ValueError: a negative count, or a confidence outside (0, 1), or a down fraction
            so high that no count reaches the confidence (u >= 1 cannot happen for
            finite rates; the search stops at 100 x the need).
    """
    if needed_replicas < 0:
        raise ValueError(f"needed_replicas must be >= 0, got {needed_replicas}")
    down = spot_down_fraction(interruptions_per_hour, replica_start_s)
    count = needed_replicas
    limit = max(100 * needed_replicas, 100)
    while count <= limit:
        if count - poisson_quantile(count * down, confidence) >= needed_replicas:
            return SpotMargin(needed_replicas, down, count * down, count, confidence)
        count += 1
    raise ValueError(
        f"spot replicas are down {down:.0%} of the time: no count up to {limit} holds "
        f"{needed_replicas} with confidence {confidence}"
    )


def spot_batch_goodput(
    interruptions_per_hour: float, replica_start_s: float, request_duration_s: float
) -> float:
    """Share of a spot replica's paid time that finishes batch work:
    (1 - u) (1 - lambda d / 2), d the request duration in hours (0 when work is lost
    faster than it finishes)."""
    down = spot_down_fraction(interruptions_per_hour, replica_start_s)
    redo = interruptions_per_hour * request_duration_s / SECONDS_PER_HOUR / 2
    return max(0.0, (1 - down) * (1 - redo))


def _hours_above(level: float, need_gpus: Sequence[float], weights: Sequence[float]) -> float:
    return math.fsum(w for n, w in zip(need_gpus, weights, strict=True) if n > level)


def _weights(need_gpus: Sequence[float], weight_hours: Sequence[float] | None) -> list[float]:
    if weight_hours is None:
        return [1.0] * len(need_gpus)
    if len(weight_hours) != len(need_gpus):
        raise ValueError(f"weight_hours has {len(weight_hours)} entries for {len(need_gpus)} needs")
    if any(w < 0 for w in weight_hours):
        raise ValueError(f"weight_hours must be >= 0, got {list(weight_hours)}")
    return list(weight_hours)
