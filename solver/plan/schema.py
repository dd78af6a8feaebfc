"""The plan: what to run where, what it costs, what binds it, and how it rides failures.

Why one module over 500 lines: the plan is one JSON document that users, scripts and
the verifier read; its records stay together so that the document's shape reads in one
place (time, co-location and procurement records included).

Frozen pydantic records; `Plan.model_dump_json()` is the `--json` output and
`Plan.model_validate_json()` reads it back (for `fleetplan verify`). Only `replicas` is
needed to verify a fleet: a file holding `{"replicas": [...]}` describes a fleet that a
user owns today, and every other field has a default.
"""

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, model_validator

from models.physics.precision import Precision
from models.schema.quantities import NUMBER_NOT_BOOLEAN
from models.serving.replica import Limit, Role

_FROZEN = ConfigDict(extra="forbid", frozen=True)

SHADOW_PRICE_NOTE = (
    "Shadow prices are not MIP duals (an integer program has none). They come from the "
    "LP with the plan's discrete choices fixed (which configurations run in which "
    "region, which pools are open, which pooling steps they are credited with) and "
    "replica counts relaxed to continuous: the marginal $/month of one more unit of "
    "each right-hand side for this plan's layout."
)


OPTIMAL_GAP_CEILING = 0.01
"""Largest gap (1%) a plan may be from its bound and still be called "optimal", whatever
gap was requested: `mip_gap: 0.999` may stop the solver at 57%, which is no optimum."""


def _cents(value: float | None) -> float | None:
    """Money in JSON: rounded to cents (13797.000000000002 -> 13797.0)."""
    return None if value is None else round(value, 2)


Money = Annotated[float, PlainSerializer(_cents, return_type=float, when_used="json")]
"""USD, written to JSON in cents."""
MaybeMoney = Annotated[
    float | None, PlainSerializer(_cents, return_type=float | None, when_used="json")
]
"""USD or None, written to JSON in cents."""


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
    return f"feasible (gap {mip_gap:.2%})"


def configuration_key(
    gpu: str,
    precision: str,
    tp: int,
    pp: int,
    role: str,
    ep: int = 1,
    dp: int = 1,
    speculative: str | None = None,
) -> str:
    """The name-safe key of a replica configuration, e.g. `h100-sxm.fp8.tp4pp1.unified`
    (`h200.fp8.tp1pp1dp8ep8.unified` with attention DP and expert parallelism,
    `h100-sxm.fp8.tp8pp1.unified.spec-eagle3` with a speculative option): how program
    rows, the plan and the verifier name a candidate."""
    layout = f"tp{tp}pp{pp}" + (f"dp{dp}" if dp > 1 else "") + (f"ep{ep}" if ep > 1 else "")
    key = f"{gpu}.{precision}.{layout}.{role}"
    return key if speculative is None else f"{key}.spec-{speculative}"


Whole = Annotated[int, NUMBER_NOT_BOOLEAN]
"""A replica count or layout degree: an integer, never `true` (which pydantic reads as 1)."""

class GroupMember(BaseModel):
    """One workload served by a shared group (policy.colocation)."""

    model_config = _FROZEN

    workload: str
    requests_per_s_per_replica: float
    """a[w,t]: what one group replica carries of this workload within its SLO, the other
    members at theirs (`models.colocation.coresident`); the verifier recomputes it."""
    routing_weight: float | None = None
    """Share of the region's traffic of this workload the group should get (no failure)."""
    load_requests_per_s: float | None = None
    """Requests/s of this workload the group carries at peak, all its replicas (no failure)."""


