"""An hourly plan restated at another instance's prices, spot terms, lead time, growth and
power terms (a sweep point's).

A price is no requirement: the same hours, commitments and months serve a point that only
prices them differently. What the plan states in dollars is restated with the planner's
own rules, so that the verifier (which recomputes them independently) judges the fleet:

    commitment     reserved and on-demand prices of the offer
    hour h         cost_per_hour = sum over offers of OfferTerms.hour_bill
                   (committed x reserved + on demand x price + spot x spot price);
                   each pool's cost_per_month = its GPUs x on-demand price x hours a
                   month (solver.readback.assign), its started pools' alike
    month m        each offer's cost and GPU-hours (solver.time.months.month_offers),
                   cost_per_month = the sum of its offers
    the plan       cost_per_month = hours_per_month / 24 x sum_h cost_per_hour (month 0),
                   horizon_cost = sum_m cost_per_month

Nor are a month's orders: the GPUs each month adds to its commitment are ordered
lead_time_months before it serves (solver.time.months.with_orders), restated at the
point's lead time, and the verifier judges whether the commitments could arrive in time
(an order inside the lead time is a violation at the point, as it is at the plan's own).

Nor is a month's growth factor: it is the point's demand, restated as the largest
(1 + g)^m of the point's workloads (solver.time.months.month_growth), and the verifier
judges whether the month's fleet carries that demand (a plan of faster growth serves a
point of slower growth), as it judges a static or hourly plan at a point's demand.

Nor is a month's power: its kW in the busiest hour (PUE, server power factor, whole
servers) and its cap are restated at the point's power terms, and the verifier judges
whether the fleet fits the point's cap.

Nor is the margin a pool's spot replicas state a requirement: each hour's spot pools
state u = lambda T / (1 + lambda T) and Q(n u, a), the replicas down at once with the
policy's confidence a (solver.time.readback.spot), and are restated at the point's a, lambda and
T (a point at a lower confidence asks the same fleet to carry its load with fewer
replicas down); the verifier's capacity check recomputes Q and judges the fleet on it.

Counts (GPUs used, reserved, rented, on spot, committed) are the plan's as stated;
nothing is re-planned.
"""

import math

from models.operations.pricing_tiers import poisson_quantile, spot_down_fraction
from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from solver.plan.records import RegionPower, ReplicaPool
from solver.plan.schema import Plan
from solver.plan.time_records import Commitment, Hour, Month, SpotReplicas
from solver.time.months import month_growth, month_offers, month_power, with_orders
from solver.time.periods import offer_terms
from solver.time.solve import hour_cost


def at_prices(instance: Instance, plan: Plan) -> Plan:
    """`plan` (hourly, with or without months) with every stated price and cost taken at
    `instance`'s prices and its spot pools' margins at `instance`'s spot terms; a plan
    without hours is returned as it is."""
    if not plan.hours:
        return plan
    hours = _hours(instance, plan.hours, plan.committed)
    day = math.fsum(h.cost_per_hour for h in hours)
    months = _months(instance, plan, hours)
    return plan.model_copy(
        update={
            "hours": hours,
            "committed": _commitments(instance, plan.committed),
            "cost_per_month": instance.policy.hours_per_month / HOURS_PER_DAY * day,
            "months": months,
            "horizon_cost": math.fsum(m.cost_per_month for m in months)
            if plan.horizon_cost is not None
            else None,
        }
    )


def _commitments(instance: Instance, committed: tuple[Commitment, ...]) -> tuple[Commitment, ...]:
    terms = {(o.region, o.gpu): o for o in offer_terms(instance)}
    return tuple(
        c.model_copy(
            update={
                "reserved_price_per_gpu_hour": terms[key].reserved_price_per_gpu_hour or 0.0,
                "on_demand_price_per_gpu_hour": terms[key].on_demand_price_per_gpu_hour,
            }
        )
        if (key := (c.region, c.gpu)) in terms
        else c
        for c in committed
    )


