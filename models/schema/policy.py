"""The instance file's `policy`, `solver` and `quality` sections: what the planner may
choose and must survive (layouts, failures, purchases), the MIP solver and its limits, and
a quality change declared against a base."""

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from models.schema import limits
from models.schema.backend_names import DEFAULT_BACKEND, BackendName
from models.schema.quantities import (
    HOURS_PER_MONTH,
    ONCE_EACH,
    BurstFactor,
    ConfigsPerPool,
    DemandGrowth,
    HorizonMonths,
    HoursPerMonth,
    LeadTimeMonths,
    MaxUtilization,
    MipGap,
    MonthlyGrowth,
    ParallelDegree,
    Pue,
    QualityDelta,
    QualityRegression,
    RedundantExperts,
    ServerPowerFactor,
    SpotConfidence,
    StartTimeS,
    Threads,
    TimeLimitS,
    at_most,
)
from models.schema.speculative_option import SpeculativeOption
from models.schema.strict import STRICT


class Survive(StrEnum):
    """Which single failure the fleet must ride through without breaking its SLO."""

    NONE = "none"
    REPLICA = "replica"
    ZONE = "zone"
    REGION = "region"


class BuyUnit(StrEnum):
    """What a purchase is made of: whole servers (`gpus_per_node` GPUs) or single GPUs."""

    NODE = "node"
    GPU = "gpu"


class CapacityMargin(StrEnum):
    """How much of the performance model's capacity the planner trusts."""

    NONE = "none"
    AUTO = "auto"


Degrees = Annotated[list[ParallelDegree], at_most(limits.CHOICES), ONCE_EACH]
"""Parallel degrees to consider: at most `limits.CHOICES`, each once."""


class Policy(BaseModel):
    """Layout and failure policy."""

    model_config = STRICT

    survive: Survive = Survive.NONE
    """Failures the fleet must ride through at the SLO: none, replica, zone or region."""
    tensor_parallel: Degrees = Field(default=[1, 2, 4, 8], min_length=1)
    """TP degrees to consider."""
    pipeline_parallel: Degrees = Field(default=[1], min_length=1)
    """PP degrees to consider."""
    expert_parallel: Degrees = Field(default=[1], min_length=1)
    """Expert-parallel sizes to consider for MoE models: the routed experts of a stage are
    split over `ep` ranks, which must divide tp x dp
    (`models.physics.memory.expert_layout_problem`); 1 splits every expert by TP. Only the
    values the engine profile's engine runs are planned (vLLM: 1 or tp x dp;
    `models.physics.overlap.engine_layout_problem`)."""
    redundant_experts: Annotated[list[RedundantExperts], at_most(limits.CHOICES), ONCE_EACH] = (
        Field(default=[0], min_length=1)
    )
    """Redundant expert counts to consider with expert parallelism (EPLB: SGLang's
    `--ep-num-redundant-experts`, vLLM's `--num-redundant-experts`): each MoE layer holds
    its routed experts plus this many copies of the busiest, so `ep` must divide routed +
    redundant (DeepSeek-V3 at EP72: 256 + 32 = 288, 4 a GPU); 0 places the experts once."""
    attention_data_parallel: Degrees = Field(default=[1], min_length=1)
    """Attention data-parallel groups to consider for MoE models: a replica is
    tp x pp x dp GPUs, each group of tp GPUs holding its own sequences. TensorRT-LLM's
    attention DP runs at TP 1 alone (`models.physics.overlap.engine_layout_problem`)."""
    disaggregation: bool = False
    """Whether prefill and decode may run in separate pools."""
    prefix_affinity: bool = False
    """Route requests with the same declared prefix to the replicas that hold it
    (`models.serving.prefix_routing`); default: random (least-loaded) routing."""
    warm_cold_split: bool = False
    """Whether a workload with per-customer prefixes may be served by a warm pool (requests
    that reuse a prefix) and a cold pool (the rest), each sized for its share
    (`models.colocation.warm_cold`); the plan takes the split only where it is cheaper."""
    hours_per_month: HoursPerMonth = HOURS_PER_MONTH
    """Hours billed per month for a GPU bought (730 = 8,760 h / 12)."""
    colocation: bool = False
    """Whether several workloads may share replica groups (co-resident engines, multi-LoRA,
    swapping); off by default, so every workload gets its own replicas."""
    multi_lora: bool = False
    """With `colocation`: whether workloads of LoRA adapters (`base:` models) of one base,
    and the base's own workloads, may share one engine of the base (weights once, each
    adapter resident, the multi-LoRA step cost); off: an adapter is served as a merged
    fine-tune, its own engine and weights."""
    replica_start_s: StartTimeS | None = None
    """Seconds from starting a replica to serving (image pull + weight load + warm-up),
    for every GPU type; a `gpus[]` entry's own `replica_start_s` wins; default: the
    catalog value per GPU."""
    failover_start_s: StartTimeS | None = None
    """Seconds after a loss before replicas started elsewhere serve (detection +
    replica start); default: the replica start time of the GPU type."""
    scale_detection_s: StartTimeS = 60.0
    """Seconds the autoscaler takes to see a rise and act (metric window + decision)."""
    spot_confidence: SpotConfidence | None = None
    """Let interactive pools run on spot where a supply entry offers it: each pool keeps
    its SLO with this confidence through interruptions (a Poisson quantile of replicas
    down over the restart window, `models.operations.pricing_tiers`); default: spot serves
    dedicated batch replicas only."""
    burst_factor: BurstFactor = 1.0
    """Multiplier on the profile's steepest ramp that the warm headroom must absorb."""
    horizon_months: HorizonMonths | None = None
    """Months to plan procurement over; default: one static month."""
    monthly_growth: MonthlyGrowth = 0.0
    """Demand growth per month as a fraction, for workloads without their own."""
    lead_time_months: LeadTimeMonths = 0
    """Months between ordering committed capacity and having it to serve."""
    buy_unit: BuyUnit = BuyUnit.NODE
    """Purchases in whole servers of `gpus_per_node` GPUs (`node`) or single GPUs (`gpu`);
    the existing fleet counts as it is. With `node`, a stage's tp x dp GPUs divide the
    server (TP within a server; pipeline stages may span servers)."""
    max_configs_per_pool: ConfigsPerPool | None = 1
    """Replica configurations one (workload, region, phase) may mix; null: any number.
    The report states what the limit costs."""
    credit_tpot_pooling: bool = True
    """Credit TPOT-limited pools with what a larger pool carries per replica (the batch a
    reply lives through spreads less in a pool): pool ladders for them as for TTFT-limited
    ones, 3-18% more per replica in pools of 2-16. On by default so that the credit never
    falls when a target loosens (issue 35: a candidate turning from TTFT- to TPOT-limited
    kept its ladder); false credits them a lone replica's capacity (a smaller program,
    conservative plans, and a looser target can then cost more)."""
    one_precision_per_workload: bool = False
    """Serve every pool of a workload at one weight precision (in every region and phase),
    so that its users get the same weights wherever they are routed. Off, a plan may mix
    them (fp8 in one region, fp4 in another) where that is cheaper, and its notes say so."""
    max_utilization: MaxUtilization = 1.0
    """Pools are planned at most this fraction of their capacity at the SLO, in every
    scenario (headroom)."""
    capacity_margin: CapacityMargin = CapacityMargin.NONE
    """`none`: pools are sized on the model's capacity (with `max_utilization`). `auto`:
    on the conservative side of its measured error band
    (`models.physics.error_bands`): each replica's capacity x 1 / (1 + e), e the 90th
    percentile of the held-out rows' predicted / measured - 1 for its engine profile,
    model family and regime (a borrowed GPU generation: the profile's widest band) when
    that percentile is optimistic (e > 0); 1 where the model is pessimistic or no band is
    measured. Planner and verifier apply it alike."""
    demand_growth: DemandGrowth | None = None
    """A factor applied to all demand (1.3 plans for 30% more); the top-level
    `demand_growth` wins."""
    pue: Pue | None = None
    """Power usage effectiveness of every region without its own; default 1.0 (power_kw
    is then IT power)."""
    server_power_factor: ServerPowerFactor | None = None
    """A server's power over its GPUs' board power; default
    `models.operations.site.SERVER_POWER_FACTOR` (1.82, DGX H100: 10.2 kW for 8 x 700 W)."""
    speculative: Annotated[list[SpeculativeOption], at_most(limits.SPECULATIVE_OPTIONS)] = Field(
        default_factory=list
    )
    """Speculative-decoding options the program may turn on per pool (each: name,
    draft_model or draft_cost_ratio, tokens, acceptance_rate); every unified and decode
    candidate is enumerated with and without each; default: none."""


