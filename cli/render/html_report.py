"""The one-file HTML report: the plan's tables and charts, every chart an inline SVG drawn
by matplotlib (text as paths), no script and no external file: it opens offline, in any
browser, forever.

Sections: the plan header and tables (`cli.render.plan_tables`), the cost split by phase,
utilisation by scenario as a heat map, and per chosen configuration the roofline, the
latency-vs-load hockey stick and the throughput frontier (`solver.analysis.report_data`).
"""

import html
import io

from cli.render.tables import TableSpec
from solver.analysis.report_data import ConfigCharts
from solver.plan.schema import Plan

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.9em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
caption { caption-side: bottom; text-align: left; color: #555; font-size: 0.85em; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
.chart svg { width: 340px; height: auto; }
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


def hockey_svg(charts: ConfigCharts) -> str:
    """p99 TTFT and TPOT against the rate per replica, with the SLO and operating point."""
    plt = _pyplot()
    figure, axes = plt.subplots(figsize=(4.5, 3.4))
    axes.plot(charts.rates_per_replica, charts.ttft_p99_ms, label="p99 TTFT", color="#4c72b0")
    axes.plot(charts.rates_per_replica, charts.tpot_p99_ms, label="p99 TPOT", color="#dd8452")
    if charts.ttft_target_ms is not None:
        axes.axhline(charts.ttft_target_ms, color="#4c72b0", ls="--", lw=1, label="TTFT SLO")
    if charts.tpot_target_ms is not None:
        axes.axhline(charts.tpot_target_ms, color="#dd8452", ls="--", lw=1, label="TPOT SLO")
    if charts.operating_rate is not None:
        axes.axvline(charts.operating_rate, color="k", ls=":", lw=1, label="operating point")
    finite = [v for v in charts.ttft_p99_ms + charts.tpot_p99_ms if v < float("inf")]
    targets = [t for t in (charts.ttft_target_ms, charts.tpot_target_ms) if t is not None]
    axes.set_ylim(0, max([*targets, *finite[:1]]) * 2.5 if finite or targets else 1)
    axes.set_xlabel("requests/s per replica")
    axes.set_ylabel("ms")
    axes.set_title("Latency vs load", fontsize=10)
    axes.legend(fontsize=7)
    return _svg(figure)


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


def report_html(
    header: list[str],
    tables: list[TableSpec],
    plan: Plan,
    charts: list[ConfigCharts],
    note: str = "",
) -> str:
    """The whole report as one HTML document."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(header[0])}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(header[0])}</h1>",
        *(f'<p class="note">{html.escape(line)}</p>' for line in header[1:]),
        "<h2>Cost split</h2>",
        '<p class="note">Each pool\'s GPU time split between prefill and decode by the step '
        "model (unified pools: the Shapley split of one iteration; models/serving/attribution.py); "
        "$ per million tokens at the average rate served.</p>",
    ]
    if plan.cost_attribution:
        parts.append(f'<div class="charts">{_chart("cost split", cost_split_svg(plan))}</div>')
    parts += [table_html(t) for t in tables if t.title.startswith("Cost attribution")]
    parts.append("<h2>Utilisation by scenario</h2>")
    if plan.scenarios:
        parts.append(f'<div class="charts">{_chart("utilisation", utilisation_svg(plan))}</div>')
    parts.append("<h2>Chosen configurations</h2>")
    for item in charts:
        parts.append(f"<h3>{html.escape(item.title)}</h3>")
        figures = [_chart(f"roofline {item.title}", roofline_svg(item))]
        if item.rates_per_replica:
            figures.append(_chart(f"latency {item.title}", hockey_svg(item)))
        if item.frontier_user_tokens_per_s:
            figures.append(_chart(f"frontier {item.title}", frontier_svg(item)))
        parts.append(f'<div class="charts">{"".join(figures)}</div>')
        if item.note:
            parts.append(f'<p class="note">{html.escape(item.note)}</p>')
    parts.append("<h2>Plan tables and binding constraints</h2>")
    parts += [table_html(t) for t in tables if not t.title.startswith("Cost attribution")]
    if note:
        parts.append(f'<p class="note">{html.escape(note)}</p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
