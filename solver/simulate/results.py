"""The simulator's results: per pool simulated and analytic latencies and the SLO verdict
(`solver.simulate.replay`, `solver.simulate.pair_rows`)."""

import math

import numpy as np
from pydantic import BaseModel, ConfigDict

from solver.simulate.batch_deadline import BatchDeadline

_FROZEN = ConfigDict(extra="forbid", frozen=True)
EFFECTS = ("batching", "preemption", "interference", "hol_blocking")


class ReplayStopped(Exception):
    """The caller's `stop` said so between two runs of a pool: the pool is left out."""


def check_stop(stop) -> None:
    """Raise ReplayStopped where `stop` (a no-argument callable, or None) says so.

    Raises:
        ReplayStopped: `stop()` is true.
    """
    if stop is not None and stop():
        raise ReplayStopped


"""Engine effects the simulator can switch off, in the order reported."""


class Latencies(BaseModel):
    """p50 and p99 TTFT and TPOT, ms (None: unbounded)."""

    model_config = _FROZEN

    ttft_p50_ms: float | None
    ttft_p99_ms: float | None
    tpot_p50_ms: float | None
    tpot_p99_ms: float | None


class SoakReplay(BaseModel):
    """One batch soaked into a replayed pool beside its interactive requests
    (`solver.simulate.soak`): what was injected and the throughput it got."""

    model_config = _FROZEN

    batch: str
    planned_requests_per_s: float
    """The plan's soak rate on this pool in the hour replayed (`Hour.batch_soak`)."""
    injected: int
    """Batch requests that arrived over the whole run (Poisson at the planned rate)."""
    measured_from_s: float = 0.0
    """Where the measured span starts: the later of the warm-up and the time the pool
    takes to fill with the batch (`solver.simulate.soak.filled_s`)."""
    finished_in_span: int
    """Batch requests that finished between `measured_from_s` and the end of the arrivals."""
    achieved_requests_per_s: float
    """`finished_in_span` per second of that span."""
    unfinished: int = 0
    """Batch requests still unfinished when the run stopped."""
    shortfall: bool = False
    """The achieved throughput falls short of the plan's rate beyond Poisson noise
    (`solver.simulate.soak.SHORTFALL_SIGMAS`)."""


class PoolSimulation(BaseModel):
    """One pool: its load, the simulated and analytic latency, and the SLO verdict."""

    model_config = _FROZEN

    workload: str
    region: str
    role: str
    gpu: str
    precision: str
    tp: int
    pp: int
    configuration: str = ""
    """The plan's label of the pool's configuration (`solver.plan.records.layout_label`:
    `b200 fp8 tp1xpp1xdp8 ep8 unified`, `... unified spec eagle`), as the plan, its
    scenario rows and the hours name it; tp and pp alone do not tell an attention-DP,
    expert-parallel or speculating pool from a plain one (empty: written before it)."""
    replicas: int
    load_requests_per_s: float
    simulated: Latencies | None
    analytic: Latencies | None
    ttft_p99_target_ms: float | None = None
    tpot_p99_target_ms: float | None = None
    meets_slo: bool | None
    """Every p99 target kept within sampling error (`meets_p99`); None when the pool was
    not simulated."""
    requests_measured: int = 0
    unfinished: int = 0
    """Measured requests still unfinished when the run stopped (an unstable pool)."""
    preemptions: int = 0
    mean_batch: float = 0.0
    """Time-averaged decoding sequences per replica in the simulation."""
    tolerated_burstiness_cv: float | None = None
    """Largest coefficient of variation of inter-arrival times (same mean rate, same
    seed) at which the pool still meets its SLO (`solver.simulate.tolerance`; a
    disaggregated pair is judged together). None: not searched, or it misses even at
    the smoothest arrivals searched."""
    effects_ttft_p99_ms: dict[str, float | None] = {}
    """p99 TTFT with each engine effect switched off (`none_off`: all on)."""
    effects_tpot_p99_ms: dict[str, float | None] = {}
    """p99 TPOT with each engine effect switched off (a decode pool of a disaggregated
    pair, whose TTFT is its prefill pool's)."""
    note: str = ""
    batch: tuple[SoakReplay, ...] = ()
    """The batch the hour's plan soaks into this pool, replayed beside its requests (the
    latencies and `load_requests_per_s` are the interactive requests' alone)."""


def pool_fields(pool) -> dict:
    """The fields of a `PoolSimulation` that name the plan's pool (a `ReplicaPool`)."""
    return {
        "workload": pool.workload,
        "region": pool.region,
        "role": str(pool.role),
        "gpu": pool.gpu,
        "precision": str(pool.precision),
        "tp": pool.tp,
        "pp": pool.pp,
        "configuration": pool.label,
    }


P99_REQUESTS = 100
"""Requests a pool's p99 is read from at the least: one of them past the 99th percentile."""