def _hours(
    instance: Instance, hours: tuple[Hour, ...], committed: tuple[Commitment, ...]
) -> tuple[Hour, ...]:
    offers = offer_terms(instance)
    held = {(o.region, o.gpu): 0.0 for o in offers}
    held.update({(c.region, c.gpu): c.committed_gpus for c in committed})
    return tuple(
        h.model_copy(
            update={
                "cost_per_hour": hour_cost(offers, h.gpus, held),
                "pools": tuple(_pool(instance, p) for p in h.pools),
                "spot_pools": tuple(_spot(instance, h, s) for s in h.spot_pools),
                "failover_starts": tuple(
                    s.model_copy(update={"pool": _pool(instance, s.pool)})
                    for s in h.failover_starts
                ),
            }
        )
        for h in hours
    )


def _pool(instance: Instance, pool: ReplicaPool) -> ReplicaPool:
    """`pool` with its GPUs at the on-demand price for a month (a pool that states a
    cost; a batch pool's 0, paid in its hours' bills, stays 0)."""
    known = pool.gpu in instance.gpu_specs and any(r.name == pool.region for r in instance.regions)
    if not pool.cost_per_month or not known:
        return pool
    price = instance.price_per_gpu_hour(pool.region, pool.gpu)
    cost = pool.count * pool.replica_gpus * price * instance.policy.hours_per_month
    return pool.model_copy(update={"cost_per_month": cost})


def _spot(instance: Instance, hour: Hour, entry: SpotReplicas) -> SpotReplicas:
    """`entry` with its share of time down and replicas down at `instance`'s spot terms
    and confidence, as solver.time.readback.spot states them (an entry without a pool, an offer
    of spot or a confidence stays as it is: the verifier names it)."""
    confidence = instance.policy.spot_confidence
    key = (entry.workload, entry.region, entry.configuration)
    pool = next((p for p in hour.pools if (p.workload, p.region, p.key) == key), None)
    known = pool is not None and any(r.name == entry.region for r in instance.regions)
    offer = instance.region(entry.region).supply.get(pool.gpu) if known else None
    if confidence is None or offer is None or offer.spot_price_per_gpu_hour is None:
        return entry
    restart_s = instance.replica_start_s(pool.gpu) + instance.policy.scale_detection_s
    u = spot_down_fraction(offer.spot_interruptions_per_hour, restart_s)
    down = poisson_quantile(entry.replicas * u, confidence)
    return entry.model_copy(update={"down_fraction": u, "down_replicas": down})


def _power(
    instance: Instance, hours: tuple[Hour, ...], rows: tuple[RegionPower, ...]
) -> tuple[RegionPower, ...]:
    """A month's power rows at `instance`'s power terms: kW in its busiest hour
    (solver.time.months.month_power: PUE, server factor, whole servers) and the region's
    power_kw as its cap, priced where there is one (the stated $/month per kW kept, 0
    where the plan's own point had no cap: the verifier holds it finite only)."""
    known = {r.name: r for r in instance.regions}
    restated = []
    for row in month_power(instance, hours, [r for r in rows if r.region in known]):
        cap = known[row.region].power_kw
        price = None if cap is None else (row.shadow_price_per_kw or 0.0)
        restated.append(row.model_copy(update={"limit_kw": cap, "shadow_price_per_kw": price}))
    return (*restated, *(r for r in rows if r.region not in known))


def _months(instance: Instance, plan: Plan, hours: tuple[Hour, ...]) -> tuple[Month, ...]:
    months = []
    previous: dict[tuple[str, str], float] = {}
    for month in plan.months:
        committed = _commitments(instance, month.committed if month.month else plan.committed)
        own_hours = _hours(instance, month.hours, committed) if month.month else hours
        offers = month_offers(instance, month.month, own_hours, committed, previous)
        previous = {(c.region, c.gpu): c.committed_gpus for c in committed}
        months.append(
            month.model_copy(
                update={
                    "hours": own_hours if month.month else month.hours,
                    "committed": committed if month.month else month.committed,
                    "offers": offers,
                    "cost_per_month": math.fsum(o.cost for o in offers),
                    "growth_factor": month_growth(instance, month.month),
                    "power_kw": _power(instance, own_hours, month.power_kw),
                }
            )
        )
    return tuple(with_orders(instance, months))
