"""The plan's records of time planning (issue 11): the UTC hours of the representative
day with their pools, GPUs, spot replicas, batch soak and failover starts; commitments,
warm headroom and the error budget's use; the months of the procurement horizon; and
where batch work is served."""

import math
import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, model_validator

from solver.plan.records import (
    FROZEN,
    Binding,
    Real,
    RegionPower,
    ReplicaPool,
    ScenarioResult,
    Whole,
)

_STATUS = re.compile(
    r"optimal|given|feasible \(gap (unknown|nan%|inf%|-?[0-9][0-9,]*(\.[0-9]+)?%)\)"
)
"""The status words `solver.plan.schema.plan_status` writes, and "given" for a plan
written by hand."""


OPTIMAL_GAP_CEILING = 0.01
"""Largest gap (1%) a plan may be from its bound and still be called "optimal", whatever
gap was requested: `mip_gap: 0.999` may stop the solver at 57%, which is no optimum."""


def status_against_gap(status: str, mip_gap: float | None) -> str | None:
    """Why `status` cannot be what a solve wrote beside `mip_gap` (None where it can):
    `plan_status` writes "optimal" only within OPTIMAL_GAP_CEILING, "feasible (gap X%)"
    with the gap reached as a percentage and "feasible (gap unknown)" only without a gap.
    A hand-edited `mip_gap: 0.5` under "feasible (gap 41.37%)" verified as the solve's."""
    if mip_gap is None or not math.isfinite(mip_gap):
        return None
    if status == "optimal" and mip_gap > OPTIMAL_GAP_CEILING + 1e-12:
        return f"beside mip_gap {mip_gap:g}: a plan is called optimal within 1% of its bound"
    if status == "feasible (gap unknown)":
        return f"beside mip_gap {mip_gap:g}: a plan with a gap states it"
    stated = re.fullmatch(r"feasible \(gap (-?[0-9][0-9,]*)(\.[0-9]+)?%\)", status)
    if stated is None:
        return None
    percent = float(stated[1].replace(",", "") + (stated[2] or ""))
    half_digit = 0.5 * 10.0 ** -len((stated[2] or ".")[1:])  # '41.37' is 41.365 .. 41.375
    if abs(100 * mip_gap - percent) > half_digit * (1 + 1e-9) + 1e-12:
        return f"beside mip_gap {mip_gap:g} ({100 * mip_gap:.6g}%): the gaps differ"
    return None


def known_status(status: str) -> str:
    """Refuse a status no solve writes: 'happy', or 'infeasible' beside replicas, verified
    'ok' and was carried on by report and deploy."""
    if not _STATUS.fullmatch(status):
        raise ValueError(f"must be 'optimal', 'feasible (gap X%)' or 'given', got {status!r}")
    return status


class HourGpus(BaseModel):
    """GPUs of one type in one region in one UTC hour, by how they are paid for."""

    model_config = FROZEN

    region: str
    gpu: str
    used: Whole
    """GPUs the hour's replicas hold."""
    existing: Whole = 0
    """Owned GPUs (already paid for) among the used ones."""
    reserved: Real = 0.0
    """Committed GPUs in use this hour (paid every hour whether used or not)."""
    on_demand: Real = 0.0
    """GPUs rented by the hour this hour: used - existing - reserved - spot, in whole
    servers where GPUs come in servers (so the four may add up to less than a server
    more than `used`)."""
    spot: Real = 0.0
    """Spot GPUs (interruptible) this hour: dedicated batch replicas, and interactive
    pools' spot replicas with policy.spot_confidence."""


class Hour(BaseModel):
    """One UTC hour of the representative day."""

    model_config = FROZEN

    hour: Whole = Field(ge=0, le=23)
    period: Whole
    """First hour of the program period this hour belongs to (hours with equal warm
    demand share one period)."""
    pools: tuple[ReplicaPool, ...] = ()
    """Replicas running in this hour, per pool (batch dedicated pools included)."""
    gpus: tuple[HourGpus, ...] = ()
    cost_per_hour: Real = 0.0
    """Reserved GPUs committed (used or not) x reserved price + on-demand and spot GPUs x
    their price, this hour."""
    failover_starts: tuple["FailoverStart", ...] = ()
    """Replicas started in the survivors if a region is lost in this hour (they serve
    after `policy.failover_start_s`; until then the warm pools carry the load and the
    gap is spent from the error budget). Not paid in the month: they run only in a loss."""
    batch_soak: tuple["BatchSoak", ...] = ()
    """Batch work served on interactive pools this hour (their idle capacity)."""
    spot_pools: tuple["SpotReplicas", ...] = ()
    """Interactive replicas on spot this hour (policy.spot_confidence), per pool."""
    scenarios: tuple[ScenarioResult, ...] = ()
    """How this hour's pools serve each scenario: its period's routing and the load of
    every phase, the replicas started after a loss included (the record of the plan's
    `scenarios`, which is the peak period's). What `fleetplan simulate --hour` replays."""


