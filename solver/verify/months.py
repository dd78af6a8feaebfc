"""The hour verifier's month checks (policy.horizon_months): every month of the horizon
verified on its own, at its own demand, and the procurement rules between months
(see solver.verify.hours, step 5), each month's stated growth factor the largest (1 + g)^m."""

import math
import threading
from collections.abc import Callable

from models.operations.procurement import month_factors, month_instance
from models.operations.site import gpu_kw, installed_gpus, node_gpus, racks_per_gpu
from models.schema.instance import Instance
from models.schema.quantities import counted
from models.schema.traffic import HOURS_PER_DAY
from solver.plan.records import RegionPower
from solver.plan.schema import Plan
from solver.plan.time_records import Hour, MonthOffer, ServerOrder
from solver.verify.fleet import COST_TOLERANCE, ScenarioCheck, Verification, Violation
from solver.verify.site import whole_unit_kw
from solver.verify.totals import money_close

GPU_TOLERANCE = 1e-6
"""GPUs by which a stated count may differ from its recomputation (a solver's rounding of
an integer column); one value for the hour and the month checks (hours.py, hour_capacity.py)."""

_KEPT: list[list] = []
"""[instance, its hour checks, uses left] of `keep_hour_checks`, at most one."""
_KEPT_LOCK = threading.Lock()


def keep_hour_checks(instance: Instance, uses: int = 2) -> None:
    """Keep the hour verifier's checks of `instance` (the object itself: it is frozen) for
    its next `uses` verifications (solver.verify.hours.verify_hours, `hour_checks`): a
    horizon's month 0 is verified alone first (solver.time.months.verification_kept) and
    again within the horizon's verification, whose month-0 hours then find their checks
    made. Another instance kept replaces it."""
    with _KEPT_LOCK:
        _KEPT[:] = [[instance, {}, uses]]


def hour_checks(instance: Instance) -> dict:
    """The memo of a verification of `instance`'s hours (solver.verify.hours: each hour's
    static verification and scenario table keyed by the hour's rates and pools, the
    pools' physics by configuration: values of one instance, whatever the plan): the one
    `keep_hour_checks` keeps for it while it has uses left, else a new one."""
    with _KEPT_LOCK:
        if not _KEPT or _KEPT[0][0] is not instance:
            return {}
        kept = _KEPT[0]
        kept[2] -= 1
        if kept[2] <= 0:
            _KEPT.clear()
        return kept[1]


def unmatched_time(instance: Instance, plan: Plan, verdict: Verification) -> Verification:
    """`verdict` with what the plan's time does not match in the instance's, first:

    - the instance plans months (policy.horizon_months on an instance that asks for
      hours: months are planned on the hourly program alone) and the plan states none: a
      violation; such a plan (today's hours, or a peak) was checked against month 0's
      demand alone, and growth-horizon's month-0 plan verified 'ok' against its 12 months
      (month 11 at 1.06^11 = 1.90x the demand). A static instance's horizon_months has no
      effect (its load warns so, `checks._horizon_without_hours`): solve writes it a plan
      of today's demand alone, which verify failed as 'the plan states none'.
    - the plan states hours and the instance plans none (`Instance.asks_for_hours`: no
      hourly profile, no reserved or spot price): a violation; each hour was checked
      against a flat day at on-demand prices, its committed GPUs priced at nothing (a day
      plan of 8 committed GPUs read '$0/month recomputed' among 64 violations).
    - the instance plans hours and the plan states none: a warning; the plan was checked
      as one fleet held all day at each demand's busiest hour and bought for the month,
      which serves every hour (the verdict stands), at more than the instance's own plan.

    Not within `verify_hours`, which checks each month's hours as a plan without months
    (`check_months`)."""
    violations: list[Violation] = []
    horizon = instance.policy.horizon_months
    hourly = instance.asks_for_hours()
    if horizon and hourly and not plan.months:
        violations.append(Violation(
            requirement="months",
            message=f"the instance plans {horizon} months (policy.horizon_months); the plan "
            "states none, so it was checked against today's demand alone: solve the instance "
            "for its months",
        ))  # fmt: skip
    if plan.hours and not hourly:
        violations.append(Violation(
            requirement="hours",
            message=f"the plan states {len(plan.hours)} UTC hours (an hourly plan); the "
            "instance plans none (no hourly_profile on any demand, no reserved or spot "
            "price), so each hour was checked against a flat day at on-demand prices: "
            "verify it against the instance it was solved for, or solve this one",
        ))  # fmt: skip
    warnings: list[Violation] = []
    if hourly and not plan.hours:
        why = "; ".join(instance.hourly_reasons())
        warnings.append(Violation(
            requirement="hours",
            message=f"the instance plans each UTC hour ({why}); the plan states no hours, "
            "so it was checked as one fleet held all day at each demand's busiest hour, its "
            "GPUs bought for the month: it serves every hour, at more than an hourly plan "
            "pays (`fleetplan solve` writes this instance one)",
        ))  # fmt: skip
    if not violations and not warnings:
        return verdict
    return verdict.model_copy(
        update={
            "ok": verdict.ok and not violations,
            "violations": (*violations, *verdict.violations),
            "warnings": (*warnings, *verdict.warnings),
        }
    )


