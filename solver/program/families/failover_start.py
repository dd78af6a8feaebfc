"""Failover with a start time: after a region loss, spare may be started in the survivors
instead of kept warm, and the start window is paid from the error budget.

Per period p (its copy of the static program, solver.time.periods), region-loss scenario
f = lose=<x>, workload w with `slo.availability` A_w, surviving region d and unified
candidate c of w in d:

    started[f,w,c,d]@p   integer >= 0: replicas started in d at the loss; they serve
                         after T_s = policy.failover_start_s (default: the slowest
                         replica start among the GPU types on offer)
    gap[f,w,d]@p         >= 0: requests/s of d's rerouted load beyond the warm
                         survivors' capacity until the started replicas serve

    capacity[f,w,d,unified]@p  (the static row) gains + q_c x started[f,w,c,d]
                         (after the start the survivors carry everything; started
                         replicas are credited their lone capacity q_c, no pooling gain,
                         at the TTFT target less the round trip of rerouted users)
    failover_window[f,w,d]@p:  warm credit_f[w,d] + gap[f,w,d] >= load_f[w,d] / u
                         (the static capacity row as it was, plus the gap)
    error_budget[f,w]@p:  m_f x T_s / (60 a_w) x sum_d gap[f,w,d] <= B_w
    start_supply[f,d,g]@p:  sum gpus(c) x (replicas + started) <= existing + max_gpus
    start_on_demand[f,d,g]@p:  sum gpus(c) x started + on_demand[d,g]@p <= K
                         (only where `max_on_demand_gpus` = K is given: started
                         replicas are paid on demand and share the cap with the hour's
                         own on-demand GPUs)
    started_open[f,w,c,d]@p:  started - N x pool_used[w,c,d]@p <= 0
                         (only with policy.max_configs_per_pool: a configuration
                         started after a loss is one the pool counts in its
                         configs_per_pool row, solver.program.families.simplicity, so
                         warm and started replicas together keep the limit; N the
                         pool's replica bound)

B_w = (1 - A_w) x month minutes (models.operations.failover_budget.budget_minutes_per_month);
a_w = w's average actual rate over the day, all regions (the budget counts requests,
so gap x T_s failed requests are gap x T_s / (60 a_w) minutes of full outage);
m_f = the losses of x a month's budget must absorb: max(1, lambda x hours_per_month /
8,760) with lambda = -ln(1 - p) from x's `failure_probability_per_year` p, else 1
(models.operations.failover_budget.budgeted_losses: a monthly SLO is judged month by month, so a
rare loss is assumed to fall in the month judged, not averaged away over the years).

Started replicas cost nothing in the month (they run only during a loss; an epsilon
keeps the solver from starting replicas it does not need). With T_s = 0 no gap is
possible (they serve at once): no window or budget rows, and the warm spare shrinks
to what the survivors' supply cannot start. With a large T_s the budget row forces
gap to 0: the warm survivors carry the loss, today's static spare. Workloads without
an availability target keep their warm spare (no budget to spend), and so do those
averaging under MIN_BUDGETED_RPS (a budget that allows no gap worth the name).
"""

from dataclasses import dataclass
from typing import ClassVar

from models.operations.failover_budget import budget_minutes_per_month, budgeted_losses
from models.operations.scenarios import ScenarioKind
from models.operations.time_demand import failover_window_s, interactive_grid
from models.schema.instance import Instance
from models.serving.replica import Limit, Role
from solver.program.build import FleetProgram
from solver.program.families import add_row, register
from solver.program.families.capacity import CapacityRow
from solver.program.families.variables import PoolUsedColumn
from solver.program.lp import Constraint, LinearProgram, Sense
from solver.program.row_names import Index, ReplicasColumn
from solver.program.sets import Pool, ProgramSets

SECONDS_PER_MINUTE = 60.0
STARTED_EPSILON = 0.1
MIN_BUDGETED_RPS = 1e-6
"""Average requests/s below which a workload keeps its warm spare instead of spending its
error budget (one request in 11.6 days): the budget would allow a gap of at most
B_w x 60 x a_w / (m_f x T_s) < 43.8 x 60 x 1e-6 / T_s requests/s for a 99.9% target,
nothing, while its row's coefficient m_f x T_s / (60 a_w) grows past what a solver takes
(HiGHS refuses a model with a coefficient above 1e15: a workload shrunk by
`monthly_growth: -0.99` for eight months has a_w near 1e-15)."""
"""Objective weight of a started GPU, relative to the tie-break per warm GPU."""


