"""The verifier's check of a plan's cost attribution (`cost_attribution`), recomputed from
the plan's pools and the instance's prices, never from the rows themselves.

Per row (one workload in one region; one row each):

1. The phase shares lie in [0, 1] and add up to 1.
2. GPU-hours: prefill + decode GPU-hours = the GPUs of the workload's dedicated pools in
   the region, plus its share of each shared group's there (item 4), x the hours they
   run in a month (a static plan: x hours_per_month; an
   hourly plan: the sum over its hours of each hour's GPUs x D, D = hours_per_month / 24).
   A row for a workload and region with no such pool or group is a violation.
3. Money: the rows are the bill. A static plan: cost = sum over the (region, GPU type)
   of the workload's pools there (a group's GPUs x the member's share, item 4) of
   bill[r,g] x pool GPUs / used[r,g], bill[r,g]
   = bought x the instance's price x hours_per_month (bought = max(0, used - existing) in
   whole servers, models.operations.site.gpus_bought; used counts shared groups' GPUs),
   to the cent: a server's idle GPUs are paid by the pools on its type pro rata to their
   GPUs. An hourly plan shares each hour's bill out among its pools
   (solver.analysis.hour_attribution). Either way the rows add up to the plan's cost.
4. A shared group's member w takes the share load_w / a[w,t] of the group, normalised
   over its members (its `load_requests_per_s` over its `requests_per_s_per_replica`;
   equal shares where no member has load).

$/Mtok need the tokens each region serves (its routing at the average rate): held
finite and >= 0 only.

Imports models/ and the plan schema only, as the rest of the verifier.
"""

import math
from collections import defaultdict

from models.operations.site import gpus_bought, node_gpus
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
    return violations + _total(plan, _static_bill(instance, plan))


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
            for workload, pool, share in _held(hour.pools):
                gpu_hours[(workload, pool.region)] += pool.count * pool.replica_gpus * days * share
        return dict(gpu_hours), {}
    used: dict[tuple[str, str], int] = defaultdict(int)
    for pool in plan.replicas:
        used[(pool.region, pool.gpu)] += pool.count * pool.replica_gpus
    for workload, pool, held in _held(plan.replicas):
        key = (workload, pool.region)
        gpus = pool.count * pool.replica_gpus * held
        gpu_hours[key] += gpus * hours
        share = gpus / used[(pool.region, pool.gpu)] if gpus > 0 else 0.0
        cost[key] += _bill(instance, pool.region, pool.gpu, used) * share
    return dict(gpu_hours), dict(cost)


def _bill(instance: Instance, region: str, gpu: str, used: dict[tuple[str, str], int]) -> float:
    """bought x price x hours_per_month of one (region, GPU type) (NaN where the instance
    has no such offer)."""
    price = _price(instance, region, gpu)
    if math.isnan(price):
        return price
    existing = instance.region(region).existing.get(gpu, 0)
    bought = gpus_bought(used[(region, gpu)], existing, node_gpus(instance, gpu))
    return bought * price * instance.policy.hours_per_month


def _static_bill(instance: Instance, plan: Plan) -> float | None:
    """A static plan's cost recomputed from its pools (the sum of `_bill`); None for an
    hourly plan, whose stated cost its hours' checks recompute."""
    if plan.hours:
        return None
    used: dict[tuple[str, str], int] = defaultdict(int)
    for pool in plan.replicas:
        used[(pool.region, pool.gpu)] += pool.count * pool.replica_gpus
    bill = math.fsum(_bill(instance, r, g, used) for r, g in used)
    return None if math.isnan(bill) else bill


def _total(plan: Plan, recomputed: float | None) -> list[Violation]:
    """Item 3's total: the rows against the plan's cost (a static plan's as recomputed:
    a stated cost that differs is the `cost` check's)."""
    attributed = math.fsum(row.cost_per_month for row in plan.cost_attribution)
    bill = recomputed if recomputed is not None else plan.cost_per_month or 0.0
    if not money_close(attributed, bill):
        return [
            Violation(
                requirement="cost_attribution",
                message=f"its rows add up to ${attributed:,.2f}/month; the plan costs ${bill:,.2f}",
            )
        ]
    return []


def _price(instance: Instance, region: str, gpu: str) -> float:
    """The instance's price of one GPU-hour; NaN for a region or GPU type it does not
    have (named by the supply checks: the row then agrees with no cost)."""
    if gpu not in instance.gpu_specs or all(r.name != region for r in instance.regions):
        return math.nan
    return instance.price_per_gpu_hour(region, gpu)


def _held(pools: tuple[ReplicaPool, ...]) -> list[tuple[str, ReplicaPool, float]]:
    """(workload, pool, the share of the pool it pays): 1 for a dedicated pool, item 4's
    share for each member of a shared group."""
    held = []
    for pool in pools:
        if not pool.shared:
            held.append((pool.workload, pool, 1.0))
            continue
        taken = {
            m.workload: (m.load_requests_per_s or 0.0) / m.requests_per_s_per_replica
            if m.requests_per_s_per_replica > 0
            else 0.0
            for m in pool.members
        }
        total = math.fsum(taken.values())
        for workload, t in taken.items():
            held.append((workload, pool, t / total if total > 0 else 1.0 / len(taken)))
    return held
