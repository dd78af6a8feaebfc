"""The plan: what to run where, what it costs, what binds it, and how it rides failures.

Frozen pydantic records; `Plan.model_dump_json()` is the `--json` output and
`Plan.model_validate_json()` reads it back (for `fleetplan verify`). Only `replicas` is
needed to verify a fleet: a file holding `{"replicas": [...]}` describes a fleet that a
user owns today, and every other field has a default.
"""

from pydantic import BaseModel, ConfigDict, Field

from models.precision import Precision
from models.replica import Limit, Role

_FROZEN = ConfigDict(extra="forbid", frozen=True)

SHADOW_PRICE_NOTE = (
    "Shadow prices are not MIP duals (an integer program has none). They come from the "
    "LP with the plan's discrete choices fixed (which configurations run in which "
    "region, which pools are open, which pooling steps they are credited with) and "
    "replica counts relaxed to continuous: the marginal $/month of one more unit of "
    "each right-hand side for this plan's layout."
)


def configuration_key(
    gpu: str, precision: str, tp: int, pp: int, role: str, ep: int = 1, dp: int = 1
) -> str:
    """The name-safe key of a replica configuration, e.g. `h100-sxm.fp8.tp4pp1.unified`
    (`h200.fp8.tp1pp1dp8ep8.unified` with attention DP and expert parallelism): how
    program rows, the plan and the verifier name a candidate."""
    layout = f"tp{tp}pp{pp}" + (f"dp{dp}" if dp > 1 else "") + (f"ep{ep}" if ep > 1 else "")
    return f"{gpu}.{precision}.{layout}.{role}"


class ReplicaPool(BaseModel):
    """Replicas of one configuration serving one workload in one region."""

    model_config = _FROZEN

    workload: str
    region: str
    gpu: str
    precision: Precision
    """Weight precision."""
    kv_precision: Precision | None = None
    """KV-cache precision; default: the model entry's rule (weights, never below fp8)."""
    tp: int = Field(ge=1)
    pp: int = Field(ge=1)
    role: Role = Role.UNIFIED
    count: int = Field(ge=0)
    """Replicas."""
    ep: int = Field(default=1, ge=1)
    """Expert-parallel ranks of the routed experts (1: experts split by TP)."""
    dp: int = Field(default=1, ge=1)
    """Attention data-parallel groups per stage (a replica has tp x pp x dp GPUs)."""
    gpus: int | None = Field(default=None, ge=0)
    """GPUs in all: count x tp x pp x dp."""
    limit: Limit | None = None
    """What limits one replica's capacity at the SLO, in a pool of `count`."""
    requests_per_s_per_replica: float | None = None
    """Capacity of one replica at the SLO, requests/s of its own phase, when the pool's
    `count` replicas share one router and one prompt queue (`models.capacity`, "Pools")."""
    cost_per_month: float | None = None
    """What these GPUs would cost if all were bought (the existing fleet is free)."""

    @property
    def label(self) -> str:
        """`h100-sxm fp8 tp4xpp1 unified` (`h200 fp8 tp1xpp1xdp8 ep8 unified`)."""
        layout = f"tp{self.tp}xpp{self.pp}" + (f"xdp{self.dp}" if self.dp > 1 else "")
        layout += f" ep{self.ep}" if self.ep > 1 else ""
        return f"{self.gpu} {self.precision} {layout} {self.role}"

    @property
    def replica_gpus(self) -> int:
        """GPUs in one replica: tp x pp x dp."""
        return self.tp * self.pp * self.dp

    @property
    def key(self) -> str:
        """`h100-sxm.fp8.tp4pp1.unified` (`configuration_key`)."""
        return configuration_key(
            self.gpu, self.precision, self.tp, self.pp, self.role, self.ep, self.dp
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
    price_per_gpu_hour: float
    cost_per_month: float
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


class SolverRun(BaseModel):
    """Which backend solved the program, how long it took, how close it got."""

    model_config = _FROZEN

    name: str
    version: str
    termination: str
    runtime_s: float
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
    """How the program was solved: as one, or workload by workload (solver.decompose)."""


class Plan(BaseModel):
    """A fleet plan for one instance."""

    model_config = _FROZEN

    instance: str = ""
    """The instance's name."""
    status: str = "given"
    """optimal | feasible (time limit hit with a gap) | given (written by hand)."""
    cost_per_month: float | None = None
    """USD per month for the GPUs bought (the existing fleet is already paid for)."""
    total_gpus: int | None = None
    gpus: tuple[GpuUse, ...] = ()
    replicas: tuple[ReplicaPool, ...] = ()
    binding: tuple[Binding, ...] = ()
    scenarios: tuple[ScenarioResult, ...] = ()
    solver: SolverRun | None = None
    shadow_price_note: str = ""
    notes: tuple[str, ...] = ()
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

    def gpus_by_type_and_region(self) -> dict[str, dict[str, int]]:
        """{gpu: {region: used}} for GPUs in use."""
        table: dict[str, dict[str, int]] = {}
        for use in self.gpus:
            if use.used:
                table.setdefault(use.gpu, {})[use.region] = use.used
        return table
