"""The plan: what to run where, what it costs, what binds it, and how it rides failures.

Frozen pydantic records; `Plan.model_dump_json()` is the `--json` output and
`Plan.model_validate_json()` reads it back (for `fleetplan verify`). Only `replicas` is
needed to verify a fleet: a file holding `{"replicas": [...]}` describes a fleet that a
user owns today, and every other field has a default. The records the plan is made of
live in `solver.plan.records` (pools, GPUs, scenarios, co-location) and
`solver.plan.time_records` (hours, commitments, months, batch).
"""

import math
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, model_validator

from models.schema.quantities import DemandGrowth, MaxUtilization
from solver.plan.records import (
    FROZEN,
    Binding,
    BuyerSummary,
    ColocationSearch,
    CostAttribution,
    GpuUse,
    MaybeMoney,
    Real,
    RegionPower,
    ReplicaPool,
    ScenarioResult,
    ServerPurchase,
    SimplicityCost,
    SolverRun,
    Tiering,
    Whole,
)
from solver.plan.time_records import (
    OPTIMAL_GAP_CEILING,
    BatchPlacement,
    Commitment,
    Hour,
    Month,
    PoolHeadroom,
    ScenarioBudgetUse,
    known_status,
    status_against_gap,
)

SHADOW_PRICE_NOTE = (
    "Shadow prices are not MIP duals (an integer program has none). They come from the "
    "LP with the plan's discrete choices fixed (which configurations run in which "
    "region, which pools are open, which pooling steps they are credited with) and "
    "replica counts relaxed to continuous: the marginal $/month of one more unit of "
    "each right-hand side for this plan's layout."
)
NO_SHADOW_PRICES = "no shadow prices"
"""What every shadow-price note of a plan without prices says (the pricing LP skipped or
stopped by the time limit, a backend without duals, a month cut at the limit)."""


def plan_status(proven: bool, mip_gap: float | None, requested_gap: float) -> str:
    """The status word of a solved plan, never more than the solver showed.

    "optimal" only when the backend proved the plan within the requested gap and that
    gap is at most `OPTIMAL_GAP_CEILING`; otherwise "feasible (gap X%)" with the gap
    reached (or "feasible (gap unknown)" without a bound).

    Args:
        proven: The backend ended OPTIMAL (within the requested gap).
        mip_gap: The gap it reports; None when it gives no bound.
        requested_gap: The gap the user asked to stop at.
    """
    if mip_gap is None:
        return "optimal" if proven else "feasible (gap unknown)"
    if proven and mip_gap <= min(requested_gap, OPTIMAL_GAP_CEILING) + 1e-12:
        return "optimal"
    return f"feasible (gap {gap_percent(mip_gap)})"


def gap_percent(gap: float) -> str:
    """`gap` as a percentage with two decimals, or with two significant digits where two
    decimals would read 0.00% (a gap of 1.8e-7 against `mip_gap: 0` read "feasible (gap
    0.00%)", as if the gap were none)."""
    if 0 < gap < 5e-5 and math.isfinite(gap):
        return f"{gap:.{1 - math.floor(math.log10(gap * 100))}%}"
    return f"{gap:.2%}"


