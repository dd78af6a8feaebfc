"""The verifier's check of every figure a plan states, against figures recomputed from
the instance and the plan's decisions alone.

A plan's decisions are its replica counts and configurations (`replicas`) and its routing
(`scenarios[*].routing`); everything else it states is a consequence, and a consequence
is never trusted:

1. Every number in the plan is finite: a NaN or an infinity anywhere (a cost, a price, a
   route's rate, a shadow price, the solver's runtime) is a violation naming the field.
2. The `gpus` table, row by row, against the instance and the replicas: used =
   sum over the region's pools of count x tp x pp x dp (exactly); existing and
   available = existing + max_gpus from the instance (exactly); purchased =
   max(0, used - existing), in whole servers with buy_unit node (exactly); the price is
   the instance's; cost_per_month = purchased x price x hours_per_month (to the cent).
   A region and GPU type the replicas use must have its row, and no row may appear
   twice. A plan without a table (a fleet written by hand) states nothing to check: the
   verifier recomputes it.
3. Each replica entry's `cost_per_month` = count x tp x pp x dp x price x
   hours_per_month (to the cent): what those GPUs would cost if all were bought.
4. The routing of each scenario the instance's policy names: every route's destination
   may serve its origin's users in that scenario (`RegionGraph.destinations`), with the
   round trip the links give, at a rate >= 0; and each origin's routes add up to its
   demand.
4b. The scenarios as displayed (`stated_scenarios`, also called by the hour verifier):
   utilisation = load / capacity and at most 1; the started part of a capacity is what
   the scenario's started replicas carry (the same replicas the hour's failover_starts
   list); `moves` are the routes leaving their own region. The display and the verifier
   read the same numbers: a survivor shown over 100% is a violation.
5. Counts beyond supply and layouts beyond bounds, found before any physics runs
   (`over_supply`, `beyond_bounds`): the replicas of
   one region and GPU type needing more GPUs than the region has (existing + max_gpus,
   itself at most `limits.GPU_COUNT` each) cannot be built, whatever the physics says.
   The verifier then stops there: the queueing physics of a pool costs time in
   proportion to its size (M/G/c over c replicas), so a count of 10^12 or 10^30 must
   never reach it. Sums are Python integers (exact at any size); a cost of GPUs beyond
   any float is infinite, never an OverflowError.

Money is compared to the cent (`MONEY_TOLERANCE_USD`, or a relative `MONEY_RELATIVE`
above 10^7 USD, where float sums lose cents); counts exactly. Figures the instance cannot
recompute (the solver's variable count, shadow prices) are only held finite here; the
plan reader holds the solver's run to what a solve writes (gaps, times and counts >= 0,
a status the gap gives: solver.plan.time_records.status_against_gap).

Imports models/ and the plan schema only (tests/test_imports.py): it names violations
by the plan's own field paths (`gpus[0].purchased`), so it needs no row names.
"""

import math
from collections import defaultdict
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from pydantic import BaseModel

from models.operations.scenarios import RegionGraph, failure_scenarios
from models.operations.site import demand_factor, gpus_bought, gpus_paid, node_gpus
from models.schema import limits
from models.schema.errors import shown_name
from models.schema.instance import Instance
from models.serving.replica import Role
from solver.plan.records import ReplicaPool, ScenarioResult
from solver.plan.schema import Plan
from solver.verify.display import stated_display
from solver.verify.verdict import Finding

MONEY_TOLERANCE_USD = 0.01
"""A stated amount of money may differ from the recomputed one by less than a cent."""
MONEY_RELATIVE = 1e-9
"""... or by this fraction of it: float sums of 10^4 terms near 10^10 USD drift by
~10^-6 USD, far below; a real mismatch (one GPU-hour) is > 10^-6 of any fleet's cost."""
RATE_TOLERANCE = 1e-6
"""Relative difference tolerated between an origin's routed and its stated demand (the
solver's feasibility tolerance), plus `ROUTE_FLOOR_RPS` per route it may have dropped."""
ROUTE_FLOOR_RPS = 1e-7
"""Requests/s below which the solver leaves a route out of the plan (solver.readback.assign)."""


class Totals(NamedTuple):
    """What the replicas add up to: GPUs used per (region, type), in all, and their cost;
    the GPUs bought (whole servers with buy_unit node) and the GPUs the bill covers
    (bought plus owned in use, models.operations.site.gpus_paid)."""

    used: dict[tuple[str, str], int]
    total_gpus: int
    cost_per_month: float
    gpus_bought: int = 0
    gpus_paid: int = 0


