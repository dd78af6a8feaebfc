"""The cost-ledger audit: is a proposed change (another GPU, another engine profile, a
faster decoder) really a cheaper service at the same SLO and quality?

Both instances are solved on the same demand (the same workloads, rates and token
mixes: otherwise the comparison is refused), each plan is checked by the independent
verifier, and the candidate is adopted only when every gate holds:

1. it is cheaper per million tokens at the SLO (same demand: the same as cheaper per
   month). A lower price per GPU-hour bought with more GPUs is named as such. Where both
   plan the same months (`policy.horizon_months`), cheaper over the horizon: month 0 alone
   does not see what growth, a lead time or a reserved price changes in the later months.
2. its plan meets every p99 target at peak and in every failure scenario of its policy
   (`solver.verify.hours.verify_any`: hour by hour for an hourly plan, else
   `solver.verify.fleet`, physics alone) and keeps the base's failure policy.
3. its saving does not rest on borrowed efficiencies: a GPU type the base plan does not
   use whose efficiency factors come from the pooled `default` fit, not from its own
   calibration rows (`models.physics.efficiency`).
4. its declared quality change (`quality: {metric, delta, max_regression}`) is within
   its gate.

With every gate passed it proposes a rollout: a canary share, the metrics to watch with
thresholds from the candidate's own targets, and the criteria for rolling back.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from models.operations.procurement import month_instance
from models.operations.site import demand_factor
from models.physics.efficiency import borrowed_gpus
from models.schema.instance import Instance
from models.schema.quantities import counted
from solver.analysis.cost_attribution import average_to_peak
from solver.analysis.paid import (
    gpu_hours_paid,
    gpus_paid,
    month_gpu_hours_paid,
    month_gpus_paid,
    month_gpus_used,
)
from solver.plan.schema import Plan
from solver.settings import SolveSettings
from solver.simulate.hours import replayed_hour
from solver.solve import solve
from solver.verify.hours import verify_any as verify

CANARY_SHARE = 0.05
"""Traffic share of the first rollout stage: small enough that a bad canary burns little
error budget, large enough to reach p99 statistics within an hour at typical rates."""
ROLLOUT_STAGES = (0.05, 0.25, 0.5, 1.0)
FAST_BURN_RATE = 14.4
"""Error-budget burn rate that pages: 2% of a 30-day budget in one hour (the multi-window
alert of the SRE workbook)."""
COST_TOLERANCE = 0.05
"""Rollback when the measured $ per million tokens exceeds the plan's by this fraction."""


class Side(BaseModel):
    """One instance's plan, in the ledger's terms."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance: str
    status: str
    cost_per_month: float | None = None
    horizon_cost: float | None = None
    """USD over the plan's months (`Plan.horizon_cost`; None without a horizon)."""
    horizon_months: int | None = None
    """Months the plan plans (None without a horizon)."""
    total_gpus: int | None = None
    """GPUs in use (over a horizon, in its busiest month)."""
    gpus_paid: int | None = None
    """GPUs the bill covers: bought (whole servers included) plus owned in use
    (solver.analysis.paid); for a plan of months judged over its horizon, its most paid
    in a month."""
    usd_per_gpu_hour: float | None = None
    """Blended: cost / the GPU-hours a month it pays (GPUs paid x hours per month; an
    hourly plan's hours as they hold them, solver.analysis.paid.gpu_hours_paid); a fleet
    bought at one price blends to that price, whatever the server rounding. Over a
    horizon: its cost over the GPU-hours its months pay."""
    usd_per_million_tokens: float | None = None
    """Cost over the input + output tokens served in a month at the average rate; for a
    plan of months judged over its horizon (the other side plans the same months), the
    horizon's cost over the tokens its months serve (each at its grown demand), else
    month 0's: the basis the two are judged on (`judged_costs`)."""
    prefill_share: float | None = None
    utilisation_mean: float | None = None
    """Load over capacity of every pool phase, without failures, summed then divided (at
    the peak hour; over a horizon, at every month's busiest hour, `replayed_hour`)."""
    utilisation_max: float | None = None
    p99_headroom: float | None = None
    """Smallest capacity / load - 1 over the loaded pool phases of every scenario (every
    hour's of an hourly plan), capacity at the SLO: how much more load the busiest phase
    carries at the plan's routing before a p99 target breaks (`p99_headroom`)."""
    gpu_types: tuple[str, ...] = ()
    violations: tuple[str, ...] = ()
    """The verifier's findings on this plan."""