@dataclass(frozen=True)
class StartedColumn(Index):
    """started[f,w,c,d]: replicas of c started in d after the loss f."""

    family: ClassVar[str] = "started"
    scenario: str
    workload: str
    candidate: str
    region: str


@dataclass(frozen=True)
class GapColumn(Index):
    """gap[f,w,d]: requests/s beyond the warm survivors' capacity in the start window."""

    family: ClassVar[str] = "gap"
    scenario: str
    workload: str
    region: str


@dataclass(frozen=True)
class FailoverWindowRow(Index):
    """failover_window[f,w,d]."""

    family: ClassVar[str] = "failover_window"
    scenario: str
    workload: str
    region: str


@dataclass(frozen=True)
class ErrorBudgetRow(Index):
    """error_budget[f,w]."""

    family: ClassVar[str] = "error_budget"
    scenario: str
    workload: str


@dataclass(frozen=True)
class StartSupplyRow(Index):
    """start_supply[f,r,g]."""

    family: ClassVar[str] = "start_supply"
    scenario: str
    region: str
    gpu: str


@dataclass(frozen=True)
class StartOnDemandRow(Index):
    """start_on_demand[f,r,g]."""

    family: ClassVar[str] = "start_on_demand"
    scenario: str
    region: str
    gpu: str


FAILOVER_WINDOW = register(
    FailoverWindowRow,
    "until started replicas serve, the warm survivors carry the rerouted load but the gap",
    "$/month per request/s of load",
)
ERROR_BUDGET = register(
    ErrorBudgetRow,
    "the start window of a loss spends at most the month's error budget",
    "$/month per budget minute",
)
START_SUPPLY = register(
    StartSupplyRow,
    "replicas started after a loss fit in the survivor's GPU supply",
    "$/month per GPU",
)
START_ON_DEMAND = register(
    StartOnDemandRow,
    "replicas started after a loss fit under the on-demand cap",
    "$/month per GPU",
)


@dataclass(frozen=True)
class StartedOpenRow(Index):
    """started_open[f,w,c,d]."""

    family: ClassVar[str] = "started_open"
    scenario: str
    workload: str
    candidate: str
    region: str


STARTED_OPEN = register(
    StartedOpenRow,
    "replicas started after a loss run a configuration the pool counts against "
    "max_configs_per_pool",
    "$/month per replica",
    reported=False,
)


@dataclass(frozen=True)
class FailoverTerms:
    """What the rows of one instance read, once for all periods."""

    window_s: float
    """T_s."""
    budget_minutes: dict[str, float]
    """w -> B_w (workloads with an availability target and demand)."""
    average_rps: dict[str, float]
    """w -> a_w."""
    losses_per_month: dict[str, float]
    """lost region -> m_f."""


def failover_terms(instance: Instance) -> FailoverTerms:
    """T_s, B_w, a_w and m_f of an instance (see the module text)."""
    grid = interactive_grid(instance)
    months = instance.policy.hours_per_month
    budgets, averages = {}, {}
    for workload in instance.workloads:
        availability = workload.slo.availability
        if availability is None or workload.is_batch:
            continue
        average = sum(sum(rates) for key, rates in grid.items() if key[0] == workload.name) / 24
        if average >= MIN_BUDGETED_RPS:  # below: the warm spare, the conservative answer
            budgets[workload.name] = budget_minutes_per_month(availability, months)
            averages[workload.name] = average
    losses = {
        region.name: budgeted_losses(region.failure_probability_per_year, months)
        for region in instance.regions
    }
    return FailoverTerms(failover_window_s(instance), budgets, averages, losses)