class SpotReplicas(BaseModel):
    """The replicas of one interactive pool that run on spot in one hour."""

    model_config = FROZEN

    workload: str
    region: str
    configuration: str
    replicas: Whole
    """Of the pool's replicas, those on spot."""
    down_fraction: Real
    """u: share of time one spot replica is down (interruption + restart)."""
    down_replicas: Whole
    """Q(n u, a): replicas down at once with the plan's confidence a (the margin the
    pool carries its load without)."""


class BatchSoak(BaseModel):
    """Batch requests/s one interactive pool serves in one hour beside its own load."""

    model_config = FROZEN

    batch: str
    """The batch workload."""
    workload: str
    """The interactive workload whose pool soaks it."""
    region: str
    configuration: str
    """The pool's configuration key."""
    requests_per_s: Real = Field(ge=0)
    """Batch requests/s served on the pool this hour."""
    batch_requests_per_s_per_replica: Real = Field(ge=0)
    """C_b: one replica of the configuration running the batch mix alone."""
    limit: str = ""
    """What sets C_b (e.g. kv_memory for long contexts)."""


class FailoverStart(BaseModel):
    """Replicas of one pool started after one region loss."""

    model_config = FROZEN

    scenario: str
    """E.g. `lose=eu-west`."""
    pool: ReplicaPool
    """The started replicas (count) of one configuration in one surviving region."""


class Commitment(BaseModel):
    """Committed (reserved) GPUs of one type in one region, paid every hour."""

    model_config = FROZEN

    region: str
    gpu: str
    committed_gpus: Real
    reserved_price_per_gpu_hour: Real
    on_demand_price_per_gpu_hour: Real


class PoolHeadroom(BaseModel):
    """Warm headroom of one pool ahead of its steepest ramp, and the scaling signal."""

    model_config = FROZEN

    workload: str
    region: str
    configuration: str
    replica_start_s: Real
    lag_s: Real
    """Detection + replica start: from a rise to capacity that serves it."""
    steepest_ramp_rps_per_minute: Real
    headroom_rps: Real
    headroom_replicas: Whole
    capacity_rps_per_replica: Real
    peak_replicas: Whole
    target_utilization: Real
    kv_usage_scale_out: Real
    """Scale out when KV-cache usage per replica passes this share."""
    queue_depth_scale_out: Real
    """Scale out when prompts waiting for prefill per replica pass this (ScalingThresholds.
    queue_trigger, the number deploy writes: the SLO edge where the prefill lane saturates)."""
    queue_depth_slo_edge: Real | None
    """Past this queue depth the TTFT target is gone (None: no TTFT target)."""
    signal_note: str = ""


class ScenarioBudgetUse(BaseModel):
    """Error-budget minutes one failure scenario spends, at its worst UTC hour."""

    model_config = FROZEN

    scenario: str
    workload: str
    worst_hour: Whole
    failover_start_s: Real
    shortfall_rps: Real
    """Load beyond the survivors' warm capacity until started replicas serve."""
    budget_minutes: Real
    """The month's budget from slo.availability, minutes of full outage."""
    budget_minutes_used: Real
    expected_burn_minutes_per_year: Real | None = None
    """lambda x mean over the hours (failure_probability_per_year given)."""
    losses_per_month: Real = 1.0
    """m: losses of the region the month's budget absorbs, max(1, expected losses a
    month); the plan keeps m x budget_minutes_used <= budget_minutes."""
    started_replicas: Whole = 0
    """Replicas started in the survivors after a loss at the worst hour."""


class MonthOffer(BaseModel):
    """One GPU offer in one month of the procurement horizon."""

    model_config = FROZEN

    region: str
    gpu: str
    peak_need_gpus: Real
    """The most GPUs of this offer the month's hourly plan runs in any hour."""
    committed_gpus: Real
    """Committed (bought) GPUs serving this month; never fewer than the month before."""
    ordered_gpus: Real
    """Committed GPUs ordered this month (they serve lead_time_months later)."""
    on_demand_gpu_hours: Real
    cost: Real
    """USD this month: committed x reserved price every hour, plus on demand and spot."""
    owned_gpus: Real = 0.0
    """The fleet held this month: the existing GPUs plus the committed ones."""
    bought_gpus: Real = 0.0
    """Committed GPUs that start serving this month (committed less last month's)."""
    order_month: Whole | None = None
    """When `bought_gpus` must be ordered: this month less lead_time_months (negative
    for month 0's commitment: ordered before the horizon starts); None when none."""


