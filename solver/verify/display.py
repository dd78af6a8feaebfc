"""The verifier's reading of what a plan displays per scenario (part of the verifier, held
to its rule: from solver/ it reads the plan schema only): the utilisation of every phase,
the replicas started after a loss and who moves where. The display and the verifier read
the same numbers, so a survivor shown over 100% is a violation, never a plan that passes.
"""

import math
from collections import defaultdict

from pydantic import BaseModel

from models.operations.scenarios import failure_scenarios
from models.physics.efficiency import check_engine
from models.schema.errors import shown_name
from models.schema.instance import Instance
from solver.plan.records import ReplicaPool, ScenarioResult
from solver.plan.schema import Plan
from solver.plan.summary import buyer_summary
from solver.verify.verdict import Finding


def stated_scenarios(instance: Instance, plan: Plan) -> list[Finding]:
    """What the plan displays per scenario, read as the verifier reads it (static and
    hourly plans alike):

    - utilisation = load / capacity, and at most 1 (+1e-6): a phase over its capacity
      is a scenario the plan does not serve, whatever its routing says;
    - the started part of a capacity = sum of count x rate of the scenario's
      `started_replicas` of that workload in that region (hourly plans: the replicas
      `Hour.failover_starts` of the scenario's `hour` lists, the ones the hour check
      credits), and no more than the capacity;
    - `moves` = the routes that leave their own region, rate for rate and at their round
      trip, `from_lost_region` saying whether the origin is the lost region.
    """
    findings = stated_table(instance, plan.scenarios, "scenarios") + _stated_names(instance, plan)
    hours = {hour.hour: hour for hour in plan.hours}
    for s_index, result in enumerate(plan.scenarios):
        where = f"scenarios[{s_index}]"
        if result.hour is not None and result.hour in hours:
            stated = _counts(result.started_replicas)
            starts = hours[result.hour].failover_starts
            listed = _counts(tuple(x.pool for x in starts if x.scenario == result.name))
            if stated != listed:
                findings.append(
                    Finding(
                        f"{where}.started_replicas",
                        f"{result.name}: states {sorted(stated.items())}; UTC hour "
                        f"{result.hour} starts {sorted(listed.items())}",
                    )
                )
    return findings


def _stated_names(instance: Instance, plan: Plan) -> list[Finding]:
    """A static plan's table names the policy's scenarios and the instance's workloads
    and regions: chat-3region's plan with scenarios[2].pools[3].workload edited to 'nan',
    its region to 'mars' or a scenario renamed 'lose=mars' verified ok (the loads were
    held to utilisation = load / capacity alone). An hourly plan's table is an hour's,
    whose check names them (solver.verify.hour_scenarios)."""
    if plan.hours:
        return []
    policy = [f.name for f in failure_scenarios(instance)]
    workloads = {w.name for w in instance.workloads}
    regions = {r.name for r in instance.regions}
    findings = []
    for s_index, result in enumerate(plan.scenarios):
        at = f"scenarios[{s_index}]"
        if result.name not in policy:
            shown = ", ".join(shown_name(name) for name in policy)
            message = f"names scenario {result.name!r}; the policy names {shown}"
            findings.append(Finding(f"{at}.name", message))
        for p_index, load in enumerate(result.pools):
            for field, value, known in (
                ("workload", load.workload, workloads),
                ("region", load.region, regions),
            ):
                if value not in known:
                    message = f"{result.name}: unknown {field} {value!r}"
                    findings.append(Finding(f"{at}.pools[{p_index}].{field}", message))
    return findings


def stated_table(
    instance: Instance, scenarios: tuple[ScenarioResult, ...], where: str
) -> list[Finding]:
    """Utilisation, started capacity and moves of one scenario table (`where`: its field
    path, `scenarios` or `hours[i].scenarios`), read as `stated_scenarios` says."""
    lost = {f.name: f.lost_region for f in failure_scenarios(instance)}
    findings = []
    for s_index, result in enumerate(scenarios):
        at = f"{where}[{s_index}]"
        findings += _stated_loads(at, result)
        findings += _stated_moves(at, result, lost.get(result.name))
    return findings


def _counts(pools: tuple[ReplicaPool, ...]) -> dict[tuple[str, str, str], int]:
    found: dict[tuple[str, str, str], int] = defaultdict(int)
    for pool in pools:
        found[(pool.workload, pool.region, pool.key)] += pool.count
    return dict(found)