class ReplicaPool(BaseModel):
    """Replicas of one configuration serving one workload (or, for a shared group, several
    workloads) in one region."""

    model_config = _FROZEN

    workload: str
    """The workload served; a shared group's members joined by `+`."""
    workloads: tuple[str, ...] = ()
    """Every workload it serves: one for a dedicated pool, several for a shared group
    (filled from `workload` when absent)."""
    members: tuple[GroupMember, ...] = ()
    """A shared group's members with their capacity per group replica (empty: dedicated)."""
    shared_engine: bool = False
    """A shared group served by ONE engine (multi-LoRA adapters of one base, or a
    same-model merge: weights once, the strictest SLO); False: co-resident engines."""
    swapped_weights: bool = False
    """A shared group with one weight slot: the members' weights paged in from host memory
    when a request finds its model cold (`models.colocation.swap_group`)."""
    routing_weight: float | None = None
    """A dedicated pool's share of the region's traffic of its workload, in proportion to
    capacity (`models.serving.capacity_unit.routing_weights`; no failure)."""
    capacity_units_per_replica: float | None = None
    """One replica's capacity in the plan's capacity unit (`Plan.capacity_unit`)."""
    region: str
    gpu: str
    precision: Precision
    """Weight precision."""
    kv_precision: Precision | None = None
    """KV-cache precision; default: the model entry's rule (weights, never below fp8)."""
    tp: Whole = Field(ge=1)
    pp: Whole = Field(ge=1)
    role: Role = Role.UNIFIED
    count: Whole = Field(ge=0)
    """Replicas."""
    ep: Whole = Field(default=1, ge=1)
    """Expert-parallel ranks of the routed experts (1: experts split by TP)."""
    dp: Whole = Field(default=1, ge=1)
    """Attention data-parallel groups per stage (a replica has tp x pp x dp GPUs)."""
    speculative: str | None = None
    """The `policy.speculative` option the pool decodes with (None: plain decoding)."""
    gpus: Whole | None = Field(default=None, ge=0)
    """GPUs in all: count x tp x pp x dp."""
    limit: Limit | None = None
    """What limits one replica's capacity at the SLO, in a pool of `count`."""
    requests_per_s_per_replica: float | None = None
    """Capacity of one replica at the SLO, requests/s of its own phase, when the pool's
    `count` replicas share one router and one prompt queue (`models.serving.capacity`, "Pools")."""
    cost_per_month: MaybeMoney = None
    """What these GPUs would cost if all were bought (the existing fleet is free)."""
    kv_tiers_used: tuple[str, ...] | None = None
    """KV tiers (`hbm`, `dram`, `ssd`) holding the workload's prefix cache on each replica
    at the pool's real size (`models.serving.prefix_kv.pool_kv`); None without a prefix cache."""
    prefix_hit_rate: float | None = Field(default=None, ge=0, le=1)
    """Effective prefix-cache hit rate of a replica at the pool's real size: with prefix
    affinity, a pool below `affinity_min_replicas` gets random routing's, and the spill
    of hot prefixes is taken off (`models.serving.prefix_routing.pool_hits`); None without."""

    @model_validator(mode="before")
    @classmethod
    def _workloads_default(cls, data: Any) -> Any:
        """A hand-written entry without `workloads` serves its `workload`."""
        if isinstance(data, dict) and not data.get("workloads") and "workload" in data:
            members = data.get("members") or ()
            names = [m["workload"] if isinstance(m, dict) else m.workload for m in members]
            return {**data, "workloads": names or [data["workload"]]}
        return data

    @property
    def shared(self) -> bool:
        """Whether this entry is a shared group (several workloads)."""
        return len(self.members) > 0

    @property
    def label(self) -> str:
        """`h100-sxm fp8 tp4xpp1 unified` (`h200 fp8 tp1xpp1xdp8 ep8 unified`)."""
        layout = f"tp{self.tp}xpp{self.pp}" + (f"xdp{self.dp}" if self.dp > 1 else "")
        layout += f" ep{self.ep}" if self.ep > 1 else ""
        text = f"{self.gpu} {self.precision} {layout} {self.role}"
        return text if self.speculative is None else f"{text} spec {self.speculative}"

    @property
    def replica_gpus(self) -> int:
        """GPUs in one replica: tp x pp x dp."""
        return self.tp * self.pp * self.dp

    @property
    def key(self) -> str:
        """`h100-sxm.fp8.tp4pp1.unified` (`configuration_key`)."""
        return configuration_key(
            self.gpu,
            self.precision,
            self.tp,
            self.pp,
            self.role,
            self.ep,
            self.dp,
            self.speculative,
        )


