"""The tables of a plan and of its explanation, for the terminal and Markdown.

A plan: pools per region (with KV tiers and hit rate where a prefix cache is used), GPUs
by region and type, cost attribution, servers and power, binding constraints, utilisation
by scenario and the tiering report. An explanation adds the limiting factor of each
chosen configuration, the cost without each pool, slack by constraint family, routing by
GPU count and the engine effects that bind. The hourly plan's tables are in
time_tables.py.
"""

from typing import TYPE_CHECKING

from cli.render.attribution import attribution_table
from cli.render.failover_tables import failover_tables
from cli.render.summary_tables import (
    idle_wording,
    month_zero,
    power_price_words,
    price_text,
    summary_table,
    whole_unit_words,
)
from cli.render.tables import TableSpec
from models.schema.quantities import counted
from solver.plan.records import CapacityBand, ReplicaPool
from solver.plan.schema import Plan

if TYPE_CHECKING:  # rendering never needs the explanation's modules (levers, re-solves)
    from solver.analysis.explain import Explanation

BINDING_ROWS_SHOWN = 20
"""Binding constraints printed in the terminal (all of them go to --json)."""
UTILISATION_ROWS_SHOWN = 40
"""Rows of the utilisation table printed in the terminal: the most utilised, in scenario
order (all of them go to --json). A 10-region, 20-workload plan surviving any region
loss has ~1,600 (scenario, pool) rows, unreadable as text and a second of rendering."""


def plan_header(plan: Plan) -> list[str]:
    """The lines above the plan's tables (the status says "optimal" only when it is)."""
    lines = [
        f"{plan.instance}: {plan.status}, ${plan.cost_per_month or 0:,.0f}/month, "
        + gpu_counts(plan)
    ]
    if plan.idle_fraction is not None:
        months = "; each month's in the months table" if plan.months else ""
        lines.append(
            f"{idle_wording(plan)}: {plan.idle_fraction:.1%} of the GPU-hours paid{months}"
        )
    if plan.solver is not None:
        s = plan.solver
        gap = "" if s.mip_gap is None else f", gap {s.mip_gap:.3%}"
        lines.append(
            f"solver: {s.name} {s.version}, {s.runtime_s:.2f} s of solving{gap}; program: "
            f"{s.variables:,} variables ({s.integer_variables:,} integer), {s.constraints:,} "
            f"constraints, {counted(s.candidates, 'candidate configuration')}"
        )
    if plan.efficiency_note:
        lines.append(plan.efficiency_note)
    lines += procurement_lines(plan)
    lines += [f"note: {note}" for note in plan.notes]
    return lines


def gpu_counts(plan: Plan) -> str:
    """`16 GPUs bought, 10 used` (and the owned GPUs in use, when any): what the bill
    covers beside what the pools hold, from the plan's `gpus` table."""
    used = plan.total_gpus or 0
    if not plan.gpus:
        return f"{used} GPU{'' if used == 1 else 's'} used"
    bought = sum(use.purchased for use in plan.gpus)
    owned = sum(min(use.used, use.existing) for use in plan.gpus)
    text = f"{bought} GPU{'' if bought == 1 else 's'} bought, {used} used"
    return text + (f" ({owned} of them owned)" if owned else "")


def procurement_lines(plan: Plan) -> list[str]:
    """Demand growth, headroom and what the limit on configurations per pool costs."""
    lines = []
    if plan.demand_growth != 1.0 or plan.max_utilization != 1.0:
        lines.append(
            f"planned for {plan.demand_growth:g}x today's demand, pools at most "
            f"{plan.max_utilization:.0%} of their capacity at the SLO"
        )
    simple = plan.simplicity
    if simple is not None and simple.extra_cost_per_month is not None:
        lines.append(
            f"simplicity: at most {counted(simple.max_configs_per_pool, 'configuration')} per pool "
            + ("all day (configs_per_day) " if simple.row == "configs_per_day" else "")
            + f"costs ${simple.extra_cost_per_month:,.0f}/month over the unlimited plan "
            f"(${simple.cost_per_month_unlimited:,.0f}/month, "
            f"{counted(simple.configurations_unlimited, 'pool')})"
        )
    return lines