def _stated_loads(where: str, result: ScenarioResult) -> list[Finding]:
    started: dict[tuple[str, str], float] = defaultdict(float)
    for pool in result.started_replicas:
        started[(pool.workload, pool.region)] += pool.count * (pool.requests_per_s_per_replica or 0)
    findings = []
    for p_index, load in enumerate(result.pools):
        at = f"{where}.pools[{p_index}]"
        capacity = load.capacity_requests_per_s
        expected = load.load_requests_per_s / capacity if capacity > 0 else 0.0
        if not math.isclose(load.utilisation, expected, rel_tol=1e-6, abs_tol=1e-9):
            findings.append(
                Finding(
                    f"{at}.utilisation",
                    f"states {load.utilisation:.6g}; load / capacity = "
                    f"{load.load_requests_per_s:.6g} / {capacity:.6g} = {expected:.6g}",
                )
            )
        if expected > 1 + 1e-6:
            findings.append(
                Finding(
                    f"{at}.utilisation",
                    f"{result.name}: {load.workload} in {load.region} ({load.phase}) carries "
                    f"{load.load_requests_per_s:.6g} requests/s on {capacity:.6g} of "
                    f"capacity ({expected:.0%}): the plan does not serve this scenario",
                )
            )
        credit = started.pop((load.workload, load.region), 0.0)
        if load.phase.startswith("unified") and not (
            math.isclose(load.started_requests_per_s, credit, rel_tol=1e-6, abs_tol=1e-9)
            and load.started_requests_per_s <= capacity * (1 + 1e-9)
        ):
            findings.append(
                Finding(
                    f"{at}.started_requests_per_s",
                    f"states {load.started_requests_per_s:.6g} of {capacity:.6g}; the "
                    f"replicas started in {load.region} carry {credit:.6g}",
                )
            )
    return findings


def _stated_moves(where: str, result: ScenarioResult, lost_region: str | None) -> list[Finding]:
    routes: dict[tuple[str, str, str], float] = defaultdict(float)
    rtt_ms: dict[tuple[str, str, str], float] = {}
    for route in result.routing:
        if route.origin != route.destination:
            routes[(route.workload, route.origin, route.destination)] += route.requests_per_s
            rtt_ms[(route.workload, route.origin, route.destination)] = route.rtt_ms
    moves: dict[tuple[str, str, str], float] = defaultdict(float)
    findings = []
    for m_index, move in enumerate(result.moves):
        key = (move.workload, move.from_region, move.to_region)
        moves[key] += move.requests_per_s
        if key in rtt_ms and not math.isclose(move.rtt_ms, rtt_ms[key], abs_tol=1e-6):
            findings.append(
                Finding(
                    f"{where}.moves[{m_index}].rtt_ms",
                    f"{result.name}: states {move.rtt_ms:g} ms from {move.from_region} to "
                    f"{move.to_region}; its route states {rtt_ms[key]:g}",
                )
            )
        if move.from_lost_region != (move.from_region == lost_region):
            findings.append(
                Finding(
                    f"{where}.moves[{m_index}].from_lost_region",
                    f"{result.name}: states {move.from_lost_region} for {move.from_region}",
                )
            )
    if not result.moves:
        return findings  # a plan may leave its moves unstated
    for key in sorted(set(routes) | set(moves)):
        if not math.isclose(routes.get(key, 0.0), moves.get(key, 0.0), rel_tol=1e-6, abs_tol=1e-7):
            w, o, d = key
            findings.append(
                Finding(
                    f"{where}.moves",
                    f"{result.name}: {o} users of {w} moved to {d}: states "
                    f"{moves.get(key, 0.0):.6g} requests/s; the routing sends "
                    f"{routes.get(key, 0.0):.6g}",
                )
            )
    return findings


def stated_display(
    instance: Instance, plan: Plan, reference: tuple[float, int, int] | None = None
) -> list[Finding]:
    """`stated_scenarios`, `stated_summary`, `stated_policy` and `stated_once`:
    everything the plan displays."""
    return (
        stated_scenarios(instance, plan)
        + stated_summary(plan, reference)
        + stated_policy(instance, plan)
        + stated_once(plan)
    )


ONE_ROW_EACH = {
    "servers": ("region", "gpu"),
    "power_kw": ("region",),
    "committed": ("region", "gpu"),
    "cost_attribution": ("workload", "region"),
    "headroom": ("workload", "region", "configuration"),
    "error_budget_minutes_used": ("scenario", "workload"),
    "batch": ("workload", "region"),
    "scenarios": ("name",),
}
"""The tables a plan states one row of per key (the `gpus` table's twice is item 6's)."""