class GpuUse(BaseModel):
    """GPUs of one type in one region: used, already owned, bought."""

    model_config = _FROZEN

    region: str
    gpu: str
    used: int
    existing: int
    purchased: int
    available: int
    """Existing fleet plus what can be had."""
    price_per_gpu_hour: Money
    cost_per_month: Money
    """purchased x price x hours_per_month."""


class ServerPurchase(BaseModel):
    """Whole servers of one GPU type to buy in one region (policy.buy_unit: node)."""

    model_config = _FROZEN

    region: str
    gpu: str
    count: int = Field(ge=0)
    """Servers of `gpus_per_node` GPUs each."""
    gpus_per_server: int | None = Field(default=None, ge=1)


class RegionPower(BaseModel):
    """Facility power (and rack space) the region's GPUs take, against its limits."""

    model_config = _FROZEN

    region: str
    kw: float
    """kW drawn by every GPU installed (existing and bought) at tdp x server factor x PUE."""
    limit_kw: float | None = None
    """The region's power_kw (None: no limit stated)."""
    shadow_price_per_kw: float | None = None
    """$/month one more kW would save (the power row's shadow price; 0 when power does
    not bind; None without a limit)."""
    racks: float | None = None
    """Racks the installed servers take (with racks stated)."""
    limit_racks: int | None = None


class SimplicityCost(BaseModel):
    """What policy.max_configs_per_pool costs: the plan against the one with the limit
    lifted (solved too)."""

    model_config = _FROZEN

    max_configs_per_pool: int
    cost_per_month_unlimited: float | None
    """Cost of the plan with any number of configurations per pool (None: not found in
    the time left)."""
    extra_cost_per_month: float | None
    """This plan's cost minus the unlimited one (>= 0 up to the MIP gap)."""
    configurations_unlimited: int | None = None
    """Configurations (pools) the unlimited plan uses, against this plan's."""


class Binding(BaseModel):
    """A constraint that shapes the plan, with its shadow price."""

    model_config = _FROZEN

    name: str
    """Row name, e.g. `capacity[lose=eu-west,chat,us-east,unified]`."""
    family: str
    description: str = ""
    slack: float
    """Slack at the (integer) plan; 0 means the row is tight there."""
    shadow_price: float
    """d(cost)/d(rhs) in the pricing LP (see SHADOW_PRICE_NOTE)."""
    unit: str = ""


class Route(BaseModel):
    """Requests/s of one origin's users served in one destination."""

    model_config = _FROZEN

    workload: str
    origin: str
    destination: str
    requests_per_s: float
    rtt_ms: float = 0.0


class PoolLoad(BaseModel):
    """Load against capacity of one phase of one workload in one region."""

    model_config = _FROZEN

    workload: str
    region: str
    phase: str
    """unified, prefill or decode (with the weight precision when several pair up)."""
    load_requests_per_s: float
    capacity_requests_per_s: float
    """Capacity of the replicas that survive the scenario."""
    utilisation: float
    """load / capacity (0 when there is no capacity)."""
    pools: tuple[str, ...] = ()
    """Configurations carrying the phase, as `count x label`."""


class ScenarioResult(BaseModel):
    """How the plan serves one scenario."""

    model_config = _FROZEN

    name: str
    description: str
    routing: tuple[Route, ...] = ()
    pools: tuple[PoolLoad, ...] = ()