class Comparison(BaseModel):
    """`fleetplan compare`'s answer."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: Literal["adopt", "reject"]
    reasons: tuple[str, ...]
    basis: str = ""
    """What the costs are compared on (`cost_basis`): over the horizon both plan, per
    month, or month 0 alone where the horizons differ (which it names)."""
    base: Side
    candidate: Side
    rollout: dict[str, Any] = {}


DEMAND_DIGITS = 9
"""Decimals two demands' hourly rates are compared to (a profile is normalised by
division: [2] x 24 and [1] x 24 are one day)."""


def same_demand(base: Instance, candidate: Instance) -> list[str]:
    """How the two instances' demand differs (empty: the same workloads, rates and mixes).

    A region's demand is what it asks of each hour: its rate in every local hour, times
    demand_growth as the planner reads it, and its average over the peak
    (`average_to_peak`, the tokens served), so the spellings of one demand agree: a peak
    rate alone, the same rate on a flat profile, a daily volume with no peak factor, or
    two thirds of the rate grown 1.5x are every hour at that rate."""

    def demand(instance: Instance) -> dict[str, Any]:
        factor = demand_factor(instance)  # demand_growth: the planner's factor on every rate
        return {
            w.name: (
                {
                    region: (
                        tuple(round(r * factor, DEMAND_DIGITS) for r in level.local_hourly_rps()),
                        round(average_to_peak(level), DEMAND_DIGITS),
                    )
                    for region, level in sorted(w.demand.items())
                },
                w.model_dump(mode="json", include={"prompt_tokens", "output_tokens"}),
            )
            for w in instance.workloads
        }

    mine, theirs = demand(base), demand(candidate)
    problems = []
    for name in sorted(set(mine) | set(theirs)):
        if name not in theirs or name not in mine:
            problems.append(f"workload {name} is in only one of the two instances")
        elif mine[name] != theirs[name]:
            problems.append(f"workload {name} has other demand or token lengths")
        elif (growth := _other_growth(base, candidate, name)) is not None:
            problems.append(growth)
    return problems


def _other_growth(base: Instance, candidate: Instance, workload: str) -> str | None:
    """How `workload`'s monthly growth differs where the two are judged over one horizon
    (the same horizon_months, `judged_costs`): each month's demand is month 0's times
    (1 + g)^m, so another g is another demand from month 1 on; None where it agrees or
    only month 0 is judged: a static instance (`Instance.asks_for_hours` false) plans no
    months whatever its horizon_months says (solve warns that it has no effect), and two
    such plans were refused as 'not the same demand' for growths neither plans."""
    months = base.policy.horizon_months
    if months is None or months != candidate.policy.horizon_months or months < 2:
        return None
    if not (base.asks_for_hours() and candidate.asks_for_hours()):
        return None
    ours, theirs = base.monthly_growth(workload), candidate.monthly_growth(workload)
    if round(ours, DEMAND_DIGITS) == round(theirs, DEMAND_DIGITS):
        return None
    return (
        f"workload {workload} grows {theirs:.1%} a month in the candidate, {ours:.1%} in "
        f"the base, over the {months}-month horizon both are judged on"
    )


def tokens_per_s(instance: Instance) -> float:
    """Input + output tokens/s at the average rate, all workloads and regions, with
    demand_growth (`demand_factor`), as the plan serves them."""
    total = 0.0
    for w in instance.workloads:
        per_request = w.prompt_tokens.mean_tokens + w.output_tokens.mean_tokens
        for demand in w.demand.values():
            total += demand.peak_rps * average_to_peak(demand) * per_request
    return total * demand_factor(instance)


def p99_headroom(plan: Plan, over_horizon: bool = True) -> float | None:
    """min over the loaded pool phases of every scenario of capacity / load - 1 (the plan's
    scenario tables, at the peak and at every hour of an hourly plan, and of every month's
    hours where it is judged over its horizon, `over_horizon`); None with no load.

    Not the verifier's servable / demand - 1: its servable is the flow it routes, at most
    the demand, so that ratio is 0 for every plan it accepts."""
    hours = [*plan.hours, *(h for m in plan.months if over_horizon for h in m.hours)]
    phases = [
        pool
        for scenario in (*plan.scenarios, *(s for hour in hours for s in hour.scenarios))
        for pool in scenario.pools
        if pool.load_requests_per_s > 0
    ]
    if not phases:
        return None
    return min(p.capacity_requests_per_s / p.load_requests_per_s for p in phases) - 1


def side_of(instance: Instance, plan: Plan | None, status: str, over_horizon: bool = True) -> Side:
    """The ledger's view of one plan (None: no plan, `status` says why); a plan of months
    reads its $/million tokens, $/GPU-hour, GPUs paid, utilisation and headroom over its
    horizon where `over_horizon` (both sides plan the same months, `judged_costs`), else
    month 0's, as the other side is judged."""
    if plan is None:
        return Side(instance=instance.name, status=status)
    hours = instance.policy.hours_per_month
    cost = plan.cost_per_month or 0.0
    paid, used = gpus_paid(plan), plan.total_gpus or 0
    paid_hours = gpu_hours_paid(plan, hours)
    tokens_per_month = tokens_per_s(instance) * 3600 * hours
    priced, tokens = cost, tokens_per_month
    pools = plan.scenarios[0].pools if plan.scenarios else ()
    if over_horizon and plan.months and plan.horizon_cost is not None:  # judged so: read it
        priced = plan.horizon_cost
        tokens = sum(
            tokens_per_s(month_instance(instance, m.month)) * 3600 * hours for m in plan.months
        )
        paid = max(month_gpus_paid(instance, plan, m) for m in plan.months)
        used = max(used, *(month_gpus_used(m) for m in plan.months))
        paid_hours = sum(month_gpu_hours_paid(plan, m, hours) for m in plan.months)
        pools = tuple(
            pool
            for m in plan.months
            for scenario in replayed_hour(plan, month=m.month).plan.scenarios[:1]
            for pool in scenario.pools
        )
    check = verify(instance, plan)
    load = sum(p.load_requests_per_s for p in pools)
    capacity = sum(p.capacity_requests_per_s for p in pools)
    attributed = sum(a.cost_per_month for a in plan.cost_attribution)
    prefill = sum(a.cost_per_month * a.prefill_share for a in plan.cost_attribution)
    return Side(
        instance=instance.name,
        status=status,
        cost_per_month=cost,
        horizon_cost=plan.horizon_cost,
        horizon_months=len(plan.months) or None,
        total_gpus=used,
        gpus_paid=paid,
        usd_per_gpu_hour=priced / paid_hours if paid_hours else None,
        usd_per_million_tokens=priced / (tokens / 1e6) if tokens else None,
        prefill_share=prefill / attributed if attributed else None,
        utilisation_mean=load / capacity if capacity else None,
        utilisation_max=max((p.utilisation for p in pools), default=None),
        p99_headroom=p99_headroom(plan, over_horizon),
        gpu_types=plan.gpu_types_run(over_horizon),
        violations=tuple(str(v) for v in check.violations),
    )