BUSIEST_SERVERS = "Servers at each GPU type's busiest hour (committed and rented by the hour)"
"""An hourly plan's `servers`: per GPU type, what its own busiest hour holds beyond the
existing fleet (solver.time.solve.peak_gpu_use), the reservation (the summary's orders,
`committed`) and the GPUs rented at that peak alike. Types may peak at different hours, so
the rows need not run at once: the power table counts one hour's (its busiest)."""
BUSIEST_SERVERS_NOTE = (
    "each GPU type at its own busiest hour: types that peak at different hours are not held "
    "at once, and the power table counts what one hour holds"
)


def site_tables(plan: Plan) -> list[TableSpec]:
    """Servers to buy, and power per region (with its shadow price where limited)."""
    tables = []
    if plan.servers:
        tables.append(
            TableSpec(
                month_zero(plan, BUSIEST_SERVERS if plan.hours else "Servers to buy"),
                ("region", "GPU", "servers", "GPUs per server"),
                tuple(
                    (s.region, s.gpu, str(s.count), str(s.gpus_per_server or "-"))
                    for s in plan.servers
                ),
                BUSIEST_SERVERS_NOTE if plan.hours else "",
            )
        )
    if plan.power_kw:
        capped = any(p.limit_kw is not None or p.limit_racks is not None for p in plan.power_kw)
        tables.append(
            TableSpec(
                month_zero(plan, "Power by region (every GPU installed, existing and bought)"),
                ("region", "kW", "power_kw limit", "$/month per kW", "racks", "racks limit"),
                tuple(
                    (
                        p.region,
                        f"{p.kw:,.1f}",
                        "-" if p.limit_kw is None else f"{p.limit_kw:,.0f}",
                        power_price_words(p),
                        "-" if p.racks is None else f"{p.racks:,.2f}",
                        "-" if p.limit_racks is None else str(p.limit_racks),
                    )
                    for p in plan.power_kw
                ),
                "a nonzero $/kW: power, not money, binds the region; 'in whole units': the kW "
                "left is less than one more server draws, so power binds though it has no "
                "price (the pricing LP keeps the plan's servers)"
                if capped
                else "",
            )
        )
    return tables


def _prefix_cache(pool: ReplicaPool) -> tuple[str, str]:
    """The KV tiers a pool uses and its effective hit rate, as table cells."""
    if pool.prefix_hit_rate is None:
        return ("-", "-")
    return ("+".join(pool.kv_tiers_used or ()) or "-", f"{pool.prefix_hit_rate:.1%}")