def check_months(
    instance: Instance,
    plan: Plan,
    verify_hours: Callable[[Instance, Plan], Verification],
    checks: list[ScenarioCheck],
    warnings: list[Violation] | None = None,
) -> list[Violation]:
    """Each month of the horizon on its own: month m's hours serve month m's grown
    demand (this verifier, run on the month's instance and hours; month 0 is the plan's
    own hours, checked by the caller), its commitments never fall and grow only by orders placed
    `lead_time_months` ahead (none arrives before month L), and its figures add up (the
    servers it orders to its added commitment, the horizon's cost to its months').

    Args:
        instance: the instance as written (month 0).
        plan: the hourly plan with its `months`.
        verify_hours: the hour verifier of a month's own hours (solver.verify.hours,
            which walked the plan's records, months included, for numbers not finite
            and unknown names already), passed in so that this module does not import
            it back.
        checks: the plan's scenario checks, extended with each later month's, named
            month[m].SCENARIO@tHH (month 0's are the plan's own hours').
        warnings: extended with each later month's warnings, named as its violations.
    """
    violations: list[Violation] = []
    expected = list(range(instance.policy.horizon_months or 0))
    found = [month.month for month in plan.months]
    if plan.months and not expected:
        return [
            Violation(
                requirement="months",
                message=f"the plan states {len(found)} months; the instance plans none (no "
                "policy.horizon_months), so month 0 was checked as a day: verify it against "
                "the instance it was solved for, or set policy.horizon_months",
            )
        ]
    if plan.months and found != expected:
        return [_out_of_order(found, len(expected))]
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    lead = instance.policy.lead_time_months
    previous: dict[tuple[str, str], float] = {}
    ordered: dict[tuple[int, str, str], float] = {}
    for month in plan.months:
        where = f"month[{month.month}]"
        hours, committed = month.hours, month.committed
        factor = max(month_factors(instance, month.month).values(), default=1.0)
        if not math.isclose(month.growth_factor, factor, rel_tol=1e-9):
            violations.append(
                Violation(
                    requirement=f"{where}.growth_factor",
                    message=f"states {month.growth_factor:g}; the largest (1 + g)^m of the "
                    f"workloads is {factor:g}",
                )
            )
        if month.month == 0:
            hours, committed = plan.hours, plan.committed
            # a plan that states no cost or idle share (a fleet read back with its
            # schedule) is held to its offers' costs below and the hours' recomputation
            stated_cost = plan.cost_per_month
            if stated_cost is not None and not money_close(month.cost_per_month, stated_cost):
                violations.append(
                    Violation(requirement=where, message="month 0 is not the plan's own cost")
                )
            if plan.idle_fraction is not None and month.idle_fraction != plan.idle_fraction:
                violations.append(
                    Violation(
                        requirement=f"{where}.idle_fraction",
                        message=f"states {month.idle_fraction}; month 0 is the plan's own "
                        f"hours, idle {plan.idle_fraction}",
                    )
                )
        else:
            alone = verify_hours(
                month_instance(instance, month.month),
                Plan(
                    instance=plan.instance,
                    hours=hours,
                    committed=committed,
                    cost_per_month=month.cost_per_month,
                    idle_fraction=month.idle_fraction,
                ),
            )
            violations += [
                Violation(
                    requirement=f"{where}.{v.requirement}",
                    message=f"month {month.month}: {v.message}",
                )
                for v in alone.violations
            ]
            if warnings is not None:
                warnings += [
                    Violation(
                        requirement=f"{where}.{v.requirement}",
                        message=f"month {month.month}: {v.message}",
                    )
                    for v in alone.warnings
                ]
            checks += [
                c.model_copy(update={"scenario": f"{where}.{c.scenario}"}) for c in alone.checks
            ]
        total = math.fsum(offer.cost for offer in month.offers)
        if not money_close(month.cost_per_month, total):
            violations.append(
                Violation(
                    requirement=where,
                    message=f"states ${month.cost_per_month:,.2f}; its offers sum to ${total:,.2f}",
                )
            )
        counts = {(c.region, c.gpu): c.committed_gpus for c in committed}
        for offer in month.offers:
            key = (offer.region, offer.gpu)
            name = f"month[{month.month},{offer.region},{offer.gpu}]"
            count = counts.get(key, 0.0)
            if abs(offer.committed_gpus - count) > GPU_TOLERANCE:
                violations.append(
                    Violation(
                        requirement=name,
                        message=f"states {offer.committed_gpus:g} committed; its hours "
                        f"commit {count:g}",
                    )
                )
            existing = instance.region(offer.region).existing.get(offer.gpu, 0)
            if abs(offer.owned_gpus - existing - count) > GPU_TOLERANCE:
                violations.append(
                    Violation(
                        requirement=name,
                        message=f"owns {offer.owned_gpus:g}; existing {existing} + committed "
                        f"{count:g}",
                    )
                )
            bought = count - previous.get(key, 0.0)
            violations += _check_servers(instance, month.servers_ordered, offer, bought, name)
            violations += _check_shown(offer, hours, max(bought, 0.0), days, name)
            if month.month > 0:  # month 0's commitment is the fleet the horizon starts with
                _check_order(month.month, lead, bought, offer, name, violations)
            if bought > GPU_TOLERANCE and offer.order_month is not None:
                slot = (offer.order_month, offer.region, offer.gpu)
                ordered[slot] = ordered.get(slot, 0.0) + bought
            cost = _month_offer_cost(instance, offer, hours, count, days)
            if abs(cost - offer.cost) > COST_TOLERANCE * (1.0 + abs(cost) * 1e-3):
                violations.append(
                    Violation(
                        requirement=name,
                        message=f"states ${offer.cost:,.2f}; recomputed ${cost:,.2f}",
                    )
                )
        previous = counts
    for month in plan.months:
        for offer in month.offers:
            due = ordered.get((month.month, offer.region, offer.gpu), 0.0)
            if abs(offer.ordered_gpus - due) > GPU_TOLERANCE:
                violations.append(
                    Violation(
                        requirement=f"month[{month.month},{offer.region},{offer.gpu}]",
                        message=f"states {offer.ordered_gpus:g} GPUs ordered; later months "
                        f"need {due:g} ordered this month",
                    )
                )
    for index, month in enumerate(plan.months):
        hours = month.hours if month.month else plan.hours
        violations += _check_power(instance, month.power_kw, hours, f"months[{index}].power_kw")
    total = math.fsum(month.cost_per_month for month in plan.months)
    if plan.horizon_cost is not None and abs(plan.horizon_cost - total) > COST_TOLERANCE:
        violations.append(
            Violation(
                requirement="horizon_cost",
                message=f"states ${plan.horizon_cost:,.2f}; its months sum to ${total:,.2f}",
            )
        )
    return violations