def _solved(instance: Instance, backend: str | None) -> tuple[Plan | None, str]:
    from solver.errors import Infeasible, NoSolution, PlanRejected

    try:
        return solve(instance, SolveSettings.of(instance, backend=backend)), "solved"
    except Infeasible as error:  # its text opens with "infeasible:" already
        text = str(error)
        return None, text if text.startswith("infeasible") else f"infeasible: {text}"
    except NoSolution as error:
        return None, f"no solution: {error}"
    except PlanRejected as error:
        return None, f"rejected by the verifier: {error}"


def compare_instances(
    base: Instance, candidate: Instance, backend: str | None = None
) -> Comparison:
    """Solve both, audit the candidate's win, decide, and propose a rollout on adopt."""
    demand_problems = same_demand(base, candidate)
    if demand_problems:
        empty = Side(instance=base.name, status="not solved")
        return Comparison(
            decision="reject",
            reasons=tuple(f"not the same demand: {p}" for p in demand_problems),
            base=empty,
            candidate=empty.model_copy(update={"instance": candidate.name}),
        )
    base_plan, base_status = _solved(base, backend)
    cand_plan, cand_status = _solved(candidate, backend)
    same_months = bool(
        base_plan
        and cand_plan
        and base_plan.months
        and len(base_plan.months) == len(cand_plan.months)
    )
    ours = side_of(base, base_plan, base_status, same_months)
    theirs = side_of(candidate, cand_plan, cand_status, same_months)
    reasons = _gate_failures(base, candidate, ours, theirs)
    basis = cost_basis(ours, theirs)
    if reasons:
        return Comparison(
            decision="reject", reasons=tuple(reasons), basis=basis, base=ours, candidate=theirs
        )
    return Comparison(
        decision="adopt",
        reasons=(_win(ours, theirs),),
        basis=basis,
        base=ours,
        candidate=theirs,
        rollout=rollout(candidate, ours, theirs),
    )


