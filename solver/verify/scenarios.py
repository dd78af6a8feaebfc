"""Every failure scenario served (part of solver.verify.fleet, step 4): for `none`, region and
zone loss a max-flow per workload from each origin's demand to the capacity of the
replicas that survive, along the routes the latency policy allows; for replica loss,
each region's own demand within its capacity with one replica of any pool gone.

The capacity a scenario table states per phase row (`scenarios[].pools[]
.capacity_requests_per_s`, the utilisation's denominator) is recomputed from the same
physics (`stated_capacities`, `capacity_finding`): sum n x q(n) over the phase's pools
at their n survivors in the scenario, q at the TTFT target less the longest round trip
the scenario reroutes to the region, at full use (the headroom is the load's business,
as the program's rows divide the load by it); a shared group n x a[w]; replica loss the
least with one replica of one pool lost (that pool n - 1 at q(n - 1)); and the replicas
an hourly plan starts after the loss at a lone replica's q(1) at the same target.
"""

import math
from collections import defaultdict
from typing import NamedTuple

from models.operations.scenarios import (
    RegionGraph,
    Scenario,
    ScenarioKind,
    failure_scenarios,
    longest_reroutes,
)
from models.operations.site import demand_factor
from models.schema.instance import Instance
from models.serving.replica import Role
from solver.plan.records import PoolLoad, ScenarioResult
from solver.program.row_names import DemandRow, GroupSpareRow, ReplicaSpareRow, phase_label
from solver.verify.groups import GroupShare
from solver.verify.pools import RecomputedPool
from solver.verify.verdict import DEMAND_TOLERANCE, ScenarioCheck, Violation, close

Pool = RecomputedPool | GroupShare
Phase = tuple[Role, str | None]
"""A table row's phase: the role and the weight precision it names (None: any)."""
Reroutes = dict[tuple[str, str], dict[str, float]]
"""(scenario, workload) -> region -> the longest round trip of the users the scenario may
reroute there (`models.operations.scenarios.rerouted_rtt_ms`)."""


def check_scenarios(
    instance: Instance,
    pools: list[RecomputedPool],
    violations: list[Violation],
    reroutes: Reroutes | None = None,
) -> list[ScenarioCheck]:
    """Every scenario the policy names, for every workload: the max-flow of the demand
    to the survivors' capacity, or the worst single replica loss per region. `reroutes`,
    when given, is filled with each (scenario, workload)'s rerouted round trips (read
    again by `stated_capacities`)."""
    reroutes = {} if reroutes is None else reroutes
    graph = RegionGraph.of(instance)
    zones = {region.name: region.zones for region in instance.regions}
    checks = []
    growth = demand_factor(instance)
    by_workload: dict[str, list[RecomputedPool]] = defaultdict(list)
    by_place: dict[tuple[str, str], list[RecomputedPool]] = defaultdict(list)
    for pool in pools:  # once, not per scenario and workload (10,000 pools x 10,100 checks)
        by_workload[pool.workload].append(pool)
        by_place[(pool.workload, pool.region)].append(pool)
    whole: dict[tuple[str, str, float], float] = {}  # a region's capacity, all replicas alive
    demands = {  # each workload's demand and search key, read once, not per scenario
        w.name: {o: level.peak_rps * growth for o, level in w.demand.items()}
        for w in instance.workloads
    }
    for scenario in failure_scenarios(instance):
        # workloads of the same origins and failover bound share their paths' search
        searched: dict[tuple, tuple[dict[str, float], dict[str, dict[str, float]]]] = {}
        for workload in instance.workloads:
            demand = demands[workload.name]
            mine = by_workload[workload.name]
            if scenario.kind is ScenarioKind.REPLICA:
                checks += _check_replica_loss(workload.name, demand, mine, violations)
                continue
            origins = [o for o, rate in demand.items() if rate > 0]
            bound = workload.slo.max_failover_rtt_ms
            key = (tuple(demand), tuple(origins), bound)
            if key not in searched:  # each origin's destinations searched once
                places = {o: graph.destinations(scenario, o, bound) for o in demand}
                rerouted = (
                    longest_reroutes({o: places[o] for o in origins}) if scenario.reroutes else {}
                )
                searched[key] = (rerouted, {o: _nearest_first(places[o]) for o in demand})
            rerouted, reach = searched[key]
            reroutes[(scenario.name, workload.name)] = rerouted
            capacity = {}
            for d in zones:
                mine_there = by_place.get((workload.name, d), ())
                rtt = rerouted.get(d, 0.0)
                if d == scenario.region:  # the one region the scenario touches
                    alive = [
                        (p, scenario.surviving_replicas(d, p.count, zones[d])) for p in mine_there
                    ]
                    capacity[d] = region_capacity(alive, rtt)
                    continue
                # every other region keeps all its replicas: its capacity at a round trip
                # is the same in every scenario (computed once, not per scenario)
                at = (workload.name, d, rtt)
                if at not in whole:
                    whole[at] = region_capacity([(p, p.count) for p in mine_there], rtt)
                capacity[d] = whole[at]
            checks.append(_check_flow(scenario, workload.name, demand, capacity, reach, violations))
    return checks


