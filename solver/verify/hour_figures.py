"""The hour verifier's check of every figure an hourly plan states beside its hours'
decisions (part of solver.verify.hours, held to its rule: from solver/ it reads the plan
schema and the verifier only).

An hourly plan's decisions are each hour's pools (counts and configurations), the GPUs
each hour pays on which terms (`hours[h].gpus`), the commitments, the batch it soaks and
the replicas it starts after a loss. Everything else is a consequence, recomputed here
and never trusted (solver.verify.totals does the same for a static plan):

1. Every number in the plan is finite (`totals.non_finite`).
2. Periods: hour h's `period` p is a UTC hour p <= h whose own period is p (a period is
   the hours that share one vector of rates, named by its first hour), and every hour
   of a period runs the same pools at the same GPUs and cost.
3. Each pool's `gpus` = count x tp x pp x dp (each hour's pools and started pools);
   a started pool's cost = its GPUs x on-demand price x hours_per_month.
4. Each hour's owned GPUs in use (`hours[h].gpus[i].existing`) <= min(used, the
   region's existing GPUs of that type), and its reserved ones in use <= used - owned -
   spot (the committed count bounds them too: solver.verify.hours, step 3).
5. The peak fleet (`replicas`): for each (workload, region, configuration) the hours
   run, one entry, equal to one of the hours' pools at its largest count of the day.
6. The `gpus` table, per offer: used = the most GPUs any hour uses; existing and
   available = existing + max_gpus from the instance; purchased = max(0, used -
   existing) in whole servers with buy_unit node (models.operations.site.gpus_bought);
   the price is the instance's on-demand price; cost_per_month = D x (24 x reserved
   price x committed + sum over the hours of on-demand x price + spot x spot price),
   D = hours_per_month / 24. An offer an hour uses or the plan commits has its
   row, once. `total_gpus` = sum of the rows' used. (A month's own hours, checked on
   their own by solver.verify.months, state neither the peak fleet nor the table.)
7. Commitments: one per offer, >= 0, at the instance's reserved and on-demand prices.
8. Interactive spot (`hours[h].spot_pools`): down_fraction = u = lambda T / (1 +
   lambda T) and down_replicas = Q(n u, a), as the capacity check recomputes them.
9. Servers and power (`servers`, `power_kw`) from the `gpus` table, as
   solver.readback.site states them (`_site_rows`).

(The figures the hourly plan reports beside its counts: idle hours, batch placements,
headroom, are solver.verify.hour_reports; each hour's scenario table and the peak
period's, solver.verify.hour_scenarios.)

Figures the instance cannot recompute are held finite only (the plan reader holds the
solver's run and each month's gap and status to what a solve writes): the solver's run, the
binding constraints' slacks and shadow prices and a power row's (the program's rows and
duals: the verifier reads no program, as for a static plan), the
scale-out thresholds (they need the lone replica's batch and prefill time, which only the
candidate table holds), a batch placement's break-even price (the program's choice among
configurations; its soak rate is held to the C_b of a soak the hours run), a started
pool's capacity per replica (a stated capacity that differs from the physics is a
warning, solver.verify.fleet step 1). `demand_growth` and `max_utilization`, where
stated, are the instance's (solver.verify.display.stated_policy, as for a static plan).
"""

import math
from collections import defaultdict

from models.operations.pricing_tiers import poisson_quantile, spot_down_fraction
from models.operations.site import gpus_bought, node_gpus
from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from solver.plan.schema import Plan, ReplicaPool
from solver.program.row_names import GpuSupplyRow, timed_name
from solver.verify.months import busiest_hour_kw, busiest_hour_racks
from solver.verify.pools import did_you_mean
from solver.verify.site import stated_power
from solver.verify.totals import gpus_used, money_close, non_finite, over_supply
from solver.verify.verdict import RELATIVE, Violation, close, differs


def finite_violations(plan: Plan) -> list[Violation]:
    """Item 1: every NaN or infinity in the plan, named by its field path. Where there is
    one, the other checks are not run: NaN makes every comparison false."""
    return [
        Violation(requirement=path, message=f"is {value}: every number in a plan must be finite")
        for path, value in non_finite(plan)
    ]


