"""`fleetplan batch`: a folder of instances against their golden results, for CI.

Exit codes: 0 every instance solved and verified (with --check: every one matches its
golden file, or improves on it); 1 some instance failed or regressed: bad input, crash,
time limit, a plan the verifier refuses, a bad golden file, a costlier plan (each is
that instance's row; the run goes on); 2 the folder or an output path is unusable
(nothing was solved).

A verified plan cheaper than its golden beyond the tolerance is an improvement, not a
regression: exit 0 with an `improvement` line (and `improvements` in --json), since the
plan is better and the independent verifier accepted it; `--update` freezes the new cost.
"""

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from cli.exit_codes import ExitCode
from cli.options import JsonOut, capped_at_cores
from cli.render.console import err, out
from cli.render.junit import junit_xml, outcome_records
from models.io.output_files import check_target, is_stdout, write_text
from models.schema.errors import InputError
from solver.studies.batch import (
    FAILED_STATUSES,
    Comparison,
    Outcome,
    check_golden,
    golden_path,
    instance_files,
    orphan_goldens,
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
        int,
        typer.Option(
            "--jobs", "-j", min=1, help="Instances solved in parallel.", callback=capped_at_cores
        ),
    ] = 1,
    backend: Annotated[
        str | None, typer.Option(help="Override every instance's solver backend.")
    ] = None,
    json_out: JsonOut = None,
    markdown_out: Annotated[
        Path | None,
        typer.Option(
            "--markdown", help="Write a summary fit for a CI job page to this file (- for stdout)."
        ),
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
    """Solve every instance in FOLDER; exit 1 when any fails (or, with --check, regresses)."""
    files = instance_files(folder)
    if not files:
        err.print(f"{folder}: no instance files (.yaml, .yml, .json)", markup=False)
        raise typer.Exit(ExitCode.BAD_INPUT)
    outputs = (json_out, markdown_out, junit_out)
    for path in outputs:
        if path is not None:
            check_target(path, tuple(files))
    console = err if any(p is not None and is_stdout(p) for p in outputs) else out
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
            progress.update(task, advance=1, description=escape(Path(outcome.file).name))

        outcomes = run_batch(files, jobs=jobs, backend=backend, on_done=done)

    comparisons = [check_golden(o) if check else None for o in outcomes]
    console.print(_summary_table(outcomes, comparisons, check))
    failed = _report_failures(outcomes, comparisons, check, console)
    for orphan in orphan_goldens(folder):
        err.print(f"orphan golden {orphan.name}: no instance file beside it", markup=False)

    if update:
        failed = _update_goldens(outcomes, console)
    if json_out is not None:
        text = json.dumps(outcome_records(outcomes, comparisons), indent=2)
        write_text(json_out, text, tuple(files))
    if markdown_out is not None:
        write_text(markdown_out, _markdown(outcomes, comparisons, check), tuple(files))
    if junit_out is not None:
        write_text(junit_out, junit_xml(outcomes, comparisons), tuple(files))
    if failed:
        raise typer.Exit(ExitCode.CHECK_FAILED)


def _update_goldens(outcomes: list[Outcome], console) -> bool:
    """Freeze every outcome that says something about its plan; True when one could not
    be (a failed instance, or a golden that cannot be written)."""
    failed = False
    for outcome in outcomes:
        if outcome.status in FAILED_STATUSES:
            console.print(
                f"not updated {golden_path(Path(outcome.file)).name}: {outcome.status}",
                markup=False,
            )
            failed = True
            continue
        try:
            path = write_golden(Path(outcome.file), outcome)
        except InputError as error:
            err.print(f"not updated: {error}", markup=False)
            failed = True
            continue
        console.print(f"updated {path}", markup=False)
    return failed


def _status(outcome: Outcome) -> str:
    if outcome.status == "solved" and outcome.plan_status:
        return f"solved, {outcome.plan_status}"
    return outcome.status


def _summary_table(
    outcomes: list[Outcome], comparisons: list[Comparison | None], check: bool
) -> Table:
    table = Table(title="fleetplan batch")
    columns = ["instance", "status", "cost / month", "GPUs", "verified", "wall s"]
    if check:
        columns.append("vs golden")
    for column in columns:
        table.add_column(column, justify="right" if column in ("cost / month", "GPUs") else "left")
    for outcome, comparison in zip(outcomes, comparisons, strict=True):
        row = [
            Path(outcome.file).name,
            _status(outcome),
            "-" if outcome.cost_per_month is None else f"${outcome.cost_per_month:,.0f}",
            "-" if outcome.total_gpus is None else str(outcome.total_gpus),
            "yes" if outcome.verified else ("-" if outcome.status != "solved" else "NO"),
            f"{outcome.runtime_s:.2f}",
        ]
        cells = [Text(cell) for cell in row]  # user strings never reach rich markup
        if check and comparison is not None:
            count = len(comparison.regressions)
            if not comparison.ok:
                cells.append(Text(f"{count} change(s)", style="red"))
            else:
                cells.append(Text("improved" if comparison.improvements else "ok"))
        table.add_row(*cells)
    return table


def _report_failures(
    outcomes: list[Outcome], comparisons: list[Comparison | None], check: bool, console
) -> bool:
    failed = False
    for outcome, comparison in zip(outcomes, comparisons, strict=True):
        name = escape(Path(outcome.file).name)
        if check and comparison is not None:
            for line in comparison.regressions:
                err.print(f"[red]regression[/] {name}: {escape(line)}")
                failed = True
            for line in comparison.improvements:
                console.print(
                    f"improvement {Path(outcome.file).name}: {line} (cheaper and verified; "
                    "--update freezes it)",
                    markup=False,
                )
            for line in comparison.notes:
                console.print(f"note {Path(outcome.file).name}: {line}", markup=False)
        elif outcome.status != "solved" or not outcome.verified:
            err.print(f"[red]failed[/] {name}: {escape(outcome.status)}: {escape(outcome.message)}")
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
            f"| {_cell(Path(outcome.file).name)} | {_cell(_status(outcome))} | {cost} | {gpus} | "
            f"{'yes' if outcome.verified else 'no'} |"
        )
        if check and comparison is not None:
            changes = "<br>".join(_cell(r) for r in comparison.regressions)
            improved = "<br>".join(_cell(f"improved: {i}") for i in comparison.improvements)
            row += f" {improved or 'ok'} |" if comparison.ok else f" {changes} |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """A Markdown table cell: pipes and line breaks would end the cell or the row."""
    return text.replace("|", "\\|").replace("\n", " ")