def phase_capacities(
    alive: list[tuple[RecomputedPool, int]], rerouted_rtt_ms: float = 0.0
) -> dict[tuple[Role, str], float]:
    """Requests/s each phase of the surviving replicas (pool, count) of one region
    carries: (unified, "") and (prefill or decode, weight precision); each pool n x q(n)
    at its n survivors, at the TTFT target less `rerouted_rtt_ms` when users may be
    rerouted there from that far."""
    phases: dict[tuple[Role, str], float] = defaultdict(float)
    for pool, count in alive:
        precision = "" if pool.role is Role.UNIFIED else pool.precision
        phases[(pool.role, precision)] += pool.carries(count, rerouted_rtt_ms)
    return phases


def region_capacity(alive: list[tuple[RecomputedPool, int]], rerouted_rtt_ms: float = 0.0) -> float:
    """U + sum_p min(P_p, D_p) of surviving replicas (pool, count) in one region, in
    requests/s: unified capacity plus each prefill/decode pair of the same precision
    (`phase_capacities`)."""
    phases = phase_capacities(alive, rerouted_rtt_ms)
    precisions = {p for role, p in phases if role is not Role.UNIFIED}
    return phases.get((Role.UNIFIED, ""), 0.0) + sum(
        min(phases.get((Role.PREFILL, p), 0.0), phases.get((Role.DECODE, p), 0.0))
        for p in precisions
    )


def row_phase(label: str) -> Phase | None:
    """A table row's phase label, `unified`, `prefill` or `decode-fp8`, as (role,
    precision or None); None for a label that names no phase."""
    role, _, precision = label.partition("-")
    if role not in tuple(Role) or (role == Role.UNIFIED and precision):
        return None
    return Role(role), precision or None


def in_phase(pool, phase: Phase) -> bool:
    """Whether a pool (recomputed, a group's share or a plan entry) serves `phase`."""
    role, precision = phase
    return pool.role is role and (precision is None or str(pool.precision) == precision)


def least_capacity(
    alive: list[tuple[Pool, int]], capacity, rtt: float, replica_loss: bool
) -> float:
    """`capacity(survivors, rtt)`; with `replica_loss` its least with one replica of one
    pool lost (each pool in turn)."""
    if not replica_loss:
        return capacity(alive, rtt)
    losses = [
        capacity([(p, n - (p is lost)) for p, n in alive], rtt) for lost, _ in alive if lost.count
    ]
    return min(losses, default=capacity(alive, rtt))


def table_capacity(alive: list[tuple[Pool, int]], rerouted_rtt_ms: float = 0.0) -> float:
    """sum n x q(n) of one phase's survivors (pool, n) at full use
    (`RecomputedPool.table_capacity`): what a scenario table states for them."""
    return sum(p.table_capacity(n, rerouted_rtt_ms) for p, n in alive)


