"""Procurement over `policy.horizon_months`: every month planned at its own demand, on a
fleet that never shrinks and grows only as fast as orders arrive.

Demand. Month m (0 = the instance as written) runs every workload's demand times its
growth (1 + g_w)^m (models.operations.procurement.month_instance; g_w = `monthly_growth` of the
workload, else of the policy): `requests_per_day` or `peak_requests_per_s` of each
region is scaled, the hourly profile kept (`grown_instance`).

Months solved in sequence. Month 0 is the hourly plan itself (its cost stays the
plan's top-level `cost_per_month`). Each later month m is its own periods program
(solver.time.periods, the same program as month 0) on month m's demand, with the
commitments bounded by the months before:

    committed_m[r,g] >= committed_(m-1)[r,g]        (bought GPUs are never sold back)
    committed_m[r,g] <= committed_(m-1)[r,g]  if m < L (no order placed in the horizon
                                                    arrives before month L)

L = `lead_time_months`. The GPUs a month adds to its commitment, b_m = c_m - c_(m-1),
are ordered in month m - L (month 0's commitment is the fleet the horizon starts
with: ordered before it, in month -L); with policy.buy_unit: node commitments are whole
servers (solver.program.families.pricing), and each month states the servers it adds
with their order month (`servers_ordered`). The plan's `horizon_cost` is the sum of the
months' costs. What a month does not commit it rents on
demand (or on spot) hour by hour, as in month 0.

Rolling, not one joint program: each month is solved by the pipeline's one sequence
(solver.solve) as its own horizon (solver.time.horizon says why rolling), priced and
read back as month 0 is; the whole horizon is verified once. The candidate table (the
physics of every configuration, the slow part) is built once, on the horizon's largest
demand, and reused by every later month.
"""

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace

from models.operations.procurement import (
    grown_instance,
    growth_factors,
    month_factors,
    month_instance,
)
from models.operations.site import gpu_kw, installed_gpus, node_gpus, racks_per_gpu
from models.schema.instance import Instance
from models.schema.quantities import counted
from models.schema.traffic import HOURS_PER_DAY
from solver.candidates.table import CandidateTable
from solver.errors import Diagnosis, Infeasible, Problem
from solver.plan.records import Binding, RegionPower
from solver.plan.schema import Plan, plan_status
from solver.plan.time_records import Commitment, Hour, Month, MonthOffer, ServerOrder
from solver.program.families.pricing import CommittedColumn
from solver.program.lp import Termination, Variable
from solver.settings import SolveSettings
from solver.stages import candidate_table, verified
from solver.time.periods import TimeProgram
from solver.time.readback.failover import error_budgets
from solver.verify.hours import verify_hours
from solver.verify.months import keep_hour_checks

HELD_AND_GROWN = "the month before's hours held and grown by (1 + g) a month, no program"
"""A month cut at the time limit planned in closed form (solver.time.cut_month): its
solver record's method, and what its note says its plan is."""

VERIFY_MARGIN = 1.5
"""What the run does after its last month, kept per month in month 0's own verifications
(`verification_kept`): the horizon's verification (each month's hours as month 0's, a
later month's grown demand running more pools), `with_months` (each month's offers,
orders and error budgets) and the report. Growth-horizon at monthly_growth 0.01 and 120
months on a machine loaded 3-6: the run's last 4.5 to 12.9 s after its last month
(`with_months` 1.3-3.5 s, the verification 2.3-8.1 s, the JSON 1.3-1.9 s), 0.04-0.11 s a
month, against month 0's own verification of 0.06-0.07 s of CPU (0.04-0.19 s by the
wall clock, which counts the threads month 0 leaves running: `verification_kept`)."""