def plan_tables(plan: Plan) -> list[TableSpec]:
    """The plan as tables: pools per region, GPUs, binding constraints, utilisation.

    A region with a prefix cache in some pool adds the KV tiers each pool uses and its
    effective hit rate at its size (`ReplicaPool.kv_tiers_used`, `prefix_hit_rate`);
    the buyer's summary first."""
    tables = [t for t in (summary_table(plan),) if t is not None]
    for region in dict.fromkeys(pool.region for pool in plan.replicas):
        pools = [p for p in plan.replicas if p.region == region]
        cached = any(p.prefix_hit_rate is not None for p in pools)
        banded = any(p.capacity_band is not None for p in pools)
        columns = (
            "workload",
            "GPU",
            "precision",
            "TP x PP",
            "role",
            "replicas",
            "GPUs",
            "req/s per replica",
        )
        tables.append(
            TableSpec(
                f"{region}",
                columns
                + (("model error",) if banded else ())
                + ("limit",)
                + (("KV tiers", "hit rate") if cached else ()),
                tuple(
                    (
                        _served(p),
                        p.gpu,
                        str(p.precision),
                        f"{p.tp} x {p.pp}"
                        + (f" x dp{p.dp}" if p.dp > 1 else "")
                        + (f" ep{p.ep}" if p.ep > 1 else "")
                        + (f"+{p.redundant_experts}" if p.redundant_experts else ""),
                        str(p.role) + (f", spec {p.speculative}" if p.speculative else ""),
                        str(p.count),
                        str(p.gpus),
                        _per_replica(p),
                    )
                    + ((band_cell(p.capacity_band),) if banded else ())
                    + (str(p.limit or "-"),)
                    + (_prefix_cache(p) if cached else ())
                    for p in pools
                ),
                band_note(pools) if banded else "",
            )
        )
    price = "on-demand $/GPU-h" if plan.hours else "$/GPU-h"  # GpuUse: the list price
    tables.append(
        TableSpec(
            month_zero(plan, "GPUs by region and type"),
            ("region", "GPU", "used", "existing", "bought", "available", price, "$/month"),
            tuple(
                (
                    u.region,
                    u.gpu,
                    str(u.used),
                    str(u.existing),
                    str(u.purchased),
                    str(u.available),
                    price_text(u.price_per_gpu_hour),
                    f"{u.cost_per_month:,.0f}",
                )
                for u in plan.gpus
            ),
            f"total ${plan.cost_per_month or 0:,.0f}/month"
            + (
                "; $/month is the bill as the hours pay it: committed GPUs at the reserved "
                "price every hour, rented and spot GPUs by the hour (Committed (reserved) GPUs)"
                if plan.hours
                else ""
            ),
        )
    )
    if plan.cost_attribution:
        tables.append(attribution_table(plan))
    tables += site_tables(plan)
    shown = plan.binding[:BINDING_ROWS_SHOWN]
    hidden = len(plan.binding) - len(shown)
    tables.append(
        TableSpec(
            month_zero(plan, "Binding constraints"),
            ("constraint", "slack", "shadow price", "unit"),
            tuple(
                (
                    b.name,
                    _num(b.slack),
                    f"in whole units: {whole_unit_words(b)}"
                    if b.in_whole_units
                    else f"{b.shadow_price:,.2f}",
                    b.unit,
                )
                for b in shown
            ),
            f"{hidden} more in --json" if hidden > 0 else "",
        )
    )
    tables.append(_utilisation_table(plan))
    return tables + failover_tables(plan) + tiering_tables(plan)


def _utilisation_table(plan: Plan) -> TableSpec:
    """Load against capacity of every pool in every scenario; beyond
    `UTILISATION_ROWS_SHOWN` rows, the most utilised ones (the rest are said in a note)."""
    rows = [(s.name, p) for s in plan.scenarios for p in s.pools]
    note = ""
    if len(rows) > UTILISATION_ROWS_SHOWN:
        ranked = sorted(range(len(rows)), key=lambda i: -rows[i][1].utilisation)
        kept = sorted(ranked[:UTILISATION_ROWS_SHOWN])
        lowest = rows[ranked[UTILISATION_ROWS_SHOWN - 1]][1].utilisation
        note = (
            f"the {UTILISATION_ROWS_SHOWN} most utilised of {len(rows):,} rows; the other "
            f"{len(rows) - UTILISATION_ROWS_SHOWN:,} (at most {lowest:.0%}) in --json"
        )
        rows = [rows[i] for i in kept]
    return TableSpec(
        month_zero(plan, "Utilisation by scenario"),
        ("scenario", "workload", "region", "phase", "load req/s", "capacity req/s", "util"),
        tuple(
            (
                name,
                p.workload,
                p.region,
                p.phase,
                _num(p.load_requests_per_s),
                _num(p.capacity_requests_per_s),
                f"{p.utilisation:.0%}",
            )
            for name, p in rows
        ),
        note
        or (
            "capacity counts the replicas started after each loss (warm and started: below)"
            if any(s.started_replicas for s in plan.scenarios)
            else ""
        ),
    )


def _served(pool) -> str:
    """A dedicated pool's workload; a shared group's members, one row for the group."""
    if pool.shared:
        return "shared: " + ", ".join(pool.workloads)
    return pool.workload


def band_cell(found: CapacityBand | None) -> str:
    """`-11%/+14%` (the 10th / 90th percentile of predicted / measured - 1 on held-out
    rows), with BORROWED or UNMEASURED where the band is not the pool's own."""
    if found is None:
        return "-"
    text = f"{found.p10:+.0%}/{found.p90:+.0%}"
    if found.flag:
        return f"{text} {found.flag.upper()}"
    return f"{text} borrowed" if found.regime == "borrowed" else text


