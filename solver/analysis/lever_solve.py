"""One lever's re-solve: the lever's instance solved with one solver thread within its
share of the time (`solve_lever`), from the base plan where given, each ending a
`LeverResult` (the plan's cost, saving and gap, or why there is none); what a lever is
ranked by (`lever_cost`); and the base plan where that answers a lever (`as_base`,
`base_is_better`). Which levers run, when, with what share and start, and their ranking:
solver.analysis.levers.

A lever with no plan says why (`reason`: the diagnosis' first requirement in conflict,
e.g. "every configuration keeps its KV cache in fp4, which h100-sxm cannot hold"). A
lever that changes the GPUs in use but not the whole servers bought (`policy.buy_unit:
node`) saves nothing, and says so (`note`: "rounded to whole servers: 7 GPUs saved, 0
servers"), so a "+0" is never read as a lever that changes nothing.
"""

from collections.abc import Mapping
from dataclasses import replace

from pydantic import BaseModel, ConfigDict

from models.schema.instance import Instance
from solver.analysis.lever_groups import Neutral, neutral
from solver.analysis.lever_programs import (
    SAME_PROGRAM_NOTE,
    UNUSED_OFFER_NOTE,
    BaseProgram,
    lever_table,
    offers_nothing,
    plan_fields,
)
from solver.candidates.table import CandidateTable
from solver.errors import Infeasible, NoSolution, PlanRejected
from solver.plan.schema import Plan
from solver.settings import SolveSettings, TimeLimitReached
from solver.solve import solve_program
from solver.stages import candidate_table

REGION_ROWS = False
"""Whether a static lever's search from the base plan works out its regions' programs for
region_cost rows (SolveSettings.region_rows_with_start; a group keeps them): chat-3region's
ten levers alone 26.4 CPU s with them (10.9 in those programs), 17.8 without."""
BASE_IS_BETTER_NOTE = (
    "the base plan: the lever only loosens the question, and its search stopped on a "
    "dearer plan (${found:,.0f}/month)"
)
"""`base_is_better`'s note."""
STOPPED = "stopped by its time limit ({limit_s:.3g} s) in {stage}, before any plan"
"""The reason of a lever its time limit stopped before the solve had a plan."""
NOT_STARTED = "not re-solved: the levers' time limit passed before its turn"
"""Why a lever whose turn came with under `MIN_START_S` of the deadline left has no plan."""


class LeverResult(BaseModel):
    """One lever's re-solve."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    lever: str
    cost_per_month: float | None
    """The re-solved plan's cost (`lever_cost`: a horizon's mean month); None when it has
    no plan (status says why)."""
    saving_per_month: float | None
    """Base cost minus the lever's cost (negative: the lever costs more)."""
    status: str = "solved"
    """solved | feasible (a plan not proven within the gap in the lever's share of the
    time limit: `gap`) | infeasible | no_solution | rejected | bad_input"""
    gap: float | None = None
    """The plan's relative gap to its bound where it is not proven (status feasible):
    the lever's optimum lies within cost x (1 - gap) .. cost."""
    total_gpus: int | None = None
    """GPUs in use."""
    servers: int | None = None
    """Whole servers bought (0 when the plan buys single GPUs)."""
    whole_servers: bool = False
    """Whether the plan buys whole servers of more than one GPU."""
    reason: str = ""
    """Why there is no plan (the diagnosis' first requirement in conflict)."""
    note: str = ""
    """What the saving hides: GPUs saved that whole servers round away."""
    uncertain: tuple[str, ...] = ()
    """The lever plan's pools whose capacity rests on a borrowed GPU generation or an
    unmeasured regime, with their error band (`capacity_bands.uncertain_pools`): the
    saving is only as good as that band."""


