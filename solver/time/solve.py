"""The periods program's guards (its hour instances, its pre-solve problems) and its
read-back into 24 hours, the batch schedule (solver.time.readback.batch) and the error budget
and headroom report (solver.time.readback.report). The sequence around it (size guard, deadline
and its shares, solve, pricing, verification) is the pipeline's one (solver.solve),
through solver.time.step.
"""

import math
from collections.abc import Callable, Iterable

from models.operations.site import gpus_bought
from models.operations.time_demand import hour_instance, planning_start_s
from models.schema.instance import Instance
from models.schema.quantities import counted
from models.schema.traffic import HOURS_PER_DAY
from models.serving.attribution import PhaseShares
from models.serving.replica import ReplicaCapacity, ReplicaConfig
from solver.analysis.cost_attribution import candidate_shares, pool_phase_shares
from solver.analysis.diagnose import presolve_problems
from solver.analysis.hour_attribution import (
    PoolKey,
    hourly_cost_attribution,
    pool_hours,
    served_by_day,
)
from solver.candidates.pools import PoolCurve, assess_pools
from solver.decompose.by_period import METHOD as PERIOD_METHOD
from solver.decompose.period_passes import WHOLE_HELD
from solver.errors import Problem
from solver.plan.records import CostAttribution, GpuUse, ReplicaPool
from solver.plan.schema import Plan, plan_status
from solver.plan.time_records import Commitment, Hour, HourGpus
from solver.program.families.pricing import CommittedColumn, CommittedServersColumn, OfferTerms
from solver.program.lp import SolveResult, Termination
from solver.program.optimised import Optimised
from solver.readback.assign import chosen_sizes, read_plan, replica_counts
from solver.readback.site import region_power, server_purchases, whole_unit_power
from solver.settings import SolveSettings
from solver.time.day_choice import CHOSEN_METHOD, DAY_METHOD, LATE_WHOLE, day_columns
from solver.time.months import month_power
from solver.time.periods import PeriodProgram, TimeProgram, day_periods
from solver.time.readback.batch import dedicated_pools, hour_soaks
from solver.time.readback.failover import started_pools, with_started
from solver.time.readback.idle import hourly_idle_fraction
from solver.time.readback.prices import hour_bindings, site_duals
from solver.time.readback.spot import spot_replicas

SECONDS_PER_DAY = 86_400.0


def period_instances(instance: Instance) -> tuple[Instance, ...]:
    """The hour instance of each period of the day, one static copy each in the periods
    program (what its size guard counts, solver.candidates.size_check)."""
    return tuple(hour_instance(instance, period.values) for period in day_periods(instance))


def peak_period(program: TimeProgram) -> PeriodProgram:
    """The period of the most demand: its program stands for the program in what
    `explain` reads and in the diagnosis of an infeasible hourly program."""
    return max(program.periods, key=lambda p: sum(p.period.values.values()))


def hourly_problems(program: TimeProgram) -> list[Problem]:
    """The pre-solve problems of the periods program: the peak period's static ones and
    batch work that nothing can serve."""
    peak = peak_period(program)
    return [*presolve_problems(peak.program.sets), *unplaceable_batch(program)]


def read_hours(
    program: TimeProgram,
    result: SolveResult,
    values: dict[str, float],
    settings: SolveSettings,
    build_s: float,
    duals: Callable[[], tuple[dict[str, float], str]],
    in_horizon: bool = False,
) -> Plan:
    """The read-back of a solved periods program: the hours with their prices (`duals`
    gives the pricing LP's duals and the plan's note once it has ended,
    solver.time.readback.prices),
    then, for the plan itself (not a later month of its horizon, `in_horizon`, whose
    hours, commitments and cost are all its month keeps: solver.time.months), the
    batch schedule and the error budget."""
    from solver.time.readback.batch import with_batch
    from solver.time.readback.report import with_time_report

    instance = program.instance
    plan = hourly_plan(program, result, values, settings, build_s, duals, not in_horizon)
    if in_horizon:
        return plan
    plan = with_time_report(instance, program, plan)
    plan = with_batch(instance, program, plan, values)
    settings.passed("hours")
    return plan


def unplaceable_batch(program: TimeProgram) -> list[Problem]:
    """Batch work with neither an interactive pool of its model to soak nor a dedicated
    candidate in its region: no plan serves it."""
    return [
        Problem(
            f"batch_arrivals[{work.batch},{work.region},*]",
            f"{sum(work.arrivals_by_hour):,.0f} requests a day of {work.batch} in "
            f"{work.region}: no interactive pool of its model runs there to soak them and "
            "no configuration of it runs on the GPUs offered there",
            f"offer a GPU {work.batch} fits on in {work.region}, or drop its demand there",
        )
        for work in program.batch
        if not work.soak and not work.dedicated
    ]