def busiest_hour_kw(instance: Instance, region_name: str, hours: tuple[Hour, ...]) -> float:
    """A region's kW in its busiest hour: max over the hours of
    sum_g kw[r,g] x (existing + GPUs bought for the hour's use, whole servers), what its
    power_kw caps in every period."""
    return max(
        (
            math.fsum(
                gpu_kw(instance, g.region, g.gpu)
                * installed_gpus(instance, region_name, g.gpu, g.used)
                for g in hour.gpus
                if g.region == region_name
            )
            for hour in hours
        ),
        default=0.0,
    )


def busiest_hour_racks(instance: Instance, region_name: str, hours: tuple[Hour, ...]) -> float:
    """A region's racks in its busiest hour for racks: max over the hours of
    sum_g racks_g x (existing + GPUs bought for the hour's use, whole servers), what its
    racks bound in every period (its kw_per_rack stated)."""
    region = instance.region(region_name)
    per_rack = region.kw_per_rack or 0.0
    return max(
        (
            math.fsum(
                racks_per_gpu(instance, g.gpu, per_rack)
                * installed_gpus(instance, region_name, g.gpu, g.used)
                for g in hour.gpus
                if g.region == region_name and g.gpu in instance.gpu_specs
            )
            for hour in hours
        ),
        default=0.0,
    )