def band_note(pools: list[ReplicaPool]) -> str:
    """The table's note: what the model error column means, each band in words, and the
    factor `policy.capacity_margin: auto` applied."""
    bands = {p.capacity_band.text: p.capacity_band for p in pools if p.capacity_band}
    lines = ["model error: predicted / measured - 1 on held-out rows, 10th / 90th percentile"]
    lines += [f"  {text}" for text in bands]
    factors = {
        f"{p.gpu} {p.capacity_band.capacity_factor:.3f}"
        for p in pools
        if p.capacity_band and p.capacity_band.capacity_factor != 1.0
    }
    if factors:
        lines.append("capacity_margin auto: capacity per replica x " + ", ".join(sorted(factors)))
    return "\n".join(lines)


def _per_replica(pool) -> str:
    """Capacity per replica; for a shared group, each member's share."""
    if pool.shared:
        return ", ".join(f"{m.workload} {m.requests_per_s_per_replica:.3g}" for m in pool.members)
    return _num(pool.requests_per_s_per_replica)


def tiering_tables(plan: Plan) -> list[TableSpec]:
    """The tiering report (policy.colocation) as a table, empty without one."""
    t = plan.tiering
    if t is None:
        return []
    idle = "idle over the day" if plan.hours else "idle at peak"
    if t.cost_per_month_dedicated is None or t.gpus_dedicated is None:
        compared = f"{idle} {t.idle_fraction:.1%} with co-location; " + (
            "not solved without it (an hourly plan's periods program is run once)"
            if plan.hours
            else "no plan without it"
        )
    else:
        before = "-" if t.idle_fraction_dedicated is None else f"{t.idle_fraction_dedicated:.1%}"
        saved = "-" if t.saving_per_month is None else f"${t.saving_per_month:,.0f}/month"
        compared = (
            f"{idle}: {before} with dedicated pools ({counted(t.gpus_dedicated, 'GPU')}, "
            f"${t.cost_per_month_dedicated:,.0f}/month) -> {t.idle_fraction:.1%} with "
            f"co-location; sharing saved {saved}"
        )
    note = (
        f"{compared}. Pays the bills: "
        f"{', '.join(t.pays_the_bills) or 'none'}; {t.note}. "
        f"{counted(t.templates, 'group template')} ({t.enumeration_s:.1f} s)."
    )
    search = plan.colocation
    if search is not None and search.packing_cost is not None and search.lp_bound is not None:
        gap = "-" if search.gap is None else f"{search.gap:.1%}"
        note += (
            f" Groups by column generation: {search.groups_checked} checked in "
            f"{search.rounds} rounds; the tail's packing at peak costs "
            f"${search.packing_cost:,.0f}/month, at least ${search.lp_bound:,.0f} (LP bound, "
            f"gap {gap}; {search.note.rsplit('; ', 1)[-1]})."
        )
    if plan.capacity_unit:
        note += f" Capacity unit: {plan.capacity_unit}."
    return [
        TableSpec(
            "Tiering",
            ("workload", "tier", "peak req/s", "utilisation at peak", "shared groups"),
            tuple(
                (
                    w.workload,
                    w.tier,
                    _num(w.peak_requests_per_s),
                    f"{w.utilisation:.0%}",
                    "; ".join(w.groups) or "-",
                )
                for w in t.workloads
            ),
            note,
        )
    ]