def period_plans(
    program: TimeProgram,
    result: SolveResult,
    values: dict[str, float],
    settings: SolveSettings,
    attributed: bool = True,
) -> tuple[dict[int, Plan], dict[tuple[int, PoolKey], PhaseShares]]:
    """Each period's static read-back (replicas at their physics, scenarios; no binding
    rows or cost attribution: `hourly_plan` states the day's), by first hour; and each
    (period, pool)'s phase split at its real size, for the cost attribution (none
    without it, `attributed` off)."""
    plans, phases = {}, {}
    points: dict[tuple[str, str, int], ReplicaCapacity] = {}  # the periods' sizes, once
    for part in program.periods:
        hour = part.first_hour
        own = program.period_values(values, hour)
        counts = replica_counts(part.program.sets, own)
        chosen = chosen_sizes(part.program.sets, counts)
        curves = assessed(part.program.sets.instance, chosen, points)
        plans[hour] = read_plan(
            part.program, Optimised(result), own, {}, settings, curves, period=True
        )
        shares = pool_phase_shares(part.program.sets, counts, curves) if attributed else {}
        for key, split in shares.items():
            phases[(hour, key)] = split
    return plans, phases


def assessed(
    instance: Instance,
    chosen: dict[tuple[str, str], tuple[ReplicaConfig, PoolCurve, set[int]]],
    points: dict[tuple[str, str, int], ReplicaCapacity],
) -> dict[tuple[str, str], PoolCurve]:
    """`assess_pools` of one period, the physics at a size an earlier period of the same
    program asked for read from `points` ((workload, candidate key, size) -> capacity,
    what `assess_pools` added to a candidate's curve there), and what it adds here kept
    in them. The same curves: the periods' instances differ in demand alone, which the
    physics does not read, and a curve's points are merged by size (`with_points`), so
    the points added before and those added here make the curve they make at once."""
    ready = {}
    for (w, key), (config, curve, sizes) in chosen.items():
        known = {n: points[(w, key, n)] for n in sizes if (w, key, n) in points}
        ready[(w, key)] = (config, curve.with_points(known) if known else curve, sizes)
    curves = assess_pools(instance, ready)
    for (w, key), curve in curves.items():
        tabulated = set(chosen[(w, key)][1].sizes)
        points.update({(w, key, n): c for n, c in curve.points if n not in tabulated})
    return curves


def day_attribution(
    program: TimeProgram,
    values: dict[str, float],
    hours: list[Hour],
    plans: dict[int, Plan],
    phases: dict[tuple[int, PoolKey], PhaseShares],
    committed: dict[tuple[str, str], float],
    spot_gpus: dict[tuple[int, PoolKey], int],
) -> tuple[CostAttribution, ...]:
    """The hourly plan's cost attribution (solver.analysis.hour_attribution), with the
    dedicated batch pools' phase splits and the batch volumes served."""
    phases = dict(phases)
    served = served_by_day(
        program.instance,
        {
            first: plan.scenarios[0].routing if plan.scenarios else ()
            for first, plan in plans.items()
        },
        [hour.period for hour in hours],
    )
    for work in program.batch:
        served[(work.batch, work.region)] += math.fsum(work.arrivals_by_hour) / SECONDS_PER_DAY
        for option in work.dedicated:
            count = round(values.get(option.column, 0.0))
            if count < 1:
                continue
            batch = option.candidate.curve.physics(count).batch
            split = candidate_shares(program.instance, work.batch, option.candidate, batch)
            for part in program.periods:
                phases[(part.first_hour, (work.batch, option.candidate.key, work.region))] = split
    shares = pool_hours(hours, program.offers, committed, spot_gpus)
    return hourly_cost_attribution(program.instance, shares, phases, served)