def _check_power(
    instance: Instance, rows: tuple[RegionPower, ...], hours: tuple[Hour, ...], where: str
) -> list[Violation]:
    """A month's stated power per region: kW in its busiest hour, max over the hours of
    sum_g kw[r,g] x (existing + GPUs bought for the hour's use, whole servers), and the
    region's power_kw as its cap (its $/month per kW is the month's pricing LP's: held
    finite only; None exactly without a cap)."""
    found = []
    regions = {r.name: r for r in instance.regions}
    for index, row in enumerate(rows):
        region = regions.get(row.region)
        if region is None:
            found.append(Violation(requirement=f"{where}[{index}]", message="unknown region"))
            continue
        kw = busiest_hour_kw(instance, row.region, hours)
        priced = row.shadow_price_per_kw is not None
        if not math.isclose(row.kw, kw, rel_tol=1e-6, abs_tol=1e-6):
            found.append(
                Violation(
                    requirement=f"{where}[{index}].kw",
                    message=f"{row.region}: states {row.kw:g} kW; its busiest hour draws {kw:g}",
                )
            )
        unit = whole_unit_kw(instance, row.region, kw, row)
        stated = (row.whole_unit_kw, row.slack_kw)
        if not all(
            math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)
            for a, b in zip(stated, unit, strict=True)
        ):
            found.append(
                Violation(
                    requirement=f"{where}[{index}].whole_unit_kw",
                    message=f"{row.region}: states {row.slack_kw:g} kW left against one more "
                    f"server's {row.whole_unit_kw:g} kW; the cap and the busiest hour give "
                    f"{unit[1]:g} against {unit[0]:g}",
                )
            )
        if row.limit_kw != region.power_kw or priced != (region.power_kw is not None):
            found.append(
                Violation(
                    requirement=f"{where}[{index}].limit_kw",
                    message=f"{row.region}: states a cap of {row.limit_kw} kW (priced: "
                    f"{priced}); the instance's power_kw is {region.power_kw}",
                )
            )
    return found


def _check_servers(
    instance: Instance, orders: tuple[ServerOrder, ...], offer: MonthOffer, bought: float, name: str
) -> list[Violation]:
    """The servers a month states it adds to an offer are the GPUs its commitment adds,
    in servers of gpus_per_node (policy.buy_unit: node; one GPU each with buy_unit gpu)."""
    n = node_gpus(instance, offer.gpu)
    mine = [o for o in orders if (o.region, o.gpu) == (offer.region, offer.gpu)]
    stated = sum(o.servers * o.gpus_per_server for o in mine)
    if abs(stated - max(bought, 0.0)) <= GPU_TOLERANCE and all(
        o.gpus_per_server == n for o in mine
    ):
        return []
    return [
        Violation(
            requirement=name,
            message=f"states {stated:g} GPUs of servers ordered; its commitment adds "
            f"{max(bought, 0.0):g} GPUs in servers of {n}",
        )
    ]