def gpu_count_tables(explanation: "Explanation") -> list[TableSpec]:
    """What routing by GPU count would do, where a workload has several configurations
    in a region."""
    rows = explanation.gpu_count_routing
    if not rows:
        return []

    def ms(value: float | None) -> str:
        return "unbounded" if value is None else f"{value:,.0f}"

    return [
        TableSpec(
            "Routing by GPU count instead of by capacity",
            (
                "workload",
                "region",
                "pool",
                "weight (capacity)",
                "weight (GPUs)",
                "utilisation",
                "p99 TTFT ms",
                "target",
                "p99 TPOT ms",
                "target",
                "breaks SLO",
            ),
            tuple(
                (
                    r.workload,
                    r.region,
                    r.configuration,
                    f"{r.weight_by_capacity:.0%}",
                    f"{r.weight_by_gpus:.0%}",
                    f"{r.utilisation:.0%}",
                    ms(r.ttft_p99_ms),
                    ms(r.ttft_target_ms),
                    ms(r.tpot_p99_ms),
                    ms(r.tpot_target_ms),
                    "yes" if r.breaks_slo else "no",
                )
                for r in rows
            ),
            "the plan routes by capacity (routing_weight); by GPU count the slower pool "
            "gets more than it carries at its SLO",
        )
    ]


def explanation_tables(explanation: "Explanation") -> list[TableSpec]:
    """The explanation as tables."""
    plan_parts = plan_tables(explanation.plan)
    plan = explanation.plan
    binding = next(t for t in plan_parts if t.title == month_zero(plan, "Binding constraints"))
    utilisation = next(
        t for t in plan_parts if t.title == month_zero(plan, "Utilisation by scenario")
    )
    return [
        binding,
        TableSpec(
            "Limiting factor of each chosen configuration",
            (
                "workload",
                "region",
                "configuration",
                "replicas",
                "req/s per replica",
                "limit",
                "why",
            ),
            tuple(
                (
                    n.workload,
                    n.region,
                    n.configuration,
                    str(n.count),
                    _num(n.requests_per_s_per_replica),
                    str(n.limit),
                    n.reason,
                )
                for n in explanation.limits
            ),
        ),
        TableSpec(
            "Without each chosen pool",
            (
                "workload",
                "region",
                "configuration",
                "cost without",
                "extra $/month",
                "used instead",
            ),
            tuple(
                (
                    a.workload,
                    a.region,
                    a.configuration,
                    "-" if a.cost_without_per_month is None else f"{a.cost_without_per_month:,.0f}",
                    "-" if a.extra_cost_per_month is None else f"{a.extra_cost_per_month:+,.0f}",
                    "; ".join(a.replaced_by),
                )
                for a in explanation.alternatives
            ),
            explanation.alternative_method,
        ),
        utilisation,
        *failover_tables(plan),  # the warm and started spare its note points to, and moves
        TableSpec(
            "Slack by constraint family",
            ("family", "rows", "tight", "min slack", "dual unit", "requires"),
            tuple(
                (
                    f.family,
                    str(f.rows),
                    str(f.tight_rows),
                    _num(f.min_slack),
                    f.unit,
                    f.description,
                )
                for f in explanation.families
            ),
        ),
        *tiering_tables(explanation.plan),
        *gpu_count_tables(explanation),
        *engine_effect_tables(explanation),
    ]


def engine_effect_tables(explanation: "Explanation") -> list[TableSpec]:
    """Which engine effects bind each simulated pool's p99 (none when not simulated)."""
    if not explanation.engine_effects:
        return []
    names = ("batching", "preemption", "interference", "hol_blocking")
    shown = {  # the JSON keeps the effects' names; the table says them in words
        "batching": "batching",
        "preemption": "preemption",
        "interference": "prefill interference",
        "hol_blocking": "head-of-line blocking",
    }

    def ms(value: float | None) -> str:
        return "unbounded" if value is None else f"{value:,.1f}"

    return [
        TableSpec(
            "Engine effects that bind (simulated p99, ms, with each effect off)",
            ("workload", "region", "pool", "p99", "all on", *(shown[n] for n in names), "binding"),
            tuple(
                (
                    e.workload,
                    e.region,
                    e.pool,
                    e.metric.upper(),
                    ms(e.p99_ms),
                    *(ms(e.off_p99_ms.get(name)) for name in names),
                    ", ".join(shown.get(name, name) for name in e.binding) or "none",
                )
                for e in explanation.engine_effects
            ),
            explanation.engine_effects_method,
        )
    ]


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) >= 0.01 or value == 0 else f"{value:.2g}"