def recompute_totals(instance: Instance, plan: Plan) -> Totals:
    """GPUs used per (region, GPU type) by the entries the instance knows, their sum, and
    the cost: sum over (r, g) of bought x price x hours_per_month, bought = max(0, used -
    existing) in whole servers with policy.buy_unit: node (models.operations.site.gpus_bought)."""
    used = gpus_used(instance, plan.replicas)
    hours = instance.policy.hours_per_month
    cost = 0.0
    bought_total = paid_total = 0
    for (r, g), n in used.items():
        existing, unit = instance.region(r).existing.get(g, 0), node_gpus(instance, g)
        bought = gpus_bought(n, existing, unit)
        cost += _usd(bought, instance.price_per_gpu_hour(r, g) * hours)
        bought_total += bought
        paid_total += gpus_paid(n, existing, unit)
    return Totals(dict(used), sum(used.values()), cost, bought_total, paid_total)


def gpus_used(instance: Instance, pools: Iterable[ReplicaPool]) -> dict[tuple[str, str], int]:
    """GPUs the pools use per (region, GPU type) the instance knows: count x tp x pp x dp."""
    regions = {r.name for r in instance.regions}
    used: dict[tuple[str, str], int] = defaultdict(int)
    for entry in pools:
        if entry.region in regions and entry.gpu in instance.gpu_specs:
            used[(entry.region, entry.gpu)] += entry.count * entry.replica_gpus
    return dict(used)


def available_gpus(instance: Instance, region: str, gpu: str) -> tuple[int, int]:
    """(existing, existing + max_gpus) of GPU type `gpu` in `region`."""
    spec = instance.region(region)
    return spec.existing.get(gpu, 0), spec.available_gpus(gpu)


def over_supply(instance: Instance, used: dict[tuple[str, str], int]) -> dict[tuple[str, str], str]:
    """(region, GPU type) -> message, where the replicas need more GPUs than the region
    has (`used`: `gpus_used`). Integer sums only: no physics, no loop over replicas."""
    found = {}
    for (r, g), n in sorted(used.items()):
        existing, available = available_gpus(instance, r, g)
        if n > available:
            found[(r, g)] = (
                f"uses {n:,} {g} in {r}; available {available:,} (existing {existing:,} + "
                f"purchasable {available - existing:,})"
            )
    return found


def beyond_bounds(plan: Plan) -> list[Finding]:
    """Replica layouts beyond `limits.PARALLEL_DEGREE` (tp, pp, ep or dp of 10^30): no
    GPU domain or model comes near, and the physics is not asked about them."""
    high = limits.PARALLEL_DEGREE.high
    return [
        Finding(
            f"replicas[{index}].{name}",
            f"{name} {value:,} is beyond {high:,.0f} ({limits.PARALLEL_DEGREE.why}; "
            "PARALLEL_DEGREE in models/schema/limits.py)",
        )
        for index, entry in enumerate(plan.replicas)
        for name in ("tp", "pp", "ep", "dp")
        if (value := getattr(entry, name)) > high
    ]


def stated_figures(instance: Instance, plan: Plan, totals: Totals) -> list[Finding]:
    """Every stated figure of the plan that is not finite or differs from its own
    recomputation (items 1-4 of the module docstring)."""
    findings = [
        Finding(path, f"is {value}: every number in a plan must be finite")
        for path, value in non_finite(plan)
    ]
    findings += _gpu_table(instance, plan, totals)
    findings += _replica_costs(instance, plan)
    findings += _routing(instance, plan)
    findings += _routing_weights(plan)
    findings += _idle_fraction(plan, totals)
    findings += stated_display(
        instance, plan, (totals.cost_per_month, totals.gpus_bought, totals.total_gpus)
    )
    return findings