class Quality(BaseModel):
    """A quality change the instance declares against a base (for `fleetplan compare`):
    e.g. a lower precision or a speculative decoder measured on an evaluation."""

    model_config = STRICT

    metric: str = Field(min_length=1, max_length=200)
    """The evaluation, e.g. `mmlu` or `win-rate vs base`."""
    delta: QualityDelta
    """Change against the base, in the metric's units; negative is worse."""
    max_regression: QualityRegression
    """The largest drop the gate allows (>= 0, same units): pass when delta >= -max."""

    @property
    def passes(self) -> bool:
        """Whether the declared change is within its gate: delta >= -max_regression."""
        return self.delta >= -self.max_regression


class SolverSettings(BaseModel):
    """Which backend solves the program, and how long it may take."""

    model_config = STRICT

    backend: BackendName = DEFAULT_BACKEND
    """MIP solver: highs (default; it hands workload programs of 2,000 columns or more to
    SCIP), cbc, scip or cpsat (`--backend` overrides it)."""
    time_limit_s: TimeLimitS = 60
    """Wall-time limit of the whole run, seconds (`--time-limit` overrides it)."""
    mip_gap: MipGap = 1e-3
    """Relative optimality gap at which the solver stops (`--mip-gap` overrides it)."""
    threads: Threads = 1
    """Solver threads (`--threads` overrides it)."""
    scenario_rows: Literal["auto", "routing", "cuts"] = "auto"
    """How region and zone loss enter the program: `routing` restates every region's
    routing in each scenario; `cuts` adds only the scenarios' Hall rows (the demand of a
    set of regions within what the survivors in reach carry) that a solution breaks, by
    max-flow / min-cut: the same optimum, a program that grows linearly in regions.
    Instances with `policy.colocation` stay on routing. `auto` (the default): cuts from
    5 regions where they are exact, routing below; `solver.method` in the plan says which."""