def _gate_failures(base: Instance, candidate: Instance, ours: Side, theirs: Side) -> list[str]:
    reasons: list[str] = []
    if ours.cost_per_month is None:
        return [f"the base has no plan to compare with ({ours.status})"]
    if theirs.cost_per_month is None:
        return [f"the candidate has no plan ({theirs.status})"]
    assert ours.gpus_paid is not None and theirs.gpus_paid is not None
    our_cost, their_cost, basis = judged_costs(ours, theirs)
    if their_cost >= our_cost:
        cheaper_hour = (theirs.usd_per_gpu_hour or 0) < (ours.usd_per_gpu_hour or 0)
        if cheaper_hour and theirs.gpus_paid > ours.gpus_paid:
            reasons.append(
                f"cheaper per GPU-hour (${theirs.usd_per_gpu_hour:.2f} vs "
                f"${ours.usd_per_gpu_hour:.2f}) but {theirs.gpus_paid - ours.gpus_paid} more "
                f"GPUs paid ({theirs.gpus_paid} vs {ours.gpus_paid}): "
                f"${theirs.usd_per_million_tokens:.3f} vs ${ours.usd_per_million_tokens:.3f} "
                "per million tokens at the SLO"
            )
        else:
            note = horizons_differ(ours, theirs)
            reasons.append(
                f"not cheaper: ${their_cost:,.0f} vs ${our_cost:,.0f} {basis} on the same demand"
                + (f" ({note})" if note else "")
            )
    if theirs.violations:
        reasons.append(
            "the candidate's plan breaks a requirement at peak or in a failure scenario "
            "(independent verifier): " + "; ".join(theirs.violations[:3])
        )
    if candidate.policy.survive != base.policy.survive:
        reasons.append(
            f"the candidate survives {candidate.policy.survive}, the base "
            f"{base.policy.survive}: a saving from a weaker failure policy is not a like "
            "for like"
        )
    new_gpus = set(theirs.gpu_types) - set(ours.gpu_types)
    borrowed = borrowed_gpus(
        [candidate.gpu_specs[g] for g in new_gpus if g in candidate.gpu_specs], candidate.engine
    )
    if borrowed and their_cost < our_cost:
        reasons.append(
            f"the saving rests on borrowed efficiencies: {', '.join(borrowed)} "
            "has no calibration rows of its own (models/physics/catalog/efficiency.yaml; it uses "
            "another GPU's or the pooled fit): measure it (`make calibrate`) before adopting"
        )
    quality = candidate.quality
    if quality is not None and not quality.passes:
        reasons.append(
            f"quality: {quality.metric} changes by {quality.delta:+g}, beyond the gate of "
            f"-{quality.max_regression:g}"
        )
    return reasons


