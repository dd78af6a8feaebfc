"""The verifier's check of a plan's cost attribution (`cost_attribution`), recomputed from
the plan's pools and the instance's prices, never from the rows themselves.

Per row (one workload in one region; one row each):

1. The phase shares lie in [0, 1] and add up to 1.
2. GPU-hours: prefill + decode GPU-hours = the GPUs of the workload's dedicated pools in
   the region x the hours they run in a month (a static plan: x hours_per_month; an
   hourly plan: the sum over its hours of each hour's GPUs x D, D = hours_per_month / 24).
   A row for a workload and region with no such pool is a violation.
3. Money. A static plan: cost = those GPUs x the instance's on-demand price x
   hours_per_month (to the cent; owned GPUs priced too). An hourly plan shares each hour's
   bill out among its pools (solver.analysis.hour_attribution), so its rows add up to the
   plan's cost: every pool is dedicated, and every committed offer holds a pool in some
   hour; otherwise they add up to no more than it.

$/Mtok need the tokens each region serves (its routing at the average rate): held
finite and >= 0 only.

Imports models/ and the plan schema only, as the rest of the verifier.
"""

import math
from collections import defaultdict

from models.schema.instance import Instance
from models.schema.traffic import HOURS_PER_DAY
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.verify.totals import money_close
from solver.verify.verdict import Violation

SHARE_TOLERANCE = 1e-6
HOURS_RELATIVE = 1e-9


def check_attribution(instance: Instance, plan: Plan) -> list[Violation]:
    """Items 1-3 of the module docstring."""
    if not plan.cost_attribution:
        return []
    hours = instance.policy.hours_per_month
    gpu_hours, cost = _recomputed(instance, plan, hours)
    violations = []
    seen = set()
    for i, row in enumerate(plan.cost_attribution):
        at = f"cost_attribution[{i}]"
        key = (row.workload, row.region)
        if key in seen:
            violations.append(Violation(requirement=at, message=f"{key} has two rows"))
        seen.add(key)
        for name in ("prefill_share", "decode_share"):
            share = getattr(row, name)
            if not -SHARE_TOLERANCE <= share <= 1 + SHARE_TOLERANCE:
                violations.append(
                    Violation(requirement=f"{at}.{name}", message=f"is {share}: not in [0, 1]")
                )
        if abs(row.prefill_share + row.decode_share - 1) > SHARE_TOLERANCE:
            violations.append(
                Violation(
                    requirement=f"{at}.prefill_share",
                    message=f"prefill {row.prefill_share} and decode {row.decode_share} "
                    "shares must add up to 1",
                )
            )
        for name in ("usd_per_million_input_tokens", "usd_per_million_output_tokens"):
            value = getattr(row, name)
            if value is not None and value < 0:
                violations.append(Violation(requirement=f"{at}.{name}", message=f"is {value} < 0"))
        if key not in gpu_hours:
            violations.append(
                Violation(requirement=at, message=f"{row.workload} runs no pool in {row.region}")
            )
            continue
        stated = row.prefill_gpu_hours_per_month + row.decode_gpu_hours_per_month
        if not math.isclose(stated, gpu_hours[key], rel_tol=HOURS_RELATIVE, abs_tol=1e-6):
            violations.append(
                Violation(
                    requirement=f"{at}.prefill_gpu_hours_per_month",
                    message=f"prefill + decode GPU-hours {stated:,.3f}/month; the pools here "
                    f"run {gpu_hours[key]:,.3f}",
                )
            )
        if not plan.hours and not money_close(row.cost_per_month, cost[key]):
            priced = (
                f"the pools here cost ${cost[key]:,.2f} at the instance's prices"
                if not math.isnan(cost[key])
                else "the pools here run in a region or on a GPU type this instance does "
                "not offer, so they have no price here"
            )
            violations.append(
                Violation(
                    requirement=f"{at}.cost_per_month",
                    message=f"states ${row.cost_per_month:,.2f}/month; {priced}",
                )
            )
    if plan.hours:
        violations += _hourly_total(instance, plan)
    return violations


def _recomputed(
    instance: Instance, plan: Plan, hours: float
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], float]]:
    """(workload, region) -> GPU-hours a month of its dedicated pools, and (static plans)
    their cost at the on-demand price."""
    gpu_hours: dict[tuple[str, str], float] = defaultdict(float)
    cost: dict[tuple[str, str], float] = defaultdict(float)
    if plan.hours:
        days = hours / HOURS_PER_DAY
        for hour in plan.hours:
            for pool in _dedicated(hour.pools):
                gpu_hours[(pool.workload, pool.region)] += pool.count * pool.replica_gpus * days
        return dict(gpu_hours), {}
    for pool in _dedicated(plan.replicas):
        key = (pool.workload, pool.region)
        gpu_hours[key] += pool.count * pool.replica_gpus * hours
        cost[key] += (
            pool.count * pool.replica_gpus * _price(instance, pool.region, pool.gpu) * hours
        )
    return dict(gpu_hours), dict(cost)


def _hourly_total(instance: Instance, plan: Plan) -> list[Violation]:
    """Item 3 for an hourly plan: the rows against the bill of its hours."""
    attributed = math.fsum(row.cost_per_month for row in plan.cost_attribution)
    bill = plan.cost_per_month or 0.0
    complete = all(not pool.shared for hour in plan.hours for pool in hour.pools)
    held = {(pool.region, pool.gpu) for hour in plan.hours for pool in hour.pools}
    complete = complete and all(
        (c.region, c.gpu) in held for c in plan.committed if c.committed_gpus > 0
    )
    if complete and not money_close(attributed, bill):
        return [
            Violation(
                requirement="cost_attribution",
                message=f"its rows add up to ${attributed:,.2f}/month; the plan's hours cost "
                f"${bill:,.2f}",
            )
        ]
    if attributed > bill and not money_close(attributed, bill):
        return [
            Violation(
                requirement="cost_attribution",
                message=f"its rows add up to ${attributed:,.2f}/month, more than the "
                f"plan's ${bill:,.2f}",
            )
        ]
    return []


def _price(instance: Instance, region: str, gpu: str) -> float:
    """The instance's price of one GPU-hour; NaN for a region or GPU type it does not
    have (named by the supply checks: the row then agrees with no cost)."""
    if gpu not in instance.gpu_specs or all(r.name != region for r in instance.regions):
        return math.nan
    return instance.price_per_gpu_hour(region, gpu)


def _dedicated(pools: tuple[ReplicaPool, ...]) -> list[ReplicaPool]:
    return [pool for pool in pools if not pool.shared]