class PlanSimulation(BaseModel):
    """A plan's scenario replayed in the simulator."""

    model_config = _FROZEN

    instance: str
    scenario: str
    duration_s: float
    warmup_s: float
    seed: int
    burstiness_cv: float
    dispatch: str
    pools: tuple[PoolSimulation, ...]
    events: int = 0
    arrivals: str = "open"
    """`open` (Poisson or gamma at the load), or a closed-loop client: `burst`,
    `staggered` (`solver.simulate.closed_rows`)."""
    concurrency: int | None = None
    """Closed loop: users per replica."""
    not_simulated: tuple[str, ...] = ()
    """`workload region phase` of the pools the caller's `stop` left out (its deadline
    passed before or while they ran: `simulate_plan`), and `workload region phase: n x
    label (why)` of the speculating pools, which the engine does not replay
    (`solver.simulate.replay.SPECULATION_NOTE`), and `batch soaked into workload region
    configuration: rate ...` of an hour's soaked batch whose pool was not replayed."""
    hour: int | None = None
    """The UTC hour of an hourly plan replayed (None: a static plan)."""
    month: int | None = None
    """The month of a plan with months replayed (None: a plan without months)."""
    replayed: str = ""
    """The hour replayed in words, e.g. `the peak hour, 14:00 UTC` ('' for a static
    plan: solver.simulate.hours)."""
    batch_deadlines: tuple[BatchDeadline, ...] = ()
    """Each batch workload's dedicated pools in a region, checked by throughput over the
    day (solver.simulate.batch_deadline)."""

    @property
    def meets_slo(self) -> bool:
        """Every simulated pool within its SLO, and every batch deadline met."""
        return all(pool.meets_slo is not False for pool in self.pools) and all(
            check.met for check in self.batch_deadlines
        )

    @property
    def batch_shortfalls(self) -> list[str]:
        """`batch on workload region configuration: achieved of planned requests/s` of
        each soaked batch whose replayed throughput fell short of the plan's rate."""
        return [
            f"{b.batch} on {p.workload} {p.region} {p.configuration}: "
            f"{b.achieved_requests_per_s:,.2f} of the planned {b.planned_requests_per_s:,.2f} "
            "requests/s finished"
            for p in self.pools
            for b in p.batch
            if b.shortfall
        ]

    def unmeasured(self) -> str | None:
        """Why the run was too short to judge a pool it loads, or None: no request of the
        pool arrived after the warm-up, so its p99s are '-' and its verdict none (0.001 s
        of a 20 requests/s pool exited 0 with an empty table). Names the least run that
        measures `P99_REQUESTS` of the slowest such pool's requests: d - warm-up >= n / rate,
        the warm-up min(60 s, 10% of d)."""
        empty = [p for p in self.pools if p.load_requests_per_s > 0 and not p.requests_measured]
        if not empty:
            return None
        slowest = min(empty, key=lambda pool: pool.load_requests_per_s)
        span_s = P99_REQUESTS / slowest.load_requests_per_s
        least_s = span_s / 0.9 if span_s <= 540 else span_s + 60
        return (
            f"{self.duration_s:g} s of arrivals measured no request of {len(empty)} loaded "
            f"pool{'s' if len(empty) > 1 else ''} after the {self.warmup_s:g} s warm-up "
            f"({slowest.workload} {slowest.region} at {slowest.load_requests_per_s:,.4g} "
            f"requests/s); a p99 needs {P99_REQUESTS} requests: give --duration-s "
            f"{least_s:,.4g} or more"
        )


def measured_ms(seconds: float) -> float | None:
    """Seconds as ms; None for an infinite or NaN value (never served)."""
    return None if math.isinf(seconds) or math.isnan(seconds) else seconds * 1e3


def quantile(values: np.ndarray, q: float) -> float:
    """The q-quantile, NaN (a request never served) counted as infinitely late."""
    if values.size == 0:
        return math.nan
    filled = np.where(np.isnan(values), np.inf, values)
    return float(np.quantile(filled, q, method="higher"))


SAMPLING_BATCHES = 20
"""Slices of a run for the batch-means standard error of `meets_p99`."""
Z_ONE_SIDED_99 = 2.326
"""One-sided 99% normal quantile: a miss must stand out of the sampling noise."""


def meets_p99(values_s: np.ndarray, target_ms: float | None) -> bool:
    """Whether simulated latencies (seconds, in arrival order; NaN never served) keep a
    p99 target within sampling error: the share above the target is at most
    1% + 2.326 standard errors (always true without a target).

    The standard error is from batch means: the share's spread over `SAMPLING_BATCHES`
    consecutive slices / sqrt(slices). Requests that queue in the same busy period are
    correlated, so the binomial sqrt(p (1 - p) / N) would understate it: a pool planned
    at exactly its capacity shows a p99 TPOT within +-3 ms of a 50 ms target from one
    10-minute seed to the next."""
    if target_ms is None:
        return True
    above = ~(values_s * 1e3 <= target_ms)
    share = float(above.mean()) if above.size else 0.0
    if share <= 0.01:
        return True
    if above.size < 2 * SAMPLING_BATCHES:
        return False
    shares = [part.mean() for part in np.array_split(above, SAMPLING_BATCHES)]
    error = float(np.std(shares, ddof=1)) / math.sqrt(SAMPLING_BATCHES)
    return share <= 0.01 + Z_ONE_SIDED_99 * error