def stated_once(plan: Plan) -> list[Finding]:
    """A row of a table given twice (ONE_ROW_EACH): each check read the rows one by one,
    or by key keeping the last, so a second `servers` row of us-east h100-sxm (a buyer
    ordering twice), `power_kw`, `batch` or `scenarios` row verified ok."""
    findings = []
    for table, fields in ONE_ROW_EACH.items():
        first: dict[tuple, int] = {}
        for index, row in enumerate(getattr(plan, table)):
            key = tuple(getattr(row, name) for name in fields)
            if key in first:
                named = ", ".join(f"{n} {v}" for n, v in zip(fields, key, strict=True))
                message = f"{named} is {table}[{first[key]}] again: each once"
                findings.append(Finding(f"{table}[{index}]", message))
            first.setdefault(key, index)
    return findings


def stated_policy(instance: Instance, plan: Plan) -> list[Finding]:
    """The demand, headroom and engine profile the plan says it was planned for, where it
    states them, against the instance's, at which the verifier judges it: a plan stating
    demand_growth 2.5 verified at the instance's 1 and its text read 'planned for 2.5x
    today's demand'; one stating sglang-0.5 verified at trtllm-0.20. A fleet that states
    none is judged at the instance's."""
    stated = plan.model_fields_set
    found = []
    if "demand_growth" in stated and plan.demand_growth != instance.demand_factor:
        found.append(Finding("demand_growth", f"states {plan.demand_growth:g}; the instance "
                             f"plans for {instance.demand_factor:g}x today's demand "
                             "(demand_growth)"))  # fmt: skip
    headroom = instance.policy.max_utilization
    if "max_utilization" in stated and plan.max_utilization != headroom:
        found.append(Finding("max_utilization", f"states {plan.max_utilization:g}; the "
                             f"instance's policy.max_utilization is {headroom:g}"))  # fmt: skip
    engine = check_engine(instance.engine) if plan.engine else ""
    if plan.engine != engine:  # its capacities are another engine's (sglang-0.5 for trtllm)
        found.append(Finding("engine", f"states {plan.engine!r}; the instance's engine "
                             f"profile is {engine!r}"))  # fmt: skip
    return found


def stated_summary(plan: Plan, reference: tuple[float, int, int] | None = None) -> list[Finding]:
    """The buyer's summary against the one the plan's own fields give
    (solver.plan.summary: its GPUs per region, orders, horizon and binding rows), with
    its cost per month, GPUs bought and GPUs used against `reference` as the verifier
    recomputed them (default: the plan's own figures, which the hour verifier checks)."""
    s = plan.summary
    if s is None:
        return []
    own = buyer_summary(plan)
    if reference is not None:
        cost, bought, used = reference
        own = own.model_copy(
            update={"cost_per_month": cost, "gpus_bought": bought, "gpus_used": used}
        )
    findings = []
    for name in type(s).model_fields:
        stated, expected = getattr(s, name), getattr(own, name)
        pairs = [(name, stated, expected)]
        if isinstance(stated, tuple) and len(stated) == len(expected):
            pairs = [
                (f"{name}[{i}]", a, b)
                for i, (a, b) in enumerate(zip(stated, expected, strict=True))
            ]
        findings += [
            Finding(
                f"summary.{field}", f"states {_shown(a)}; the plan's own figures give {_shown(b)}"
            )
            for field, a, b in pairs
            if not _same(_plain(a), _plain(b))
        ]
    return findings


def _plain(value):
    """A record as its fields, rows as a list."""
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _shown(value) -> str:
    """A figure, a record's fields or a count of rows, as a finding states them."""
    if isinstance(value, BaseModel):
        return ", ".join(f"{k} {v}" for k, v in value.model_dump().items())
    if isinstance(value, tuple):
        return f"{len(value)} rows"
    return str(value)


def _same(stated, own) -> bool:
    if isinstance(stated, dict) and isinstance(own, dict):
        return stated.keys() == own.keys() and all(_same(stated[k], own[k]) for k in stated)
    if isinstance(stated, list) and isinstance(own, list):
        return len(stated) == len(own) and all(
            _same(a, b) for a, b in zip(stated, own, strict=True)
        )
    if isinstance(stated, float) and isinstance(own, float):
        return math.isclose(stated, own, rel_tol=1e-9, abs_tol=0.01)
    return stated == own