def hourly_plan(
    program: TimeProgram,
    result: SolveResult,
    values: dict[str, float],
    settings: SolveSettings,
    build_s: float = 0.0,
    priced: Callable[[], tuple[dict[str, float], str]] = lambda: ({}, ""),
    attributed: bool = True,
) -> Plan:
    """The 24 hours, the commitments, the peak fleet and the month's cost; with the
    pricing LP's duals (`priced()`, solver.time.readback.prices: called once the periods are
    read), its binding constraints and the power rows' prices; and the day's cost
    attribution, where `attributed` (a later month of a horizon keeps none:
    solver.time.months.Month, so `read_hours` asks for none there)."""
    instance = program.instance
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    plans, phases = period_plans(program, result, values, settings, attributed)
    dedicated = dedicated_pools(program, values)
    batch_pools = merged_pools(pool for pool, _, _ in dedicated)
    batch_spot: dict[tuple[str, str], int] = {}
    for pool, tier, _ in dedicated:
        if tier == "spot":
            key = (pool.region, pool.gpu)
            batch_spot[key] = batch_spot.get(key, 0) + (pool.gpus or 0)
    soaks = hour_soaks(program, values)
    on_spot = spot_replicas(program, values)
    spot_by_period = {}
    spot_gpus: dict[tuple[int, PoolKey], int] = {}
    for part in program.periods:
        spot = dict(batch_spot)
        for pool, tier, _ in dedicated:
            if tier == "spot":
                spot_gpus[(part.first_hour, (pool.workload, pool.key, pool.region))] = (
                    pool.gpus or 0
                )
        for entry in on_spot.get(part.first_hour, ()):
            c = next(c for c in program.table.of(entry.workload) if c.key == entry.configuration)
            key = (entry.region, c.gpu)
            spot[key] = spot.get(key, 0) + entry.replicas * c.gpus
            pool_key = (entry.workload, entry.configuration, entry.region)
            spot_gpus[(part.first_hour, pool_key)] = entry.replicas * c.gpus
        spot_by_period[part.first_hour] = spot
    committed = committed_gpus(program.offers, values)
    hours = []
    for part in program.periods:
        first = part.first_hour
        pools = plans[first].replicas + batch_pools
        gpus = hour_gpus(program.offers, pools, committed, spot_by_period[first])
        cost = hour_cost(program.offers, gpus, committed)
        starts = started_pools(program, first, program.period_values(values, first))
        for hour in part.period.hours:
            hours.append(
                Hour(
                    hour=hour,
                    period=first,
                    pools=pools,
                    batch_soak=soaks[hour],
                    spot_pools=on_spot.get(first, ()),
                    gpus=gpus,
                    cost_per_hour=cost,
                    failover_starts=starts,
                    scenarios=with_started(plans[first].scenarios, starts, first),
                )
            )
    hours.sort(key=lambda h: h.hour)
    peak_pools = peak_fleet(hours)
    uses = peak_gpu_use(program.offers, hours, days, committed)
    peak_hour = max(plans, key=lambda first: _busiest(plans[first]))
    peak_plan = plans[peak_hour]
    peak_starts = next(h.failover_starts for h in hours if h.hour == peak_hour)
    peak_sets = program.periods[0].program.sets  # the instance's GPUs, regions and policy
    duals, shadow_price_note = priced()
    site_prices = site_duals(program, duals)
    power, power_rows = whole_unit_power(
        peak_sets,
        month_power(instance, hours, region_power(peak_sets, uses, site_prices)),
        site_prices,
    )
    binding = (hour_bindings(program, values, duals) if duals else ()) + power_rows
    size = program.lp.size()
    solver = peak_plan.solver.model_copy(
        update={
            "runtime_s": result.runtime_s,
            "mip_gap": result.mip_gap,
            "variables": size["variables"],
            "integer_variables": size["integer_variables"],
            "constraints": size["constraints"],
            "method": day_method(program, result.message) + f" (built in {build_s:.2f} s)",
        }
    )
    return Plan(
        instance=instance.name,
        # as the static read-back says it: the gap reached in the status, and "optimal"
        # only within the requested gap and OPTIMAL_GAP_CEILING (it said "feasible", no gap)
        status=plan_status(
            result.termination is Termination.OPTIMAL, result.mip_gap, settings.mip_gap
        ),
        cost_per_month=days * math.fsum(h.cost_per_hour for h in hours),
        total_gpus=sum(u.used for u in uses),
        gpus=uses,
        replicas=peak_pools,
        scenarios=with_started(peak_plan.scenarios, peak_starts, peak_hour),
        solver=solver,
        shadow_price_note=shadow_price_note,
        hours=tuple(hours),
        idle_fraction=hourly_idle_fraction(hours, plans, batch_pools, sum(committed.values())),
        servers=server_purchases(peak_sets, uses),
        power_kw=power,
        binding=binding,
        cost_attribution=day_attribution(
            program, values, hours, plans, phases, committed, spot_gpus
        )
        if attributed
        else (),
        committed=tuple(
            Commitment(
                region=o.region,
                gpu=o.gpu,
                committed_gpus=round(committed[(o.region, o.gpu)], 6),
                reserved_price_per_gpu_hour=o.reserved_price_per_gpu_hour,
                on_demand_price_per_gpu_hour=o.on_demand_price_per_gpu_hour,
            )
            for o in program.offers
            if o.reserved_price_per_gpu_hour is not None
        ),
        notes=(
            f"planned in {counted(len(program.periods), 'period')} of the UTC day at the warm rate "
            f"(demand plus headroom for a {planning_start_s(instance):g} s replica start "
            f"and {instance.policy.scale_detection_s:g} s detection)",
            *day_notes(program),
            *peak_plan.notes,
        ),
        # what the busiest period's read-back states of the whole question, as a static
        # plan states it (solver.readback.assign.read_plan)
        demand_growth=peak_plan.demand_growth,
        max_utilization=peak_plan.max_utilization,
    )