def started_credit(sets: ProgramSets, scenario: str, pool: Pool) -> tuple[float, Limit]:
    """q'_c and its limit: what the capacity row credits a replica of `pool` started
    after the loss `scenario`. It serves the users the loss reroutes to its region too,
    so its lone capacity at the TTFT target less their longest round trip
    (`ProgramSets.failover_tiers`' q'(1)); where none may come (or that curve is not
    tabulated), q(1) at the target. The read-back states this figure
    (solver.time.readback.failover.started_pools); the verifier recomputes it
    (solver.verify.hour_scenarios)."""
    c = pool.candidate
    rtt_ms = sets.rerouted_rtt.get((scenario, pool.workload, pool.region), 0.0)
    curve = c.failover_curve(rtt_ms) if rtt_ms > 0 else None
    if curve is None:
        return c.requests_per_s, c.limit
    return curve.requests_per_s(1), curve.lone.limit


def add_failover_start(
    lp: LinearProgram,
    program: FleetProgram,
    period: int,
    terms: FailoverTerms,
    on_demand: dict[tuple[str, str], tuple[str, int]],
    weight_hours: float,
) -> None:
    """The failover rows of one period (`period`: its first UTC hour, every row's and
    column's typed `period`).

    Args:
        on_demand: (region, GPU) -> (the period's on-demand column, cap K) where a cap
            is given.
        weight_hours: hours a day the period stands for (weights the epsilon).
    """
    sets = program.sets
    instance = sets.instance
    epsilon = STARTED_EPSILON * sets.tie_break_per_gpu * weight_hours / 24
    limit = instance.policy.max_configs_per_pool
    for f in sets.routing_scenarios:
        if f.kind is not ScenarioKind.REGION or f.lost_region is None:
            continue
        started_gpus: dict[tuple[str, str], dict[str, float]] = {}
        for w in terms.budget_minutes:
            gaps = {}
            for d in sets.regions:
                row_name = CapacityRow(f.name, w, d, Role.UNIFIED.value).at(period).name()
                row = lp.constraints.get(row_name)
                if d == f.lost_region or row is None:
                    continue
                added = {}
                for pool in sets.pools_at.get((w, d), ()):
                    c = pool.candidate
                    if c.role is not Role.UNIFIED or c.requests_per_s <= 0:
                        continue
                    name = StartedColumn(f.name, w, c.key, d).at(period).name()
                    lp.add_variable(name, upper=float(pool.max_replicas), integer=True)
                    lp.add_objective({name: epsilon * c.gpus})
                    used = PoolUsedColumn(w, c.key, d).at(period).name()
                    if limit is not None and used in lp.variables:
                        add_row(
                            lp,
                            StartedOpenRow(f.name, w, c.key, d).at(period),
                            {name: 1.0, used: -float(pool.max_replicas)},
                            Sense.LE,
                            0.0,
                        )
                    added[name] = started_credit(sets, f.name, pool)[0]
                    started_gpus.setdefault((d, c.gpu), {})[name] = float(c.gpus)
                if not added:
                    continue
                lp.constraints[row_name] = Constraint(
                    row_name, row.family, {**row.coefficients, **added}, row.sense, row.rhs
                )
                if terms.window_s <= 0:
                    continue
                gap = lp.add_variable(GapColumn(f.name, w, d).at(period).name())
                gaps[gap] = 1.0
                add_row(
                    lp,
                    FailoverWindowRow(f.name, w, d).at(period),
                    {**row.coefficients, gap: 1.0},
                    row.sense,
                    row.rhs,
                )
            if gaps:
                per_rps = (
                    terms.losses_per_month[f.lost_region]
                    * terms.window_s
                    / (SECONDS_PER_MINUTE * terms.average_rps[w])
                )
                add_row(
                    lp,
                    ErrorBudgetRow(f.name, w).at(period),
                    {gap: per_rps for gap in gaps},
                    Sense.LE,
                    terms.budget_minutes[w],
                )
        for (d, g), started in started_gpus.items():
            warm = {
                ReplicasColumn(p.workload, p.candidate.key, d).at(period).name(): float(
                    p.candidate.gpus
                )
                for p in sets.pools
                if p.region == d and p.candidate.gpu == g
            }
            available = instance.region(d).available_gpus(g)
            add_row(
                lp,
                StartSupplyRow(f.name, d, g).at(period),
                {**warm, **started},
                Sense.LE,
                float(available),
            )
            if (d, g) in on_demand:
                column, cap = on_demand[(d, g)]
                add_row(
                    lp,
                    StartOnDemandRow(f.name, d, g).at(period),
                    {**started, column: 1.0},
                    Sense.LE,
                    float(cap),
                )
