"""Each hour's scenario table against the hour's pools (part of solver.verify.hours, step
10): `Hour.scenarios` is what `fleetplan simulate --hour` replays, so it is held to what
the static verifier holds a plan's `scenarios` to, at the hour's warm demand and with
the hour's pools, the replicas it starts after a loss beside them:

1. The table names every scenario the policy names (models.operations.scenarios.
   failure_scenarios), once each, shown at the hour's period (`hour` = its first UTC
   hour), each with the replicas the hour starts after it (`started_replicas` = the
   pools `Hour.failover_starts` lists for it, record for record).
2. Routing (solver.verify.totals.stated_routing, a static plan's item 4): every route
   may serve its origin's users in its scenario (none to a lost region), at the links'
   round trip, and each origin's routes add up to the hour's warm demand D[w,o]
   (models.operations.time_demand.warm_grid, what the hour's capacity check serves).
   A table that states no routing for a scenario is held to it too.
3. Counts: each phase row (workload w, region d, phase) lists `n x label` for every
   pool of the hour of that phase at its survivors in the scenario
   (`Scenario.surviving_replicas`: the fullest zone gone in a zone loss) and
   `n x label (started)` for the replicas started there after it; no row stands in a
   lost region.
4. Load within capacity, both recomputed from the physics (solver.verify.pools, the
   physics shared by every hour: `shared_physics`), the started replicas counted in
   their configuration's pool as the hour's capacity check counts them, every pool at
   the TTFT target less the longest round trip rerouted to its region
   (`rerouted_rtt_ms`):

       sum_o x[f,w,o,d]                   <= U_d + sum_p min(P_d,p, D_d,p)
       load of row (w, d, phase)          <= the phase's capacity
       unified + sum_p prefill-p load     =  sum_o x[f,w,o,d]   (prefill-p = decode-p)

   with x the table's routes (solver.verify.scenarios.region_capacity, the max-flow's
   sink edge). Replica loss: each capacity is the least over the pools of one replica
   lost (that pool n - 1 replicas at q(n - 1)), as solver.verify.scenarios judges it.
5. Started replicas' figures: each entry of `started_replicas` states the capacity per
   replica and the limit of a lone replica at the TTFT target less the longest round
   trip the scenario reroutes to its region (it serves those users too; what the
   program credits it, solver.program.families.failover_start), recomputed from the
   physics: the display's started capacity (`pools[].started_requests_per_s`, held to
   these figures by solver.verify.display) cannot overstate what the program counted.
6. Stated capacities: each row's `capacity_requests_per_s` (and so its utilisation, held
   to load / capacity by solver.verify.display) is what its phase's warm pools carry at
   their survivors in the scenario, n x q(n) at the TTFT target less the round trip of
   item 4, at full use, replica loss the least with one replica lost, plus each replica
   started there at item 5's figure (solver.verify.scenarios.capacity_finding, what a
   static plan's table is held to): a row stating q at the normal target where users
   are rerouted, or q of another pool size than the survivors', is named with both
   numbers; one that states less than its survivors carry (less room shown than there
   is), or whose pools' own figures differ from the physics too (a plan solved on other
   physics), is a warning, as in a static plan (`CapacityFinding.violation`).

An hour that states no table at all (a fleet checked at another point's demand by
solver.studies.sweep, whose tables are its own point's) is left to the hour's max-flow,
as a static plan without `scenarios`. A plan's own `scenarios` (the busiest period's) is
the table of the hour it names,
record for record, so what holds for the hours holds for it. Findings are named by field
path (`hours[3].scenarios[1].pools[0]`); the messages name the UTC hour, the scenario,
the workload, the region and both numbers (a month's hours are named by
solver.verify.months, which runs this verifier on them).
"""

import math
from collections import Counter, defaultdict

from models.operations.scenarios import (
    RegionGraph,
    Scenario,
    ScenarioKind,
    failure_scenarios,
    rerouted_rtt_ms,
)
from models.operations.time_demand import hour_instance
from models.schema.instance import Instance
from models.serving.replica import Role
from solver.plan.records import PoolLoad, ReplicaPool, ScenarioResult
from solver.plan.schema import Plan
from solver.plan.time_records import Hour
from solver.verify.display import stated_table
from solver.verify.groups import check_groups
from solver.verify.pools import pool_physics
from solver.verify.scenarios import (
    Pool,
    capacity_finding,
    in_phase,
    least_capacity,
    phase_capacities,
    region_capacity,
    row_phase,
)
from solver.verify.totals import ROUTE_FLOOR_RPS, stated_routing
from solver.verify.verdict import DEMAND_TOLERANCE, Violation, close