def _idle_fraction(plan: Plan, totals: Totals) -> list[Finding]:
    """The stated `idle_fraction` against 1 - busy GPUs / GPUs paid (Totals.gpus_paid),
    busy GPUs read from the `none` scenario's utilisation u (at most 1) of each phase: a
    pool's GPUs x u of its (workload, region, phase), a shared group's GPUs x the mean u of
    its members (the read-back's rule, solver.readback.groups, over the bill's GPUs)."""
    none = next((s for s in plan.scenarios if s.name == "none"), None)
    if plan.idle_fraction is None or none is None or not totals.gpus_paid:
        return []
    if totals.total_gpus > limits.GPU_COUNT.high:
        return []  # beyond any supply (over_supply says so): no float holds the sums
    busy_at: dict[tuple[str, str, str], float] = {}
    for load in none.pools:  # a phase reads `decode` or `decode-fp8`: the first one counts
        role = next((r for r in Role if load.phase.startswith(r)), "")
        busy_at.setdefault((load.workload, load.region, role), min(max(load.utilisation, 0), 1))
    busy_gpus = 0.0
    for entry in plan.replicas:
        members = [m.workload for m in entry.members] if entry.shared else [entry.workload]
        busy = [busy_at.get((w, entry.region, str(entry.role)), 0.0) for w in members]
        busy_gpus += entry.count * entry.replica_gpus * sum(busy) / len(busy)
    expected = min(max(1 - busy_gpus / totals.gpus_paid, 0.0), 1.0)
    if abs(plan.idle_fraction - expected) <= 1e-6:
        return []
    return [
        Finding(
            "idle_fraction",
            f"states {plan.idle_fraction:.4%}; 1 - {busy_gpus:,.2f} busy GPUs / "
            f"{totals.gpus_paid:,} GPUs paid (bought plus owned in use) = {expected:.4%}",
        )
    ]


def _routing_weights(plan: Plan) -> list[Finding]:
    """Stated routing weights of unified pools and shared groups' members: for each
    (workload, region), the share of its capacity at the SLO, count x rate / sum of
    count x rate over every unified entry serving it (a weight in [0, 1]; absent weights
    are not required)."""
    credit: dict[tuple[str, str], float] = defaultdict(float)
    stated: list[tuple[str, str, str, float]] = []
    for index, entry in enumerate(plan.replicas):
        if entry.role != "unified":
            continue
        if entry.shared:
            for m_index, member in enumerate(entry.members):
                rate = entry.count * member.requests_per_s_per_replica
                credit[(member.workload, entry.region)] += rate
                if member.routing_weight is not None:
                    where = f"replicas[{index}].members[{m_index}].routing_weight"
                    stated.append((where, member.workload, entry.region, rate))
            continue
        rate = entry.count * (entry.requests_per_s_per_replica or 0.0)
        credit[(entry.workload, entry.region)] += rate
        if entry.routing_weight is not None:
            stated.append((f"replicas[{index}].routing_weight", entry.workload, entry.region, rate))
    findings = []
    weights = {where: weight for where, weight in _stated_weights(plan)}
    for where, workload, region, rate in stated:
        total = credit[(workload, region)]
        expected = rate / total if total > 0 else 0.0
        weight = weights[where]
        if not abs(weight - expected) <= 1e-6:
            findings.append(
                Finding(
                    where,
                    f"states {weight:.6g} of {region}'s {workload} traffic; its share of the "
                    f"capacity serving it is {expected:.6g}",
                )
            )
    return findings


def _stated_weights(plan: Plan) -> list[tuple[str, float]]:
    """(path, weight) of every stated routing weight."""
    found = []
    for index, entry in enumerate(plan.replicas):
        if entry.routing_weight is not None:
            found.append((f"replicas[{index}].routing_weight", entry.routing_weight))
        for m_index, member in enumerate(entry.members):
            if member.routing_weight is not None:
                path = f"replicas[{index}].members[{m_index}].routing_weight"
                found.append((path, member.routing_weight))
    return found


def stated_totals(plan: Plan, totals: Totals) -> list[Finding]:
    """The plan's `cost_per_month` and `total_gpus` against the recomputed ones (what
    the verifier's cost check does when it runs; used when it does not)."""
    findings = []
    if plan.cost_per_month is not None and not money_close(
        plan.cost_per_month, totals.cost_per_month
    ):
        findings.append(
            Finding(
                "cost",
                f"states ${plan.cost_per_month:,.2f}/month; the GPUs bought cost "
                f"${totals.cost_per_month:,.2f}/month at the instance's prices",
            )
        )
    if plan.total_gpus is not None and plan.total_gpus != totals.total_gpus:
        findings.append(
            Finding(
                "total_gpus",
                f"states {plan.total_gpus:,} GPUs; the pools hold {totals.total_gpus:,}",
            )
        )
    return findings