class CostAttribution(BaseModel):
    """What one workload's pools in one region cost, split between prefill and decode
    (`models.serving.attribution`), and per million tokens served."""

    model_config = _FROZEN

    workload: str
    region: str
    cost_per_month: float
    """GPU time of the workload's pools here at list price (owned GPUs priced too)."""
    usd_per_million_input_tokens: float | None = None
    """Prefill's cost over the prompt tokens served in a month at the average rate."""
    usd_per_million_output_tokens: float | None = None
    """Decode's cost over the output tokens served in a month at the average rate."""
    prefill_share: float
    decode_share: float
    prefill_gpu_hours_per_month: float = 0.0
    decode_gpu_hours_per_month: float = 0.0
    bill: str = ""
    """The phase with the larger GPU-hours: `prefill` or `decode`."""
    offline: bool = False
    """No latency target: the two passes priced in GPU-hours at the largest batch."""


class SolverRun(BaseModel):
    """Which backend solved the program, how long it took, how close it got."""

    model_config = _FROZEN

    name: str
    version: str
    termination: str
    runtime_s: float
    """Seconds the backend spent solving; for a decomposed solve the sum over its
    programs, which run side by side in worker processes, so it can pass the wall time."""
    mip_gap: float | None = None
    """Relative gap between the plan and the best bound, as the backend reports it."""
    requested_gap: float
    time_limit_s: float
    threads: int
    variables: int
    integer_variables: int
    constraints: int
    candidates: int
    """Candidate configurations kept after pruning, all workloads together."""
    method: str = ""
    """How the program was solved: as one, or workload by workload
    (solver.decompose.by_workload)."""


class Plan(BaseModel):
    """A fleet plan for one instance."""

    model_config = _FROZEN

    instance: str = ""
    """The instance's name."""
    status: str = "given"
    """optimal | feasible (gap X%) | given (written by hand); see `plan_status`."""
    cost_per_month: MaybeMoney = None
    """USD per month for the GPUs bought (the existing fleet is already paid for)."""
    total_gpus: int | None = None
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
    idle_gpu_hours_per_day: float | None = None
    """GPU-hours per day running without load or committed and not running."""
    idle_replica_hours_per_day: float | None = None
    headroom: tuple["PoolHeadroom", ...] = ()
    error_budget_minutes_used: tuple["ScenarioBudgetUse", ...] = ()
    months: tuple["Month", ...] = ()
    batch: tuple["BatchPlacement", ...] = ()

    idle_fraction: float | None = Field(default=None, ge=0, le=1)
    """GPU-hours idle / GPU-hours paid at peak with no failure: 1 - sum_p gpus_p x
    utilisation_p / sum_p gpus_p over every pool and shared group."""
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
    demand_growth: float = 1.0
    """The factor the plan applied to all demand."""
    max_utilization: float = 1.0
    """The largest fraction of a pool's capacity at the SLO the plan allows."""
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

    @property
    def optimal(self) -> bool:
        """Whether the plan is proven optimal (see `plan_status`)."""
        return self.status == "optimal"

    def gpus_by_type_and_region(self) -> dict[str, dict[str, int]]:
        """{gpu: {region: used}} for GPUs in use."""
        table: dict[str, dict[str, int]] = {}
        for use in self.gpus:
            if use.used:
                table.setdefault(use.gpu, {})[use.region] = use.used
        return table


class WorkloadTier(BaseModel):
    """One workload in the tiering report."""

    model_config = _FROZEN

    workload: str
    tier: str
    """`dedicated`, `shared` or `both` (its own pool and a group)."""
    peak_requests_per_s: float
    utilisation: float
    """Its peak load over the capacity of every replica that serves it (no failure)."""
    groups: tuple[str, ...] = ()
    """The shared groups it joins, as their member lists."""


class Tiering(BaseModel):
    """The tiering report of a plan with policy.colocation."""

    model_config = _FROZEN

    workloads: tuple[WorkloadTier, ...]
    idle_fraction: float
    """With co-location (this plan)."""
    idle_fraction_dedicated: float | None = None
    """The same instance solved with colocation off."""
    cost_per_month_dedicated: float | None = None
    gpus_dedicated: int | None = None
    saving_per_month: float | None = None
    """cost_per_month_dedicated - this plan's cost."""
    pays_the_bills: tuple[str, ...] = ()
    """The dedicated tier: workloads on pools of their own, untouched by the tail."""
    templates: int = 0
    """Group templates the program could choose."""
    enumeration_s: float = 0.0
    note: str = ""