class CapacityFinding(NamedTuple):
    """A table row stating a capacity other than its recomputation."""

    message: str
    violation: bool
    """True where the row states more than its survivors carry while its pools state
    the physics' own capacity per replica (`replicas[].requests_per_s_per_replica`): the
    table contradicts its own plan and shows room the survivors lack (a figure at the
    normal TTFT target where users are rerouted, at another pool size than the
    survivors'). A warning otherwise, as a stated figure that differs from the physics
    without breaking a requirement is (the load is judged against the recomputed
    capacity apart): a row that states less shows less room than there is (a plan
    solved at a tighter target, checked at a looser one), and a plan whose pools'
    figures differ too was solved on other physics (an efficiency since re-tuned)."""


def capacity_finding(
    scenario: Scenario,
    load: PoolLoad,
    alive: list[tuple[Pool, int]],
    rtt: float,
    started: list[tuple[float, int, str]] = (),
) -> CapacityFinding | None:
    """What is wrong with the capacity a table row states, None when it is its
    recomputation. `alive`: the phase's warm pools in the row's region and their
    survivors in `scenario`; `rtt`: the longest round trip the scenario reroutes there;
    `started`: (a lone replica's recomputed q(1) at that target, count, label) of each
    pool the hour starts there after the loss, credited to the row."""
    replica_loss = scenario.kind is ScenarioKind.REPLICA
    warm = least_capacity(alive, table_capacity, rtt, replica_loss)
    added = math.fsum(rate * count for rate, count, _ in started)
    recomputed = warm + added
    stated = load.capacity_requests_per_s
    if close(stated, recomputed):
        return None
    terms = [
        f"{n} x {p.table_capacity(n, rtt) / n if n else 0.0:.6g} ({p.label})" for p, n in alive
    ]
    terms += [f"{count} x {rate:.6g} ({label}, started)" for rate, count, label in started]
    target = f"the TTFT target less {rtt:g} ms" if rtt > 0 else "the TTFT target"
    lost = ", the least with one replica of one pool lost" if replica_loss else ""
    split = (
        f" ({stated - load.started_requests_per_s:.6g} warm + "
        f"{load.started_requests_per_s:.6g} started)"
        if load.started_requests_per_s
        else ""
    )
    message = (
        f"{scenario.name}: {load.workload} in {load.region} ({load.phase}) states a capacity "
        f"of {stated:.6g} requests/s{split}; its survivors carry {recomputed:.6g} at "
        f"{target}{lost}: {' + '.join(terms) or 'no replica'} (recomputed)"
    )
    drifted = [p.label for p, _ in alive if _drifted(p)]
    if drifted:
        message += (
            f"; {', '.join(drifted)} states a capacity per replica other than the physics "
            "too (a plan solved on other physics)"
        )
    return CapacityFinding(message, violation=stated > recomputed and not drifted)


def _drifted(pool: Pool) -> bool:
    """Whether a dedicated pool's entries state a capacity per replica other than its
    physics at its size (what solver.verify.pools warns of)."""
    if not isinstance(pool, RecomputedPool):
        return False  # a group's a[w] is the figure the verifier credits
    rate = pool.requests_per_s(pool.count)
    return any(
        e.requests_per_s_per_replica is not None and not close(e.requests_per_s_per_replica, rate)
        for e in pool.entries
    )


