"""The records a plan is made of: its replica pools and shared groups, GPUs, servers and
power per region, the binding constraints, routes, failure scenarios, cost attribution,
the solver run, the co-location report and the buyer's summary; and the plan's money
type (USD written to JSON in cents) and the key that names a replica configuration.

The plan itself (`solver.plan.schema.Plan`) holds them; the records of time planning
(hours, commitments, months, batch) live in `solver.plan.time_records`.
"""

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PlainSerializer, model_validator

from models.physics.precision import Precision
from models.schema.quantities import MAX_PLAN_TEXT_CHARS, NUMBER_NOT_BOOLEAN, PlanInteger
from models.serving.replica import Limit, Role
from solver.plan.binding import Binding

FROZEN = ConfigDict(extra="forbid", frozen=True, str_max_length=MAX_PLAN_TEXT_CHARS)
"""Every plan record: unknown keys refused, frozen, each text at most MAX_PLAN_TEXT_CHARS."""

Whole = PlanInteger
"""Every integer of a plan: never `true`, within limits.PLAN_INTEGER (quantities)."""
Real = Annotated[float, NUMBER_NOT_BOOLEAN]
"""Every other number of a plan: never `true` nor text (pydantic read `"5.0"` as 5.0)."""
Total = Annotated[int, NUMBER_NOT_BOOLEAN]
"""A sum of a plan's integers (the summary's): never `true`; any size, as sums are."""


def _cents(value: float | None) -> float | None:
    """Money in JSON: rounded to cents (13797.000000000002 -> 13797.0)."""
    return None if value is None else round(value, 2)


Money = Annotated[float, NUMBER_NOT_BOOLEAN, PlainSerializer(_cents, when_used="json")]
"""USD, written to JSON in cents (never `true`, which pydantic reads as 1)."""
MaybeMoney = Annotated[float | None, NUMBER_NOT_BOOLEAN, PlainSerializer(_cents, when_used="json")]
"""USD or None, written to JSON in cents."""


def configuration_key(
    gpu: str,
    precision: str,
    tp: int,
    pp: int,
    role: str,
    ep: int = 1,
    dp: int = 1,
    speculative: str | None = None,
    redundant: int = 0,
) -> str:
    """The name-safe key of a replica configuration, e.g. `h100-sxm.fp8.tp4pp1.unified`
    (`h200.fp8.tp1pp1dp8ep8.unified` with attention DP and expert parallelism,
    `h100-sxm.fp8.tp8pp1.unified.spec-eagle3` with a speculative option): how program
    rows, the plan and the verifier name a candidate."""
    layout = f"tp{tp}pp{pp}" + (f"dp{dp}" if dp > 1 else "") + (f"ep{ep}" if ep > 1 else "")
    layout += f"r{redundant}" if redundant else ""  # tp1pp1dp72ep72r32: 32 redundant experts
    key = f"{gpu}.{precision}.{layout}.{role}"
    return key if speculative is None else f"{key}.spec-{speculative}"


class GroupMember(BaseModel):
    """One workload served by a shared group (policy.colocation)."""

    model_config = FROZEN

    workload: str
    requests_per_s_per_replica: Real = Field(ge=0)
    """a[w,t]: what one group replica carries of this workload within its SLO, the other
    members at theirs (`models.colocation.coresident`); the verifier recomputes it."""
    routing_weight: Real | None = None
    """Share of the region's traffic of this workload the group should get (no failure)."""
    load_requests_per_s: Real | None = None
    """Requests/s of this workload the group carries at peak, all its replicas (no failure)."""


class CapacityBand(BaseModel):
    """The measured error band of a pool's capacity (`models.physics.error_bands`): the
    held-out rows' predicted / measured - 1 for its engine profile, model family and
    regime, as fractions (> 0: the model promised more than the engine gave)."""

    model_config = FROZEN

    family: str
    regime: str
    p10: Real
    median: Real
    p90: Real
    rows: Whole
    flag: str = ""
    """'' for the regime's own band; `borrowed` or `unmeasured`: none measured, the
    profile's widest instead."""
    capacity_factor: Real = 1.0
    """What the pool's capacity was multiplied by (`policy.capacity_margin: auto`:
    1 / (1 + p90) when p90 > 0; 1 with `none`)."""
    text: str = ""
    """The band in words, e.g. `-11% / +14% (dense, max throughput, 56 rows)`."""

    @property
    def uncertain(self) -> bool:
        """Whether the capacity rests on a borrowed GPU generation or an unmeasured
        regime (the flag, or the borrowed regime measured on other GPUs' rows)."""
        return bool(self.flag) or self.regime == "borrowed"


