"""Warm and cold pools through the solver: the plan that serves the splittable workloads
whole and the plan that serves each by a warm and a cold pool (`models.colocation.warm_cold`), each
solved to its optimum; the cheaper is the answer (a tie keeps the workloads whole), so
allowing the split never raises the cost."""

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol, TypeVar

from models.colocation.warm_cold import warm_cold_instance
from models.schema.instance import Instance
from solver.errors import Infeasible
from solver.plan.schema import Plan
from solver.settings import SolveSettings, TimeLimitReached


class _HasPlan(Protocol):
    plan: Plan


Solved = TypeVar("Solved", bound=_HasPlan)
"""`solver.solve.Solved` (not imported: solve imports this module)."""


def solve_choosing_split(
    instance: Instance,
    workloads: tuple[str, ...],
    settings: SolveSettings,
    solve_one: Callable[[Instance, SolveSettings], Solved],
) -> Solved:
    """The cheaper of the whole and the split plan of `instance`, with the choice stated in
    the plan (`warm_cold_split`, `warm_cold_unsplit_cost_per_month`, a note).

    Raises:
        Infeasible: neither plan exists (the whole instance's diagnosis).
        TimeLimitReached: the deadline stopped the whole plan's solve (the split's,
            the whole plan in hand, leaves that plan the answer, its note saying so).
    """
    try:
        whole = solve_one(instance, settings)
    except Infeasible:
        whole = None
    stopped = False
    try:
        split = solve_one(warm_cold_instance(instance, workloads), settings)
    except Infeasible:
        if whole is None:
            raise
        split = None
    except TimeLimitReached:  # the whole plan is in hand: it is the answer
        if whole is None:
            raise
        split, stopped = None, True
    if whole is not None and (
        split is None or split.plan.cost_per_month >= whole.plan.cost_per_month * (1 - 1e-9)
    ):
        note = f"warm/cold split of {', '.join(workloads)}: " + (
            ("no plan within the time limit" if stopped else "no plan")
            if split is None
            else f"${split.plan.cost_per_month:,.0f}/month, not cheaper than whole "
            f"(${whole.plan.cost_per_month:,.0f}/month): not taken"
        )
        plan = whole.plan.model_copy(
            update={
                "notes": (*whole.plan.notes, note),
                "warm_cold_unsplit_cost_per_month": whole.plan.cost_per_month,
            }
        )
        return replace(whole, plan=plan)
    assert split is not None
    saving = (
        "no plan serves them whole"
        if whole is None
        else f"saves ${whole.plan.cost_per_month - split.plan.cost_per_month:,.0f}/month "
        f"against ${whole.plan.cost_per_month:,.0f}/month whole"
    )
    plan = split.plan.model_copy(
        update={
            "notes": (
                *split.plan.notes,
                f"warm/cold split of {', '.join(workloads)} (pools <name>-warm, <name>-cold): "
                + saving,
            ),
            "warm_cold_split": workloads,
            "warm_cold_unsplit_cost_per_month": None
            if whole is None
            else whole.plan.cost_per_month,
        }
    )
    return replace(split, plan=plan)
