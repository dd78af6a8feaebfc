"""Failover as it happens: who moves where in each scenario, and per region the warm spare
against the replicas started after the loss (hourly plans with failover_start).

A move from a healthy region (`Move.from_lost_region` False) is the optimum serving some
of a survivor's own users in a neighbour to make room near the lost region's users; the
README ("Why healthy regions' users move") explains it.
"""

from cli.render.summary_tables import month_zero
from cli.render.tables import TableSpec
from models.schema.quantities import counted
from solver.plan.schema import Plan

MOVE_ROWS_SHOWN = 40
"""Rows of the moves table printed in the terminal (all of them go to --json)."""


def failover_tables(plan: Plan) -> list[TableSpec]:
    """The moves table (when any scenario moves users) and the warm-vs-started table
    (when any loss starts replicas)."""
    return [t for t in (_moves_table(plan), _spare_table(plan)) if t is not None]


def _moves_table(plan: Plan) -> TableSpec | None:
    rows = [(s.name, m) for s in plan.scenarios if s.name != "none" for m in s.moves]
    if not rows:
        return None
    healthy = sum(1 for _, m in rows if not m.from_lost_region)
    note = (
        f"{counted(healthy, 'move')} of a healthy region's users: the optimum serves them in a "
        "neighbour to make room nearer the lost region's users (README: why healthy "
        "regions' users move)"
        if healthy
        else ""
    )
    if len(rows) > MOVE_ROWS_SHOWN:
        note = (note + "; " if note else "") + (
            f"the first {MOVE_ROWS_SHOWN} of {len(rows):,} moves; all in --json"
        )
        rows = rows[:MOVE_ROWS_SHOWN]
    return TableSpec(
        month_zero(plan, "Who moves where, by scenario"),
        ("scenario", "workload", "from", "to", "req/s", "RTT ms", "whose users"),
        tuple(
            (
                name,
                m.workload,
                m.from_region,
                m.to_region,
                f"{m.requests_per_s:,.2f}",
                f"{m.rtt_ms:g}",
                "the lost region's" if m.from_lost_region else "a healthy region's",
            )
            for name, m in rows
        ),
        note,
    )


def _spare_table(plan: Plan) -> TableSpec | None:
    if not any(s.started_replicas for s in plan.scenarios):
        return None
    rows = []
    for scenario in plan.scenarios:
        if not scenario.started_replicas:
            continue
        started = {}
        for pool in scenario.started_replicas:
            key = (pool.workload, pool.region)
            started.setdefault(key, []).append(f"{pool.count} x {pool.label}")
        for load in scenario.pools:
            key = (load.workload, load.region)
            if not load.phase.startswith("unified"):
                continue
            warm = load.capacity_requests_per_s - load.started_requests_per_s
            rows.append(
                (
                    scenario.name,
                    load.workload,
                    load.region,
                    f"{load.load_requests_per_s:,.2f}",
                    f"{warm:,.2f}",
                    ", ".join(started.get(key, ())) or "-",
                    f"{load.started_requests_per_s:,.2f}",
                    f"{load.utilisation:.0%}",
                )
            )
    hour = next((s.hour for s in plan.scenarios if s.hour is not None), None)
    return TableSpec(
        month_zero(
            plan,
            "Warm and started spare after each loss"
            + ("" if hour is None else f" (the fleet of UTC hour {hour})"),
        ),
        (
            "scenario",
            "workload",
            "region",
            "load req/s",
            "warm req/s",
            "started",
            "started req/s",
            "util",
        ),
        tuple(rows),
        "started replicas serve after policy.failover_start_s; until then the warm "
        "survivors carry the load and the shortfall is paid from the error budget",
    )
