"""The one-file HTML report: the plan's tables and charts, every chart an inline SVG drawn
by matplotlib (text as paths), no script and no external file: it opens offline, in any
browser, forever.

Sections, the buyer's first: the summary (cost per month and over the horizon, GPUs bought
by region and type, servers to order and when, what binds); for an hourly plan the day's
chart (demand, warm capacity, committed vs on-demand GPUs) and the months per region with
the horizon's total (`solver.analysis.report_time`); reservations and servers; power; the
cost split (by phase for a single-period plan, reserved / on demand / spot for an hourly
one); utilisation by scenario as a heat map; per chosen configuration the roofline, the
latency-vs-load hockey stick and the throughput frontier (`solver.analysis.report_data`);
then the remaining plan tables.
"""

import html
import io
from dataclasses import dataclass, field

from cli.render.plan_tables import BUSIEST_SERVERS
from cli.render.summary_tables import MONTH_ZERO, month_zero
from cli.render.tables import TableSpec
from models.io.output_files import terminal_safe
from models.io.output_kinds import HTML_OPENING
from solver.analysis.capacity_bands import pools_run
from solver.analysis.report_data import ConfigCharts
from solver.analysis.report_time import CostSplitRow, DayChart
from solver.plan.schema import Plan

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
caption { caption-side: bottom; text-align: left; color: #555; font-size: 0.85em; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
.chart svg { width: 340px; height: auto; }
.wide .chart svg { width: 700px; }
.note { color: #555; font-size: 0.9em; }
"""


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "fleetplan"  # stable ids: the same plan, same file
    matplotlib.rcParams["text.parse_math"] = False  # names are text: "$x^$" drawn as written
    import matplotlib.pyplot as plt

    return plt


def _svg(figure) -> str:
    buffer = io.StringIO()
    # no date in the SVG's metadata: the same plan gives the same file, byte for byte
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    _pyplot().close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg") :]


def _chart(title: str, svg: str) -> str:
    return f'<figure class="chart" data-chart="{html.escape(title)}">{svg}</figure>'


def table_html(spec: TableSpec) -> str:
    """One table spec as an HTML table."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in spec.columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>"
        for row in spec.rows
    )
    caption = f"<caption>{html.escape(spec.note)}</caption>" if spec.note else ""
    return (
        f"<h3>{html.escape(spec.title)}</h3><table>{caption}<thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def cost_split_svg(plan: Plan) -> str:
    """Stacked bars: $/month of each workload and region, prefill below decode."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(6, 3))
    rows = plan.cost_attribution
    labels = [f"{a.workload}\n{a.region}" for a in rows]
    prefill = [a.cost_per_month * a.prefill_share for a in rows]
    decode = [a.cost_per_month * a.decode_share for a in rows]
    axes.bar(labels, prefill, label="prefill", color="#4c72b0")
    axes.bar(labels, decode, bottom=prefill, label="decode", color="#dd8452")
    axes.set_ylabel("$ / month")
    axes.set_title("Cost split by phase")
    axes.legend()
    return _svg(figure)


def utilisation_svg(plan: Plan) -> str:
    """Heat map: utilisation of every pool phase (rows) in every scenario (columns)."""
    import numpy as np

    plt = _pyplot()
    scenarios = [s.name for s in plan.scenarios]
    keys = list(
        dict.fromkeys((p.workload, p.region, p.phase) for s in plan.scenarios for p in s.pools)
    )
    grid = np.full((len(keys), len(scenarios)), np.nan)
    for j, scenario in enumerate(plan.scenarios):
        for p in scenario.pools:
            grid[keys.index((p.workload, p.region, p.phase)), j] = p.utilisation
    figure, axes = plt.subplots(figsize=(1.2 + 1.1 * len(scenarios), 0.8 + 0.4 * len(keys)))
    image = axes.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    axes.set_xticks(range(len(scenarios)), scenarios, rotation=30, ha="right")
    axes.set_yticks(range(len(keys)), [" ".join(k) for k in keys])
    for i in range(len(keys)):
        for j in range(len(scenarios)):
            if not np.isnan(grid[i, j]):
                colour = "white" if grid[i, j] < 0.6 else "black"
                axes.text(j, i, f"{grid[i, j]:.0%}", ha="center", va="center", color=colour)
    figure.colorbar(image, ax=axes, label="load / capacity")
    axes.set_title("Utilisation by scenario")
    return _svg(figure)


def roofline_svg(charts: ConfigCharts) -> str:
    """Log-log roofline: achieved FLOP/s per GPU against FLOPs per HBM byte."""
    import numpy as np

    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(4.5, 3.4))
    intensities = [p.flops_per_byte for p in charts.roofline] or [1.0]
    ridge = charts.peak_flops_per_s / charts.hbm_bytes_per_s
    low, high = min([*intensities, ridge]) / 10, max([*intensities, ridge]) * 10
    x = np.geomspace(low, high, 100)
    axes.loglog(
        x,
        np.minimum(charts.peak_flops_per_s, charts.hbm_bytes_per_s * x),
        "k-",
        lw=1,
        label="decode roof",
    )
    if charts.prefill_flops_per_s > charts.peak_flops_per_s:
        axes.loglog(
            x,
            np.minimum(charts.prefill_flops_per_s, charts.hbm_bytes_per_s * x),
            "k--",
            lw=1,
            label="prefill roof",
        )
    for point in charts.roofline:
        axes.loglog(point.flops_per_byte, point.achieved_flops_per_s, "o", label=point.label)
    axes.set_xlabel("arithmetic intensity, FLOPs / HBM byte")
    axes.set_ylabel("achieved FLOP/s per GPU")
    axes.set_title("Roofline", fontsize=10)
    if charts.roofline:
        axes.legend(fontsize=8)
    return _svg(figure)


def latency_axis_top(values_ms: list[float], target_ms: float | None) -> float:
    """The top of one latency axis, ms: 2.5 x the larger of the SLO target and the
    zero-load latency (the first finite point), so the target line sits at 40% of the
    height or lower and the hockey stick's knee shows above it; 1 with neither."""
    finite = [v for v in values_ms if v < float("inf")]
    anchors = [t for t in (target_ms, *finite[:1]) if t is not None]
    return max(anchors) * 2.5 if anchors else 1.0


def hockey_figure(charts: ConfigCharts):
    """p99 TTFT above and p99 TPOT below against the rate per replica, one axis per
    quantity (a 50 ms TPOT target under a 2,500 ms TTFT axis would lie flat on zero),
    each with its SLO line and the operating point; x is shared."""
    plt = _pyplot()
    figure, (ttft_axes, tpot_axes) = plt.subplots(2, 1, figsize=(4.5, 4.6), sharex=True)
    panels = (
        (ttft_axes, "TTFT", charts.ttft_p99_ms, charts.ttft_target_ms, "#4c72b0"),
        (tpot_axes, "TPOT", charts.tpot_p99_ms, charts.tpot_target_ms, "#dd8452"),
    )
    for axes, name, values, target, color in panels:
        axes.plot(charts.rates_per_replica, values, label=f"p99 {name}", color=color)
        if target is not None:
            axes.axhline(target, color=color, ls="--", lw=1, label=f"{name} SLO")
        if charts.operating_rate is not None:
            axes.axvline(charts.operating_rate, color="k", ls=":", lw=1, label="operating point")
        axes.set_ylim(0, latency_axis_top(values, target))
        axes.set_ylabel(f"{name} p99, ms")
        axes.legend(fontsize=7)
    ttft_axes.set_title("Latency vs load", fontsize=10)
    tpot_axes.set_xlabel("requests/s per replica")
    return figure


def hockey_svg(charts: ConfigCharts) -> str:
    """The latency-vs-load chart (`hockey_figure`) as SVG."""
    return _svg(hockey_figure(charts))


def frontier_svg(charts: ConfigCharts) -> str:
    """Output tokens/s per GPU against tokens/s per user; SLO-meeting points filled."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(4.5, 3.4))
    x, y = charts.frontier_user_tokens_per_s, charts.frontier_gpu_tokens_per_s
    axes.plot(x, y, "-", color="#888", lw=1)
    ok = [(a, b) for a, b, m in zip(x, y, charts.frontier_meets_slo, strict=True) if m]
    bad = [(a, b) for a, b, m in zip(x, y, charts.frontier_meets_slo, strict=True) if not m]
    if ok:
        axes.plot(*zip(*ok, strict=True), "o", color="#55a868", label="meets SLO")
    if bad:
        axes.plot(*zip(*bad, strict=True), "x", color="#c44e52", label="breaks SLO")
    axes.set_xlabel("tokens/s per user")
    axes.set_ylabel("output tokens/s per GPU")
    axes.set_title("Throughput frontier", fontsize=10)
    if ok or bad:
        axes.legend(fontsize=8)
    return _svg(figure)


def day_svg(day: DayChart) -> str:
    """The 24 UTC hours: demand against warm capacity (requests/s) above, the GPUs in use
    by how they are paid (owned, committed, on demand, spot) against the GPUs committed
    below."""
    plt = _pyplot()
    hours = list(range(len(day.demand_rps)))
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    top.step(hours, day.demand_rps, where="post", label="demand", color="#c44e52")
    top.step(hours, day.warm_capacity_rps, where="post", label="warm capacity", color="#4c72b0")
    top.set_ylabel("requests/s")
    top.set_title("The day (UTC): demand, warm capacity and GPUs paid", fontsize=10)
    top.legend(fontsize=8)
    layers = [
        ("owned", day.owned_gpus, "#8c8c8c"),
        ("committed (reserved)", day.reserved_gpus, "#55a868"),
        ("on demand", day.on_demand_gpus, "#dd8452"),
        ("spot", day.spot_gpus, "#8172b3"),
    ]
    bottom_of = [0.0] * len(hours)
    for label, values, colour in layers:
        if any(values):
            bottom.bar(hours, values, bottom=bottom_of, label=label, color=colour, width=0.9)
            bottom_of = [a + b for a, b in zip(bottom_of, values, strict=True)]
    if day.committed_gpus:
        bottom.axhline(day.committed_gpus, color="k", ls="--", lw=1, label="GPUs committed")
    bottom.set_xlabel("UTC hour")
    bottom.set_ylabel("GPUs")
    bottom.set_xticks(range(0, len(hours), 3))
    bottom.legend(fontsize=7)
    return _svg(figure)


def split_table(rows: list[CostSplitRow], plan: Plan | None = None) -> TableSpec:
    """The month's cost per offer: reserved, on demand, spot (month 0's in a plan of
    months)."""
    title = "Cost split: reserved, on demand and spot ($/month)"
    return TableSpec(
        title if plan is None else month_zero(plan, title),
        ("region", "GPU", "reserved", "on demand", "spot", "total"),
        tuple(
            (
                r.region,
                r.gpu,
                f"{r.reserved:,.0f}",
                f"{r.on_demand:,.0f}",
                f"{r.spot:,.0f}",
                f"{r.reserved + r.on_demand + r.spot:,.0f}",
            )
            for r in rows
        ),
    )


@dataclass(frozen=True)
class TimeCharts:
    """The hourly plan's parts of the report (solver.analysis.report_time)."""

    day: DayChart | None = None
    split: list[CostSplitRow] = field(default_factory=list)


SECTION_TABLES = {
    "Summary": "summary",
    "Months by region ($)": "months",
    "Months: commit, order and pay": "months",
    "Months: power by region (kW of power_kw)": "months",
    "Months: error budget per failure scenario (worst UTC hour of each month)": "months",
    "Committed (reserved) GPUs": "reservations",
    "Servers to order (reserved, whole servers)": "reservations",
    "Servers to buy": "reservations",
    BUSIEST_SERVERS: "reservations",
}
"""Tables the report places in a section of their own (the rest follow the charts)."""


def band_table(plan: Plan) -> TableSpec | None:
    """One row per GPU, family and band the plan's pools rest on: the model's signed
    error on held-out rows (predicted / measured - 1), whether the band is the pool's own
    or a borrowed or unmeasured stand-in, and what `capacity_margin: auto` applied; of
    every hour's and month's pools (`pools_run`), not the peak fleet's alone."""
    rows: dict[tuple, tuple[str, ...]] = {}
    for pool in pools_run(plan):
        b = pool.capacity_band
        if b is None or not pool.count:
            continue
        key = (pool.gpu, b.family, b.regime, b.flag)
        rows[key] = (
            pool.gpu,
            b.family,
            b.regime.replace("_", " "),
            f"{b.p10:+.0%}",
            f"{b.median:+.0%}",
            f"{b.p90:+.0%}",
            str(b.rows),
            (b.flag or ("borrowed" if b.regime == "borrowed" else "own")).upper(),
            f"{b.capacity_factor:.3f}",
        )
    if not rows:
        return None
    return TableSpec(
        "Model error on held-out rows",
        ("GPU", "family", "regime", "p10", "median", "p90", "rows", "band", "capacity x"),
        tuple(rows.values()),
        "signed error of the performance model, predicted / measured - 1, on calibration "
        "rows it was not fitted on (models/physics/catalog/error_bands.yaml); BORROWED: the "
        "GPU runs on another GPU's efficiency factors; UNMEASURED: no held-out rows of this "
        "family and regime, the profile's widest band stands in; capacity x: the factor "
        "policy.capacity_margin: auto applied (1: none)",
    )


def _placed(spec: TableSpec) -> str:
    """The section a table goes in, by its title (a plan of months' month-0 tables say
    `MONTH_ZERO` after it, cli.render.summary_tables.month_zero)."""
    if spec.title.startswith("Power by region"):
        return "power"
    if spec.title.startswith("Cost attribution"):
        return "cost"
    return SECTION_TABLES.get(spec.title.removesuffix(MONTH_ZERO), "")


def report_html(
    header: list[str],
    tables: list[TableSpec],
    plan: Plan,
    charts: list[ConfigCharts],
    note: str = "",
    time: TimeCharts | None = None,
) -> str:
    """The whole report as one HTML document: the buyer's summary first; for an hourly
    plan the day's chart, the months per region with the horizon's total and the
    reservations; power; the cost split; then utilisation, configurations and tables.
    A section with nothing to show is left out, never a heading alone. Control and
    direction characters of the names (a NUL, a right-to-left override) are written out
    as `\\uNNNN`, as the terminal shows them (`terminal_safe`), charts included."""
    time = time or TimeCharts()
    placed = {key: [t for t in tables if _placed(t) == key] for key in set(map(_placed, tables))}
    parts = [
        f"{HTML_OPENING}{html.escape(header[0])}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(header[0])}</h1>",
        *(f'<p class="note">{html.escape(line)}</p>' for line in header[1:]),
    ]
    parts += [table_html(t) for t in placed.get("summary", [])]
    if time.day is not None:
        parts.append("<h2>The day (UTC)</h2>")
        parts.append(f'<div class="charts wide">{_chart("day", day_svg(time.day))}</div>')
    if placed.get("months"):
        parts.append("<h2>Months</h2>")
        parts += [table_html(t) for t in placed["months"]]
    if placed.get("reservations"):
        parts.append("<h2>Reservations and servers</h2>")
        parts += [table_html(t) for t in placed["reservations"]]
    if placed.get("power"):
        parts.append("<h2>Power</h2>")
        parts += [table_html(t) for t in placed["power"]]
    if plan.cost_attribution or time.split:
        parts.append(f"<h2>{month_zero(plan, 'Cost split')}</h2>")
    if time.split:
        parts.append(table_html(split_table(time.split, plan)))
    if plan.cost_attribution:
        parts += [
            '<p class="note">Each pool\'s GPU time split between prefill and decode by the '
            "step model (unified pools: the Shapley split of one iteration; "
            "models/serving/attribution.py); $ per million tokens at the average rate "
            "served.</p>",
            f'<div class="charts">{_chart("cost split", cost_split_svg(plan))}</div>',
        ]
        parts += [table_html(t) for t in placed.get("cost", [])]
    if plan.scenarios:
        parts.append(f"<h2>{month_zero(plan, 'Utilisation by scenario')}</h2>")
        parts.append(f'<div class="charts">{_chart("utilisation", utilisation_svg(plan))}</div>')
    bands = band_table(plan)
    if bands is not None:
        parts.append("<h2>Model error</h2>")
        parts.append(table_html(bands))
    if charts:
        # the peak fleet's configurations: month 0's in a plan of months
        parts.append(f"<h2>{month_zero(plan, 'Chosen configurations')}</h2>")
    for item in charts:
        parts.append(f"<h3>{html.escape(item.title)}</h3>")
        figures = []
        if item.peak_flops_per_s > 0:  # zero for a co-located group: no single model
            figures.append(_chart(f"roofline {item.title}", roofline_svg(item)))
        if item.rates_per_replica:
            figures.append(_chart(f"latency {item.title}", hockey_svg(item)))
        if item.frontier_user_tokens_per_s:
            figures.append(_chart(f"frontier {item.title}", frontier_svg(item)))
        if figures:
            parts.append(f'<div class="charts">{"".join(figures)}</div>')
        if item.note:
            parts.append(f'<p class="note">{html.escape(item.note)}</p>')
    parts.append("<h2>Plan tables and binding constraints</h2>")
    parts += [table_html(t) for t in placed.get("", [])]
    if note:
        parts.append(f'<p class="note">{html.escape(note)}</p>')
    parts.append("</body></html>")
    return terminal_safe("\n".join(parts) + "\n")  # a NUL in a name shown, as in a terminal
