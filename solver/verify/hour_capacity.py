"""Each hour's interactive pools against the hour's warm demand (part of solver.verify.hours,
held to its rule: from solver/ it reads the plan schema, the row names and the verifier
only): steps 2, 6 and 8 of that module's list.

- `check_hour_capacity`: the static verifier (solver.verify.fleet) on the hour's instance
  and its interactive pools (hours with the same pools and rates are checked once, in the
  cache the hour verifier keeps), less the spot replicas down at once with the policy's
  confidence (step 8); a pool running for a workload with no demand that hour is a
  violation.
- Failover with a start time (step 6): each region loss of a workload with an availability
  target is judged after the replicas the hour starts (warm + started, within supply,
  max_configs_per_pool and max_on_demand_gpus) and by its error budget; `warm_shortfalls`
  is the warm survivors' shortfall per loss (solver.time.readback.failover reads the
  starts' budget from it).
- `check_stated_budgets`: each stated error-budget row against its recomputation.
"""

from collections import defaultdict

from models.operations.failover_budget import (
    budget_minutes_per_month,
    budgeted_losses,
    expected_burn_minutes_per_year,
)
from models.operations.pricing_tiers import poisson_quantile, spot_down_fraction
from models.operations.scenarios import ScenarioKind, failure_scenarios
from models.operations.time_demand import (
    failover_window_s,
    hour_instance,
    interactive_grid,
    warm_grid,
)
from models.schema.instance import Instance
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.plan.time_records import Hour
from solver.program.row_names import ConfigsPerPoolRow, DemandRow, GpuSupplyRow, timed_name
from solver.verify.fleet import (
    ScenarioCheck,
    Verification,
    Violation,
    verify,
)
from solver.verify.months import GPU_TOLERANCE
from solver.verify.verdict import agrees


def _static(alone: Instance, pools: tuple[ReplicaPool, ...], cache: dict) -> Verification:
    """The static verifier on one hour's instance and pools (hours with the same pools
    and rates are checked once)."""
    key = (tuple(sorted((w.name, str(w.demand)) for w in alone.workloads)), pools)
    if key not in cache:
        cache[key] = verify(alone, Plan(replicas=pools))
    return cache[key]


def _serving(hour: Hour, serving: set[str]) -> tuple[ReplicaPool, ...]:
    """The hour's pools serving `serving` (a group's `workload` is 'a+b': it serves each)."""
    return tuple(p for p in hour.pools if serving & set(p.workloads))


def warm_shortfalls(
    instance: Instance, hour: Hour, cache: dict | None = None
) -> dict[tuple[str, str], tuple[float, float]]:
    """(scenario, workload) -> (warm-rate demand, requests/s the warm pools serve within
    reach) for every region loss, in one hour."""
    rates = {key: series[hour.hour] for key, series in warm_grid(instance).items()}
    alone = hour_instance(instance, rates)
    serving = {w.name for w in alone.workloads}
    if not serving:
        return {}
    pools = _less_spot_down(instance, hour, _serving(hour, serving), [])
    result = _static(alone, pools, {} if cache is None else cache)
    regions = {f.name for f in failure_scenarios(instance) if f.kind is ScenarioKind.REGION}
    return {
        (c.scenario, c.workload): (c.demand_requests_per_s, c.servable_requests_per_s)
        for c in result.checks
        if c.scenario in regions
    }


def check_hour_capacity(
    instance: Instance,
    hour: Hour,
    warm: dict[tuple[str, str], tuple[float, ...]],
    cache: dict,
    budget_used: dict[tuple[str, str], list[tuple[int, float, float]]],
) -> Verification:
    """The static verifier on the hour's instance and its interactive pools; region
    losses of workloads with an availability target may lean on started replicas and
    the error budget (step 6)."""
    rates = {key: series[hour.hour] for key, series in warm.items()}
    alone = hour_instance(instance, rates)
    serving = {w.name for w in alone.workloads}
    batch = {w.name for w in instance.workloads if w.is_batch}
    stray = [p for p in hour.pools if not serving & set(p.workloads) and p.workload not in batch]
    spot_problems: list[Violation] = []
    pools = _less_spot_down(instance, hour, _serving(hour, serving), spot_problems)
    result = _static(alone, pools, cache) if serving else None
    violations = list(result.violations) if result else []
    if result is not None:
        violations = _failover_checks(instance, alone, hour, pools, result, cache, budget_used)
    violations += spot_problems
    violations += [
        Violation(
            requirement=f"replicas[{p.workload},{p.key},{p.region}]",
            message=f"{p.count} replicas run for a workload with no demand this hour",
        )
        for p in stray
        if p.count
    ]
    return Verification(
        ok=not violations,
        violations=tuple(violations),
        cost_per_month=0.0,
        total_gpus=result.total_gpus if result else 0,
        checks=_after_starts(alone, hour, pools, result, cache) if result else (),
    )