def day_method(program: TimeProgram, message: str) -> str:
    """The plan's method: the rounds' own (solver.decompose.by_period), else one program
    over the periods (its held fleet's plan where the search ended without a better one,
    solver.decompose.period_passes); with how each pool's configuration was chosen for
    the day where the program holds it over the day (solver.time.day_choice)."""
    if message.startswith(PERIOD_METHOD):
        method = message
    else:
        method = f"one program over {counted(len(program.periods), 'period')} of the day"
        method += f", {WHOLE_HELD}" if message.startswith(WHOLE_HELD) else ""
        method += f", {LATE_WHOLE}" if message.startswith(LATE_WHOLE) else ""
    if DAY_METHOD in message and DAY_METHOD not in method:
        method += ", " + message[message.index(DAY_METHOD) :]
    elif DAY_METHOD not in method and day_columns(program.lp):
        method += f", {CHOSEN_METHOD}"
    return method


def day_notes(program: TimeProgram) -> tuple[str, ...]:
    """What the limit on configurations per pool means in a plan of periods: one choice
    for the whole day (solver.program.families.simplicity's day rows), of each month."""
    if not day_columns(program.lp):
        return ()
    limit = program.instance.policy.max_configs_per_pool or 0
    months = program.instance.policy.horizon_months
    return (
        f"{counted(limit, 'configuration')} per pool all day (configs_per_day[w,d,phase]): "
        f"each (workload, region, phase) runs {'it' if limit == 1 else 'them'} in every hour "
        "it serves, one server image a day, not one an hour"
        + ("; each month chooses its own (the fleet is re-planned monthly)" if months else ""),
    )


def committed_gpus(
    offers: tuple[OfferTerms, ...], values: dict[str, float]
) -> dict[tuple[str, str], float]:
    """(region, GPU) -> GPUs committed, whole servers of n where GPUs come in servers
    (n x the rounded committed_servers column; else the committed column to 1e-6)."""
    found = {}
    for o in offers:
        key = (o.region, o.gpu)
        gpus = values.get(CommittedColumn(o.region, o.gpu).name(), 0.0)
        servers = values.get(CommittedServersColumn(o.region, o.gpu).name())
        found[key] = float(o.gpus_per_server * round(servers)) if servers is not None else gpus
    return found


def hour_gpus(
    offers: tuple[OfferTerms, ...],
    pools: tuple[ReplicaPool, ...],
    committed: dict[tuple[str, str], float],
    spot: dict[tuple[str, str], int] | None = None,
) -> tuple[HourGpus, ...]:
    """GPUs used per offer in one period, split owned / reserved / on demand / spot
    (`spot`: GPUs on spot per offer: dedicated batch replicas and interactive spot
    replicas). On demand is what is rented: the need beyond owned, reserved and spot GPUs
    in whole servers where GPUs come in servers (OfferTerms.paid_on_demand), so owned +
    reserved + on demand + spot may exceed `used` by less than a server."""
    spot = spot or {}
    used: dict[tuple[str, str], int] = {}
    for pool in pools:
        used[(pool.region, pool.gpu)] = used.get((pool.region, pool.gpu), 0) + (pool.gpus or 0)
    rows = []
    for o in offers:
        n = used.get((o.region, o.gpu), 0)
        if not n:
            continue
        on_spot = spot.get((o.region, o.gpu), 0)
        owned = min(n - on_spot, o.existing)
        reserved = min(committed[(o.region, o.gpu)], n - on_spot - owned)
        rows.append(
            HourGpus(
                region=o.region,
                gpu=o.gpu,
                used=n,
                existing=owned,
                reserved=round(reserved, 6),
                on_demand=round(o.paid_on_demand(n - on_spot - owned - reserved), 6),
                spot=float(on_spot),
            )
        )
    return tuple(rows)