def stated_capacities(
    instance: Instance,
    tables: tuple[ScenarioResult, ...],
    pools: list[Pool],
    reroutes: Reroutes,
    warnings: list[Violation],
) -> list[Violation]:
    """Each row of a static plan's scenario table states the capacity its survivors carry
    (`capacity_finding`; `reroutes` as `check_scenarios` found them): the violations,
    the other findings added to `warnings` (`CapacityFinding.violation`). Rows naming an
    unknown scenario, workload or region are solver.verify.display's; a phase no pool
    serves is a row whose stated capacity must be 0."""
    policy = {f.name: f for f in failure_scenarios(instance)}
    zones = {region.name: region.zones for region in instance.regions}
    workloads = {w.name for w in instance.workloads}
    here: dict[tuple[str, str], list[Pool]] = defaultdict(list)
    for pool in pools:
        here[(pool.workload, pool.region)].append(pool)
    found = []
    for s_index, result in enumerate(tables):
        f = policy.get(result.name)
        if f is None:
            continue
        for p_index, load in enumerate(result.pools):
            phase = row_phase(load.phase)
            at = f"scenarios[{s_index}].pools[{p_index}]"
            if phase is None:
                message = (
                    f"{f.name}: {load.workload} in {load.region}: unknown phase {load.phase!r}"
                )
                found.append(Violation(requirement=f"{at}.phase", message=message))
                continue
            d = load.region
            if d not in zones or load.workload not in workloads:
                continue
            alive = [
                (p, f.surviving_replicas(d, p.count, zones[d]))
                for p in here.get((load.workload, d), ())
                if in_phase(p, phase)
            ]
            rtt = reroutes.get((f.name, load.workload), {}).get(d, 0.0)
            wrong = capacity_finding(f, load, alive, rtt)
            if wrong is not None:
                finding = Violation(
                    requirement=f"{at}.capacity_requests_per_s", message=wrong.message
                )
                (found if wrong.violation else warnings).append(finding)
    return found


def _check_flow(
    scenario: Scenario,
    workload: str,
    demand: dict[str, float],
    capacity: dict[str, float],
    reach: dict[str, dict[str, float]],
    violations: list[Violation],
) -> ScenarioCheck:
    """The max-flow check of one workload in one scenario; `reach`: each origin's
    destinations (`RegionGraph.destinations`) nearest first (`_nearest_first`), read
    only. The shortfall tolerated is DEMAND_TOLERANCE per origin, as the solver holds
    each origin's demand row to its feasibility tolerance (HiGHS's 1e-6), not their sum:
    growth-horizon's month 23 of 30 at -50% a month held 7.9e-7 requests/s of us-east
    users and 4.2e-7 of eu-west's at 4 UTC, each row met within 1e-6 by no replica, and
    the sum, 1.2e-6, failed the solver's own plan (exit 70)."""
    total = sum(demand.values())
    if len(reach) == 1 and all(
        len(places) == 1 and set(places) <= set(capacity) for places in reach.values()
    ):
        # One origin that can reach one region: the flow is its one path's narrowest
        # edge, and the origin is on the source side of the cut exactly when it is short.
        ((o, places),) = reach.items()
        (d,) = places
        served = 0 + min(demand[o], capacity[d])
        source_side = {("origin", o)} if served < demand[o] else set()
    elif _nearest_first_serves_all(demand, capacity, reach):
        served, source_side = total, set()  # a flow of the whole demand: nothing is cut
    else:
        served, source_side = _max_flow(demand, capacity, reach)
    if served < total * (1 - DEMAND_TOLERANCE) - DEMAND_TOLERANCE * max(1, len(demand)):
        # Min cut: the origins left on the source side can reach only destinations on
        # the source side, and those cannot carry them (Hall's condition fails there).
        stuck = [o for o in demand if ("origin", o) in source_side]
        places = sorted(
            {d for o in stuck for d in reach[o]},
            key=lambda d: (min(reach[o].get(d, 1e9) for o in stuck), d),  # ties by name
        )
        who = " + ".join(f"{o} {demand[o]:.2f}" for o in stuck)
        where = (
            "only in " + ", ".join(f"{d} (capacity {capacity[d]:.2f})" for d in places)
            if places
            else "nowhere within reach"
        )
        message = (
            f"{total - served:.2f} requests/s cannot be served ({scenario.description}): "
            f"users of {who} requests/s may be served {where}"
        )
        violations += [
            Violation(requirement=DemandRow(scenario.name, workload, o).name(), message=message)
            for o in stuck
        ]
    return ScenarioCheck(
        scenario=scenario.name,
        workload=workload,
        demand_requests_per_s=total,
        servable_requests_per_s=served,
    )