def verification_kept(
    instance: Instance, plan: Plan, months: int, settings: SolveSettings
) -> float:
    """Month 0's plan verified on its own (PlanRejected where it fails: a bug), and the
    seconds what the run does after its last month is expected to take, which every
    month keeps (`solver.time.shares.kept_until`) and past which a month whose turn
    comes is cut (`solver.time.shares.tail_due`): it verifies each month's hours as this
    verifies month 0's (its shared groups' verdicts kept: solver.verify.groups),

        V = VERIFY_MARGIN x H x (month 0's own verification);

    0 without a time limit, or past it (every later month is cut: solver.time.cut_month),
    where nothing is verified here (the horizon's verification checks month 0). Timed
    by this thread's CPU (`time.thread_time`): by the wall clock it counts the threads
    that month 0 leaves running beside it, and the same run measured 0.13 and 0.19 s of
    wall for 0.06 and 0.07 s of CPU (growth-horizon at 120 months, load 3-4), a tail
    foretold twice too long that cut months the run had time for; the tail itself
    runs alone."""
    if settings.deadline is None or settings.deadline.limit_s is None:
        return 0.0
    if settings.deadline.expired():  # every later month is cut: nothing to keep time for
        return 0.0
    started = time.thread_time()
    keep_hour_checks(instance)  # its hours' checks again in the horizon's verification
    verified(plan, verify_hours(instance, plan), "plan for month 0")
    return VERIFY_MARGIN * months * (time.thread_time() - started)


def horizon_table(
    instance: Instance, horizon: int, settings: SolveSettings, fallback: object | None = None
) -> CandidateTable:
    """Candidates for every month: built once on each workload's largest demand over the
    horizon (the pooling tables then reach the largest pool any month needs), by the
    pipeline's candidate stage (its guard, its workers, its deadline; past it where
    month 0 leaves month 1 a `fallback`: solver.time.horizon.Horizon.past_limit)."""
    if fallback is not None:
        settings = replace(settings, deadline=None)
    largest = {
        w.name: max(growth_factors(instance.monthly_growth(w.name), horizon))
        for w in instance.workloads
    }
    return candidate_table(grown_instance(instance, largest), settings)


def bound_commitments(
    program: TimeProgram, floor: Mapping[tuple[str, str], float], frozen: bool
) -> None:
    """A later month's periods program with its commitments at least `floor` (the month
    before's), and exactly `floor` before the lead time (`frozen`): the module text."""
    for offer in program.offers:
        name = CommittedColumn(offer.region, offer.gpu).name()
        if name not in program.lp.variables:
            continue
        var = program.lp.variables[name]
        least = floor.get((offer.region, offer.gpu), 0.0)
        program.lp.variables[name] = Variable(
            name, max(var.lower, least), least if frozen else var.upper, var.integer
        )


def month_growth(instance: Instance, month: int) -> float:
    """The largest demand factor of month `month` over the workloads (1 for month 0)."""
    return max(month_factors(instance, month).values(), default=1.0)


def diagnosed_in_month(diagnosis: Diagnosis, month: int, growth: float) -> Diagnosis:
    """`diagnosis` of month `month`'s program, each problem saying which month and its
    demand factor: its figures are the grown demand's (69.4 requests/s for an instance
    stating 34.7, at x2), and read as the instance's they named no month. A problem of
    the months' own (`month_conflict`) names its month already."""
    said = f"month {month} of the horizon (demand x{growth:.3f})"
    problems = tuple(
        p if p.requirement.startswith("month[") else replace(p, message=f"{said}: {p.message}")
        for p in diagnosis.problems
    )
    return replace(diagnosis, problems=problems)


def month_conflict(instance: Instance, month: int, frozen: bool, growth: float) -> Diagnosis:
    """Why month `month` has no plan: its demand (x `growth`) on the commitments it
    inherits."""
    remedy = "offer more GPUs (max_gpus) or a shorter lead_time_months"
    if frozen:
        remedy = (
            f"orders take {counted(instance.policy.lead_time_months, 'month')}, so month {month}'s "
            "growth is rented on demand: raise max_on_demand_gpus or max_gpus"
        )
    problem = Problem(
        f"month[{month}]",
        f"month {month} of the horizon (demand x{growth:.3f}) cannot be served "
        "on the commitments it inherits and the supply offered",
        remedy,
    )
    return Infeasible.from_problems([problem], method="month-by-month procurement").diagnosis