def check_hour_table(
    instance: Instance,
    hour: Hour,
    index: int,
    warm: dict[tuple[str, str], tuple[float, ...]],
    cache: dict,
    warnings: list[Violation] | None = None,
) -> list[Violation]:
    """Items 1-6 on hour `hour` (plan.hours[index]): the hour's instance (its warm rates
    `warm` as the demand: models.operations.time_demand.hour_instance) and its
    interactive pools. Hours of one period state one table on the same pools and
    rates: it is checked once (`cache`), its findings named for each hour; item 6's
    warnings are added to `warnings`. An hour that
    states no table is a fleet to check (as a static plan without `scenarios`: the hour's
    max-flow judges it), which `simulate --hour` refuses to replay."""
    if not hour.scenarios:
        return []
    alone = hour_instance(instance, {key: series[hour.hour] for key, series in warm.items()})
    serving = {w.name for w in alone.workloads}
    # a shared group's `workload` joins its members' names ('chat+code'): it serves the
    # hour's workloads it holds
    pools = tuple(p for p in hour.pools if any(w in serving for w in p.workloads))
    starts = hour.failover_starts
    rates = tuple(sorted((w.name, str(w.demand)) for w in alone.workloads))
    key = ("hour table", rates, pools, starts, hour.scenarios, hour.period)
    if key not in cache:
        cache[key] = _table_findings(alone, hour, pools, cache)
    where = f"hours[{index}].scenarios"
    found, understated = cache[key]
    if warnings is not None:
        warnings += [
            Violation(requirement=where + path, message=f"UTC hour {hour.hour}, {message}")
            for path, message in understated
        ]
    return [
        Violation(requirement=where + path, message=f"UTC hour {hour.hour}, {message}")
        for path, message in found
    ]


def check_peak_table(plan: Plan) -> list[Violation]:
    """The plan's `scenarios` is the table of the hour it names (`hour`), record for
    record: the hour checks stand for it."""
    if not plan.scenarios:
        return []
    named = {result.hour for result in plan.scenarios}
    hours = {hour.hour: hour for hour in plan.hours}
    (at,) = named if len(named) == 1 else (None,)
    if at in hours and hours[at].scenarios == plan.scenarios:
        return []
    return [
        Violation(
            requirement="scenarios",
            message=f"the busiest period's table names UTC hours {sorted(named, key=str)}; "
            "it must be one hour's `scenarios`, record for record",
        )
    ]