def hour_cost(
    offers: tuple[OfferTerms, ...],
    gpus: tuple[HourGpus, ...],
    committed: dict[tuple[str, str], float],
) -> float:
    """USD this hour: every committed GPU at its reserved price, on-demand and spot GPUs
    at theirs."""
    by_offer = {(g.region, g.gpu): g for g in gpus}
    cost = 0.0
    for o in offers:
        row = by_offer.get((o.region, o.gpu))
        bill = o.hour_bill(
            committed[(o.region, o.gpu)], row.on_demand if row else 0.0, row.spot if row else 0.0
        )
        for part in bill:
            cost += part
    return cost


def _busiest(plan: Plan) -> tuple[int, float]:
    """A period plan's claim to be the peak: the GPUs its pools hold, then the requests/s
    they carry with no failure (where committed GPUs run as many replicas all day, the
    period of the most load; `simulate --month` picks a month's busiest hour so)."""
    none = next((s for s in plan.scenarios if s.name == "none"), None)
    load = math.fsum(row.load_requests_per_s for row in none.pools) if none else 0.0
    return plan.total_gpus or 0, load


def merged_pools(pools: Iterable[ReplicaPool]) -> tuple[ReplicaPool, ...]:
    """One pool per (workload, region, configuration): a batch's dedicated replicas of one
    configuration on two tiers (some on spot, the rest on committed or rented GPUs) are
    one pool of the hour, its requests/s per replica the count-weighted mean of the
    tiers' (a spot replica's is its goodput); every table that keys a pool by its
    configuration (the peak fleet, deploy, the attribution) then reads all of it."""
    merged: dict[tuple[str, str, str], ReplicaPool] = {}
    for pool in pools:
        key = (pool.workload, pool.region, pool.key)
        held = merged.get(key)
        if held is None:
            merged[key] = pool
            continue
        count = held.count + pool.count
        rate = (
            held.count * (held.requests_per_s_per_replica or 0.0)
            + pool.count * (pool.requests_per_s_per_replica or 0.0)
        ) / count
        merged[key] = held.model_copy(
            update={
                "count": count,
                "gpus": (held.gpus or 0) + (pool.gpus or 0),
                "requests_per_s_per_replica": rate,
            }
        )
    return tuple(merged.values())


def peak_fleet(hours: list[Hour]) -> tuple[ReplicaPool, ...]:
    """Each pool at its largest count over the day (the fleet at its busiest)."""
    largest: dict[tuple[str, str, str], ReplicaPool] = {}
    for hour in hours:
        for pool in hour.pools:
            key = (pool.workload, pool.region, pool.key)
            if key not in largest or pool.count > largest[key].count:
                largest[key] = pool
    return tuple(largest.values())


def peak_gpu_use(
    offers: tuple[OfferTerms, ...],
    hours: list[Hour],
    days: float,
    committed: dict[tuple[str, str], float],
) -> tuple[GpuUse, ...]:
    """Per offer: the most GPUs used in any hour, the GPUs beyond the existing fleet that
    hour needs (in whole servers where GPUs come in servers:
    models.operations.site.gpus_bought), and the month's cost of that offer."""
    uses = []
    for o in offers:
        key = (o.region, o.gpu)
        rows = [g for h in hours for g in h.gpus if (g.region, g.gpu) == key]
        most = max((g.used for g in rows), default=0)
        if not most and not o.existing and not committed[key]:
            continue
        reserved_cost = 0.0
        if o.reserved_price_per_gpu_hour is not None:
            reserved_cost = HOURS_PER_DAY * o.reserved_price_per_gpu_hour * committed[key]
        on_demand_cost = math.fsum(
            g.on_demand * o.on_demand_price_per_gpu_hour
            + g.spot * (o.spot_price_per_gpu_hour or 0.0)
            for g in rows
        )
        uses.append(
            GpuUse(
                region=o.region,
                gpu=o.gpu,
                used=most,
                existing=o.existing,
                purchased=gpus_bought(most, o.existing, o.gpus_per_server),
                available=o.available,
                price_per_gpu_hour=o.on_demand_price_per_gpu_hour,
                cost_per_month=days * (reserved_cost + on_demand_cost),
            )
        )
    return tuple(uses)
