"""Tables of an hourly plan (issue 11): the 24 hours, commitments, headroom and scaling
thresholds, error budget per failure scenario, batch placement and the months."""

from cli.render.summary_tables import month_zero, power_price_words, price_text
from cli.render.tables import TableSpec
from models.schema.quantities import counted
from solver.analysis.report_time import MonthsByRegion, months_by_region
from solver.plan.schema import Plan, gap_percent
from solver.plan.time_records import Month, ScenarioBudgetUse


def time_tables(plan: Plan) -> list[TableSpec]:
    """The hourly plan's tables (none for a single-period plan)."""
    if not plan.hours:
        return []
    tables = [
        TableSpec(
            month_zero(
                plan,
                "Hours (UTC): replicas, GPUs in use, and how: owned / reserved / rented on "
                "demand / spot",
            ),
            (
                "hour",
                "period",
                "replicas",
                "GPUs",
                "owned",
                "reserved",
                "on demand",
                "spot",
                "$/hour",
            ),  # owned + reserved + on demand + spot = GPUs, or less than a server more
            tuple(
                (
                    f"{h.hour:02d}",
                    f"{h.period:02d}",
                    ", ".join(f"{p.workload}@{p.region} {p.count}" for p in h.pools),
                    str(sum(g.used for g in h.gpus)),
                    f"{sum(g.existing for g in h.gpus):g}",
                    f"{sum(g.reserved for g in h.gpus):g}",
                    f"{sum(g.on_demand for g in h.gpus):g}",
                    f"{sum(g.spot for g in h.gpus):g}",
                    f"{h.cost_per_hour:,.2f}",
                )
                for h in plan.hours
            ),
            note=f"idle GPU-hours per day: {plan.idle_gpu_hours_per_day or 0:,.1f}; "
            f"idle replica-hours per day: {plan.idle_replica_hours_per_day or 0:,.1f}"
            + (
                "; on demand: rented in whole servers where GPUs come in servers, so a row may "
                "add up to less than a server more than its GPUs; $/hour pays every "
                "committed GPU, in use or not (committed below)"
                if plan.committed
                else ""
            ),
        )
    ]
    if plan.committed:
        tables.append(
            TableSpec(
                month_zero(plan, "Committed (reserved) GPUs"),
                ("region", "GPU", "committed", "reserved $/GPU-h", "on-demand $/GPU-h"),
                tuple(
                    (
                        c.region,
                        c.gpu,
                        f"{c.committed_gpus:g}",
                        price_text(c.reserved_price_per_gpu_hour),
                        price_text(c.on_demand_price_per_gpu_hour),
                    )
                    for c in plan.committed
                ),
            )
        )
    spot = spot_table(plan)
    if spot is not None:
        tables.append(spot)
    if plan.headroom:
        tables.append(
            TableSpec(
                month_zero(plan, "Warm headroom and scaling thresholds per pool"),
                (
                    "pool",
                    "lag s",
                    "ramp req/s/min",
                    "headroom req/s",
                    "replicas",
                    "KV usage >",
                    "queue depth >",
                    "SLO edge",
                ),
                tuple(
                    (
                        f"{h.workload}@{h.region} {h.configuration}",
                        f"{h.lag_s:g}",
                        f"{h.steepest_ramp_rps_per_minute:.3f}",
                        f"{h.headroom_rps:.2f}",
                        str(h.headroom_replicas),
                        f"{h.kv_usage_scale_out:.0%}",
                        f"{h.queue_depth_scale_out:.2f}",
                        "-" if h.queue_depth_slo_edge is None else f"{h.queue_depth_slo_edge:.1f}",
                    )
                    for h in plan.headroom
                ),
                note=plan.headroom[0].signal_note,
            )
        )
    if plan.error_budget_minutes_used:
        tables.append(
            TableSpec(
                "Error budget per failure scenario (worst UTC hour)",
                (*BUDGET_COLUMNS, "expected min/year"),
                tuple(
                    (
                        *_budget_cells(b),
                        "-"
                        if b.expected_burn_minutes_per_year is None
                        else f"{b.expected_burn_minutes_per_year:.2f}",
                    )
                    for b in plan.error_budget_minutes_used
                ),
            )
        )
    if plan.batch:
        tables.append(
            TableSpec(
                "Batch: soaked into the trough or dedicated (chosen with the fleet)",
                (
                    "workload",
                    "region",
                    "req/day",
                    "soaked",
                    "limit",
                    "idle before",
                    "idle after",
                    "dedicated",
                    "break-even $/GPU-h",
                ),
                tuple(
                    (
                        b.workload,
                        b.region,
                        f"{b.requests_per_day:,.0f}",
                        f"{b.soaked_requests_per_day:,.0f}",
                        b.soak_limit,
                        f"{b.idle_replica_hours_before:.1f}",
                        f"{b.idle_replica_hours_after:.1f}",
                        f"{b.dedicated_replicas} x {b.dedicated_configuration} ({b.dedicated_tier})"
                        if b.dedicated_replicas
                        else "-",
                        "-"
                        if b.breakeven_price_per_gpu_hour is None
                        else f"{b.breakeven_price_per_gpu_hour:.2f}",
                    )
                    for b in plan.batch
                ),
            )
        )
    if plan.months:
        budgets = month_budgets(plan)
        if budgets:
            tables.append(budgets)
        tables.append(
            TableSpec(
                "Months: commit, order and pay",
                (
                    "month",
                    "growth",
                    "peak GPUs",
                    "owned",
                    "bought (ordered in)",
                    "ordered",
                    "on-demand GPU-h",
                    "idle",
                    "$/month",
                    "solved",
                ),
                tuple(
                    (
                        str(m.month),
                        f"{m.growth_factor:.3f}",
                        f"{sum(o.peak_need_gpus for o in m.offers):g}",
                        f"{sum(o.owned_gpus for o in m.offers):g}",
                        _bought(m),
                        f"{sum(o.ordered_gpus for o in m.offers):g}",
                        f"{sum(o.on_demand_gpu_hours for o in m.offers):,.0f}",
                        "-" if m.idle_fraction is None else f"{m.idle_fraction:.1%}",
                        f"{m.cost_per_month:,.0f}",
                        _solved(m),
                    )
                    for m in plan.months
                ),
                (
                    ""
                    if plan.horizon_cost is None
                    else f"over the {counted(len(plan.months), 'month')}: "
                    f"${plan.horizon_cost:,.0f}; "
                )
                + "idle: the month's day's GPU-hours paid that serve nothing; solved: the"
                " month's own plan, optimal or its gap to its bound (each month has its"
                " share of the time limit; 'time limit': its solve stopped there, its best"
                " plan kept)",
            )
        )
        tables.append(months_table(months_by_region(plan)))
        power = month_power_table(plan)
        if power is not None:
            tables.append(power)
        orders = [(m.month, o) for m in plan.months for o in m.servers_ordered]
        if orders:
            tables.append(
                TableSpec(
                    "Servers to order (reserved, whole servers)",
                    ("order in month", "serving from", "region", "GPU", "servers", "GPUs each"),
                    tuple(
                        (
                            f"m{o.order_month}",
                            f"m{month}",
                            o.region,
                            o.gpu,
                            str(o.servers),
                            str(o.gpus_per_server),
                        )
                        for month, o in sorted(orders, key=lambda x: (x[1].order_month, x[0]))
                    ),
                    "a negative month orders before the horizon starts (month 0's reservation)",
                )
            )
    return tables