def stop_before_arithmetic(
    instance: Instance, plan: Plan, walked: bool = False
) -> tuple[list[Violation], str] | None:
    """The violations that stop the hour verifier before its arithmetic, and why in a
    few words (`Verification.stopped`): a number not finite (`finite_violations`), else
    a record naming a region or GPU the instance lacks (`unknown_names`), else an hour
    beyond the supply (`unbuildable_hours`); None where it goes on. `walked`: the first
    two were checked on a plan holding this one's records (a month's own hours, within
    the horizon's plan: solver.verify.hours)."""
    if not walked and (finite := finite_violations(plan)):
        return finite, "a number in the plan is not finite"
    if not walked and (unknown := unknown_names(instance, plan)):
        return unknown, "a record names a region or GPU the instance lacks"
    if over := unbuildable_hours(instance, plan):
        return over, "an hour needs more GPUs than a region has"
    return None


TIMED_PARTS = ("hours", "committed", "months")
"""The parts of an hourly plan the hour verifier reads beside its peak pools."""


def unknown_names(instance: Instance, plan: Plan) -> list[Violation]:
    """Every record of the hours, commitments and months naming a region or a GPU type
    the instance lacks, by its field path (`hours[5].pools[0].region`,
    `months[1].offers[0].gpu`), with the name the instance spells alike. Where there is
    one, the other checks are not run: each looks the name up (a tampered 'us-eats' was
    StopIteration, a month's offer of 'h999' KeyError, exit 70)."""
    known = {
        ("region", "region"): [region.name for region in instance.regions],
        ("gpu", "GPU"): list(instance.gpu_specs),
    }
    known_sets = {field: set(names) for (field, _), names in known.items()}
    found = []
    for part in TIMED_PARTS:
        dumped = plan.model_dump(include={part})[part]
        if _all_known(dumped, known_sets):
            continue  # nearly every plan: no path written (a 12-month plan's 560k nodes)
        for (field, what), names in known.items():
            found += [
                Violation(
                    requirement=path,
                    message=f"unknown {what} {name!r}" + did_you_mean(name, names),
                )
                for path, name in _named(dumped, part, field)
                if name not in names
            ]
    return found


