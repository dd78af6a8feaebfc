"""`fleetplan report`: the plan as one self-contained HTML file."""

import time
from pathlib import Path
from typing import Annotated

import typer

from cli.options import SetOption, load, require_verified
from cli.render.console import err
from models.io.output_files import check_target, write_text
from models.io.output_kinds import HTML
from models.schema.errors import InputError, Issue


def report(
    file: Annotated[Path, typer.Argument(help="Instance file (.yaml, .yml or .json).")],
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")],
    plan_file: Annotated[
        Path | None,
        typer.Option("--plan", help="A plan JSON (from `solve --json`) instead of solving."),
    ] = None,
    sets: SetOption = None,
) -> None:
    """Write the plan as one HTML file: the buyer's summary, the day and the months of an
    hourly plan, reservations, power, cost split, utilisation, per-configuration charts.

    Self-contained: every chart is an inline SVG, so the file opens offline. A --plan is
    drawn only when the verifier accepts it (exit 1 with its violations otherwise).
    """
    started = time.monotonic()
    from cli.render.html_report import TimeCharts, report_html
    from cli.render.plan_tables import plan_header, plan_tables
    from cli.render.time_tables import time_tables
    from cli.solve import _read_plan, _solve
    from cli.voice import voice_tables
    from solver.analysis.report_data import chart_data
    from solver.analysis.report_time import cost_split, day_chart

    inputs = (file,) if plan_file is None else (file, plan_file)
    if str(output) != "-" and output.suffix.lower() not in (".html", ".htm"):  # -o plan.json
        raise InputError(
            [
                Issue(
                    "command line",
                    None,
                    "--output",
                    f"{output}: the report is HTML; give a file ending in .html",
                )
            ]
        )
    check_target(output, inputs=inputs, kind=HTML)
    instance = load(file, sets)
    solved = plan_file is None
    plan = (
        _solve(file, started, None, None, None, None, sets).plan
        if solved
        else _read_plan(plan_file)
    )
    if not solved:
        require_verified(instance, plan, plan_file, "report")
    time_charts = TimeCharts(day=day_chart(instance, plan), split=cost_split(instance, plan))
    text = report_html(
        plan_header(plan),
        plan_tables(plan) + time_tables(plan) + voice_tables(instance),
        plan,
        chart_data(instance, plan),
        plan.shadow_price_note,
        time_charts,
    )
    write_text(output, text, inputs=inputs, kind=HTML)
    err.print(f"wrote {output}", markup=False)