def month_offers(
    instance: Instance,
    month: int,
    hours: tuple[Hour, ...],
    committed: tuple[Commitment, ...],
    previous: dict[tuple[str, str], float],
) -> tuple[MonthOffer, ...]:
    """Per offer: the month's peak GPUs, owned / committed / bought, its order month,
    on-demand GPU-hours and cost (recomputed from the month's hours at the instance's
    prices). `ordered_gpus` is filled in by `with_months` once later months are known."""
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    lead = instance.policy.lead_time_months
    commits = {(c.region, c.gpu): c for c in committed}
    keys = sorted({(g.region, g.gpu) for h in hours for g in h.gpus} | set(commits))
    rows = []
    for key in keys:
        region, gpu = key
        price = instance.price_per_gpu_hour(region, gpu)
        supply = instance.region(region).supply.get(gpu)
        spot_price = (supply.spot_price_per_gpu_hour if supply else None) or 0.0
        gpus = [g for h in hours for g in h.gpus if (g.region, g.gpu) == key]
        commit = commits.get(key)
        count = commit.committed_gpus if commit else 0.0
        reserved = commit.reserved_price_per_gpu_hour if commit else 0.0
        on_demand_hours = days * math.fsum(g.on_demand for g in gpus)
        cost = days * (
            HOURS_PER_DAY * count * reserved
            + math.fsum(g.on_demand * price + g.spot * spot_price for g in gpus)
        )
        bought = max(count - previous.get(key, 0.0), 0.0)
        rows.append(
            MonthOffer(
                region=region,
                gpu=gpu,
                peak_need_gpus=float(max((g.used for g in gpus), default=0)),
                committed_gpus=count,
                ordered_gpus=0.0,
                on_demand_gpu_hours=on_demand_hours,
                cost=cost,
                owned_gpus=instance.region(region).existing.get(gpu, 0) + count,
                bought_gpus=bought,
                order_month=month - lead if bought > 0 else None,
            )
        )
    return tuple(rows)


def with_months(
    instance: Instance,
    plan: Plan,
    later: Sequence[Plan],
    cut: Mapping[int, float] | None = None,
    deadline: object | None = None,
) -> Plan:
    """The plan with `months` filled in: month 0 is the plan itself, `later` the hourly
    plans of months 1 .. H - 1 (each solved by the pipeline's sequence with its
    commitments bounded by the month before: solver.time.horizon); `cut`: the months
    whose turn came past the run's `deadline` (solver.settings.Deadline), each with the
    seconds into the run it came (`stopped_notes`)."""
    previous: dict[tuple[str, str], float] = {}
    months: list[Month] = []
    for month, solved in enumerate((plan, *later)):
        offers = month_offers(instance, month, solved.hours, solved.committed, previous)
        previous = {(c.region, c.gpu): c.committed_gpus for c in solved.committed}
        months.append(
            Month(
                month=month,
                growth_factor=month_growth(instance, month),
                cost_per_month=solved.cost_per_month or 0.0,
                status=solved.status,
                mip_gap=solved.solver.mip_gap if solved.solver else None,
                stopped_at_limit=stopped_at_limit(solved),
                offers=offers,
                hours=solved.hours if month else (),
                committed=solved.committed if month else (),
                binding=in_month(solved.binding, month) if month else (),
                shadow_price_note=solved.shadow_price_note if month else "",
                idle_fraction=solved.idle_fraction,
                error_budget_minutes_used=error_budgets(
                    month_instance(instance, month), solved.hours
                )
                if month
                else (),
                power_kw=month_power(instance, solved.hours, solved.power_kw),
            )
        )
    months = with_orders(instance, months)
    grown = [min(month_factors(instance, m.month).values(), default=1.0) >= 1.0 for m in months]
    requested = plan.solver.requested_gap if plan.solver else 0.0
    status, gap = horizon_status(months, requested, grown)
    return plan.model_copy(
        update={
            "notes": (*plan.notes, *stopped_notes(later, cut, getattr(deadline, "limit_s", None))),
            "status": status,
            "solver": plan.solver and plan.solver.model_copy(update={"mip_gap": gap}),
            "binding": in_month(plan.binding, 0),
            "months": tuple(months),
            "horizon_cost": math.fsum(m.cost_per_month for m in months),
        }
    )


