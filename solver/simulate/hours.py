"""Which hour of a plan the simulator replays: one UTC hour of an hourly plan, or of one
month of a plan with months (policy.horizon_months).

A static plan has one fleet and one load per scenario: its `replicas` and `scenarios`.
An hourly plan states both for every UTC hour (`Hour.pools`, `Hour.scenarios`: the
hour's period's pools, routing and phase loads at its warm rate, the replicas started
after a loss included), and its top-level `scenarios` are those of its peak hour (the
first hour of the period whose pools hold the most GPUs and, of those, carry the most
load: solver.time.solve). The hour replayed is a static view of the
plan: `replicas` = the hour's pools and the replicas it starts after a loss,
`scenarios` = the hour's, so that every pool is replayed at the load the planner planned
it for in that hour and the analytic column is that hour's promise.

    no --hour, no --month   the plan as it is: an hourly plan's peak hour
    --hour H                hour H of the plan (month 0 of a plan with months)
    --month M               month M's peak: month 0's is the plan's peak hour; a later
                            month's is its busiest hour, the first whose pools hold the
                            most GPUs and, of those, carry the most load (committed GPUs
                            may run as many replicas in the trough as at the peak)
    --hour H --month M      hour H of month M

An hour whose interactive pools run replicas on spot (policy.spot_confidence) is replayed
as the planner promised it: each such pool carries its warm load without the
`down_replicas` of its spot replicas that are down at once at that confidence
(`Hour.spot_pools`), so those are left out of the replay (the pool's count, and its
`count x label` and capacity in the hour's scenarios), and the words say so.
"""

from dataclasses import dataclass

from models.schema.traffic import HOURS_PER_DAY
from solver.plan.records import PoolLoad, ReplicaPool, ScenarioResult
from solver.plan.schema import Plan
from solver.plan.time_records import BatchSoak, Hour, SpotReplicas


class HourRefused(ValueError):
    """--hour or --month asked of a plan that has no such hour or month."""

    def __init__(self, option: str, message: str):
        super().__init__(message)
        self.option = option
        """The command-line option at fault (`--hour`, `--month`)."""


@dataclass(frozen=True)
class ReplayedHour:
    """The plan as one hour of it is replayed, and the words that name that hour."""

    plan: Plan
    """A static view: the hour's pools as `replicas`, the hour's `scenarios`."""
    words: str
    """E.g. `the peak hour, 14:00 UTC`, `month 2, 03:00 UTC`; '' for a static plan."""
    hour: int | None = None
    month: int | None = None
    soaked: tuple[BatchSoak, ...] = ()
    """The batch the hour's pools soak beside their own load (`Hour.batch_soak`): not in
    the view's scenario loads; replayed beside its pools' requests (solver.simulate.soak)."""
    day: tuple[Hour, ...] = ()
    """The 24 hours of the day (or month) the replayed hour belongs to; () for a static
    plan (solver.simulate.batch_deadline checks a batch deadline over them)."""


def utc(hour: int) -> str:
    """`14:00 UTC`."""
    return f"{hour:02d}:00 UTC"


def replayed_hour(plan: Plan, hour: int | None = None, month: int | None = None) -> ReplayedHour:
    """The view of `plan` at `hour` of `month` (the module text).

    Raises:
        HourRefused: an hour outside 0-23, --hour or --month on a plan without hours or
            months, a month the plan lacks, or an hour the plan states no scenarios for
            (a plan written before hours kept them).
    """
    if hour is not None and not 0 <= hour < HOURS_PER_DAY:
        raise HourRefused("--hour", f"must be a UTC hour of the day, 0 to 23, got {hour}")
    if month is not None:
        return _in_month(plan, hour, month)
    if hour is not None and not plan.hours:
        raise HourRefused(
            "--hour",
            "the plan is static: one fleet for the peak, no hours to pick (solve with an "
            "hourly_profile or policy.horizon_months for an hourly plan)",
        )
    if hour is None:
        return _peak(plan)
    months = "month 0, " if plan.months else ""
    return _view(
        plan, _hour(plan.hours, hour, "--hour"), f"{months}{utc(hour)}", hour, month, plan.hours
    )


def _peak(plan: Plan) -> ReplayedHour:
    """The plan as it is: a static plan, or an hourly plan's peak hour, viewed as that
    hour (its pools, not the plan's `replicas`: each pool at its largest count over the
    day, pools the peak hour does not run among them)."""
    at = next((s.hour for s in plan.scenarios if s.hour is not None), None)
    if at is None:
        return ReplayedHour(plan, "")
    months = ", month 0" if plan.months else ""
    words = f"the peak hour{months}, {utc(at)}"
    month = 0 if plan.months else None
    found = next((h for h in plan.hours if h.hour == at and h.scenarios), None)
    if found is None:  # a plan written before hours kept their scenarios
        return ReplayedHour(plan, words, at, month)
    return _view(plan, found, words, at, month, plan.hours)