def _table_findings(
    alone: Instance, hour: Hour, pools: tuple[ReplicaPool, ...], cache: dict
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(field path under the table, message) of every finding of items 1-6, and of item
    6's warnings."""
    found: list[tuple[str, str]] = []
    understated: list[tuple[str, str]] = []
    policy = {f.name: f for f in failure_scenarios(alone)}
    stated = [result.name for result in hour.scenarios]
    if sorted(stated) != sorted(policy):
        found.append(
            (
                "",
                f"the table shows scenarios {stated}; the policy names {list(policy)}, once each",
            )
        )
    found += [
        (path.removeprefix("scenarios"), message)
        for path, message in [
            *stated_routing(alone, hour.scenarios, "scenarios", required=True),
            *stated_table(alone, hour.scenarios, "scenarios"),
        ]
    ]
    graph = RegionGraph.of(alone)
    zones = {region.name: region.zones for region in alone.regions}
    warm_pools = _recomputed(alone, pools, cache)  # without the started: item 6
    for s_index, result in enumerate(hour.scenarios):
        f = policy.get(result.name)
        if f is None:
            continue
        started = tuple(s.pool for s in hour.failover_starts if s.scenario == f.name)
        at = f"[{s_index}]"
        if result.hour != hour.period:
            found.append(
                (
                    f"{at}.hour",
                    f"{f.name}: shown at UTC hour {result.hour}; the hour's period opens at "
                    f"{hour.period}",
                )
            )
        if result.started_replicas != started:
            found.append(
                (
                    f"{at}.started_replicas",
                    f"{f.name}: states {_listed(result.started_replicas)} started; the hour "
                    f"starts {_listed(started)}",
                )
            )
        found += _stray_rows(f, result, {w.name for w in alone.workloads}, at)
        recomputed = _recomputed(alone, pools + started, cache)
        for w in alone.workloads:
            origins = [o for o, level in w.demand.items() if level.peak_rps > 0]
            rerouted = rerouted_rtt_ms(graph, f, origins, w.slo.max_failover_rtt_ms)
            mine = [p for p in recomputed if p.workload == w.name]
            shown = [p for p in pools if w.name in p.workloads and p.count > 0]
            found += _region_loads(f, result, w.name, (mine, shown), rerouted, zones, at, started)
            found += _started_figures(alone, f, result, w.name, rerouted, at, cache)
            warm = [p for p in warm_pools if p.workload == w.name]
            mine = (warm, [s for s in started if s.workload == w.name])
            over, under = _stated_capacities(alone, f, result, mine, rerouted, zones, at, cache)
            found += over
            understated += under
    return found, understated


def _stated_capacities(
    alone: Instance,
    f: Scenario,
    result: ScenarioResult,
    pools: tuple[list[Pool], list[ReplicaPool]],
    rerouted: dict[str, float],
    zones: dict[str, int],
    at: str,
    cache: dict,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Item 6 for one workload in one scenario: each row's stated capacity against its
    recomputation (solver.verify.scenarios.capacity_finding): the violations and the
    warnings. `pools`: the hour's warm
    pools of the workload, recomputed (shared groups as their members' shares), and the
    replicas the hour starts for it after f, each credited to its phase's row in its
    region at a lone replica's q(1) at the row's target, as item 5 recomputes it."""
    warm, started = pools
    workloads = {p.workload for p in warm} | {s.workload for s in started}
    over, under = [], []
    for p_index, load in enumerate(result.pools):
        phase = row_phase(load.phase)
        d = load.region
        if load.workload not in workloads or phase is None or d not in zones:
            continue  # items 3 and 4 name a stray row, an unknown phase or region
        if d == f.lost_region:
            continue  # item 3 names a row in the lost region
        rtt = rerouted.get(d, 0.0)
        alive = [
            (p, f.surviving_replicas(d, p.count, zones[d]))
            for p in warm
            if p.workload == load.workload and p.region == d and in_phase(p, phase)
        ]
        credited = []
        for entry in started:
            if (entry.workload, entry.region) != (load.workload, d) or not in_phase(entry, phase):
                continue
            recomputed = [] if entry.members else pool_physics(alone, (entry,), cache)
            rate = recomputed[0].rerouted_requests_per_s(1, rtt) if recomputed else 0.0
            credited.append((rate, entry.count, entry.label))
        wrong = capacity_finding(f, load, alive, rtt, credited)
        if wrong is not None:
            finding = (f"{at}.pools[{p_index}].capacity_requests_per_s", wrong.message)
            (over if wrong.violation else under).append(finding)
    return over, under


def _started_figures(
    alone: Instance,
    f: Scenario,
    result: ScenarioResult,
    workload: str,
    rerouted: dict[str, float],
    at: str,
    cache: dict,
) -> list[tuple[str, str]]:
    """Item 5 for one workload in one scenario: each started entry's stated capacity
    per replica and limit against the physics of a lone replica at the TTFT target less
    the longest round trip f reroutes to its region (it serves those users too: what
    the program credits it), never against the plan's own figures."""
    found = []
    for i, entry in enumerate(result.started_replicas):
        if entry.workload != workload or entry.members:
            continue
        recomputed = pool_physics(alone, (entry,), cache)
        if not recomputed:
            continue  # an unknown workload, region or GPU: the hour's capacity check's
        pool = recomputed[0]
        rtt = rerouted.get(entry.region, 0.0)
        rate = pool.rerouted_requests_per_s(1, rtt)
        stated = entry.requests_per_s_per_replica
        target = f"the TTFT target less {rtt:g} ms" if rtt > 0 else "the TTFT target"
        where = f"{at}.started_replicas[{i}]"
        if stated is not None and not close(stated, rate):
            found.append(
                (
                    f"{where}.requests_per_s_per_replica",
                    f"{f.name}: states {stated:.6g} requests/s per replica started in "
                    f"{entry.region}; a lone replica carries {rate:.6g} at {target} "
                    "(recomputed)",
                )
            )
        limit = (pool.rerouted_physics(1, rtt) if rtt > 0 else pool.capacity(1)).limit
        if pool.serves and entry.limit is not None and entry.limit != limit:
            found.append(
                (
                    f"{where}.limit",
                    f"{f.name}: states limit {entry.limit} for a replica started in "
                    f"{entry.region}; the physics says {limit} at {target}",
                )
            )
    return found


def _stray_rows(
    f: Scenario, result: ScenarioResult, serving: set[str], at: str
) -> list[tuple[str, str]]:
    """Rows of a workload with no demand this hour, and a (workload, region, phase) shown
    twice (its load split over two rows each within the phase's capacity)."""
    found = []
    seen: dict[tuple[str, str, str], int] = {}
    for p_index, load in enumerate(result.pools):
        key = (load.workload, load.region, load.phase)
        if load.workload not in serving:
            found.append(
                (
                    f"{at}.pools[{p_index}]",
                    f"{f.name}: a row of {load.workload} in {load.region}, which has no "
                    "demand this hour",
                )
            )
        elif key in seen:
            found.append(
                (
                    f"{at}.pools[{p_index}]",
                    f"{f.name}: {load.workload} in {load.region} ({load.phase}) is shown "
                    f"again (first as pools[{seen[key]}])",
                )
            )
        seen.setdefault(key, p_index)
    return found


def _recomputed(alone: Instance, pools: tuple[ReplicaPool, ...], cache: dict) -> list[Pool]:
    """The pools' physics as the static verifier recomputes it (its findings are the
    hour's capacity check's, not repeated here). It reads the workloads' traffic mix and
    SLO, never their rates: hours (of one instance) that run the same pools share it
    (`cache`), and so do the hours' pools of one configuration
    (solver.verify.pools.pool_physics)."""
    key = ("recomputed pools", pools)
    if key not in cache:
        recomputed: list[Pool] = list(pool_physics(alone, pools, cache))
        groups = tuple(p for p in pools if p.members)
        cache[key] = recomputed + (check_groups(alone, Plan(replicas=groups), []) if groups else [])
    return cache[key]


def _region_loads(
    f: Scenario,
    result: ScenarioResult,
    workload: str,
    pools: tuple[list[Pool], list[ReplicaPool]],
    rerouted: dict[str, float],
    zones: dict[str, int],
    at: str,
    started: tuple[ReplicaPool, ...],
) -> list[tuple[str, str]]:
    """Items 3 and 4 for one workload in one scenario, region by region. `pools`: the
    recomputed pools serving it (the started replicas in theirs) and the hour's own
    entries serving it (as the rows list them)."""
    recomputed, entries = pools
    found = []
    routed: dict[str, float] = defaultdict(float)
    for route in result.routing:
        if route.workload == workload:
            routed[route.destination] += route.requests_per_s
    rows = defaultdict(list)
    for p_index, load in enumerate(result.pools):
        if load.workload == workload:
            rows[load.region].append((p_index, load))
    for d in sorted(set(zones) | set(rows) | set(routed)):
        here = [p for p in recomputed if p.region == d]
        if d == f.lost_region or d not in zones:
            what = "is lost" if d in zones else "is not a region of the instance"
            found += [
                (f"{at}.pools[{i}]", f"{f.name}: {workload} shows a row in {d}, which {what}")
                for i, _ in rows[d]
            ]
            continue
        alive = [(p, f.surviving_replicas(d, p.count, zones[d])) for p in here]
        shown = [(p, f.surviving_replicas(d, p.count, zones[d])) for p in entries if p.region == d]
        rtt = rerouted.get(d, 0.0)
        capacity = _least(alive, region_capacity, rtt, f)
        if _over(routed[d], capacity):
            found.append(
                (
                    f"{at}.routing",
                    f"{f.name}: routes {routed[d]:.6g} requests/s of {workload} to {d}; its "
                    f"pools there carry {capacity:.6g} (recomputed)",
                )
            )
        survivors = (alive, shown)
        sent = (routed[d], len(zones))
        found += _rows(f, workload, d, rows[d], survivors, rtt, sent, at, started)
    return found


def _rows(
    f: Scenario,
    workload: str,
    region: str,
    rows: list[tuple[int, PoolLoad]],
    survivors: tuple[list[tuple[Pool, int]], list[tuple[ReplicaPool, int]]],
    rtt: float,
    sent: tuple[float, int],
    at: str,
    started: tuple[ReplicaPool, ...],
) -> list[tuple[str, str]]:
    """Each phase row of (workload, region): its pools and counts (item 3), its load
    within the phase's capacity (item 4), and the rows' loads adding up to the routing.
    `survivors`: (recomputed pool, survivors) and (the hour's entry, survivors); `sent`:
    (requests/s the routing sends here, origins that may send them)."""
    alive, shown = survivors
    routed, origins = sent
    found = []
    named = f"{f.name}: {workload} in {region}"
    carried = 0.0
    prefill: dict[str, float] = defaultdict(float)
    decode: dict[str, float] = defaultdict(float)
    for p_index, load in rows:
        where = f"{at}.pools[{p_index}]"
        phase = row_phase(load.phase)
        if phase is None:
            found.append((where, f"{named}: unknown phase {load.phase!r}"))
            continue
        role, precision = phase
        mine = [(p, n) for p, n in alive if in_phase(p, phase)]
        expected = Counter(f"{n} x {_label(p)}" for p, n in shown if in_phase(p, phase))
        expected += Counter(
            f"{s.count} x {s.label} (started)"
            for s in started
            if (s.workload, s.region) == (workload, region) and in_phase(s, phase)
        )
        if Counter(load.pools) != expected:
            found.append(
                (
                    f"{where}.pools",
                    f"{named} ({load.phase}): lists {sorted(load.pools)}; the hour runs "
                    f"{sorted(expected.elements())}",
                )
            )
        capacity = _least(mine, _phase_capacity, rtt, f)
        if _over(load.load_requests_per_s, capacity):
            found.append(
                (
                    f"{where}.load_requests_per_s",
                    f"{named} ({load.phase}): loaded with {load.load_requests_per_s:.6g} "
                    f"requests/s; its pools carry {capacity:.6g} (recomputed)",
                )
            )
        if role is Role.UNIFIED:
            carried += load.load_requests_per_s
        else:
            side = prefill if role is Role.PREFILL else decode
            side[precision or ""] += load.load_requests_per_s
    carried += sum(prefill.values())
    # a pair the table leaves out carries nothing (the rows-add-up check below holds its
    # routing to 0): the read-back lists a pair's phases only where it may receive load
    unlisted = sorted(f"{n} x {_label(p)}" for p, n in shown if _unlisted(p, rows))
    if unlisted and rows:
        found.append((f"{at}.pools", f"{named}: no row lists {unlisted}"))
    # the routing leaves out routes under ROUTE_FLOOR_RPS, one per origin at most
    slack = DEMAND_TOLERANCE * max(1.0, routed) + ROUTE_FLOOR_RPS * origins
    if abs(carried - routed) > slack or any(
        not _close(prefill[p], decode[p]) for p in set(prefill) | set(decode)
    ):
        halves = f" (prefill {dict(prefill)}, decode {dict(decode)})" if prefill or decode else ""
        found.append(
            (
                f"{at}.pools",
                f"{named}: the rows carry {carried:.6g} requests/s{halves}; the routing "
                f"sends {routed:.6g}",
            )
        )
    return found


def _unlisted(pool: ReplicaPool, rows: list[tuple[int, PoolLoad]]) -> bool:
    return not any(
        (p := row_phase(load.phase)) is not None and in_phase(pool, p) for _, load in rows
    )


def _label(pool: ReplicaPool) -> str:
    """As a row lists it: the configuration's label, `shared group` for a group."""
    return "shared group" if pool.members else pool.label


def _least(alive: list[tuple[Pool, int]], capacity, rtt: float, f: Scenario) -> float:
    """`capacity(survivors, rtt)`; replica loss: its least with one replica of one pool
    lost (each pool in turn)."""
    return least_capacity(alive, capacity, rtt, f.kind is ScenarioKind.REPLICA)


def _phase_capacity(alive: list[tuple[Pool, int]], rtt: float) -> float:
    """What the survivors of one phase carry (solver.verify.scenarios.phase_capacities)."""
    return sum(phase_capacities(alive, rtt).values())


def _over(load: float, capacity: float) -> bool:
    return load > capacity * (1 + DEMAND_TOLERANCE) + DEMAND_TOLERANCE


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=DEMAND_TOLERANCE, abs_tol=DEMAND_TOLERANCE)


def _listed(pools: tuple[ReplicaPool, ...]) -> str:
    return ", ".join(f"{p.count} x {p.label} in {p.region}" for p in pools) or "none"