def _after_starts(
    alone: Instance,
    hour: Hour,
    pools: tuple[ReplicaPool, ...],
    warm: Verification,
    cache: dict,
) -> tuple[ScenarioCheck, ...]:
    """The hour's checks, each region loss's servable counted with the replicas the hour
    starts after it (warm + started, as the plan's utilisation table counts them; the
    budget of step 6 is charged on the warm survivors' shortfall alone)."""
    checks = list(warm.checks)
    for scenario in dict.fromkeys(s.scenario for s in hour.failover_starts):
        started = tuple(s.pool for s in hour.failover_starts if s.scenario == scenario)
        helped = {p.workload for p in started}
        after = {(c.scenario, c.workload): c for c in _static(alone, pools + started, cache).checks}
        checks = [
            after.get((c.scenario, c.workload), c)
            if c.scenario == scenario and c.workload in helped
            else c
            for c in checks
        ]
    return tuple(checks)


def _less_spot_down(
    instance: Instance,
    hour: Hour,
    pools: tuple[ReplicaPool, ...],
    violations: list[Violation],
) -> tuple[ReplicaPool, ...]:
    """The pools less their spot replicas down at once with the policy's confidence
    (step 8): u = lambda T / (1 + lambda T), T = replica start + scale detection, and
    Q(n u, a) replicas down (Poisson quantile), recomputed here."""
    if not hour.spot_pools:
        return pools
    confidence = instance.policy.spot_confidence
    down: dict[tuple[str, str, str], int] = {}
    for entry in hour.spot_pools:
        key = (entry.workload, entry.region, entry.configuration)
        pool = next((p for p in pools if (p.workload, p.region, p.key) == key), None)
        offer = instance.region(entry.region).supply.get(pool.gpu) if pool else None
        name = timed_name(f"spot[{entry.workload},{entry.configuration},{entry.region}]", hour.hour)
        if confidence is None or pool is None or offer is None or not offer.spot_price_per_gpu_hour:
            violations.append(
                Violation(
                    requirement=name,
                    message="spot replicas for an interactive pool need policy.spot_confidence, "
                    "a running pool and a spot price on offer",
                )
            )
            continue
        if entry.replicas > pool.count:
            violations.append(
                Violation(
                    requirement=name,
                    message=f"{entry.replicas} spot replicas in a pool of {pool.count}",
                )
            )
        restart_s = instance.replica_start_s(pool.gpu) + instance.policy.scale_detection_s
        u = spot_down_fraction(offer.spot_interruptions_per_hour, restart_s)
        down[key] = poisson_quantile(min(entry.replicas, pool.count) * u, confidence)
    thinned = {(w, r) for (w, r, _), lost in down.items() if lost}  # weights: full strength
    reduced = []
    for p in pools:
        lost = down.get((p.workload, p.region, p.key), 0)
        if (p.workload, p.region) in thinned and not lost:
            p = p.model_copy(update={"routing_weight": None})
        if lost:
            count = max(p.count - lost, 0)
            p = p.model_copy(
                update={
                    "count": count,
                    "gpus": count * p.replica_gpus,
                    "requests_per_s_per_replica": None,
                    "cost_per_month": None,
                    "routing_weight": None,
                    "capacity_units_per_replica": None,
                    "limit": None,
                }
            )
        reduced.append(p)
    return tuple(reduced)


def _failover_checks(
    instance: Instance,
    alone: Instance,
    hour: Hour,
    pools: tuple[ReplicaPool, ...],
    warm: Verification,
    cache: dict,
    budget_used: dict[tuple[str, str], list[tuple[int, float, float]]],
) -> list[Violation]:
    """The warm verification's violations, with each region loss of a workload with an
    availability target judged after the start (warm + started pools) and by its
    budget instead (step 6)."""
    window_s = failover_window_s(instance)
    months = instance.policy.hours_per_month
    actual = interactive_grid(instance)
    risk = {r.name: r.failure_probability_per_year for r in instance.regions}
    violations = list(warm.violations)
    for f in failure_scenarios(instance):
        if f.kind is not ScenarioKind.REGION or f.lost_region is None:
            continue
        started = tuple(s.pool for s in hour.failover_starts if s.scenario == f.name)
        violations += _started_within_cap(instance, hour, f.name, started)
        for workload in alone.workloads:
            w = workload.name
            if workload.slo.availability is None:
                continue
            prefix = DemandRow(f.name, w, "").name()[:-1]
            mine = [v for v in violations if v.requirement.startswith(prefix)]
            check = next((c for c in warm.checks if (c.scenario, c.workload) == (f.name, w)), None)
            if check is None:
                continue
            average = sum(sum(r) for k, r in actual.items() if k[0] == w) / 24
            shortfall = max(check.demand_requests_per_s - check.servable_requests_per_s, 0.0)
            minutes = shortfall * window_s / (60.0 * average) if average > 0 else 0.0
            budget_used.setdefault((f.name, w), []).append((hour.hour, shortfall, minutes))
            if not mine:
                continue
            violations = [v for v in violations if v not in mine]
            m = budgeted_losses(risk[f.lost_region], months)
            budget = budget_minutes_per_month(workload.slo.availability, months)
            if m * minutes > budget * (1 + 1e-6) + 1e-9:
                violations.append(
                    Violation(
                        requirement=f"error_budget[{f.name},{w}]",
                        message=f"the warm survivors fall {shortfall:.2f} requests/s short "
                        f"for {window_s:g} s: {m:g} x {minutes:.2f} budget minutes; the "
                        f"month's budget is {budget:.2f}",
                    )
                )
            after = _static(alone, pools + started, cache)
            for v in after.violations:
                if v.requirement.startswith(prefix) or (
                    v.requirement.startswith((GpuSupplyRow.family, ConfigsPerPoolRow.family))
                    and v not in warm.violations
                ):
                    violations.append(
                        Violation(
                            requirement=v.requirement,
                            message=f"{v.message} (with the {sum(p.count for p in started)} "
                            f"replicas started after {f.name})",
                        )
                    )
    return violations