def _nearest_first_serves_all(
    demand: dict[str, float], capacity: dict[str, float], reach: dict[str, dict[str, float]]
) -> bool:
    """Whether sending each origin's users to the nearest regions with room left serves
    every request, with the origins in turn in their own order or, failing that, those
    with the fewest regions within reach first (they have the least choice): either
    assignment, when it serves everyone, is a flow of the whole demand, so the maximum
    flow is the demand and no minimum cut is needed. When both fail, the maximum flow
    (`_max_flow`) decides: another assignment may still serve everyone. (On the 10 x 20
    x 6 region-loss bench's plan, the fewest-choices order serves all 8 of the 220
    checks the own order leaves to the maximum flow.)"""
    if all(rate <= capacity.get(o, 0.0) and o in reach[o] for o, rate in demand.items()):
        return True  # each origin served at home: no two share a region, nothing to assign
    constrained = sorted(demand, key=lambda o: (len(reach[o]), o))
    return _assigns_all(demand, capacity, reach, list(demand)) or _assigns_all(
        demand, capacity, reach, constrained
    )


def _nearest_first(places: dict[str, float]) -> dict[str, float]:
    """`places` (region: round trip) in the order nearest-first assignment tries them:
    by round trip, ties by name; sorted once per origin and scenario, not per check."""
    return dict(sorted(places.items(), key=lambda item: (item[1], item[0])))


def _assigns_all(
    demand: dict[str, float],
    capacity: dict[str, float],
    reach: dict[str, dict[str, float]],
    order: list[str],
) -> bool:
    """Whether nearest-first, origins in `order`, places every origin's demand (`reach`
    lists each origin's destinations nearest first)."""
    room = dict(capacity)
    for o in order:
        rate = demand[o]
        left = rate
        for d in reach[o]:
            if left <= 0.0:
                break  # placed: the farther regions would take nothing
            take = min(left, room.get(d, 0.0))
            room[d] = room.get(d, 0.0) - take
            left -= take
        if left > 1e-12 * max(rate, 1.0):
            return False
    return True


def _max_flow(
    demand: dict[str, float], capacity: dict[str, float], reach: dict[str, dict[str, float]]
) -> tuple[float, set]:
    """Max flow from the origins' demand to the regions' capacity along `reach`, with the
    source side of a minimum cut (networkx, imported only when several regions meet)."""
    import networkx as nx
    from networkx.algorithms.flow import edmonds_karp

    network = nx.DiGraph()
    for o, rate in demand.items():
        network.add_edge("source", ("origin", o), capacity=rate)
        for d in reach[o]:
            network.add_edge(("origin", o), ("destination", d))
    for d, rate in capacity.items():
        network.add_edge(("destination", d), "sink", capacity=rate)
    served, (source_side, _) = nx.minimum_cut(network, "source", "sink", flow_func=edmonds_karp)
    return served, source_side


def _check_replica_loss(
    workload: str,
    demand: dict[str, float],
    pools: list[RecomputedPool],
    violations: list[Violation],
) -> list[ScenarioCheck]:
    checks = []
    split = len({p.precision for p in pools if p.role is not Role.UNIFIED}) > 1
    for o, rate in demand.items():
        here = [p for p in pools if p.region == o and p.count > 0]
        losses = [
            (lost, region_capacity([(p, p.count - (p is lost)) for p in here])) for lost in here
        ]
        # With no pool at all there is no replica to lose: the `none` check names it.
        lost, left = min(losses, key=lambda item: item[1], default=(None, 0.0))
        if lost is not None and left < rate * (1 - DEMAND_TOLERANCE) - DEMAND_TOLERANCE:
            phase = phase_label(lost.role, lost.precision, split)
            requirement = (
                GroupSpareRow(workload, o, lost.key).name()
                if isinstance(lost, GroupShare)
                else ReplicaSpareRow(workload, o, phase, lost.entries[0].key).name()
            )
            violations.append(
                Violation(
                    requirement=requirement,
                    message=f"{o} serves {rate:.2f} requests/s of {workload}; without "
                    f"one replica of {lost.label} it carries {left:.2f}",
                )
            )
        checks.append(
            ScenarioCheck(
                scenario="lose=replica",
                workload=workload,
                demand_requests_per_s=rate,
                servable_requests_per_s=min(rate, left),
            )
        )
    return checks
