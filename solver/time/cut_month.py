"""A procurement month cut at the time limit, planned without a program: the month
before's hours held and grown.

A month whose turn comes after the run's deadline (solver.solve's months loop) is not
searched. Building, solving and reading back its periods program to take its fallback
took 0.3-0.5 s CPU a growth month, so a run stopped at month 1 of twelve still ended
seconds past the limit. Here such a month's plan is written in closed form from the
month before's plan, hour by hour, on the same configurations:

    n_m[w,c,r,h] = ceil(n_(m-1)[w,c,r,h] x (1 + g_w))        (each pool of each hour)
    s_m[w,c,r,h] = ceil(s_(m-1)[w,c,r,h] x (1 + g_w))        (each failover start)

its commitments held where no order can arrive yet (m < lead_time_months), else raised
from the month before's to the level that bills the grown hours least
(`cheapest_commitment`), and the GPUs the grown pools need beyond what is owned and
committed rented on demand, hour by hour (`hour_gpus`, as the periods program's
read-back splits them), at the month's prices (`hour_cost`). Month m's demand is month
m - 1's times (1 + g_w) in every hour and scenario (models.operations.procurement
.month_instance: the profile is kept), warm headroom included, and a pool of more
replicas serves at least as much per replica (the pooling curves), so each grown hour
serves its grown load wherever the month before's hour served its own, in every
failure scenario, with the failover starts grown alike (their shortfall and the
workload's rate both grow by 1 + g_w: the error budget's share is kept). The
commitments are what any month may do: never fewer, none added inside the lead time,
each added GPU ordered lead_time_months ahead (solver.time.months.with_orders).

What it cannot promise is a cap: a grown hour may pass a region's `max_gpus`, its
`max_on_demand_gpus` or its power or rack limit. Those are checked here
(`within_caps`), and a month past one, or one this rule does not cover (batch work, spot
replicas, shared groups: their loads do not scale pool by pool), is planned by its
program as before (its fallback, past the limit). The hours state no scenario table
(no program routed them: the hour verifier's max-flow judges each hour, as it does a
fleet), no idle share (it is read from the routing) and no prices (no pricing LP). The
horizon's verifier checks every month as it checks a searched one; where it refuses a
cut month all the same, the run plans the cut months by their programs
(solver.solve) rather than return an unverified plan.

The month's status is "feasible (gap unknown)": it has no bound of its own (the
horizon's gap is then bounded as solver.time.months.horizon_status says).
"""

import math
from collections.abc import Mapping

from models.operations.procurement import month_factors, month_instance
from models.operations.site import gpu_kw, installed_gpus, node_gpus, racks_per_gpu
from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from solver.candidates.pool_kv import pool_kv_fields
from solver.candidates.pools import assess_pools
from solver.candidates.table import CandidateTable
from solver.plan.records import RegionPower, ReplicaPool
from solver.plan.schema import NO_SHADOW_PRICES, Plan
from solver.plan.time_records import FailoverStart, Hour
from solver.program.families.pricing import OfferTerms
from solver.program.lp import Termination
from solver.readback.groups import routing_share, unified_credit
from solver.time.months import HELD_AND_GROWN, month_power
from solver.time.periods import offer_terms
from solver.time.solve import hour_cost, hour_gpus, peak_fleet, peak_gpu_use