def judged_costs(ours: Side, theirs: Side) -> tuple[float, float, str]:
    """The two costs the candidate is judged on and how they read: over the horizon where
    both plans plan the same months, else per month (month 0's for a plan of months)."""
    months = ours.horizon_months
    if (
        months is not None
        and months == theirs.horizon_months
        and ours.horizon_cost is not None
        and theirs.horizon_cost is not None
    ):
        return ours.horizon_cost, theirs.horizon_cost, f"over the {months}-month horizon"
    return ours.cost_per_month or 0.0, theirs.cost_per_month or 0.0, "per month"


def horizons_differ(ours: Side, theirs: Side) -> str | None:
    """Where the two plans plan different months (a 3-month plan against a 6-month one, or
    against a plan without months), what is compared instead of a horizon: month 0 on
    each side (its cost, tokens and GPUs), with the two horizons named; None where they
    agree."""
    unplanned = ours.cost_per_month is None or theirs.cost_per_month is None
    if unplanned or ours.horizon_months == theirs.horizon_months:
        return None

    def months(side: Side) -> str:
        count = side.horizon_months
        return "one period (no months)" if count is None else counted(count, "month")

    return (
        f"month 0 alone: the horizons differ (the base plans {months(ours)}, the candidate "
        f"{months(theirs)}), so neither horizon's cost is compared"
    )


def cost_basis(ours: Side, theirs: Side) -> str:
    """What the two plans' costs are compared on, in words (`Comparison.basis`)."""
    _, _, basis = judged_costs(ours, theirs)
    note = horizons_differ(ours, theirs)
    return f"{basis}, {note}" if note else basis


def _win(ours: Side, theirs: Side) -> str:
    our_cost, their_cost, basis = judged_costs(ours, theirs)
    saving = our_cost - their_cost
    less = f"${saving:,.0f}/month less" if basis == "per month" else f"${saving:,.0f} less {basis}"
    note = horizons_differ(ours, theirs)
    less += f"; {note}" if note else ""
    return (
        f"cheaper at the same SLO: ${theirs.usd_per_million_tokens:.3f} vs "
        f"${ours.usd_per_million_tokens:.3f} per million tokens ({less}, "
        f"{theirs.gpus_paid} vs {ours.gpus_paid} GPUs paid); verifier passes in every scenario"
    )


def rollout(candidate: Instance, ours: Side, theirs: Side) -> dict[str, Any]:
    """A staged rollout with the metrics to watch and the rollback criteria."""
    watch: list[dict[str, Any]] = []
    for w in candidate.workloads:
        if w.slo.ttft_p99_ms is not None:
            watch.append({"metric": f"{w.name} p99 TTFT", "threshold_ms": w.slo.ttft_p99_ms})
        if w.slo.tpot_p99_ms is not None:
            watch.append({"metric": f"{w.name} p99 TPOT", "threshold_ms": w.slo.tpot_p99_ms})
        if w.slo.availability is not None:
            watch.append(
                {
                    "metric": f"{w.name} error-budget burn rate (1 h and 5 min windows)",
                    "threshold": FAST_BURN_RATE,
                }
            )
    per_million = theirs.usd_per_million_tokens or 0.0
    watch.append(
        {
            "metric": "$ per million tokens",
            "threshold": round(per_million * (1 + COST_TOLERANCE), 6),
        }
    )
    if candidate.quality is not None:
        q = candidate.quality
        watch.append({"metric": q.metric, "threshold_delta": -q.max_regression})
    return {
        "canary_share": CANARY_SHARE,
        "stages": list(ROLLOUT_STAGES),
        "watch": watch,
        "rollback": [
            "any watched p99 above its threshold for two consecutive 5-minute windows",
            f"error-budget burn rate above {FAST_BURN_RATE:g} over both 1 h and 5 min",
            f"$ per million tokens more than {COST_TOLERANCE:.0%} above the plan's "
            f"${per_million:.3f}",
            "a quality evaluation of the canary beyond the declared gate",
        ],
        "promote": "each stage holds for a full daily peak with every watched metric in bounds",
    }
