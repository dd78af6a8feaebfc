"""Failover with a start time in the hourly plan: the replicas each period starts after a
region loss (read back from the program, solver.program.families.failover_start), and the error
budget each loss spends at each hour (recomputed from the physics, the way the verifier
does it: solver.verify.hour_capacity.warm_shortfalls).
"""

from models.operations.failover_budget import expected_burn_minutes_per_year, scenario_budget
from models.schema.instance import Instance
from solver.plan.records import ReplicaPool, ScenarioResult
from solver.plan.time_records import FailoverStart, Hour, ScenarioBudgetUse
from solver.program.families.failover_start import (
    FailoverTerms,
    StartedColumn,
    failover_terms,
    started_credit,
)
from solver.time.periods import TimeProgram
from solver.verify.hour_capacity import warm_shortfalls


def started_pools(
    program: TimeProgram, period: int, values: dict[str, float]
) -> tuple[FailoverStart, ...]:
    """The replicas started in the period starting at UTC hour `period`, per scenario
    and pool, at the lone capacity the program credits them with: at the TTFT target
    less the round trip of the users the loss reroutes to their region
    (solver.program.families.failover_start.started_credit), with that capacity's limit.

    Args:
        values: the period's values under the static program's names.
    """
    price = {(o.region, o.gpu): o.on_demand_price_per_gpu_hour for o in program.offers}
    hours = program.instance.policy.hours_per_month
    sets = next(p.program.sets for p in program.periods if p.first_hour == period)
    found = []
    for name, value in sorted(values.items()):
        if not name.startswith(StartedColumn.family + "[") or round(value) < 1:
            continue
        index = StartedColumn.parse(name)
        count = round(value)
        pool = next(
            p
            for p in sets.pools_at[(index.workload, index.region)]
            if p.candidate.key == index.candidate
        )
        c = pool.candidate
        requests_per_s, limit = started_credit(sets, index.scenario, pool)
        entry = ReplicaPool(
            workload=index.workload,
            region=index.region,
            **c.layout_fields,
            count=count,
            gpus=count * c.gpus,
            limit=limit,
            requests_per_s_per_replica=requests_per_s,
            cost_per_month=count * c.gpus * price.get((index.region, c.gpu), 0.0) * hours,
        )
        found.append(FailoverStart(scenario=index.scenario, pool=entry))
    return tuple(found)


def with_started(
    scenarios: tuple[ScenarioResult, ...], starts: tuple[FailoverStart, ...], hour: int
) -> tuple[ScenarioResult, ...]:
    """The busiest period's scenarios as they happen: each loss's started replicas
    (`started_replicas`) and their lone capacity added to the unified phase of their
    workload in their region (what the program's capacity row credits them,
    solver.program.families.failover_start), so that utilisation = load / (warm + started)
    capacity, the load being the routing after the start. `hour`: the period's first UTC
    hour, whose `Hour.failover_starts` these are."""
    by_scenario: dict[str, list[ReplicaPool]] = {}
    for start in starts:
        by_scenario.setdefault(start.scenario, []).append(start.pool)
    shown = []
    for scenario in scenarios:
        started = tuple(by_scenario.get(scenario.name, ()))
        credit: dict[tuple[str, str], float] = {}
        labels: dict[tuple[str, str], list[str]] = {}
        for pool in started:
            key = (pool.workload, pool.region)
            credit[key] = credit.get(key, 0.0) + pool.count * (pool.requests_per_s_per_replica or 0)
            labels.setdefault(key, []).append(f"{pool.count} x {pool.label} (started)")
        loads = []
        for load in scenario.pools:
            key = (load.workload, load.region)
            if not load.phase.startswith("unified") or key not in credit:
                loads.append(load)
                continue
            extra = credit.pop(key)
            capacity = load.capacity_requests_per_s + extra
            loads.append(
                load.model_copy(
                    update={
                        "capacity_requests_per_s": capacity,
                        "started_requests_per_s": extra,
                        "utilisation": load.load_requests_per_s / capacity if capacity else 0.0,
                        "pools": load.pools + tuple(labels[key]),
                    }
                )
            )
        update = {"pools": tuple(loads), "started_replicas": started, "hour": hour}
        shown.append(scenario.model_copy(update=update))
    return tuple(shown)


def error_budgets(instance: Instance, hours: tuple[Hour, ...]) -> tuple[ScenarioBudgetUse, ...]:
    """Per region loss and workload with an availability target: the budget minutes a
    loss at its worst UTC hour spends (warm-rate demand beyond what the warm survivors
    serve within reach, for T_s seconds), m, and the expected burn per year."""
    terms = failover_terms(instance)
    if not terms.budget_minutes:
        return ()
    risk = {r.name: r.failure_probability_per_year for r in instance.regions}
    by_key: dict[tuple[str, str], list] = {}
    started: dict[tuple[str, str, int], int] = {}
    cache: dict = {}  # the hours of a period: the same pools at the same rates, checked once
    for hour in hours:
        for (scenario, workload), (load, servable) in warm_shortfalls(
            instance, hour, cache
        ).items():
            if workload not in terms.budget_minutes:
                continue
            by_key.setdefault((scenario, workload), []).append(
                _budget(instance, terms, scenario, workload, hour.hour, load, servable)
            )
        for start in hour.failover_starts:
            key = (start.scenario, start.pool.workload, hour.hour)
            started[key] = started.get(key, 0) + start.pool.count
    rows = []
    for (scenario, workload), budgets in by_key.items():
        worst = max(budgets, key=lambda b: (b.budget_minutes_used, -b.hour))
        lost = scenario.removeprefix("lose=")
        probability = risk.get(lost)
        rows.append(
            ScenarioBudgetUse(
                scenario=scenario,
                workload=workload,
                worst_hour=worst.hour,
                failover_start_s=terms.window_s,
                shortfall_rps=worst.shortfall_rps,
                budget_minutes=worst.budget_minutes,
                budget_minutes_used=worst.budget_minutes_used,
                expected_burn_minutes_per_year=None
                if probability is None
                else expected_burn_minutes_per_year(
                    probability, [b.budget_minutes_used for b in budgets]
                ),
                losses_per_month=terms.losses_per_month.get(lost, 1.0),
                started_replicas=started.get((scenario, workload, worst.hour), 0),
            )
        )
    return tuple(rows)


def _budget(
    instance: Instance,
    terms: FailoverTerms,
    scenario: str,
    workload: str,
    hour: int,
    load: float,
    servable: float,
):
    return scenario_budget(
        scenario,
        hour,
        load,
        servable,
        servable,
        terms.window_s,
        terms.window_s,
        terms.average_rps[workload],
        instance.workload(workload).slo.availability,
        instance.policy.hours_per_month,
    )