def _all_known(value: object, known: dict[str, set[str]]) -> bool:
    """Whether every `field` name (`region`, `gpu`) in a dumped part of a plan, where
    `_named` finds one, is among `known[field]`."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for field, names in known.items():
                here = item.get(field)
                if isinstance(here, str) and here not in names:
                    return False
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


def _named(value: object, path: str, field: str) -> list[tuple[str, str]]:
    """(field path, name) of every `field` (`region`, `gpu`) in a dumped part of a plan."""
    if isinstance(value, dict):
        here = value.get(field)
        found = [(f"{path}.{field}", here)] if isinstance(here, str) else []
        return found + [
            item for key, child in value.items() for item in _named(child, f"{path}.{key}", field)
        ]
    if isinstance(value, list | tuple):
        return [
            item for i, child in enumerate(value) for item in _named(child, f"{path}[{i}]", field)
        ]
    return []


def unbuildable_hours(instance: Instance, plan: Plan) -> list[Violation]:
    """Hours whose pools need more GPUs of a type than a region has (`over_supply`: the
    existing and purchasable ones), or whose replicas started after a loss do alone (the
    program's start_supply row holds them and the warm ones within it). Where there is
    one, the other checks are not run, as the static verifier refuses such a fleet before
    the physics (solver.verify.fleet): a pool's queueing costs time in proportion to its
    replica count, and a tampered count of 10^9 kept verify, simulate and report past
    20 s; a started pool's of 10^30 kept deploy and verify past 300 s."""
    found = []
    for hour in plan.hours:
        fleets = [(None, hour.pools)]  # the warm fleet, then each loss's started replicas
        for f in dict.fromkeys(start.scenario for start in hour.failover_starts):
            fleets.append((f, tuple(s.pool for s in hour.failover_starts if s.scenario == f)))
        for f, pools in fleets:
            over = over_supply(instance, gpus_used(instance, pools))
            for (region, gpu), message in over.items():
                row = GpuSupplyRow(region, gpu).name()
                if f is not None:
                    row = f"start_supply[{f},{region},{gpu}]"
                    message = f"the replicas started after {f} " + message.replace("uses", "use", 1)
                found.append(
                    Violation(
                        requirement=timed_name(row, hour.hour),
                        message=f"UTC hour {hour.hour}: {message}; the physics and scenario "
                        "checks run once every hour's fleet fits the supply",
                    )
                )
    return found


def stated_hour_figures(instance: Instance, plan: Plan) -> list[Violation]:
    """Items 2-8 of the module docstring on a plan whose numbers are finite: every stated
    figure that is wrong, named by its field path (`hours[3].gpus[0].existing`)."""
    found = _periods(plan)
    found += _pool_gpus(instance, plan)
    found += _owned_in_use(instance, plan)
    found += _peak_fleet(plan)
    found += _peak_table(instance, plan)
    found += _commitments(instance, plan)
    found += _spot_pools(instance, plan)
    found += _site_rows(instance, plan)
    return found


# --- 2-4. periods, pool GPUs, owned GPUs -------------------------------------------------


def _periods(plan: Plan) -> list[Violation]:
    by_hour = {hour.hour: hour for hour in plan.hours}
    found = []
    for index, hour in enumerate(plan.hours):
        where = f"hours[{index}].period"
        opener = by_hour.get(hour.period)
        if hour.period > hour.hour or opener is None or opener.period != hour.period:
            found.append(
                Violation(
                    requirement=where,
                    message=f"UTC hour {hour.hour} states period {hour.period}; a period is "
                    "named by its first hour, which opens it",
                )
            )
        elif (opener.pools, opener.gpus, opener.cost_per_hour) != (
            hour.pools,
            hour.gpus,
            hour.cost_per_hour,
        ):
            found.append(
                Violation(
                    requirement=where,
                    message=f"UTC hour {hour.hour} is in the period of hour {hour.period} but "
                    "runs other pools, GPUs or cost",
                )
            )
    return found


def _pool_gpus(instance: Instance, plan: Plan) -> list[Violation]:
    """Each pool's GPUs (hours' pools and started pools), and each started pool's cost:
    count x tp x pp x dp x on-demand price x hours_per_month (started replicas are paid on
    demand; the hours' pools' costs are the static verifier's)."""
    pools: list[tuple[str, ReplicaPool]] = []
    started: list[tuple[str, ReplicaPool]] = []
    for h_index, hour in enumerate(plan.hours):
        pools += [(f"hours[{h_index}].pools[{i}]", p) for i, p in enumerate(hour.pools)]
        started += [
            (f"hours[{h_index}].failover_starts[{i}].pool", start.pool)
            for i, start in enumerate(hour.failover_starts)
        ]
    found = [
        differs(
            f"{where}.gpus", pool.gpus, pool.count * pool.replica_gpus, "count x tp x pp x dp is"
        )
        for where, pool in pools + started
        if pool.gpus is not None and pool.gpus != pool.count * pool.replica_gpus
    ]
    known = {r.name for r in instance.regions}
    hours = instance.policy.hours_per_month
    for where, pool in started:
        if pool.cost_per_month is None or pool.region not in known:
            continue
        if pool.gpu not in instance.region(pool.region).supply:
            continue
        price = instance.price_per_gpu_hour(pool.region, pool.gpu)
        cost = pool.count * pool.replica_gpus * price * hours
        if not money_close(pool.cost_per_month, cost):
            found.append(
                differs(
                    f"{where}.cost_per_month",
                    pool.cost_per_month,
                    cost,
                    "its GPUs at the on-demand price for a month cost",
                )
            )
    return found


def _owned_in_use(instance: Instance, plan: Plan) -> list[Violation]:
    found = []
    for h_index, hour in enumerate(plan.hours):
        for g_index, row in enumerate(hour.gpus):
            existing = existing_gpus(instance, row.region, row.gpu)
            if not 0 <= row.existing <= min(row.used, existing):
                found.append(
                    differs(
                        f"hours[{h_index}].gpus[{g_index}].existing",
                        row.existing,
                        min(row.used, existing),
                        f"owned {row.gpu} in {row.region} in use can be at most",
                    )
                )
            rest = row.used - row.existing - row.spot  # what neither owned nor spot GPUs run
            if not -RELATIVE <= row.reserved <= max(rest, 0) + RELATIVE:
                found.append(
                    differs(
                        f"hours[{h_index}].gpus[{g_index}].reserved",
                        row.reserved,
                        f"{max(rest, 0):g} (used - owned - spot)",
                        f"reserved {row.gpu} in {row.region} in use can be at most",
                    )
                )
    return found


def existing_gpus(instance: Instance, region: str, gpu: str) -> int:
    known = {r.name for r in instance.regions}
    return instance.region(region).existing.get(gpu, 0) if region in known else 0


# --- 5-6. the peak fleet and the gpus table ----------------------------------------------


def _peak_fleet(plan: Plan) -> list[Violation]:
    if not plan.replicas:
        return []  # a month's own hours (solver.verify.months) state no peak fleet
    largest: dict[tuple[str, str, str], int] = {}
    at_largest: dict[tuple[str, str, str], list[ReplicaPool]] = defaultdict(list)
    for hour in plan.hours:
        for pool in hour.pools:
            key = (pool.workload, pool.region, pool.key)
            largest[key] = max(largest.get(key, -1), pool.count)
    for hour in plan.hours:
        for pool in hour.pools:
            key = (pool.workload, pool.region, pool.key)
            if pool.count == largest[key]:
                at_largest[key].append(pool)
    found = []
    seen: set[tuple[str, str, str]] = set()
    for index, entry in enumerate(plan.replicas):
        key = (entry.workload, entry.region, entry.key)
        where = f"replicas[{index}]"
        if key in seen or key not in largest:
            found.append(
                Violation(
                    requirement=where,
                    message=f"{entry.label} for {entry.workload} in {entry.region} is "
                    + ("listed twice" if key in seen else "run in no hour"),
                )
            )
            continue
        seen.add(key)
        if entry not in at_largest[key]:
            model = at_largest[key][0]
            fields = [
                name
                for name in type(entry).model_fields
                if getattr(entry, name) != getattr(model, name)
            ]
            found.append(
                Violation(
                    requirement=f"{where}.{fields[0] if fields else 'count'}",
                    message=f"{entry.label} for {entry.workload} in {entry.region}: the peak "
                    f"fleet is the pool at its largest count of the day ({largest[key]}); "
                    f"this entry differs in {', '.join(fields) or 'count'}",
                )
            )
    found += [
        Violation(
            requirement="replicas",
            message=f"{w} in {r} runs {key} (up to {largest[(w, r, key)]}) but the peak fleet "
            "has no entry for it",
        )
        for (w, r, key) in sorted(set(largest) - seen)
    ]
    return found


def most_used(plan: Plan) -> dict[tuple[str, str], int]:
    """(region, GPU) -> the most GPUs of that offer the pools of any one hour use."""
    most: dict[tuple[str, str], int] = defaultdict(int)
    for hour in plan.hours:
        used: dict[tuple[str, str], int] = defaultdict(int)
        for pool in hour.pools:
            used[(pool.region, pool.gpu)] += pool.count * pool.replica_gpus
        for key, n in used.items():
            most[key] = max(most[key], n)
    return most


def peak_fleet(instance: Instance, plan: Plan) -> tuple[int, int]:
    """(GPUs bought, GPUs used) of the day's fleet recomputed from the hours: used = the sum
    over offers of the most GPUs any hour uses (`total_gpus`); bought = the sum over offers
    of that most less existing, in whole units (models.operations.site.gpus_bought), as the
    static verifier counts them."""
    most = most_used(plan)
    bought = sum(
        gpus_bought(n, existing_gpus(instance, r, g), node_gpus(instance, g))
        for (r, g), n in most.items()
        if g in instance.gpu_specs  # an unknown GPU is a violation of its own (_peak_table)
    )
    return bought, sum(most.values())


def _peak_table(instance: Instance, plan: Plan) -> list[Violation]:
    if not plan.gpus and plan.total_gpus is None:
        return []  # a month's own hours state no table
    days = instance.policy.hours_per_month / HOURS_PER_DAY
    most = most_used(plan)
    rows_of: dict[tuple[str, str], list] = defaultdict(list)
    for hour in plan.hours:
        for row in hour.gpus:
            rows_of[(row.region, row.gpu)].append(row)
    committed = {(c.region, c.gpu): c.committed_gpus for c in plan.committed}
    known = {r.name for r in instance.regions}
    found = []
    seen: set[tuple[str, str]] = set()
    for index, row in enumerate(plan.gpus):
        where = f"gpus[{index}]"
        key = (row.region, row.gpu)
        supply = instance.region(row.region).supply.get(row.gpu) if row.region in known else None
        if key in seen or (supply is None and not existing_gpus(instance, *key)):
            found.append(
                Violation(
                    requirement=where,
                    message=f"{row.region} {row.gpu} is "
                    + ("listed twice" if key in seen else "not on offer"),
                )
            )
            continue
        seen.add(key)
        existing = existing_gpus(instance, *key)
        used = most.get(key, 0)
        counts = (
            ("used", row.used, used, "the most GPUs an hour uses is"),
            ("existing", row.existing, existing, "the instance owns"),
            (
                "purchased",
                row.purchased,
                gpus_bought(used, existing, node_gpus(instance, row.gpu)),
                "used less existing, in whole units, needs",
            ),
            (
                "available",
                row.available,
                existing + (supply.max_gpus if supply else 0),
                "existing + max_gpus is",
            ),
        )
        found += [
            differs(f"{where}.{name}", stated, recomputed, f"{row.region} {row.gpu}: {what}")
            for name, stated, recomputed, what in counts
            if stated != recomputed
        ]
        price = instance.price_per_gpu_hour(*key)
        if not math.isclose(row.price_per_gpu_hour, price, rel_tol=1e-9, abs_tol=0):
            found.append(
                differs(
                    f"{where}.price_per_gpu_hour",
                    row.price_per_gpu_hour,
                    price,
                    "the instance's on-demand price is",
                )
            )
        reserved = (supply.reserved_price_per_gpu_hour if supply else None) or 0.0
        spot = (supply.spot_price_per_gpu_hour if supply else None) or 0.0
        cost = days * (
            HOURS_PER_DAY * reserved * committed.get(key, 0.0)
            + math.fsum(g.on_demand * price + g.spot * spot for g in rows_of[key])
        )
        if not money_close(row.cost_per_month, cost):
            found.append(
                differs(
                    f"{where}.cost_per_month",
                    f"${row.cost_per_month:,.2f}",
                    f"${cost:,.2f}",
                    "committed, on-demand and spot GPU-hours cost",
                )
            )
    found += [
        Violation(
            requirement="gpus",
            message=f"{r} {g}: the hours use up to {most.get((r, g), 0)} GPUs and commit "
            f"{committed.get((r, g), 0.0):g}, but the table has no row for it",
        )
        for (r, g) in sorted(set(most) | {k for k, n in committed.items() if n})
        if (most.get((r, g), 0) or committed.get((r, g))) and (r, g) not in seen
    ]
    total = sum(most.values())
    if plan.total_gpus is not None and plan.total_gpus != total:
        found.append(
            differs(
                "total_gpus",
                plan.total_gpus,
                total,
                "the most GPUs of each offer any hour uses add up to",
            )
        )
    return found


# --- 7-8. commitments and spot pools -----------------------------------------------------


def _commitments(instance: Instance, plan: Plan) -> list[Violation]:
    known = {r.name for r in instance.regions}
    found = []
    seen = set()
    for index, row in enumerate(plan.committed):
        where = f"committed[{index}]"
        supply = instance.region(row.region).supply.get(row.gpu) if row.region in known else None
        if supply is None or (row.region, row.gpu) in seen:
            continue  # named by the hour verifier's own commitment check
        seen.add((row.region, row.gpu))
        if row.committed_gpus < 0:
            found.append(differs(f"{where}.committed_gpus", row.committed_gpus, 0, "at least"))
        prices = (
            ("reserved_price_per_gpu_hour", supply.reserved_price_per_gpu_hour),
            ("on_demand_price_per_gpu_hour", supply.price_per_gpu_hour),
        )
        found += [
            differs(f"{where}.{name}", getattr(row, name), price, "the instance's price is")
            for name, price in prices
            if price is not None and not math.isclose(getattr(row, name), price, rel_tol=1e-9)
        ]
    return found


def _spot_pools(instance: Instance, plan: Plan) -> list[Violation]:
    confidence = instance.policy.spot_confidence
    found = []
    for h_index, hour in enumerate(plan.hours):
        for s_index, entry in enumerate(hour.spot_pools):
            key = (entry.workload, entry.region, entry.configuration)
            pool = next((p for p in hour.pools if (p.workload, p.region, p.key) == key), None)
            known = pool is not None and entry.region in {r.name for r in instance.regions}
            offer = instance.region(entry.region).supply.get(pool.gpu) if known else None
            if confidence is None or offer is None or not offer.spot_price_per_gpu_hour:
                continue  # refused by the capacity check (step 8 of solver.verify.hours)
            start_s = instance.replica_start_s(pool.gpu) + instance.policy.scale_detection_s
            u = spot_down_fraction(offer.spot_interruptions_per_hour, start_s)
            down = poisson_quantile(min(entry.replicas, pool.count) * u, confidence)
            where = f"hours[{h_index}].spot_pools[{s_index}]"
            if not close(entry.down_fraction, u):
                found.append(
                    differs(
                        f"{where}.down_fraction",
                        entry.down_fraction,
                        u,
                        "lambda T / (1 + lambda T) is",
                    )
                )
            if entry.down_replicas != down:
                found.append(
                    differs(
                        f"{where}.down_replicas",
                        entry.down_replicas,
                        down,
                        "the Poisson quantile Q(n u, a) is",
                    )
                )
    return found


# --- 9. servers and power --------------------------------------------------------------


def _site_rows(instance: Instance, plan: Plan) -> list[Violation]:
    """Servers bought and power drawn, from the `gpus` table (checked by item 6) with
    models.operations.site's arithmetic, as solver.readback.site states them: per offer
    sold in servers of n > 1 GPUs with purchases, purchased // n servers of n; per region
    with GPUs installed, kW = sum of (existing + purchased) x the GPU's kW, racks likewise,
    and the region's own limits. (A power row's shadow price is held finite only.)"""
    if not plan.gpus:
        return []
    known = {r.name for r in instance.regions}
    rows = [row for row in plan.gpus if row.region in known and row.gpu in instance.gpu_specs]
    servers = {
        (row.region, row.gpu): (row.purchased // n, n)
        for row in rows
        if (n := node_gpus(instance, row.gpu)) > 1 and row.purchased
    }
    found = []
    stated = {(s.region, s.gpu): (index, s) for index, s in enumerate(plan.servers)}
    for key in sorted(set(servers) | set(stated)):
        index, row = stated.get(key, (None, None))
        recomputed = servers.get(key)
        if row is None or recomputed is None or (row.count, row.gpus_per_server) != recomputed:
            found.append(
                differs(
                    "servers" if index is None else f"servers[{index}]",
                    "no row" if row is None else (row.count, row.gpus_per_server),
                    "none" if recomputed is None else recomputed,
                    f"{key[0]} {key[1]}: (servers, GPUs each) bought are",
                )
            )
    hours = plan.hours
    found += stated_power(
        instance,
        plan,
        lambda r: busiest_hour_kw(instance, r, hours),
        lambda r: busiest_hour_racks(instance, r, hours),
    )
    return found
