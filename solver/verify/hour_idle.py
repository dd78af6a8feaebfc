"""The hour verifier's idle share (part of solver.verify.hours, held to its rule: from
solver/ it reads the plan schema and the verifier only): an hourly plan's stated
`idle_fraction` recomputed from its hours and the instance, trusting no figure the plan
states beside its decisions (the hours' pools and the GPUs each hour pays):

    idle = 1 - sum_h busy_h / sum_h paid_h        (solver.time.readback.idle, the planner's rule)

    paid_h = committed GPUs + the owned GPUs the hour uses (min(existing, used) per
             offer) + its on-demand and spot GPUs (hours[h].gpus, held to the hour's
             cost by step 4 of solver.verify.hours)
    busy_h = the GPUs of the hour's batch replicas (busy all the hour)
             + the GPUs of the replicas its batch soaks keep busy (x / C_b replicas of
               each soaking pool, x its batch requests/s, C_b one replica's batch rate)
             + for every interactive (workload w, region r, role) the hour runs:
               GPUs of its pools x u,  u = min(D_h[w,r] / C, 1)

with D_h[w,r] the hour's warm rate (models.operations.time_demand.warm_grid: the rate its
period is planned for) and C = sum over the role's pools of n x q(n), q the physics of
one replica in a pool of n recomputed here (solver.verify.pools). With no failure each
region's users are served in their own region (the program's `none` routes: d = o), and
every request passes each role of its mode once, so D_h[w,r] is each role's load.

Where the load's split is the program's choice and not the physics' (a (w, r) served
by more than one mode: unified and disaggregated pools, or one role at two
precisions; a shared group's GPUs, and the pools of a (w, r) a shared group serves too),
those GPUs are busy anywhere between 0 and all of them, and the stated share must lie
in the range that gives.
"""

import math
from collections import defaultdict

from models.operations.site import demand_factor
from models.operations.time_demand import hour_instance, warm_grid
from models.schema.instance import Instance
from solver.plan.schema import Plan
from solver.plan.time_records import Hour
from solver.verify.pools import pool_physics
from solver.verify.verdict import Violation

TOLERANCE = 1e-6


def check_idle_fraction(
    instance: Instance, plan: Plan, where: str = "idle_fraction"
) -> list[Violation]:
    """The stated idle share against its recomputation (the module text); none to check
    when the plan states none or pays for nothing."""
    stated = plan.idle_fraction
    if stated is None or not plan.hours:
        return []
    span = idle_range(instance, plan)
    if span is None:
        return [
            Violation(
                requirement=where,
                message=f"states {stated:.4%} idle; the hours pay for no GPU",
            )
        ]
    low, high = span
    if low - TOLERANCE <= stated <= high + TOLERANCE:
        return []
    recomputed = (
        f"{low:.4%}"
        if math.isclose(low, high, abs_tol=TOLERANCE)
        else (f"between {low:.4%} and {high:.4%}")
    )
    return [
        Violation(
            requirement=where,
            message=f"states {stated:.4%} idle over the GPUs paid; the hours' busy and "
            f"paid GPU-hours give {recomputed}",
        )
    ]


def idle_range(instance: Instance, plan: Plan) -> tuple[float, float] | None:
    """(lowest, highest) idle share the plan's hours allow (equal where every load's
    split is the physics'); None when the hours pay for nothing."""
    warm = warm_grid(instance)
    batch = {w.name for w in instance.workloads if w.is_batch}
    committed = math.fsum(c.committed_gpus for c in plan.committed)
    busy_low = busy_high = paid = 0.0
    cache: dict = {}
    for hour in plan.hours:
        low, high = _busy(instance, hour, warm, batch, cache)
        busy_low += low
        busy_high += high
        paid += committed + _paid_beyond_commitments(instance, hour)
    if paid <= 0:
        return None

    def clamp(x: float) -> float:
        return min(max(x, 0.0), 1.0)

    return clamp(1 - busy_high / paid), clamp(1 - busy_low / paid)


def _paid_beyond_commitments(instance: Instance, hour: Hour) -> float:
    """Owned GPUs in use (min(existing, used) per offer, used from the hour's pools), on
    demand and on spot in one hour."""
    used: dict[tuple[str, str], int] = defaultdict(int)
    for pool in hour.pools:
        used[(pool.region, pool.gpu)] += pool.count * pool.replica_gpus
    owned = sum(
        min(instance.region(r).existing.get(g, 0), n)
        for (r, g), n in used.items()
        if r in {region.name for region in instance.regions}
    )
    return owned + math.fsum(g.on_demand + g.spot for g in hour.gpus)


def _busy(
    instance: Instance, hour: Hour, warm: dict, batch: set[str], cache: dict
) -> tuple[float, float]:
    """(lowest, highest) busy GPUs of one hour (the module text); hours with the same
    pools and rates are computed once."""
    rates = {key: series[hour.hour] for key, series in warm.items()}
    key = (tuple(sorted(rates.items())), hour.pools, hour.batch_soak)
    if key in cache:
        return cache[key]
    busy = float(sum(p.count * p.replica_gpus for p in hour.pools if p.workload in batch))
    busy += math.fsum(  # replicas running batch work on interactive pools: x / C_b each
        s.requests_per_s / s.batch_requests_per_s_per_replica * p.replica_gpus
        for s in hour.batch_soak
        for p in hour.pools
        if (s.workload, s.region, s.configuration) == (p.workload, p.region, p.key)
        and s.batch_requests_per_s_per_replica > 0
    )
    span = 0.0
    interactive = tuple(p for p in hour.pools if p.workload not in batch)
    shared = [p for p in interactive if p.members]
    span += sum(p.count * p.replica_gpus for p in shared)
    grouped = {(m.workload, p.region) for p in shared for m in p.members}
    alone = hour_instance(instance, rates)
    growth = demand_factor(alone)
    pools = pool_physics(alone, interactive, cache)  # one configuration's physics, all day
    by_place: dict[tuple[str, str], list] = defaultdict(list)
    for pool in pools:
        by_place[(pool.workload, pool.region)].append(pool)
    for (w, r), found in by_place.items():
        gpus = {id(p): sum(e.count * e.replica_gpus for e in p.entries) for p in found}
        modes = {(p.role, p.precision) for p in found}
        roles = [p.role for p in found]
        one_mode = len(modes) == len({role for role, _ in modes})  # one precision per role
        unified = {str(role) for role in roles} == {"unified"}
        split = (w, r) in grouped  # a group carries the share of the load it is routed
        if split or not one_mode or not (unified or "unified" not in {str(x) for x in roles}):
            span += sum(gpus.values())
            continue
        demand = rates.get((w, r), 0.0) * growth
        for role in {p.role for p in found}:
            mine = [p for p in found if p.role == role]
            capacity = math.fsum(p.count * p.requests_per_s(p.count) for p in mine)
            u = min(demand / capacity, 1.0) if capacity > 0 else 0.0
            busy += u * sum(gpus[id(p)] for p in mine)
    cache[key] = (busy, busy + span)
    return cache[key]