def _started_within_cap(
    instance: Instance, hour: Hour, scenario: str, started: tuple[ReplicaPool, ...]
) -> list[Violation]:
    """Started GPUs are paid on demand: with the hour's own on-demand GPUs they stay
    within `max_on_demand_gpus` where it is given."""
    gpus: dict[tuple[str, str], int] = defaultdict(int)
    for pool in started:
        gpus[(pool.region, pool.gpu)] += pool.count * pool.replica_gpus
    found = []
    for (r, g), n in gpus.items():
        supply = instance.region(r).supply.get(g)
        cap = supply.max_on_demand_gpus if supply else None
        row = next((x for x in hour.gpus if (x.region, x.gpu) == (r, g)), None)
        in_use = row.on_demand if row else 0.0
        if cap is not None and n + in_use > cap + GPU_TOLERANCE:
            found.append(
                Violation(
                    requirement=timed_name(f"start_on_demand[{scenario},{r},{g}]", hour.hour),
                    message=f"{n} GPUs started after {scenario} and {in_use:g} on demand; "
                    f"max_on_demand_gpus is {cap}",
                )
            )
    return found


def check_stated_budgets(
    instance: Instance,
    plan: Plan,
    budget_used: dict[tuple[str, str], list[tuple[int, float, float]]],
    violations: list[Violation],
) -> None:
    """Each stated error-budget row against its recomputation (step 6): the worst hour
    (most minutes, the earliest on a tie), its shortfall and minutes, the start window,
    the month's budget, m, the replicas started then, and lambda x the mean minutes."""
    months = instance.policy.hours_per_month
    workloads = {w.name: w for w in instance.workloads}
    risk = {r.name: r.failure_probability_per_year for r in instance.regions}
    for index, row in enumerate(plan.error_budget_minutes_used):
        hours = budget_used.get((row.scenario, row.workload))
        where = f"error_budget_minutes_used[{index}]"
        if not hours:
            violations.append(
                Violation(
                    requirement=f"error_budget[{row.scenario},{row.workload}]",
                    message=f"states {row.budget_minutes_used:.4f} budget minutes used at "
                    "its worst hour; recomputed none",
                )
            )
            continue
        worst, shortfall, minutes = max(hours, key=lambda h: (h[2], -h[0]))
        lost = row.scenario.removeprefix("lose=")
        probability = risk.get(lost)
        started = sum(
            start.pool.count
            for hour in plan.hours
            if hour.hour == worst
            for start in hour.failover_starts
            if (start.scenario, start.pool.workload) == (row.scenario, row.workload)
        )
        availability = workloads[row.workload].slo.availability
        burn = (
            None
            if probability is None
            else expected_burn_minutes_per_year(probability, [h[2] for h in hours])
        )
        recomputed = {
            "worst_hour": worst,
            "shortfall_rps": shortfall,
            "budget_minutes_used": minutes,
            "failover_start_s": failover_window_s(instance),
            "budget_minutes": budget_minutes_per_month(availability, months)
            if availability is not None
            else None,
            "losses_per_month": budgeted_losses(probability, months),
            "started_replicas": started,
            "expected_burn_minutes_per_year": burn,
        }
        for name, value in recomputed.items():
            stated = getattr(row, name)
            if not agrees(stated, value):
                violations.append(
                    Violation(
                        requirement=f"{where}.{name}",
                        message=f"error budget of {row.workload} after {row.scenario}: "
                        f"states {stated}; recomputed {value}",
                    )
                )