class ColocationSearch(BaseModel):
    """How the group templates were found (solver.colocation.group_search): column generation over
    packings of the tail, priced against the LP of the tail's packing at peak."""

    model_config = _FROZEN

    method: str = "column generation"
    lp_bound: float | None = None
    """$/month: a lower bound on the tail's packing at peak without failures (each tail
    workload on one replica of a group or of its own), over every group of the candidates."""
    packing_cost: float | None = None
    """$/month of the integer packing over the generated groups (the heuristic's answer)."""
    gap: float | None = None
    """(packing_cost - lp_bound) / packing_cost: how far the heuristic can be from the
    best packing; 0 when proven optimal."""
    converged: bool = False
    """True when no group prices below zero or the packing meets its rounded bound."""
    rounds: int = 0
    groups_checked: int = 0
    """Groups whose physics was checked at their members' peaks."""
    templates: int = 0
    """Group templates the program chose among."""
    note: str = ""


# --- time (issue 11): hours, commitments, headroom, error budget, months, batch --------


class HourGpus(BaseModel):
    """GPUs of one type in one region in one UTC hour, by how they are paid for."""

    model_config = _FROZEN

    region: str
    gpu: str
    used: int
    """GPUs the hour's replicas hold."""
    existing: int = 0
    """Owned GPUs (already paid for) among the used ones."""
    reserved: float = 0.0
    """Committed GPUs in use this hour (paid every hour whether used or not)."""
    on_demand: float = 0.0
    """GPUs paid by the hour this hour: used - existing - reserved."""
    spot: float = 0.0
    """Spot GPUs (interruptible) this hour: dedicated batch replicas only."""


class Hour(BaseModel):
    """One UTC hour of the representative day."""

    model_config = _FROZEN

    hour: int = Field(ge=0, le=23)
    period: int
    """First hour of the program period this hour belongs to (hours with equal warm
    demand share one period)."""
    pools: tuple[ReplicaPool, ...] = ()
    """Replicas running in this hour, per pool (batch dedicated pools included)."""
    gpus: tuple[HourGpus, ...] = ()
    cost_per_hour: float = 0.0
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


class SpotReplicas(BaseModel):
    """The replicas of one interactive pool that run on spot in one hour."""

    model_config = _FROZEN

    workload: str
    region: str
    configuration: str
    replicas: int
    """Of the pool's replicas, those on spot."""
    down_fraction: float
    """u: share of time one spot replica is down (interruption + restart)."""
    down_replicas: int
    """Q(n u, a): replicas down at once with the plan's confidence a (the margin the
    pool carries its load without)."""


class BatchSoak(BaseModel):
    """Batch requests/s one interactive pool serves in one hour beside its own load."""

    model_config = _FROZEN

    batch: str
    """The batch workload."""
    workload: str
    """The interactive workload whose pool soaks it."""
    region: str
    configuration: str
    """The pool's configuration key."""
    requests_per_s: float
    """Batch requests/s served on the pool this hour."""
    batch_requests_per_s_per_replica: float
    """C_b: one replica of the configuration running the batch mix alone."""
    limit: str = ""
    """What sets C_b (e.g. kv_memory for long contexts)."""


class FailoverStart(BaseModel):
    """Replicas of one pool started after one region loss."""

    model_config = _FROZEN

    scenario: str
    """E.g. `lose=eu-west`."""
    pool: ReplicaPool
    """The started replicas (count) of one configuration in one surviving region."""


class Commitment(BaseModel):
    """Committed (reserved) GPUs of one type in one region, paid every hour."""

    model_config = _FROZEN

    region: str
    gpu: str
    committed_gpus: float
    reserved_price_per_gpu_hour: float
    on_demand_price_per_gpu_hour: float