def _in_month(plan: Plan, hour: int | None, month: int) -> ReplayedHour:
    if not plan.months:
        raise HourRefused(
            "--month",
            "the plan has no months (solve an instance with policy.horizon_months)",
        )
    found = next((m for m in plan.months if m.month == month), None)
    if found is None:
        have = sorted(m.month for m in plan.months)
        raise HourRefused("--month", f"the plan has months {have[0]} to {have[-1]}, got {month}")
    hours = found.hours or plan.hours  # month 0: the plan's own hours, not repeated
    if hour is None:
        if not found.hours:
            return _peak(plan)
        busiest = max(sorted(hours, key=lambda h: h.hour), key=_busy)
        words = f"the busiest hour of month {month}, {utc(busiest.hour)}"
        return _view(plan, _hour(hours, busiest.hour, "--month"), words, busiest.hour, month, hours)
    return _view(
        plan, _hour(hours, hour, "--hour"), f"month {month}, {utc(hour)}", hour, month, hours
    )


def _busy(hour: Hour) -> tuple[int, float]:
    """(GPUs the hour's pools hold, requests/s they carry with no failure): the busiest
    hour of a month holds the most GPUs, and of those carries the most load."""
    load = sum(
        row.load_requests_per_s for s in hour.scenarios if s.name == "none" for row in s.pools
    )
    return sum(p.gpus or 0 for p in hour.pools), load


def _hour(hours: tuple[Hour, ...], hour: int, option: str) -> Hour:
    found = next((h for h in hours if h.hour == hour), None)
    if found is None or not found.scenarios:
        raise HourRefused(
            option,
            f"the plan states no scenario loads for {utc(hour)} (a plan written before "
            "hours kept them): solve it again with `fleetplan solve --json`",
        )
    return found


def _view(
    plan: Plan, hour: Hour, words: str, at: int, month: int | None, day: tuple[Hour, ...]
) -> ReplayedHour:
    """The hour's pools (and the replicas it starts after a loss, in a configuration
    its warm pools do not run) as `replicas`, its scenarios as `scenarios`."""
    pools: list[ReplicaPool] = list(hour.pools)
    running = {(p.workload, p.region, p.label) for p in pools}
    for start in hour.failover_starts:
        key = (start.pool.workload, start.pool.region, start.pool.label)
        if key not in running:
            running.add(key)
            pools.append(start.pool)
    scenarios = hour.scenarios
    for spot in hour.spot_pools:
        pools, scenarios, down = _spot_down(pools, scenarios, spot)
        if down:
            words += f"; {down}"
    view = plan.model_copy(update={"replicas": tuple(pools), "scenarios": scenarios})
    return ReplayedHour(view, words, at, month, hour.batch_soak, day)


def _spot_down(
    pools: list[ReplicaPool], scenarios: tuple[ScenarioResult, ...], spot: SpotReplicas
) -> tuple[list[ReplicaPool], tuple[ScenarioResult, ...], str]:
    """The hour without the spot replicas of one pool that are down at once (the module
    text), and the words naming them ('' where none are down or none would be left)."""
    index = next(
        (
            i
            for i, p in enumerate(pools)
            if (p.workload, p.region, p.key) == (spot.workload, spot.region, spot.configuration)
        ),
        None,
    )
    down = spot.down_replicas
    if index is None or down <= 0 or pools[index].count <= down:
        return pools, scenarios, ""
    pool = pools[index]
    left = pool.count - down
    per_replica = (pool.gpus or 0) // pool.count if pool.gpus else None
    kept = pool.model_copy(
        update={"count": left, "gpus": None if per_replica is None else per_replica * left}
    )
    named = f"{pool.count} x {pool.label}"
    rows: list[ScenarioResult] = []
    for scenario in scenarios:
        loads: list[PoolLoad] = []
        for row in scenario.pools:
            if (row.workload, row.region) == (spot.workload, spot.region) and named in row.pools:
                capacity = max(
                    0.0, row.capacity_requests_per_s - down * pool.requests_per_s_per_replica
                )
                row = row.model_copy(
                    update={
                        "pools": tuple(
                            f"{left} x {pool.label}" if t == named else t for t in row.pools
                        ),
                        "capacity_requests_per_s": capacity,
                        "utilisation": row.load_requests_per_s / capacity if capacity > 0 else 0.0,
                    }
                )
            loads.append(row)
        rows.append(scenario.model_copy(update={"pools": tuple(loads)}))
    words = f"{down} of {spot.workload} {spot.region}'s {spot.replicas} spot replicas down"
    return [*pools[:index], kept, *pools[index + 1 :]], tuple(rows), words