def stopped_notes(
    later: Sequence[Plan], cut: Mapping[int, float] | None = None, limit_s: float | None = None
) -> tuple[str, ...]:
    """How each later month the limit stopped got its plan (its solve's method: the
    search's best, or which fallback), not proven; month 0's is the plan's own method.
    A month `cut` (its turn came past the run's limit, `limit_s`, or past what that leaves
    the horizon's verification and report: month -> seconds into the run) was not
    searched at all: its plan is the month before's hours held and grown
    (`HELD_AND_GROWN`, no bound: gap unknown), or where a cap refuses that, its program's
    fallback (the month before's fleet grown to its demand: solver.time.held) with its gap
    against the bound that gives; its note says so whether or not that plan meets its
    gap."""
    cut = cut or {}
    notes = []
    for month, solved in enumerate(later, start=1):
        if solved.solver is None:
            continue
        if month in cut:
            limit = "" if limit_s is None else f", past the {limit_s:g} s limit"
            if limit_s is not None and cut[month] < limit_s:  # solver.time.shares.tail_due
                limit = (
                    f", where the rest of the {limit_s:g} s limit was kept for the horizon's "
                    "verification and report"
                )
            method = solved.solver.method
            plan_is = (
                f"its plan is {method} (no bound: gap unknown)"
                if method == HELD_AND_GROWN
                else f"its plan is its program's fallback: {method}"
            )
            notes.append(
                f"month {month} cut at the time limit, not searched: its turn came at "
                f"{cut[month]:.1f} s into the run{limit}, and {plan_is}"
            )
        elif stopped_at_limit(solved):
            notes.append(
                f"month {month} stopped at the time limit, not proven: {solved.solver.method}"
            )
    return tuple(notes)


def stopped_at_limit(plan: Plan) -> bool:
    """Whether `plan`'s solve stopped at its time limit with a plan it had not proven
    within the gap (the backends' `feasible`: solver.program.lp.Termination)."""
    return plan.solver is not None and plan.solver.termination == Termination.FEASIBLE


def with_orders(instance: Instance, months: Sequence[Month]) -> list[Month]:
    """`months` with each offer's `ordered_gpus` (the GPUs later months add whose order
    month is this one: bought_gpus at order_month = m - L) and each month's
    `servers_ordered`, from their offers' commitments and order months."""
    orders: dict[tuple[int, str, str], float] = {}
    for m in months:
        for o in m.offers:
            if o.order_month is not None and o.order_month >= 0:
                key = (o.order_month, o.region, o.gpu)
                orders[key] = orders.get(key, 0.0) + o.bought_gpus
    return [
        m.model_copy(
            update={
                "offers": tuple(
                    o.model_copy(
                        update={"ordered_gpus": orders.get((m.month, o.region, o.gpu), 0.0)}
                    )
                    for o in m.offers
                ),
                "servers_ordered": server_orders(instance, m.offers),
            }
        )
        for m in months
    ]