def spot_table(plan: Plan) -> TableSpec | None:
    """Interactive replicas on spot (`hours[].spot_pools`, policy.spot_confidence): per
    pool and run of consecutive UTC hours alike, the replicas on spot, the share u of the
    time one is down and the replicas down at once the pool is sized without."""
    runs: list[list] = []  # [first hour, last hour, record]
    for hour in plan.hours:
        for record in hour.spot_pools:
            last = next((r for r in reversed(runs) if _same_pool(r[2], record)), None)
            if last is not None and last[1] == hour.hour - 1 and last[2] == record:
                last[1] = hour.hour
            else:
                runs.append([hour.hour, hour.hour, record])
    if not runs:
        return None
    return TableSpec(
        "Spot replicas in interactive pools (UTC hours)",
        ("hours", "pool", "on spot", "down share u", "down at once"),
        tuple(
            (
                f"{first:02d}" if first == last else f"{first:02d}-{last:02d}",
                f"{r.workload}@{r.region} {r.configuration}",
                str(r.replicas),
                f"{r.down_fraction:.2%}",
                str(r.down_replicas),
            )
            for first, last, r in runs
        ),
        "a spot replica is down u = lambda T / (1 + lambda T) of the time (T: its start "
        "plus policy.scale_detection_s); each pool carries its warm load without the "
        "replicas down at once at policy.spot_confidence (Poisson quantile of n u)",
    )