class ServerOrder(BaseModel):
    """Servers one month's commitment adds in one region, and when they must be ordered."""

    model_config = FROZEN

    region: str
    gpu: str
    servers: Whole
    """Whole servers (policy.buy_unit: node; with buy_unit gpu each server is one GPU)."""
    gpus_per_server: Whole
    order_month: Whole
    """The month they are ordered: the month they serve less lead_time_months (negative
    for month 0's commitment, ordered before the horizon starts)."""


def _month_status(status: str) -> str:
    """A month's status: a word a solve writes (`known_status`: 'happy' read 'gap 0.00%' in
    the months table), or empty."""
    return status if status == "" else known_status(status)


class Month(BaseModel):
    """One month of the procurement horizon: its own hourly plan at its own demand."""

    model_config = FROZEN

    month: Whole
    growth_factor: Real
    cost_per_month: Real
    status: Annotated[str, AfterValidator(_month_status)] = ""
    """The month's own plan's status: optimal | feasible (gap X%) (solver.plan.schema
    .plan_status; each month is solved within its share of the time limit); empty in a
    plan written before months stated it."""
    mip_gap: Real | None = Field(default=None, ge=0)
    """The month's own plan's gap to its bound, a fraction >= 0 (None: no bound)."""
    stopped_at_limit: bool = False
    """Whether the month's solve stopped at its share of the time limit before its gap
    closed: its plan is the best it had then (the held fleet's where the search had
    none: solver.decompose.by_period), `mip_gap` against the bound it had."""
    offers: tuple[MonthOffer, ...] = ()
    hours: tuple[Hour, ...] = ()
    """The month's 24 UTC hours, planned at the month's grown demand (month 0: the
    plan's own `hours`, not repeated)."""
    committed: tuple[Commitment, ...] = ()
    """The month's commitments (month 0: the plan's own `committed`, not repeated)."""
    servers_ordered: tuple[ServerOrder, ...] = ()
    """The servers this month's commitment adds (its offers' `bought_gpus` / GPUs per
    server), each with its order month."""
    binding: tuple[Binding, ...] = ()
    """The month's binding constraints with their shadow prices, from its own pricing LP,
    each with `month` set (month 0: the plan's own `binding`, not repeated)."""
    shadow_price_note: str = ""
    """How the month's shadow prices were computed, or why it has none (month 0: the
    plan's own note)."""
    idle_fraction: Real | None = Field(default=None, ge=0, le=1)
    """The month's idle share over the GPUs paid, over its day's hours (solver.time.readback.idle;
    month 0: the plan's own `idle_fraction`, stated here too)."""
    error_budget_minutes_used: tuple["ScenarioBudgetUse", ...] = ()
    """Per region loss, the budget minutes a loss at the month's worst hour spends at
    the month's grown demand (the record of the plan's `error_budget_minutes_used`;
    month 0: the plan's own, not repeated)."""
    power_kw: tuple[RegionPower, ...] = ()
    """The month's power per region in the record of the plan's `power_kw`: kW its GPUs
    draw in the month's busiest hour (what the cap bounds in every period:
    solver.time.months.month_power), the cap, and the cap's $/month per kW from the
    month's own pricing LP (0 where it does not bind)."""

    @model_validator(mode="after")
    def _status_of_its_gap(self) -> "Month":
        """The month's status is the one its gap gives (`status_against_gap`)."""
        if why := status_against_gap(self.status, self.mip_gap):
            raise ValueError(f"status {self.status!r} {why}")
        return self


class BatchPlacement(BaseModel):
    """How one batch workload's daily volume in one region is served."""

    model_config = FROZEN

    workload: str
    region: str
    requests_per_day: Real
    deadline_hours: Real
    soaked_requests_per_day: Real
    """Served on idle interactive replicas of the same model in the trough."""
    soak_limit: str = ""
    """What limits a batch replica on the interactive configuration (e.g. kv_memory)."""
    soak_requests_per_s_per_replica: Real = 0.0
    idle_replica_hours_before: Real = 0.0
    idle_replica_hours_after: Real = 0.0
    dedicated_replicas: Whole = 0
    dedicated_configuration: str = ""
    dedicated_tier: str = ""
    """on_demand or spot: how the dedicated replicas are paid; `on_demand+spot` where
    some run on spot and the rest on committed or rented GPUs (as `dedicated_configuration`
    joins the configurations of pools on several)."""
    dedicated_cost_per_month: Real = 0.0
    breakeven_price_per_gpu_hour: Real | None = None
    """Dedicated GPU-hour price above which soaking is cheaper per batch request."""


Hour.model_rebuild()