class Plan(BaseModel):
    """A fleet plan for one instance."""

    model_config = FROZEN

    instance: str = ""
    """The instance's name."""
    status: Annotated[str, AfterValidator(known_status)] = "given"
    """optimal | feasible (gap X%) | given (written by hand); see `plan_status`."""
    cost_per_month: MaybeMoney = None
    """USD per month for the GPUs bought (the existing fleet is already paid for)."""
    total_gpus: Whole | None = None
    gpus: tuple[GpuUse, ...] = ()
    replicas: tuple[ReplicaPool, ...] = ()
    binding: tuple[Binding, ...] = ()
    scenarios: tuple[ScenarioResult, ...] = ()
    solver: SolverRun | None = None
    shadow_price_note: str = ""
    notes: tuple[str, ...] = ()
    cost_attribution: tuple[CostAttribution, ...] = ()
    """Per workload and region: $/month, the prefill/decode split and $ per million tokens."""

    hours: tuple["Hour", ...] = ()
    """The 24 UTC hours of the representative day (time planning, issue 11)."""
    committed: tuple["Commitment", ...] = ()
    idle_gpu_hours_per_day: Real | None = None
    """GPU-hours per day running without load or committed and not running."""
    idle_replica_hours_per_day: Real | None = None
    headroom: tuple["PoolHeadroom", ...] = ()
    error_budget_minutes_used: tuple["ScenarioBudgetUse", ...] = ()
    months: tuple["Month", ...] = ()
    horizon_cost: MaybeMoney = None
    """USD over the procurement horizon: the sum of the months' cost_per_month (None
    without policy.horizon_months)."""
    batch: tuple["BatchPlacement", ...] = ()

    idle_fraction: Real | None = Field(default=None, ge=0, le=1)
    """GPU-hours idle / GPU-hours paid at peak with no failure: 1 - sum_p gpus_p x
    utilisation_p / sum_{r,g} gpus[r,g].paid, busy GPUs over every pool and shared group,
    over the GPUs the bill covers (bought, in whole servers, plus the owned ones in use):
    a server of 8 bought for 3 busy GPUs is 5 idle GPUs (solver.readback.groups). An
    hourly plan states the same share over the day's hours, committed GPUs paid in every
    hour (solver.time.readback.idle)."""
    capacity_unit: str = ""
    """The unit of `ReplicaPool.capacity_units_per_replica` (solver.analysis.capacity_report)."""
    colocation: "ColocationSearch | None" = None
    """With policy.colocation: how the group templates were generated (column generation)
    and the LP bound of the tail's packing."""
    tiering: "Tiering | None" = None
    """With policy.colocation: who shares, who pays the bills, what sharing saved."""
    servers: tuple[ServerPurchase, ...] = ()
    """Whole servers to buy per region and GPU type (policy.buy_unit: node)."""
    power_kw: tuple[RegionPower, ...] = ()
    """Power drawn per region with GPUs, against its power_kw."""
    demand_growth: DemandGrowth = 1.0
    """The factor the plan applied to all demand (within the instance's bounds: a
    tampered -1 was shown by report as 'planned for -1x today's demand')."""
    max_utilization: MaxUtilization = 1.0
    """The largest fraction of a pool's capacity at the SLO the plan allows (in [0.01,
    1], as the policy's)."""
    simplicity: SimplicityCost | None = None
    """What the limit on configurations per pool costs (None: no limit)."""
    warm_cold_split: tuple[str, ...] = ()
    """Workloads served by a warm and a cold pool (`<name>-warm`, `<name>-cold`,
    `models.colocation.warm_cold`): chosen where it was cheaper than serving them whole."""
    warm_cold_unsplit_cost_per_month: MaybeMoney = None
    """With policy.warm_cold_split: the cost of the plan that does not split (None when
    no workload could be split, or the unsplit plan has no solution)."""
    engine: str = ""
    """The engine profile whose calibrated efficiency factors the physics used
    (`models.physics.efficiency`; '' in a plan written by hand)."""
    borrowed_efficiency: bool = False
    """Whether a GPU type the plan uses runs on efficiency factors fitted on another
    GPU's rows (or pooled); `efficiency_note` names them."""
    efficiency_note: str = ""
    """The engine profile and the GPUs on borrowed efficiencies, as one line."""
    summary: BuyerSummary | None = None
    """The buyer's one-screen summary (solver.plan.summary), read off the fields
    above; None in a plan written by hand."""

    @model_validator(mode="after")
    def _status_of_its_gap(self) -> "Plan":
        """The plan's status is the one its solver's gap gives (`status_against_gap`)."""
        gap = self.solver.mip_gap if self.solver else None
        if why := status_against_gap(self.status, gap):
            raise ValueError(f"status {self.status!r} {why.replace('mip_gap', 'solver.mip_gap')}")
        return self

    @property
    def priced(self) -> bool:
        """Whether the plan's shadow prices were worked out: without them the binding rows
        it lists are not known in full (`NO_SHADOW_PRICES`)."""
        return NO_SHADOW_PRICES not in self.shadow_price_note

    @property
    def optimal(self) -> bool:
        """Whether the plan is proven optimal (see `plan_status`)."""
        return self.status == "optimal"

    def gpu_types_run(self, over_horizon: bool = True) -> tuple[str, ...]:
        """The GPU types the plan runs replicas on: its peak fleet's and every hour's
        (pools and the replicas started after a loss), and every month's where it is read
        over its horizon (`over_horizon`). Month 0's peak fleet alone leaves out a type a
        later month or an off-peak hour adds."""
        hours = [*self.hours, *(h for m in self.months if over_horizon for h in m.hours)]
        pools = [
            *self.replicas,
            *(p for hour in hours for p in hour.pools),
            *(start.pool for hour in hours for start in hour.failover_starts),
        ]
        return tuple(sorted({p.gpu for p in pools if p.count}))

    def gpus_by_type_and_region(self) -> dict[str, dict[str, int]]:
        """{gpu: {region: used}} for GPUs in use."""
        table: dict[str, dict[str, int]] = {}
        for use in self.gpus:
            if use.used:
                table.setdefault(use.gpu, {})[use.region] = use.used
        return table


Plan.model_rebuild()


def no_plan_reason(data: object) -> str | None:
    """Why a document `fleetplan solve --json` wrote holds no plan (what it writes when
    the time limit stops it or the instance is infeasible: a status and no replicas), in
    words for the commands that read a plan; None for anything else (a plan, or a
    document the plan schema then judges)."""
    if not isinstance(data, dict) or "replicas" in data:
        return None
    status = data.get("status")
    if status == "no_solution":
        return (
            f"records no plan: `fleetplan solve` stopped without one ({data.get('message')}); "
            "solve again and pass the plan it writes"
        )
    if status == "infeasible":
        return (
            "records no plan: `fleetplan solve` found the instance infeasible (its diagnosis "
            "is in the file); change the instance and solve again"
        )
    return None