def layout_label(
    gpu: str,
    precision: str,
    tp: int,
    pp: int,
    role: str,
    ep: int = 1,
    dp: int = 1,
    speculative: str | None = None,
    redundant: int = 0,
) -> str:
    """How a plan names a pool's configuration, wherever it lists one (its pools, the
    scenario rows' `n x label`, the hours): `h100-sxm fp8 tp4xpp1 unified`,
    `h200 fp8 tp1xpp1xdp8 ep8 unified`, `... unified spec eagle` (the option's name,
    unique in an instance; the physics' own label adds k and a). The simulator and the
    hour verifier match a row's pools to the plan's by it."""
    layout = f"tp{tp}xpp{pp}" + (f"xdp{dp}" if dp > 1 else "")
    layout += f" ep{ep}" if ep > 1 else ""
    layout += f"+{redundant}" if redundant else ""  # ep72+32: 32 redundant experts
    text = f"{gpu} {precision} {layout} {role}"
    return text if speculative is None else f"{text} spec {speculative}"


class ReplicaPool(BaseModel):
    """Replicas of one configuration serving one workload (or, for a shared group, several
    workloads) in one region."""

    model_config = FROZEN

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
    routing_weight: Real | None = None
    """A dedicated pool's share of the region's traffic of its workload, in proportion to
    capacity (`models.serving.capacity_unit.routing_weights`; no failure)."""
    capacity_units_per_replica: Real | None = None
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
    redundant_experts: Whole = Field(default=0, ge=0)
    """Redundant expert copies per MoE layer beside the routed ones (EPLB); each of the ep
    ranks holds (experts + redundant_experts) / ep."""
    dp: Whole = Field(default=1, ge=1)
    """Attention data-parallel groups per stage (a replica has tp x pp x dp GPUs)."""
    speculative: str | None = None
    """The `policy.speculative` option the pool decodes with (None: plain decoding)."""
    gpus: Whole | None = Field(default=None, ge=0)
    """GPUs in all: count x tp x pp x dp."""
    limit: Limit | None = None
    """What limits one replica's capacity at the SLO, in a pool of `count`."""
    requests_per_s_per_replica: Real | None = Field(default=None, ge=0)
    """Capacity of one replica at the SLO, requests/s of its own phase, when the pool's
    `count` replicas share one router and one prompt queue (`models.serving.capacity`, "Pools")."""
    cost_per_month: MaybeMoney = None
    """What these GPUs would cost if all were bought (the existing fleet is free)."""
    kv_tiers_used: tuple[str, ...] | None = None
    """KV tiers (`hbm`, `dram`, `ssd`) holding the workload's prefix cache on each replica
    at the pool's real size (`models.serving.prefix_kv.pool_kv`); None without a prefix cache."""
    prefix_hit_rate: Real | None = Field(default=None, ge=0, le=1)
    """Effective prefix-cache hit rate of a replica at the pool's real size: with prefix
    affinity, a pool below `affinity_min_replicas` gets random routing's, and the spill
    of hot prefixes is taken off (`models.serving.prefix_routing.pool_hits`); None without."""
    capacity_band: CapacityBand | None = None
    """The measured error band of the capacity per replica (None: a shared group, a plan
    written by hand, or a profile with no measured band)."""

    @model_validator(mode="after")
    def _one_workload_alone(self) -> "ReplicaPool":
        """A pool without members is its workload's alone (no other, no group's engine)."""
        stated = [f"workloads {list(self.workloads)}"] * (self.workloads != (self.workload,))
        stated += [f for f in ("shared_engine", "swapped_weights") if getattr(self, f)]
        if stated and not self.members:  # each verified ok and deployed as a plain pool
            alone = f"on a pool of {self.workload!r} alone (no members)"
            raise ValueError(f"{', '.join(stated)} {alone}: only a shared group has them")
        return self

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
    def _layout(self) -> tuple:
        """What `layout_label` and `configuration_key` read, in their order."""
        return (
            self.gpu,
            self.precision,
            self.tp,
            self.pp,
            self.role,
            self.ep,
            self.dp,
            self.speculative,
            self.redundant_experts,
        )

    @property
    def label(self) -> str:
        """`h100-sxm fp8 tp4xpp1 unified` (`layout_label`)."""
        return layout_label(*self._layout)

    @property
    def replica_gpus(self) -> int:
        """GPUs in one replica: tp x pp x dp."""
        return self.tp * self.pp * self.dp

    @property
    def key(self) -> str:
        """`h100-sxm.fp8.tp4pp1.unified` (`configuration_key`)."""
        return configuration_key(*self._layout)