def cut_month_plan(
    instance: Instance,
    month: int,
    previous: Plan,
    table: CandidateTable,
    searched: tuple[int, Plan] | None = None,
) -> Plan | None:
    """Month `month`'s plan held and grown from `previous` (month - 1's: the module
    text), or None where the rule does not cover it or a cap refuses it (the month is
    then planned by its program). `instance`: as written; `table`: the horizon's
    candidate table (every month's configurations, at their largest demand).
    `searched`: (month k, its plan), the last month searched before a run of cut months,
    whose hours are grown once to this month's, ceil(n_k x (1 + g)^(m - k)), where
    grown month by month from the cut month before (ceil of ceil) a pool of n < 1/g
    replicas gained one a month; the commitments are still `previous`'s (never fewer)."""
    since, source = searched if searched is not None else (month - 1, previous)
    if month < 1 or not _covered(instance, source):
        return None
    grown = month_instance(instance, month)
    before, after = month_factors(instance, since), month_factors(instance, month)
    growth = {w: after[w] / before[w] for w in after}
    pools = _grown_pools(grown, source, table, growth)
    if pools is None:
        return None
    offers = offer_terms(grown)
    held = {(c.region, c.gpu): c.committed_gpus for c in previous.committed}
    day = [_weighted(tuple(pools[_key(p)](p) for p in hour.pools)) for hour in source.hours]
    frozen = month < instance.policy.lead_time_months
    committed = {
        (o.region, o.gpu): held.get((o.region, o.gpu), 0.0)
        if frozen
        else cheapest_commitment(o, held.get((o.region, o.gpu), 0.0), day)
        for o in offers
    }
    hours = []
    for hour, own in zip(source.hours, day, strict=True):
        gpus = hour_gpus(offers, own, committed)
        starts = tuple(
            FailoverStart(scenario=s.scenario, pool=_scaled(s.pool, growth[s.pool.workload]))
            for s in hour.failover_starts
        )
        cost = hour_cost(offers, gpus, committed)
        hours.append(
            Hour(
                hour=hour.hour,
                period=hour.period,
                pools=own,
                gpus=gpus,
                cost_per_hour=cost,
                failover_starts=starts,
            )
        )
    if not within_caps(grown, offers, hours):
        return None
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    uses = peak_gpu_use(offers, hours, days, committed)
    solver = previous.solver and previous.solver.model_copy(
        update={
            "termination": str(Termination.FEASIBLE),
            "runtime_s": 0.0,
            "mip_gap": None,
            "variables": 0,
            "integer_variables": 0,
            "constraints": 0,
            "method": HELD_AND_GROWN,
        }
    )
    return Plan(
        instance=instance.name,
        status="feasible (gap unknown)",
        cost_per_month=days * math.fsum(h.cost_per_hour for h in hours),
        total_gpus=sum(u.used for u in uses),
        gpus=uses,
        replicas=peak_fleet(hours),
        solver=solver,
        shadow_price_note=f"{NO_SHADOW_PRICES}: month cut at the time limit (no program)",
        hours=tuple(hours),
        committed=tuple(
            c.model_copy(update={"committed_gpus": round(committed[(c.region, c.gpu)], 6)})
            for c in previous.committed
        ),
        power_kw=_power(grown, hours, previous.power_kw),
    )


def cheapest_commitment(
    offer: OfferTerms, floor: float, day: list[tuple[ReplicaPool, ...]]
) -> float:
    """The commitment of `offer` that bills the grown hours `day` least, from `floor` (the
    month before's: never fewer) up in whole servers of n (n = 1 without servers):

        c* = argmin_(c = floor + k n, k >= 0)  24 x reserved x c
                                               + sum_h on_demand x paid(need_h - c),

    need_h the hour's GPUs of the offer beyond the owned ones, paid(x) = x rented in whole
    servers (`OfferTerms.paid_on_demand`); the smallest such c where two tie, and no
    more than the most any hour needs. The floor itself where the offer has no reserved
    price (nothing to commit)."""
    price = offer.reserved_price_per_gpu_hour
    if price is None:
        return floor
    needs = []
    for pools in day:
        used = sum(p.gpus or 0 for p in pools if (p.region, p.gpu) == (offer.region, offer.gpu))
        needs.append(used - min(used, offer.existing))
    n = offer.gpus_per_server

    def bill(c: float) -> float:
        rented = math.fsum(offer.paid_on_demand(need - c) for need in needs)
        return HOURS_PER_DAY * price * c + offer.on_demand_price_per_gpu_hour * rented

    steps = max(0, math.ceil((max(needs) - floor) / n - 1e-9))
    levels = [c for k in range(steps + 1) if (c := floor + k * n) <= offer.max_gpus]
    return min(levels or [floor], key=lambda c: (bill(c), c))


def _covered(instance: Instance, previous: Plan) -> bool:
    """Whether the rule covers the month: interactive pools of one workload each, no
    batch work, no spot replicas, the month before's hours stated."""
    if not previous.hours or any(w.is_batch for w in instance.workloads):
        return False
    return not any(
        hour.batch_soak or hour.spot_pools or any(p.shared or p.members for p in hour.pools)
        for hour in previous.hours
    )


def _key(pool: ReplicaPool) -> tuple[str, str, str, int]:
    return (pool.workload, pool.key, pool.region, pool.count)


def _grown_pools(
    grown: Instance, previous: Plan, table: CandidateTable, growth: Mapping[str, float]
) -> dict | None:
    """(workload, configuration, region, count) of the month before -> a function giving
    the pool grown, at its physics in a pool of its new size (`assess_pools`, as the
    read-back states a pool); None where a pool's configuration is not in `table`."""
    chosen: dict = {}
    sizes: dict = {}
    for hour in previous.hours:
        for pool in hour.pools:
            c = next((c for c in table.of(pool.workload) if c.key == pool.key), None)
            if c is None:
                return None
            count = math.ceil(pool.count * growth[pool.workload] - 1e-9)
            sizes[_key(pool)] = (c, count)
            _, _, counts = chosen.setdefault((pool.workload, c.key), (c.config, c.curve, set()))
            counts.add(count)
    curves = assess_pools(grown, chosen)

    def at(key):
        c, count = sizes[key]
        curve = curves[(key[0], c.key)]

        def pool(p: ReplicaPool) -> ReplicaPool:
            return p.model_copy(
                update={
                    "count": count,
                    "gpus": count * c.gpus,
                    "limit": curve.physics(count).limit,
                    "requests_per_s_per_replica": curve.requests_per_s(count),
                    "cost_per_month": p.cost_per_month * count / p.count,
                    **pool_kv_fields(grown, p.workload, c.config, count),
                }
            )

        return pool

    return {key: at(key) for key in sizes}