def money_close(stated: float, recomputed: float) -> bool:
    """Whether two amounts of USD agree to the cent (NaN or infinity never agrees)."""
    if not (math.isfinite(stated) and math.isfinite(recomputed)):
        return False
    tolerance = max(MONEY_TOLERANCE_USD, MONEY_RELATIVE * max(abs(stated), abs(recomputed)))
    return abs(stated - recomputed) <= tolerance


# --- 1. finite numbers ------------------------------------------------------------------


def non_finite(value: object, path: str = "") -> Iterator[tuple[str, float]]:
    """(field path, value) of every NaN or infinity inside a plan (models and tuples);
    a plan whose numbers are all finite, nearly every one, is walked once without
    writing a path (`all_finite`: procurement-3region's 12-month plan, 369k values)."""
    if not path and all_finite(value):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            yield path, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            yield from non_finite(getattr(value, name), f"{path}.{name}" if path else name)
    elif isinstance(value, tuple):
        for index, item in enumerate(value):
            yield from non_finite(item, f"{path}[{index}]")


def all_finite(value: object) -> bool:
    """Whether every number `non_finite` reads (floats inside models' fields and tuples)
    is finite."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                return False
        elif isinstance(item, BaseModel):
            stack.extend(getattr(item, name) for name in type(item).model_fields)
        elif isinstance(item, tuple):
            stack.extend(item)
    return True


# --- 2. the gpus table ------------------------------------------------------------------


def _gpu_table(instance: Instance, plan: Plan, totals: Totals) -> list[Finding]:
    if not plan.gpus:
        return []
    findings = []
    regions = {r.name for r in instance.regions}
    hours = instance.policy.hours_per_month
    seen: dict[tuple[str, str], int] = {}
    for index, row in enumerate(plan.gpus):
        where = f"gpus[{index}]"
        if row.region not in regions or row.gpu not in instance.gpu_specs:
            findings.append(Finding(where, f"unknown region or GPU {row.region} {row.gpu}"))
            continue
        if (row.region, row.gpu) in seen:
            findings.append(
                Finding(
                    where,
                    f"{row.region} {row.gpu} is listed again (first as "
                    f"gpus[{seen[(row.region, row.gpu)]}])",
                )
            )
            continue
        seen[(row.region, row.gpu)] = index
        used = totals.used.get((row.region, row.gpu), 0)
        existing, available = available_gpus(instance, row.region, row.gpu)
        purchased = gpus_bought(used, existing, node_gpus(instance, row.gpu))
        price = instance.price_per_gpu_hour(row.region, row.gpu)
        counts = (
            ("used", row.used, used, "the replicas use"),
            ("existing", row.existing, existing, "the instance owns"),
            ("purchased", row.purchased, purchased, "used less existing, in whole units, needs"),
            ("available", row.available, available, "existing + max_gpus is"),
        )
        for name, stated, recomputed, what in counts:
            if stated != recomputed:
                findings.append(
                    Finding(
                        f"{where}.{name}",
                        f"{row.region} {row.gpu}: states {stated:,}; {what} {recomputed:,}",
                    )
                )
        if not math.isclose(row.price_per_gpu_hour, price, rel_tol=MONEY_RELATIVE, abs_tol=0):
            findings.append(
                Finding(
                    f"{where}.price_per_gpu_hour",
                    f"{row.region} {row.gpu}: states ${row.price_per_gpu_hour:g}/GPU-hour; "
                    f"the instance's price is ${price:g}",
                )
            )
        cost = _usd(purchased, price * hours)
        if not money_close(row.cost_per_month, cost):
            findings.append(
                Finding(
                    f"{where}.cost_per_month",
                    f"{row.region} {row.gpu}: states ${row.cost_per_month:,.2f}/month; "
                    f"{purchased:,} bought x ${price:g}/GPU-hour x {hours:g} h = ${cost:,.2f}",
                )
            )
    findings += [
        Finding("gpus", f"{r} {g}: the replicas use {n:,} GPUs but the table has no row for it")
        for (r, g), n in sorted(totals.used.items())
        if n and (r, g) not in seen
    ]
    return findings


# --- 3. cost per replica entry ----------------------------------------------------------


def _replica_costs(instance: Instance, plan: Plan) -> list[Finding]:
    regions = {r.name for r in instance.regions}
    hours = instance.policy.hours_per_month
    findings = []
    for index, entry in enumerate(plan.replicas):
        known = entry.region in regions and entry.gpu in instance.gpu_specs
        if entry.cost_per_month is None or not known:
            continue
        price = instance.price_per_gpu_hour(entry.region, entry.gpu)
        gpus = entry.count * entry.replica_gpus
        cost = _usd(gpus, price * hours)
        if not money_close(entry.cost_per_month, cost):
            findings.append(
                Finding(
                    f"replicas[{index}].cost_per_month",
                    f"{_entry_label(entry)}: states ${entry.cost_per_month:,.2f}/month; "
                    f"{gpus:,} GPUs x ${price:g}/GPU-hour x {hours:g} h = ${cost:,.2f}",
                )
            )
    return findings


def _entry_label(entry: ReplicaPool) -> str:
    return f"{entry.count:,} x {entry.label} for {entry.workload} in {entry.region}"


# --- 4. routing -------------------------------------------------------------------------


def _routing(instance: Instance, plan: Plan) -> list[Finding]:
    """Stated routes against the latency policy and the demand (grown by demand_growth), in
    the scenarios the instance's policy names (a scenario the plan lists that the policy
    does not name is left to the check that knows it)."""
    return stated_routing(instance, plan.scenarios, "scenarios")


def stated_routing(
    instance: Instance,
    scenarios: tuple[ScenarioResult, ...],
    where: str,
    required: bool = False,
) -> list[Finding]:
    """Item 4 on one scenario table (`where`: its field path, `plan.scenarios` or an
    hour's `hours[i].scenarios`): every route allowed in its scenario at the links' round
    trip, at a rate >= 0, each origin's routes adding up to its demand. `required`: a
    scenario that states no routing is held to it too (an hour's table, which `simulate
    --hour` replays), not left to the max-flow check."""
    known = {f.name: f for f in failure_scenarios(instance)}
    graph = RegionGraph.of(instance)
    workloads = {w.name: w for w in instance.workloads}
    growth = demand_factor(instance)
    findings = []
    for s_index, result in enumerate(scenarios):
        scenario = known.get(result.name)
        if scenario is None:
            continue
        routed: dict[tuple[str, str], list[float]] = defaultdict(list)
        for r_index, route in enumerate(result.routing):
            where_route = f"{where}[{s_index}].routing[{r_index}]"
            workload = workloads.get(route.workload)
            if workload is None:
                findings.append(Finding(where_route, f"unknown workload {route.workload!r}"))
                continue
            reach = (
                graph.destinations(scenario, route.origin, workload.slo.max_failover_rtt_ms)
                if route.origin in graph.regions
                else {}
            )
            if route.destination not in reach:
                findings.append(
                    Finding(
                        where_route,
                        f"serves {route.origin} users of {route.workload} in "
                        f"{route.destination}, which may not serve them in {result.name} "
                        f"(allowed: {', '.join(map(shown_name, reach)) or 'none'})",
                    )
                )
            elif not math.isclose(route.rtt_ms, reach[route.destination], abs_tol=1e-6):
                findings.append(
                    Finding(
                        f"{where_route}.rtt_ms",
                        f"states {route.rtt_ms:g} ms from {route.origin} to "
                        f"{route.destination}; the links give {reach[route.destination]:g}",
                    )
                )
            if not route.requests_per_s >= 0:
                findings.append(
                    Finding(f"{where_route}.requests_per_s", f"is {route.requests_per_s:g} (< 0)")
                )
            routed[(route.workload, route.origin)].append(route.requests_per_s)
        if not result.routing and not required:
            continue  # a plan that states no routing leaves it to the max-flow check
        for workload in instance.workloads:
            for origin, level in workload.demand.items():
                rates = routed.get((workload.name, origin), [])
                total = sum(rates)
                demand = level.peak_rps * growth
                slack = RATE_TOLERANCE * max(1.0, demand) + ROUTE_FLOOR_RPS * (len(graph.regions))
                if not abs(total - demand) <= slack:
                    findings.append(
                        Finding(
                            f"{where}[{s_index}].routing",
                            f"{result.name}: the routes of {origin} users of {workload.name} "
                            f"add up to {total:.6g} requests/s; their demand is "
                            f"{demand:.6g}",
                        )
                    )
    return findings


def _usd(count: int, usd_each: float) -> float:
    """count x usd_each; infinite for a count beyond any float (never OverflowError)."""
    try:
        return count * usd_each
    except OverflowError:
        return math.inf