class GpuUse(BaseModel):
    """GPUs of one type in one region: used, already owned, bought."""

    model_config = FROZEN

    region: str
    gpu: str
    used: Whole
    existing: Whole
    purchased: Whole
    available: Whole
    """Existing fleet plus what can be had."""
    price_per_gpu_hour: Real
    """The on-demand (list) price, as the instance gives it: not rounded to cents as
    `Money` is (a price of $2.125 or $0.001 a GPU-hour was written $2.12 and $0, and
    verify failed the plan solve wrote)."""
    cost_per_month: Money
    """purchased x price x hours_per_month; an hourly plan's: the offer's bill over the
    month as its hours pay it (committed GPUs at the reserved price every hour, rented
    and spot GPUs by the hour), so that the rows add up to the plan's cost."""

    @property
    def paid(self) -> int:
        """GPUs the bill covers: purchased + min(used, existing), the stated figures'
        models.operations.site.gpus_paid (owned GPUs the plan leaves idle are not its)."""
        return self.purchased + min(self.used, self.existing)


class ServerPurchase(BaseModel):
    """Whole servers of one GPU type to buy in one region (policy.buy_unit: node)."""

    model_config = FROZEN

    region: str
    gpu: str
    count: Whole = Field(ge=0)
    """Servers of `gpus_per_node` GPUs each."""
    gpus_per_server: Whole | None = Field(default=None, ge=1)


class RegionPower(BaseModel):
    """Facility power (and rack space) the region's GPUs take, against its limits."""

    model_config = FROZEN

    region: str
    kw: Real
    """kW drawn by every GPU installed (existing and bought) at tdp x server factor x PUE."""
    limit_kw: Real | None = None
    """The region's power_kw (None: no limit stated)."""
    shadow_price_per_kw: Real | None = None
    """$/month one more kW would save (the power row's shadow price; 0 when power does
    not bind; None without a limit)."""
    racks: Real | None = None
    """Racks the installed servers take (with racks stated)."""
    limit_racks: Whole | None = None
    whole_unit_kw: Real = 0.0
    """Where the cap binds in whole units (solver.plan.binding): the kW one more server
    (or GPU) draws, more than the `slack_kw` left; 0 elsewhere."""
    slack_kw: Real = 0.0
    """The kW left under the cap where it binds in whole units (its tightest period)."""


class SimplicityCost(BaseModel):
    """What policy.max_configs_per_pool costs: the plan against the one with the limit
    lifted (solved too)."""

    model_config = FROZEN

    max_configs_per_pool: Whole
    cost_per_month_unlimited: Real | None
    """Cost of the plan with any number of configurations per pool (None: not found in
    the time left)."""
    extra_cost_per_month: Real | None
    """This plan's cost minus the unlimited one (>= 0)."""
    configurations_unlimited: Whole | None = None
    """Configurations (pools) the unlimited plan uses, against this plan's."""
    row: str = "configs_per_pool"
    """The rows that hold the limit: `configs_per_pool` (a static plan's, or each period's),
    or `configs_per_day` (an hourly plan's: one choice for the whole day, of each month)."""

    @classmethod
    def against(
        cls, limit: int, cost: float, pools: int, unlimited: float, unlimited_pools: int
    ) -> "SimplicityCost":
        """The plan (`cost`, `pools`) against the lifted re-solve's (`unlimited`,
        `unlimited_pools`). Every plan within the limit is a plan without it, so lifting it
        never costs more: a re-solve stopped within its gap on a dearer plan reads the plan
        itself (extra 0), as a lever that only loosens the question does."""
        if unlimited > cost:
            unlimited, unlimited_pools = cost, pools
        return cls(
            max_configs_per_pool=limit,
            cost_per_month_unlimited=unlimited,
            extra_cost_per_month=cost - unlimited,
            configurations_unlimited=unlimited_pools,
        )


class Route(BaseModel):
    """Requests/s of one origin's users served in one destination."""

    model_config = FROZEN

    workload: str
    origin: str
    destination: str
    requests_per_s: Real
    rtt_ms: Real = 0.0