def _weighted(pools: tuple[ReplicaPool, ...]) -> tuple[ReplicaPool, ...]:
    """An hour's grown pools with their routing weights restated at their grown counts, as
    the read-back states them (solver.readback.groups.routing_share): n_p q_p(n_p) / sum n q
    over the unified pools and groups of the workload in the region. ceil(n (1 + g)) grows
    two pools of a region by different ratios, so the month before's weights no longer hold
    (the verifier refused the whole month)."""
    totals = unified_credit(pools)
    return tuple(
        p.model_copy(update={"routing_weight": routing_share(p, p.workload, totals)})
        if p.routing_weight is not None and totals.get((p.workload, p.region), 0.0) > 0
        else p
        for p in pools
    )


def _scaled(pool: ReplicaPool, factor: float) -> ReplicaPool:
    """A failover start grown: its replicas times `factor`, rounded up, at their lone
    capacity (what a start is credited with: solver.time.readback.failover)."""
    count = math.ceil(pool.count * factor - 1e-9)
    return pool.model_copy(
        update={
            "count": count,
            "gpus": count * pool.replica_gpus,
            "cost_per_month": pool.cost_per_month * count / pool.count,
        }
    )


def within_caps(instance: Instance, offers: tuple[OfferTerms, ...], hours: list[Hour]) -> bool:
    """Whether every hour keeps within each offer's supply (existing + max_gpus, the
    failover starts added), its on-demand cap, and each region's power and rack limits
    (kW and racks of every GPU installed, existing and bought in whole servers:
    solver.time.months.month_power)."""
    by_offer = {(o.region, o.gpu): o for o in offers}
    for hour in hours:
        starts: dict = {}
        for s in hour.failover_starts:
            key = (s.scenario, s.pool.region, s.pool.gpu)
            starts[key] = starts.get(key, 0) + (s.pool.gpus or 0)
        for g in hour.gpus:
            o = by_offer[(g.region, g.gpu)]
            if g.used > o.existing + o.max_gpus or g.on_demand > o.max_on_demand_gpus + 1e-6:
                return False
        for (_, region, gpu), extra in starts.items():
            o = by_offer[(region, gpu)]
            used = next((g.used for g in hour.gpus if (g.region, g.gpu) == (region, gpu)), 0)
            if used + extra > o.existing + o.max_gpus:
                return False
    for region in instance.regions:
        kw = {g: gpu_kw(instance, region.name, g) for g in instance.gpu_specs}
        racks = (
            {g: racks_per_gpu(instance, g, region.kw_per_rack) for g in instance.gpu_specs}
            if region.kw_per_rack is not None
            else {}
        )
        for hour in hours:
            rows = [g for g in hour.gpus if g.region == region.name]
            installed = {g.gpu: installed_gpus(instance, region.name, g.gpu, g.used) for g in rows}
            if region.power_kw is not None and _sum(kw, installed) > region.power_kw + 1e-6:
                return False
            if racks and region.racks is not None and _sum(racks, installed) > region.racks + 1e-6:
                return False
    return True


def _power(
    instance: Instance, hours: list[Hour], before: tuple[RegionPower, ...]
) -> tuple[RegionPower, ...]:
    """The month's power per region in its busiest hour (`month_power`), unpriced (a capped
    region's $/month per kW 0, as a month whose pricing LP did not run states it), with
    the kW of one more server and the kW left where the cap binds in whole units (the
    read-back's rule: solver.readback.site.whole_unit_power)."""
    unpriced = tuple(
        row.model_copy(
            update={
                "shadow_price_per_kw": None if row.limit_kw is None else 0.0,
                "whole_unit_kw": 0.0,
                "slack_kw": 0.0,
            }
        )
        for row in before
    )
    rows = []
    for row in month_power(instance, hours, unpriced):
        region = instance.region(row.region)
        units = [
            gpu_kw(instance, row.region, g) * node_gpus(instance, g)
            for g, offer in region.supply.items()
            if offer.max_gpus
        ]
        if row.limit_kw is None or not units:
            rows.append(row)
            continue
        slack, margin = row.limit_kw - row.kw, 1e-6 * (1.0 + row.limit_kw)
        if margin < slack < min(units) - margin:
            row = row.model_copy(update={"whole_unit_kw": min(units), "slack_kw": slack})
        rows.append(row)
    return tuple(rows)


def _sum(per_gpu: Mapping[str, float], installed: Mapping[str, float]) -> float:
    return math.fsum(per_gpu[g] * n for g, n in installed.items())