class PoolHeadroom(BaseModel):
    """Warm headroom of one pool ahead of its steepest ramp, and the scaling signal."""

    model_config = _FROZEN

    workload: str
    region: str
    configuration: str
    replica_start_s: float
    lag_s: float
    """Detection + replica start: from a rise to capacity that serves it."""
    steepest_ramp_rps_per_minute: float
    headroom_rps: float
    headroom_replicas: int
    capacity_rps_per_replica: float
    peak_replicas: int
    target_utilization: float
    kv_usage_scale_out: float
    """Scale out when KV-cache usage per replica passes this share."""
    queue_depth_scale_out: float
    """Scale out when prompts waiting for prefill per replica pass this."""
    queue_depth_slo_edge: float | None
    """Past this queue depth the TTFT target is gone (None: no TTFT target)."""
    signal_note: str = ""


class ScenarioBudgetUse(BaseModel):
    """Error-budget minutes one failure scenario spends, at its worst UTC hour."""

    model_config = _FROZEN

    scenario: str
    workload: str
    worst_hour: int
    failover_start_s: float
    shortfall_rps: float
    """Load beyond the survivors' warm capacity until started replicas serve."""
    budget_minutes: float
    """The month's budget from slo.availability, minutes of full outage."""
    budget_minutes_used: float
    expected_burn_minutes_per_year: float | None = None
    """lambda x mean over the hours (failure_probability_per_year given)."""
    losses_per_month: float = 1.0
    """m: losses of the region the month's budget absorbs, max(1, expected losses a
    month); the plan keeps m x budget_minutes_used <= budget_minutes."""
    started_replicas: int = 0
    """Replicas started in the survivors after a loss at the worst hour."""


class MonthOffer(BaseModel):
    """One GPU offer in one month of the procurement horizon."""

    model_config = _FROZEN

    region: str
    gpu: str
    peak_need_gpus: float
    """The most GPUs of this offer the month's hourly plan runs in any hour."""
    committed_gpus: float
    """Committed (bought) GPUs serving this month; never fewer than the month before."""
    ordered_gpus: float
    """Committed GPUs ordered this month (they serve lead_time_months later)."""
    on_demand_gpu_hours: float
    cost: float
    """USD this month: committed x reserved price every hour, plus on demand and spot."""
    owned_gpus: float = 0.0
    """The fleet held this month: the existing GPUs plus the committed ones."""
    bought_gpus: float = 0.0
    """Committed GPUs that start serving this month (committed less last month's)."""
    order_month: int | None = None
    """When `bought_gpus` must be ordered: this month less lead_time_months (negative
    for month 0's commitment: ordered before the horizon starts); None when none."""


class Month(BaseModel):
    """One month of the procurement horizon: its own hourly plan at its own demand."""

    model_config = _FROZEN

    month: int
    growth_factor: float
    cost_per_month: float
    offers: tuple[MonthOffer, ...] = ()
    hours: tuple[Hour, ...] = ()
    """The month's 24 UTC hours, planned at the month's grown demand (month 0: the
    plan's own `hours`, not repeated)."""
    committed: tuple[Commitment, ...] = ()
    """The month's commitments (month 0: the plan's own `committed`, not repeated)."""


class BatchPlacement(BaseModel):
    """How one batch workload's daily volume in one region is served."""

    model_config = _FROZEN

    workload: str
    region: str
    requests_per_day: float
    deadline_hours: float
    soaked_requests_per_day: float
    """Served on idle interactive replicas of the same model in the trough."""
    soak_limit: str = ""
    """What limits a batch replica on the interactive configuration (e.g. kv_memory)."""
    soak_requests_per_s_per_replica: float = 0.0
    idle_replica_hours_before: float = 0.0
    idle_replica_hours_after: float = 0.0
    dedicated_replicas: int = 0
    dedicated_configuration: str = ""
    dedicated_tier: str = ""
    """on_demand or spot: how the dedicated replicas are paid."""
    dedicated_cost_per_month: float = 0.0
    breakeven_price_per_gpu_hour: float | None = None
    """Dedicated GPU-hour price above which soaking is cheaper per batch request."""


Plan.model_rebuild()
Hour.model_rebuild()