def _check_shown(
    offer: MonthOffer, hours: tuple[Hour, ...], bought: float, days: float, name: str
) -> list[Violation]:
    """The figures of an offer the months table shows, from the month's hours as
    solver.time.months.month_offers states them: its peak need (the most GPUs an hour
    uses), its on-demand GPU-hours (D x the hours' on-demand GPUs, D = hours_per_month /
    24), the GPUs its commitment adds, and an order month only where it adds some."""
    rows = [g for h in hours for g in h.gpus if (g.region, g.gpu) == (offer.region, offer.gpu)]
    peak = float(max((g.used for g in rows), default=0))
    rented = days * math.fsum(g.on_demand for g in rows)
    found = []
    if not math.isclose(offer.peak_need_gpus, peak, abs_tol=GPU_TOLERANCE):
        found.append(f"states a peak need of {offer.peak_need_gpus:g} GPUs; its busiest hour "
                     f"uses {peak:g}")  # fmt: skip
    if not math.isclose(offer.on_demand_gpu_hours, rented, rel_tol=1e-6, abs_tol=1e-6):
        found.append(f"states {offer.on_demand_gpu_hours:g} on-demand GPU-hours; its hours "
                     f"rent {rented:g}")  # fmt: skip
    if abs(offer.bought_gpus - bought) > GPU_TOLERANCE:
        found.append(f"states {offer.bought_gpus:g} GPUs bought; its commitment adds {bought:g}")
    if bought <= GPU_TOLERANCE and offer.order_month is not None:
        found.append(f"states order month {offer.order_month} for no GPU bought")
    return [Violation(requirement=name, message=message) for message in found]


def _check_order(
    month: int, lead: int, bought: float, offer: MonthOffer, name: str, violations: list[Violation]
) -> None:
    """Committed GPUs never fall; those added in month m were ordered in a month of the
    horizon at least `lead` months earlier (so none before month `lead`)."""
    if bought < -GPU_TOLERANCE:
        violations.append(
            Violation(
                requirement=name,
                message=f"the committed count falls by {-bought:g} in month {month} "
                "(bought GPUs are not sold back)",
            )
        )
    elif bought > GPU_TOLERANCE and (
        offer.order_month is None or not 0 <= offer.order_month <= month - lead
    ):
        violations.append(
            Violation(
                requirement=name,
                message=f"{bought:g} GPUs serving from month {month} need an order in month "
                f"0..{month - lead} (lead time {lead}); the plan orders in month "
                f"{offer.order_month}"
                if month >= lead
                else f"{bought:g} GPUs serving from month {month} cannot be ordered in time: "
                f"an order placed in the horizon serves from month {lead} on (lead time "
                f"{lead}); the plan orders in month {offer.order_month}",
            )
        )


def _month_offer_cost(
    instance: Instance, offer: MonthOffer, hours: tuple[Hour, ...], committed: float, days: float
) -> float:
    """One offer's month: committed x reserved price every hour, on demand and spot at
    their prices, from the month's hours."""
    supply = instance.region(offer.region).supply.get(offer.gpu)
    reserved = (supply.reserved_price_per_gpu_hour if supply else None) or 0.0
    spot = (supply.spot_price_per_gpu_hour if supply else None) or 0.0
    price = instance.price_per_gpu_hour(offer.region, offer.gpu)
    rows = [g for h in hours for g in h.gpus if (g.region, g.gpu) == (offer.region, offer.gpu)]
    return days * (
        HOURS_PER_DAY * reserved * committed
        + math.fsum(g.on_demand * price + g.spot * spot for g in rows)
    )


def _out_of_order(found: list[int], horizon: int) -> Violation:
    """The first month of the plan out of its place, by its field: 'got 12 months
    starting [0, 1, 2]' left the reader to find the `months[5].month` edited to 99."""
    rule = f"months 0 .. {horizon - 1} once each in order (horizon_months {horizon})"
    for index, month in enumerate(found):
        if index >= horizon:
            return Violation(
                requirement=f"months[{index}].month",
                message=f"states month {month}, past the horizon: the plan needs {rule}",
            )
        if month != index:
            return Violation(
                requirement=f"months[{index}].month",
                message=f"states month {month} where month {index} belongs: the plan needs {rule}",
            )
    return Violation(
        requirement="months",
        message=f"states {counted(len(found), 'month')}; the plan needs {rule}",
    )