def horizon_status(
    months: Sequence[Month], requested_gap: float, grown: Sequence[bool] | None = None
) -> tuple[str, float | None]:
    """The horizon's status and gap: the horizon cost's gap to the sum of the months'
    bounds b_m,

        gap = (sum_m cost_m - sum_m b_m) / sum_m cost_m,

    optimal where every month's plan is, or where that gap is within the requested one
    (solver.plan.schema.plan_status: the horizon is then proven within it, whatever one
    month's own gap); "feasible (gap unknown)" where a month has no bound.

    A month's own bound, b_m = cost_m x (1 - gap_m), holds while every month before it is
    proven (status optimal): month m's program inherits the commitments of the months
    before it (never fewer GPUs, no orders inside the lead time), so after a month that is
    not proven (stopped by the clock on a dearer fleet, say) a later month's bound is a
    bound given that month's commitments, not on what the horizon's plan could cost. Such
    a month, and a month with no bound of its own (one cut by the clock, held and grown:
    solver.time.cut_month), is bounded by month 0's bound where its demand is at least
    month 0's for every workload (`grown[m]`, default: every month): month m without the
    commitments it inherits is a relaxation of it, and serving more of the same traffic on
    the same offer costs no less; else it has no bound."""
    grown = [True] * len(months) if grown is None else list(grown)
    bounds: list[float | None] = []
    proven = True  # every month before this one is proven
    for month, at_least in zip(months, grown, strict=True):
        own = None if month.mip_gap is None else month.cost_per_month * (1 - month.mip_gap)
        if bounds and (own is None or not proven):  # month 0's own is bounds[0]
            own = bounds[0] if at_least else None
        bounds.append(own)
        proven = proven and month.status == "optimal"
    gap = None
    if all(b is not None for b in bounds):
        total = math.fsum(m.cost_per_month for m in months)
        missed = total - math.fsum(b for b in bounds if b is not None)
        gap = max(missed, 0.0) / total if total > 0 else 0.0
    if all(m.status == "optimal" for m in months):
        return "optimal", gap
    return plan_status(gap is not None, gap, requested_gap), gap


def month_power(
    instance: Instance, hours: Sequence[Hour], stated: Sequence[RegionPower]
) -> tuple[RegionPower, ...]:
    """The month's power per region in its busiest hour, what the cap bounds in every
    period (solver.program.families.power, one row per period):

        kW_r = max_h sum_g kw[r,g] x (existing[r,g] + bought(used[r,g,h]))

    bought in whole servers as the period's `purchased` column counts them
    (models.operations.site.installed_gpus); the racks likewise, max_h sum_g racks_g x the
    same GPUs (the rack_space row is a period's too), where the region states racks;
    the cap and its $/month per kW are the month's own plan's (`stated`: its pricing LP's
    power duals summed over the periods)."""
    rows = []
    for power in stated:
        region = instance.region(power.region)
        kw = {g: gpu_kw(instance, power.region, g) for g in instance.gpu_specs}
        update = {
            "kw": max((_installed(instance, power.region, h, kw) for h in hours), default=power.kw)
        }
        if power.racks is not None and region.kw_per_rack is not None:
            racks = {g: racks_per_gpu(instance, g, region.kw_per_rack) for g in instance.gpu_specs}
            update["racks"] = max(
                (_installed(instance, power.region, h, racks) for h in hours), default=power.racks
            )
        rows.append(power.model_copy(update=update))
    return tuple(rows)


def _installed(
    instance: Instance, region_name: str, hour: Hour, per_gpu: Mapping[str, float]
) -> float:
    """sum_g per_gpu[g] x (existing + GPUs bought for the hour's use, whole servers)."""
    return math.fsum(
        per_gpu[g.gpu] * installed_gpus(instance, region_name, g.gpu, g.used)
        for g in hour.gpus
        if g.region == region_name
    )


def in_month(binding: tuple[Binding, ...], month: int) -> tuple[Binding, ...]:
    """Binding rows of month `month`'s program, their `month` set."""
    return tuple(b.model_copy(update={"month": month}) for b in binding)


def server_orders(instance: Instance, offers: tuple[MonthOffer, ...]) -> tuple[ServerOrder, ...]:
    """The servers a month's commitment adds per offer: bought_gpus / gpus per server
    (whole, as the periods program commits them: solver.program.families.pricing), with
    their order month."""
    orders = []
    for o in offers:
        if o.bought_gpus <= 0 or o.order_month is None:
            continue
        n = node_gpus(instance, o.gpu)
        orders.append(
            ServerOrder(
                region=o.region,
                gpu=o.gpu,
                servers=round(o.bought_gpus / n),
                gpus_per_server=n,
                order_month=o.order_month,
            )
        )
    return tuple(orders)