class PoolLoad(BaseModel):
    """Load against capacity of one phase of one workload in one region."""

    model_config = FROZEN

    workload: str
    region: str
    phase: str
    """unified, prefill or decode (with the weight precision when several pair up)."""
    load_requests_per_s: Real
    capacity_requests_per_s: Real
    """Capacity of the replicas that survive the scenario."""
    utilisation: Real
    """load / capacity (0 when there is no capacity)."""
    pools: tuple[str, ...] = ()
    """Configurations carrying the phase, as `count x label`."""
    started_requests_per_s: Real = 0.0
    """Of the capacity, what the replicas started after the loss carry (their lone
    capacity, as the program credits them; 0 without failover_start). The warm
    survivors' part is capacity - started."""


class Move(BaseModel):
    """Users of one region served in another in one scenario, and the round trip they pay."""

    model_config = FROZEN

    workload: str
    from_region: str
    to_region: str
    requests_per_s: Real
    rtt_ms: Real
    from_lost_region: bool
    """True: the lost region's users. False: a healthy region's users the optimum serves
    in a neighbour, to make room for the lost region's users nearer their own survivors
    or because the neighbour's capacity is cheaper to use (the README explains)."""


class ScenarioResult(BaseModel):
    """How the plan serves one scenario."""

    model_config = FROZEN

    name: str
    description: str
    routing: tuple[Route, ...] = ()
    pools: tuple[PoolLoad, ...] = ()
    moves: tuple[Move, ...] = ()
    """Every route whose users are served outside their own region (`moves_of`)."""
    started_replicas: tuple[ReplicaPool, ...] = ()
    """Replicas started in the survivors after the loss (hourly plans with
    failover_start; their capacity is in `pools[].started_requests_per_s`)."""
    hour: Whole | None = None
    """Hourly plans: the UTC hour whose fleet the scenario shows (the busiest period's
    first hour); None for a static plan."""


def moves_of(routes: tuple[Route, ...], lost_region: str | None) -> tuple[Move, ...]:
    """The routes that take users out of their own region, as moves."""
    return tuple(
        Move(
            workload=route.workload,
            from_region=route.origin,
            to_region=route.destination,
            requests_per_s=route.requests_per_s,
            rtt_ms=route.rtt_ms,
            from_lost_region=route.origin == lost_region,
        )
        for route in routes
        if route.origin != route.destination
    )


class CostAttribution(BaseModel):
    """What one workload's pools in one region cost, split between prefill and decode
    (`models.serving.attribution`), and per million tokens served."""

    model_config = FROZEN

    workload: str
    region: str
    cost_per_month: Real
    """The workload's pools' share of the bill here: each GPU type's cost in the region
    (whole servers bought x price x hours, idle GPUs included) over the pools on it by
    their GPUs (solver.analysis.cost_attribution); in an hourly plan, each hour's bill as
    paid (solver.analysis.hour_attribution). The rows add up to the plan's cost."""
    usd_per_million_input_tokens: Real | None = None
    """Prefill's cost over the prompt tokens served in a month at the average rate."""
    usd_per_million_output_tokens: Real | None = None
    """Decode's cost over the output tokens served in a month at the average rate."""
    prefill_share: Real
    decode_share: Real
    prefill_gpu_hours_per_month: Real = 0.0
    decode_gpu_hours_per_month: Real = 0.0
    bill: str = ""
    """The phase with the larger GPU-hours: `prefill` or `decode`."""
    offline: bool = False
    """No latency target: the two passes priced in GPU-hours at the largest batch."""


class SolverRun(BaseModel):
    """Which backend solved the program, how long it took, how close it got."""

    model_config = FROZEN

    name: str
    version: str
    termination: str
    runtime_s: Real = Field(ge=0)
    """Seconds the backend spent solving; for a decomposed solve the sum over its
    programs, which run side by side in worker processes, so it can pass the wall time;
    decomposed by region, the wall time from the regions' programs to the plan (their
    programs, the plan floored at their fleets and the search by neighbourhoods)."""
    mip_gap: Real | None = Field(default=None, ge=0)
    """Relative gap between the plan and the best bound, as the backend reports it (>= 0;
    above 1 where the bound is negative). Every figure of the run is a count, a time or a
    gap, so none is negative (a plan stating months[1].mip_gap: -1 verified)."""
    requested_gap: Real = Field(ge=0)
    time_limit_s: Real = Field(gt=0)
    threads: Whole = Field(ge=1)
    variables: Whole = Field(ge=0)
    integer_variables: Whole = Field(ge=0)
    constraints: Whole = Field(ge=0)
    candidates: Whole = Field(ge=0)
    """Candidate configurations kept after pruning, all workloads together."""
    method: str = ""
    """How the program was solved: as one, or workload by workload
    (solver.decompose.by_workload)."""