def _same_pool(a, b) -> bool:
    return (a.workload, a.region, a.configuration) == (b.workload, b.region, b.configuration)


BUDGET_COLUMNS = (
    "scenario",
    "workload",
    "hour",
    "shortfall req/s",
    "minutes used",
    "budget",
    "started after loss",
)
"""The columns of an error budget row (`_budget_cells`), in the day's table and the months'."""


def _budget_cells(b: ScenarioBudgetUse) -> tuple[str, ...]:
    """One failure scenario's error budget at its worst UTC hour, as `BUDGET_COLUMNS`."""
    return (
        b.scenario,
        b.workload,
        f"{b.worst_hour:02d}",
        f"{b.shortfall_rps:.2f}",
        f"{b.budget_minutes_used:.2f}",
        f"{b.budget_minutes:.1f}",
        str(b.started_replicas),
    )


def month_budgets(plan: Plan) -> TableSpec | None:
    """Each month's error budget per region loss (`months[].error_budget_minutes_used`;
    month 0: the plan's own): a loss spends more of the budget as demand grows."""
    rows = [
        (str(m.month), *_budget_cells(b))
        for m in plan.months
        for b in (m.error_budget_minutes_used if m.month else plan.error_budget_minutes_used)
    ]
    if not rows:
        return None
    return TableSpec(
        "Months: error budget per failure scenario (worst UTC hour of each month)",
        ("month", *BUDGET_COLUMNS),
        tuple(rows),
        "each month's loss at its own grown demand, against the same monthly budget",
    )


def _bought(month: Month) -> str:
    """Committed GPUs that start serving this month, and the month their order was placed
    (negative: before the horizon)."""
    bought = [o for o in month.offers if o.bought_gpus > 0]
    if not bought:
        return "0"
    months = sorted({o.order_month for o in bought if o.order_month is not None})
    return f"{sum(o.bought_gpus for o in bought):g} (" + ", ".join(f"m{m}" for m in months) + ")"


def months_table(months: MonthsByRegion) -> TableSpec:
    """$ per month per region, each month's total, and the horizon's."""
    rows = [
        (f"m{m}", *(f"{c:,.0f}" for c in costs), f"{total:,.0f}")
        for m, costs, total in zip(months.months, months.cost, months.month_totals, strict=True)
    ]
    rows.append(
        (
            "horizon",
            *(f"{c:,.0f}" for c in months.by_region_totals),
            f"{months.horizon_total:,.0f}",
        )
    )
    return TableSpec(
        "Months by region ($)",
        ("month", *months.regions, "total"),
        tuple(rows),
        f"over the {counted(len(months.months), 'month')}: ${months.horizon_total:,.0f}",
    )


def month_power_table(plan: Plan) -> TableSpec | None:
    """kW used of the cap per region and month, and the cap's $/month per kW where it
    binds (regions with a declared power_kw only; None when no region declares one)."""
    capped = list(
        dict.fromkeys(p.region for m in plan.months for p in m.power_kw if p.limit_kw is not None)
    )
    if not capped:
        return None
    rows = []
    for m in plan.months:
        at = {p.region: p for p in m.power_kw}
        cells = []
        for region in capped:
            p = at.get(region)
            if p is None:
                cells.append("0")
                continue
            cell = f"{p.kw:,.1f} of {p.limit_kw:,.1f}"
            if p.shadow_price_per_kw:
                cell += f" ({p.shadow_price_per_kw:,.2f} $/month per kW)"
            elif p.whole_unit_kw:
                cell += f" ({power_price_words(p)})"
            cells.append(cell)
        rows.append((f"m{m.month}", *cells))
    return TableSpec(
        "Months: power by region (kW of power_kw)",
        ("month", *capped),
        tuple(rows),
        "the GPUs installed in the month's busiest hour, owned and bought (what the cap bounds in "
        "every period); where "
        "the cap binds, the $/month one more kW saves in that month (its own pricing LP); "
        "'in whole units': the kW left is less than one more server draws, so the cap sets "
        "the month's plan though it has no price",
    )


def _solved(month: Month) -> str:
    """A month's own plan: "optimal", "gap X%" or "gap unknown", after "time limit, "
    where its solve stopped there ("-" in a plan written before months stated it)."""
    if not month.status:
        return "-"
    if month.status == "optimal":
        return "optimal"
    gap = "gap unknown" if month.mip_gap is None else f"gap {gap_percent(month.mip_gap)}"
    return f"time limit, {gap}" if month.stopped_at_limit else gap
