"""An hourly plan's schedule: what `deploy --target k8s` writes beside the pools and
`fleet-import` reads back, so that the fleet read back is judged as the plan was.

A Deployment holds one replica count. An hourly plan decides more, hour by hour: each
pool's count, the GPUs it pays on which terms (reserved up to the commitment, on demand,
spot), the replicas it starts after a region loss, and the batch its pools soak; a months
plan decides that for each month with its commitments and orders. Without them the
fleet read back was the peak fleet judged as a static plan: diurnal-chat-batch, a
$26,163/month plan that verifies, came back as $61,904/month with 8 violations (batch
unserved, two configurations of one pool at once, a region loss without its started
replicas).

The schedule is a ConfigMap `fleetplan-schedule` (labelled as the pools' objects are),
its `schedule.json` the plan's decisions in time: `hours` (each hour's period, pools by
layout and count, GPUs by terms, cost, started replicas, batch soak, spot pools),
`committed`, and `months` (each month's growth, cost, offers, orders, commitments and
hours). Figures the verifier recomputes from these (each pool's capacity, limit and
cost, each hour's scenario table, the binding rows) are left out: a ConfigMap holds at
most 1 MiB, and the figures are the plan's report, not what runs. What applies the hours
(a CronJob, KEDA's cron scaler) is the operator's: fleetplan writes the counts, not the
controller.
"""

import json
from typing import Any

from solver.deploy.pools import DeployError
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.plan.time_records import Hour, Month

SCHEDULE_NAME = "fleetplan-schedule"
"""The ConfigMap's name (and the file `deploy` writes it to, with .yaml)."""
SCHEDULE_KEY = "schedule.json"
"""The ConfigMap's data key holding the schedule."""
SCHEDULE_ANNOTATION = "fleetplan.io/schedule"
"""The annotation marking the ConfigMap as a plan's schedule (what fleet-import reads)."""
MAX_SCHEDULE_BYTES = 1_000_000
"""A ConfigMap's data is at most 1 MiB (etcd's object limit, less the object's own)."""
_LAYOUT = (
    "workload",
    "region",
    "gpu",
    "precision",
    "kv_precision",
    "tp",
    "pp",
    "ep",
    "dp",
    "role",
    "speculative",
    "count",
    "gpus",
)
"""What a pool of the schedule keeps: its layout (the `fleetplan.io/pool` annotation's
fields), count and GPUs."""


def _pool(pool: ReplicaPool) -> dict:
    copies = {"redundant_experts"} if pool.redundant_experts else set()  # EPLB's, where held
    return pool.model_dump(mode="json", include=set(_LAYOUT) | copies)


def _hour(hour: Hour) -> dict:
    return {
        **hour.model_dump(
            mode="json", include={"hour", "period", "gpus", "cost_per_hour", "batch_soak"}
        ),
        "pools": [_pool(pool) for pool in hour.pools],
        "failover_starts": [
            {"scenario": start.scenario, "pool": _pool(start.pool)}
            for start in hour.failover_starts
        ],
        "spot_pools": [spot.model_dump(mode="json") for spot in hour.spot_pools],
    }


def _month(month: Month) -> dict:
    kept = month.model_dump(mode="json", exclude={"hours", "binding", "shadow_price_note"})
    return {**kept, "hours": [_hour(hour) for hour in month.hours]}


def plan_schedule(plan: Plan) -> dict | None:
    """The plan's decisions in time (see the module text); None for a static plan."""
    if not plan.hours:
        return None
    return {
        "hours": [_hour(hour) for hour in plan.hours],
        "committed": [c.model_dump(mode="json") for c in plan.committed],
        "months": [_month(month) for month in plan.months],
    }


class MonthRefused(ValueError):
    """--month asked of a plan without months, or of a month the plan lacks."""


def month_plan(plan: Plan, month: int) -> Plan:
    """Month `month` of a plan with months (policy.horizon_months) as the one-day hourly
    plan `deploy` writes: its hours and commitments, each pool at its largest count over
    its hours (as a plan's `replicas` are over its day), the scenarios of its busiest hour
    (the most GPUs, then the most load with no failure, the earliest of equals: the hour
    `simulate --month` replays). Month 0 is the plan itself, its schedule the whole
    horizon; a later month's schedule is its own day (its `months` left out: what it runs
    is that month's). The pools' warm headroom (`headroom`) is month 0's: a month states
    none of its own.

    Raises:
        MonthRefused: a plan without months, or a month it lacks (naming those it has).
    """
    if not plan.months:
        raise MonthRefused("the plan has no months (solve an instance with policy.horizon_months)")
    found = next((m for m in plan.months if m.month == month), None)
    if found is None:
        have = sorted(m.month for m in plan.months)
        raise MonthRefused(f"the plan has months {have[0]} to {have[-1]}, got {month}")
    if not found.hours:  # month 0: the plan's own hours, not repeated
        return plan
    largest: dict[tuple[str, str, str], ReplicaPool] = {}
    for hour in found.hours:
        for pool in hour.pools:
            key = (pool.workload, pool.region, pool.key)
            if key not in largest or pool.count > largest[key].count:
                largest[key] = pool
    busiest = max(sorted(found.hours, key=lambda h: h.hour), key=_busy)
    return plan.model_copy(
        update={
            "replicas": tuple(largest.values()),
            "scenarios": busiest.scenarios,
            "hours": found.hours,
            "committed": found.committed,
            "months": (),
        }
    )


def _busy(hour: Hour) -> tuple[int, float]:
    """(GPUs the hour's pools hold, requests/s they carry with no failure)."""
    load = sum(
        row.load_requests_per_s for s in hour.scenarios if s.name == "none" for row in s.pools
    )
    return sum(p.gpus or 0 for p in hour.pools), load


def schedule_object(plan: Plan, labels: dict[str, str]) -> dict | None:
    """The ConfigMap holding the plan's schedule (None for a static plan).

    Raises:
        DeployError: a schedule past a ConfigMap's 1 MiB (naming its size).
    """
    schedule = plan_schedule(plan)
    if schedule is None:
        return None
    text = json.dumps(schedule, separators=(",", ":"))
    if len(text.encode()) > MAX_SCHEDULE_BYTES:
        raise DeployError(
            f"the plan's schedule is {len(text.encode()):,} bytes of JSON; a ConfigMap "
            f"holds at most {MAX_SCHEDULE_BYTES:,} (fewer months or pools)"
        )
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": SCHEDULE_NAME,
            "labels": labels,
            "annotations": {SCHEDULE_ANNOTATION: "hours, committed, months of the plan"},
        },
        "data": {SCHEDULE_KEY: text},
    }


def is_schedule(document: Any) -> bool:
    """Whether a parsed Kubernetes object is a plan's schedule."""
    if not isinstance(document, dict) or document.get("kind") != "ConfigMap":
        return False
    metadata = document.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    return isinstance(annotations, dict) and SCHEDULE_ANNOTATION in annotations