def solve_lever(
    name: str,
    instance: Instance,
    base_cost: float,
    backend: str | None,
    time_limit_s: float | None = None,
    start: Mapping[str, float] | None = None,
    base_program: BaseProgram | None = None,
    handed_out: float | None = None,
    probe: tuple[str, float, dict[str, float]] | None = None,
    unused: tuple[CandidateTable, BaseProgram] | None = None,
    reduced: bool = False,
) -> LeverResult | Neutral:
    """Solve a lever's instance with one solver thread, within `time_limit_s` (default:
    the instance's) counted from `handed_out` (a `time.monotonic()` reading, the same
    clock in every process of the machine; default: now), from `start` (the base plan's
    values by column name) where given; every ending is a LeverResult, one without a
    plan with its reason. With `base_program`, a lever whose program is the base's is not
    solved: its result is the base plan's (solver.analysis.lever_programs); with `probe`
    (the GPU type the lever offers, the base program's `lever_groups.servers_bound` and
    its plan, the probe's start)
    too, a lever whose program's is no lower is not solved either: it is returned `Neutral`,
    to be proven with others (solver.analysis.lever_groups). With `unused` (the base's
    table and answer), neither is one whose table is the base's (`offers_nothing`).
    `reduced`: the search from `start` leaves out the pools config dominance removes."""
    settings = SolveSettings.of(instance, backend=backend, threads=1, time_limit_s=time_limit_s)
    if start is not None:
        settings = replace(settings, start=start, dominated_with_start=reduced)
        settings = replace(settings, region_rows_with_start=REGION_ROWS)
    settings = settings.started(handed_out)
    table = program = None
    try:
        if unused is not None:
            table = candidate_table(instance, settings)
            if offers_nothing(table, unused[0]):
                return as_base(name, base_cost, unused[1], UNUSED_OFFER_NOTE)
        if base_program is not None:
            table, program, same = lever_table(instance, settings, base_program, table)
            if same:
                return as_base(name, base_cost, base_program)
            if probe is not None and neutral(program.lp, probe[1], backend, probe[2]):
                return Neutral(name, probe[0], program.lp)
        plan = solve_program(instance, settings, table, program).plan
    except Infeasible as error:
        problems = error.diagnosis.problems
        reason = str(error) if not problems else f"{problems[0].requirement}: {problems[0].message}"
        if len(problems) > 1:
            reason += f" (and {len(problems) - 1} more)"
        return _no_plan(name, "infeasible", reason)
    except TimeLimitReached as error:  # not the run's --time-limit: the lever's own share
        limit_s = settings.time_limit_s or 0.0  # a limit it has, since it stopped there
        return _no_plan(name, "no_solution", STOPPED.format(limit_s=limit_s, stage=error.stage))
    except NoSolution as error:
        return _no_plan(name, "no_solution", str(error))
    except PlanRejected as error:
        return _no_plan(name, "rejected", str(error))
    cost = lever_cost(plan)
    proven = plan.optimal or plan.solver is None
    return LeverResult(
        lever=name,
        cost_per_month=cost,
        saving_per_month=base_cost - cost,
        status="solved" if proven else "feasible",
        gap=None if proven else plan.solver.mip_gap,
        **plan_fields(plan),
    )


def lever_cost(plan: Plan) -> float:
    """What a lever's plan is ranked by, $/month: the plan's cost per month, or over a
    procurement horizon (policy.horizon_months) its horizon's mean month, horizon_cost /
    months, so that a lever whose effect comes in later months (a shorter lead time, a
    lower growth) shows it (month 0 alone can be the same)."""
    if plan.months and plan.horizon_cost is not None:
        return plan.horizon_cost / len(plan.months)
    return plan.cost_per_month or 0.0


def base_is_better(result: LeverResult, base: Plan) -> LeverResult:
    """A lever that relaxes the question (lever_edits.Lever.relaxes) stopped unproven on a
    plan dearer than the base (an hourly or month re-solve begun from no start): the
    base plan is a plan of the lever's question too, so it is the lever's best plan found,
    saving 0, with the gap to the lever's proven bound, found x (1 - gap), where the
    search stated one. Any other result is returned as it is."""
    base_cost = lever_cost(base)
    found = result.cost_per_month
    if result.status != "feasible" or found is None or found <= base_cost or base_cost <= 0:
        return result
    bound = None if result.gap is None else found * (1 - result.gap)
    return result.model_copy(
        update={
            "cost_per_month": base_cost,
            "saving_per_month": 0.0,
            "gap": None if bound is None else max(base_cost - bound, 0.0) / base_cost,
            **plan_fields(base),
            "note": BASE_IS_BETTER_NOTE.format(found=found),
        }
    )


def as_base(
    name: str,
    base_cost: float,
    base: BaseProgram,
    note: str = SAME_PROGRAM_NOTE,
    gap: float | None = None,
) -> LeverResult:
    """A lever answered by the base plan (its program is the base's, or its group proved
    it: solver.analysis.lever_groups; `gap`: proven only to that), noted."""
    return LeverResult(
        lever=name,
        cost_per_month=base_cost,
        saving_per_month=0.0,
        status="solved" if gap is None else "feasible",
        gap=gap,
        **base.fields(),
        note=note,
    )


def not_started(name: str) -> LeverResult:
    """A lever whose turn came past the levers' deadline: no plan, and why."""
    return _no_plan(name, "no_solution", NOT_STARTED)


def _no_plan(name: str, status: str, reason: str) -> LeverResult:
    return LeverResult(
        lever=name, cost_per_month=None, saving_per_month=None, status=status, reason=reason
    )
