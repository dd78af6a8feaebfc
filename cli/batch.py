"""`fleetplan batch`: a folder of instances against their golden results, for CI."""

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.console import err, out, write_new_file
from cli.exit_codes import ExitCode
from cli.junit import junit_xml, outcome_records
from models.output_files import write_text
from solver.batch import (
    Comparison,
    Outcome,
    compare,
    instance_files,
    read_golden,
    run_batch,
    write_golden,
)


def batch(
    folder: Annotated[Path, typer.Argument(help="Folder of instance files (.yaml/.yml/.json).")],
    check: Annotated[
        bool,
        typer.Option("--check", help="Compare each result with its NAME.expected.json."),
    ] = False,
    jobs: Annotated[
        int, typer.Option("--jobs", "-j", min=1, help="Instances solved in parallel.")
    ] = 1,
    backend: Annotated[
        str | None, typer.Option(help="Override every instance's solver backend.")
    ] = None,
    json_out: Annotated[
        Path | None, typer.Option("--json", help="Write every outcome as JSON to this file.")
    ] = None,
    markdown_out: Annotated[
        Path | None,
        typer.Option("--markdown", help="Write a summary fit for a CI job page to this file."),
    ] = None,
    update: Annotated[
        bool,
        typer.Option("--update", help="Rewrite the golden files from this run's results."),
    ] = False,
    junit_out: Annotated[
        Path | None,
        typer.Option("--junit", help="Write a JUnit XML report (one test case per instance)."),
    ] = None,
) -> None:
    """Solve every instance in FOLDER in parallel; with --check, exit 1 on any regression."""
    files = instance_files(folder)
    if not files:
        err.print(f"{folder}: no instance files (.yaml, .yml, .json)")
        raise typer.Exit(ExitCode.BAD_INPUT)
    with Progress(
        TextColumn("[bold]solving"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=len(files))

        def done(outcome: Outcome) -> None:
            progress.update(task, advance=1, description=Path(outcome.file).name)

        outcomes = run_batch(files, jobs=jobs, backend=backend, on_done=done)

    comparisons = [compare(o, read_golden(Path(o.file))) if check else None for o in outcomes]
    out.print(_summary_table(outcomes, comparisons, check))
    failed = _report_failures(outcomes, comparisons, check)

    if update:
        for outcome in outcomes:
            if outcome.status == "bad_input":
                continue
            path = write_golden(Path(outcome.file), outcome)
            out.print(f"updated {path}")
    if json_out is not None:
        write_new_file(json_out, json.dumps(outcome_records(outcomes, comparisons), indent=2))
    if markdown_out is not None:
        write_new_file(markdown_out, _markdown(outcomes, comparisons, check))
    if junit_out is not None:
        write_text(junit_out, junit_xml(outcomes, comparisons))
    if failed and not update:
        raise typer.Exit(ExitCode.CHECK_FAILED)


def _summary_table(
    outcomes: list[Outcome], comparisons: list[Comparison | None], check: bool
) -> Table:
    table = Table(title="fleetplan batch")
    columns = ["instance", "status", "cost / month", "GPUs", "verified", "solve s"]
    if check:
        columns.append("vs golden")
    for column in columns:
        table.add_column(column, justify="right" if column in ("cost / month", "GPUs") else "left")
    for outcome, comparison in zip(outcomes, comparisons, strict=True):
        row = [
            Path(outcome.file).name,
            outcome.status,
            "-" if outcome.cost_per_month is None else f"${outcome.cost_per_month:,.0f}",
            "-" if outcome.total_gpus is None else str(outcome.total_gpus),
            "yes" if outcome.verified else ("-" if outcome.status != "solved" else "NO"),
            f"{outcome.runtime_s:.2f}",
        ]
        if check and comparison is not None:
            row.append(
                "ok" if comparison.ok else f"[red]{len(comparison.regressions)} change(s)[/]"
            )
        table.add_row(*row)
    return table


def _report_failures(
    outcomes: list[Outcome], comparisons: list[Comparison | None], check: bool
) -> bool:
    failed = False
    for outcome, comparison in zip(outcomes, comparisons, strict=True):
        name = Path(outcome.file).name
        if check and comparison is not None:
            for line in comparison.regressions:
                err.print(f"[red]regression[/] {name}: {line}", markup=True)
                failed = True
            for line in comparison.notes:
                out.print(f"note {name}: {line}", markup=False)
        elif outcome.status != "solved" or not outcome.verified:
            err.print(f"[red]failed[/] {name}: {outcome.status}: {outcome.message}")
            failed = True
    return failed


def _markdown(outcomes: list[Outcome], comparisons: list[Comparison | None], check: bool) -> str:
    lines = [
        "# fleetplan batch",
        "",
        "| instance | status | cost / month | GPUs | verified |"
        + (" vs golden |" if check else ""),
        "|---|---|---:|---:|---|" + ("---|" if check else ""),
    ]
    for outcome, comparison in zip(outcomes, comparisons, strict=True):
        cost = "-" if outcome.cost_per_month is None else f"${outcome.cost_per_month:,.0f}"
        gpus = "-" if outcome.total_gpus is None else str(outcome.total_gpus)
        row = (
            f"| {Path(outcome.file).name} | {outcome.status} | {cost} | {gpus} | "
            f"{'yes' if outcome.verified else 'no'} |"
        )
        if check and comparison is not None:
            row += " ok |" if comparison.ok else " " + "<br>".join(comparison.regressions) + " |"
        lines.append(row)
    return "\n".join(lines) + "\n"
