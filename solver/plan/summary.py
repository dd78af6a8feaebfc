"""The buyer's summary (solver.plan.records.BuyerSummary) of a plan, from the plan alone:

- cost: `cost_per_month`, and over a horizon `horizon_cost` = sum of the months' costs;
- GPUs: per region and type, `purchased` (bought, whole servers) and `used` from `gpus`;
- orders: with a horizon, each month's `servers_ordered` (ordered in `order_month`,
  serving from that month); an hourly plan without one, its commitment in servers
  (`committed` / the offer's GPUs per server in `servers`, else 1: what a one-month
  horizon orders in month 0; GPUs rented by the hour are no order); a static plan, the
  `servers` to buy now;
- what binds: the `SUMMARY_BINDINGS` binding rows with the largest |shadow price|,
  then those that bind in whole units (solver.plan.binding; not priced), each at the
  first month it binds in with a horizon (`month` set);
- with a horizon, the months whose solve stopped at the time limit (`stopped_months`).
"""

import math

from solver.plan.binding import Binding
from solver.plan.records import BoughtGpus, BuyerSummary, OrderLine
from solver.plan.schema import Plan

SUMMARY_BINDINGS = 5
"""Binding constraints the summary names (all of them are in the plan's `binding`)."""


def buyer_summary(plan: Plan) -> BuyerSummary:
    """The one-screen summary of `plan` (see the module docstring)."""
    bought = tuple(
        BoughtGpus(region=u.region, gpu=u.gpu, bought=u.purchased, used=u.used, existing=u.existing)
        for u in plan.gpus
        if u.used or u.purchased
    )
    if plan.months:
        orders = tuple(
            OrderLine(
                region=o.region,
                gpu=o.gpu,
                servers=o.servers,
                gpus_per_server=o.gpus_per_server,
                order_month=o.order_month,
                serving_from_month=m.month,
            )
            for m in plan.months
            for o in m.servers_ordered
        )
        orders = tuple(sorted(orders, key=lambda o: (o.order_month, o.serving_from_month)))
    elif plan.hours:
        per_server = {(s.region, s.gpu): s.gpus_per_server or 1 for s in plan.servers}
        orders = tuple(
            OrderLine(
                region=c.region,
                gpu=c.gpu,
                servers=math.ceil(c.committed_gpus / n - 1e-9),
                gpus_per_server=n,
            )
            for c in plan.committed
            if c.committed_gpus > 0 and (n := per_server.get((c.region, c.gpu), 1))
        )
    else:
        orders = tuple(
            OrderLine(
                region=s.region, gpu=s.gpu, servers=s.count, gpus_per_server=s.gpus_per_server or 1
            )
            for s in plan.servers
            if s.count
        )
    priced = sorted((b for b in plan.binding if b.shadow_price), key=lambda b: -abs(b.shadow_price))
    whole: dict[str, Binding] = {}
    for b in (*plan.binding, *(b for m in plan.months if m.month for b in m.binding)):
        if b.in_whole_units:
            whole.setdefault(b.name, b)
    return BuyerSummary(
        cost_per_month=plan.cost_per_month,
        horizon_months=len(plan.months),
        horizon_cost=plan.horizon_cost,
        gpus_bought=sum(u.purchased for u in plan.gpus),
        gpus_used=plan.total_gpus or 0,
        idle_fraction=plan.idle_fraction,
        bought=bought,
        orders=orders,
        binding=(*priced[:SUMMARY_BINDINGS], *list(whole.values())[:SUMMARY_BINDINGS]),
        stopped_months=tuple(m.month for m in plan.months if m.stopped_at_limit),
    )