class WorkloadTier(BaseModel):
    """One workload in the tiering report."""

    model_config = FROZEN

    workload: str
    tier: str
    """`dedicated`, `shared` or `both` (its own pool and a group)."""
    peak_requests_per_s: Real
    utilisation: Real
    """Its peak load over the capacity of every replica that serves it (no failure)."""
    groups: tuple[str, ...] = ()
    """The shared groups it joins, as their member lists."""


class Tiering(BaseModel):
    """The tiering report of a plan with policy.colocation."""

    model_config = FROZEN

    workloads: tuple[WorkloadTier, ...]
    idle_fraction: Real
    """With co-location (this plan)."""
    idle_fraction_dedicated: Real | None = None
    """The same instance solved with colocation off."""
    cost_per_month_dedicated: Real | None = None
    gpus_dedicated: Whole | None = None
    saving_per_month: Real | None = None
    """cost_per_month_dedicated - this plan's cost."""
    pays_the_bills: tuple[str, ...] = ()
    """The dedicated tier: workloads on pools of their own, untouched by the tail."""
    templates: Whole = Field(default=0, ge=0)
    """Group templates the program could choose."""
    enumeration_s: Real = Field(default=0.0, ge=0)
    note: str = ""


class ColocationSearch(BaseModel):
    """How the group templates were found (solver.colocation.group_search): column generation over
    packings of the tail, priced against the LP of the tail's packing at peak."""

    model_config = FROZEN

    method: str = "column generation"
    lp_bound: Real | None = Field(default=None, ge=0)
    """$/month: a lower bound on the tail's packing at peak without failures (each tail
    workload on one replica of a group or of its own), over every group of the candidates."""
    packing_cost: Real | None = Field(default=None, ge=0)
    """$/month of the integer packing over the generated groups (the heuristic's answer)."""
    gap: Real | None = Field(default=None, ge=0)
    """(packing_cost - lp_bound) / packing_cost: how far the heuristic can be from the
    best packing; 0 when proven optimal."""
    converged: bool = False
    """True when no group prices below zero or the packing meets its rounded bound."""
    rounds: Whole = Field(default=0, ge=0)
    groups_checked: Whole = Field(default=0, ge=0)
    """Groups whose physics was checked at their members' peaks."""
    templates: Whole = Field(default=0, ge=0)
    """Group templates the program chose among."""
    note: str = ""


class BoughtGpus(BaseModel):
    """GPUs of one type in one region: bought (whole servers with buy_unit node) and used."""

    model_config = FROZEN

    region: str
    gpu: str
    bought: Total
    used: Total
    existing: Total = 0


class OrderLine(BaseModel):
    """Servers of one type to order for one region, and when."""

    model_config = FROZEN

    region: str
    gpu: str
    servers: Total
    gpus_per_server: Whole
    order_month: Whole = 0
    """The month to order in (0: now; negative: before the horizon starts)."""
    serving_from_month: Whole = 0
    """The month they start serving (order month + lead time)."""


class BuyerSummary(BaseModel):
    """What a buyer reads first."""

    model_config = FROZEN

    cost_per_month: MaybeMoney = None
    """USD per month (month 0 of a horizon)."""
    horizon_months: Whole = 0
    """Months of the procurement horizon (0: no horizon)."""
    horizon_cost: MaybeMoney = None
    """USD over the horizon: the months' costs summed (None without a horizon)."""
    gpus_bought: Total = 0
    gpus_used: Total = 0
    idle_fraction: Real | None = None
    """Idle at peak over the GPUs paid (static plans)."""
    bought: tuple[BoughtGpus, ...] = ()
    orders: tuple[OrderLine, ...] = ()
    binding: tuple[Binding, ...] = ()
    """The binding constraints with the largest shadow prices (at most five)."""
    stopped_months: tuple[Whole, ...] = ()
    """Months stopped at their time limit unproven (months[].stopped_at_limit, mip_gap)."""
