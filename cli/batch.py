"""`fleetplan batch`: a folder of instances against their golden results, for CI.

Exit codes: 0 every instance solved and verified (with --check: every one matches its
golden file, or improves on it); 1 some instance failed or regressed: bad input, crash,
time limit, a plan the verifier refuses, a bad golden file, a costlier plan (each is
that instance's row; the run goes on); 2 the folder or an output path is unusable
(nothing was solved).

Each row of a check ends in one verdict word (solver.studies.batch.Verdict: regression,
improvement, bad input, infeasible, input changed, ...) in the table, the Markdown, the
JSON (`finding`) and the JUnit failure's type; the reason beside it is the first thing
that broke (a parse error names file, line and field). A verified plan cheaper than its
golden beyond the tolerance is an improvement, not a regression: exit 0 with an
`improvement` line, since the plan is better and the independent verifier accepted it;
`--update` freezes the new cost. `input changed` (the instance, catalog or version differ
from the golden's fingerprint) fails only under `--strict`. `--update` never freezes a
failed instance, nor an infeasible one unless `--allow-infeasible` says infeasibility is
the expected answer.
"""

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cli.exit_codes import ExitCode
from cli.options import JsonOut, capped_at_cores, named_backend
from cli.render.console import err, job_progress, out
from cli.render.junit import junit_xml, outcome_records, verdict
from cli.render.zeros import json_without_negative_zero
from models.io.output_files import (
    check_targets,
    is_stdout,
    one_line,
    resolved_target,
    write_text,
)
from models.io.output_kinds import JSON, JUNIT, MARKDOWN
from models.schema.errors import InputError, Issue
from solver.studies.batch import (
    FAILED_STATUSES,
    GOLDEN_SUFFIX,
    INSTANCE_SUFFIXES,
    Comparison,
    Outcome,
    check_golden,
    check_one_golden_each,
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
        str | None,
        typer.Option(help="Override every instance's solver backend.", callback=named_backend),
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
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="With --check, fail an instance whose input (instance, catalog or version) "
            "changed since its golden was frozen.",
        ),
    ] = False,
    allow_infeasible: Annotated[
        bool,
        typer.Option(
            "--allow-infeasible",
            help="With --update, freeze an infeasible result as golden (refused otherwise).",
        ),
    ] = False,
) -> None:
    """Solve every instance in FOLDER; exit 1 when any fails (or, with --check, regresses)."""
    lone = [  # each ran the folder as if it were not given, exit 0
        Issue("command line", None, flag, f"{does}, with {needs}: give {needs} or drop it")
        for flag, given, needs, does in (
            ("--strict", strict and not check, "--check",
             "fails an instance whose input changed since its golden was frozen"),
            ("--allow-infeasible", allow_infeasible and not update, "--update",
             "freezes an infeasible result as golden"),
        )
        if given
    ]  # fmt: skip
    if lone:
        raise InputError(lone)
    files = instance_files(folder)
    if not files:
        err.print(f"{folder}: no instance files (.yaml, .yml, .json)", markup=False)
        raise typer.Exit(ExitCode.BAD_INPUT)
    if check or update:
        check_one_golden_each(files)
    outputs = (json_out, markdown_out, junit_out)
    check_targets(zip(outputs, (JSON, MARKDOWN, JUNIT), strict=True), tuple(files))
    _check_outside_the_run(folder, {"--json": json_out, "--markdown": markdown_out,
                                    "--junit": junit_out})  # fmt: skip
    console = err if any(p is not None and is_stdout(p) for p in outputs) else out
    with job_progress("solving") as progress:
        task = progress.add_task("", total=len(files))

        def done(outcome: Outcome) -> None:
            progress.update(task, advance=1, description=escape(Path(outcome.file).name))

        outcomes = run_batch(files, jobs=jobs, backend=backend, on_done=done)

    comparisons = [check_golden(o) if check else None for o in outcomes]
    console.print(_summary_table(outcomes, comparisons, check, strict))
    failed = _report_failures(outcomes, comparisons, check, strict, console)
    for orphan in orphan_goldens(folder):
        err.print(f"orphan golden {orphan.name}: no instance file beside it", markup=False)

    if update:
        failed = _update_goldens(outcomes, allow_infeasible, console)
    if json_out is not None:
        text = json.dumps(outcome_records(outcomes, comparisons, strict), indent=2)
        text = json_without_negative_zero(text)
        write_text(json_out, text, tuple(files), kind=JSON)
    if markdown_out is not None:
        text = _markdown(outcomes, comparisons, check, strict)
        write_text(markdown_out, text, tuple(files), kind=MARKDOWN)
    if junit_out is not None:
        write_text(junit_out, junit_xml(outcomes, comparisons, strict), tuple(files), kind=JUNIT)
    if failed:
        raise typer.Exit(ExitCode.CHECK_FAILED)


def _check_outside_the_run(folder: Path, outputs: dict[str, Path | None]) -> None:
    """An output the run itself would read is refused before any work: a file in FOLDER
    with an instance suffix is an instance to the next run (a bad one, exit 1), and one
    named NAME.expected.json is a golden (replaced by the results, the next --check read
    a regression)."""
    home = folder.resolve()
    problems = [
        Issue(
            "command line",
            None,
            flag,
            f"{path}: is in the folder batch reads, where "
            + ("a golden file" if path.name.endswith(GOLDEN_SUFFIX) else "an instance file")
            + " of that name is an input of the next run; write it elsewhere",
        )
        for flag, path in outputs.items()
        if path is not None
        and not is_stdout(path)
        and resolved_target(path).parent == home
        and path.suffix.lower() in INSTANCE_SUFFIXES
    ]
    if problems:
        raise InputError(problems)


def _update_goldens(outcomes: list[Outcome], allow_infeasible: bool, console) -> bool:
    """Freeze every outcome that says something about its plan; True when one could not
    be (a failed instance, an infeasible one without --allow-infeasible, or a golden that
    cannot be written)."""
    failed = False
    for outcome in outcomes:
        name = golden_path(Path(outcome.file)).name
        if outcome.status in FAILED_STATUSES:
            err.print(f"not updated {name}: {outcome.status}: {outcome.message}", markup=False)
            failed = True
            continue
        if outcome.status == "infeasible" and not allow_infeasible:
            err.print(
                f"not updated {name}: the instance is infeasible, and a golden would make "
                "--check pass on it; pass --allow-infeasible if infeasible is the expected "
                f"answer ({outcome.message})",
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


def _detail(result: dict, comparison: Comparison | None) -> str:
    """What a row has to say beside its verdict word: the first reason it fails (the word
    itself left off), or the input change it only notes."""
    if result["reasons"]:
        return result["reasons"][0].removeprefix(f"{result['finding']}: ")
    if comparison is not None and comparison.input_changed:
        return comparison.input_changed
    return ""


def _summary_table(
    outcomes: list[Outcome], comparisons: list[Comparison | None], check: bool, strict: bool
) -> Table:
    results = [verdict(o, c, strict) for o, c in zip(outcomes, comparisons, strict=True)]
    details = [_detail(r, c) for r, c in zip(results, comparisons, strict=True)]
    table = Table(title="fleetplan batch")
    columns = ["instance", "status", "cost / month", "GPUs used", "bought", "verified", "wall s"]
    if check:
        columns.append("vs golden")
    if any(details):
        columns.append("what broke")
    for column in columns:
        right = column in ("cost / month", "GPUs used", "bought")
        table.add_column(column, justify="right" if right else "left")
    for outcome, result, detail in zip(outcomes, results, details, strict=True):
        row = [
            one_line(Path(outcome.file).name),  # a file name may hold a line break
            _status(outcome),
            "-" if outcome.cost_per_month is None else f"${outcome.cost_per_month:,.0f}",
            "-" if outcome.total_gpus is None else str(outcome.total_gpus),
            "-" if outcome.gpus_bought is None else str(outcome.gpus_bought),
            "yes" if outcome.verified else ("-" if outcome.status != "solved" else "NO"),
            f"{outcome.runtime_s:.2f}",
        ]
        cells = [Text(cell) for cell in row]  # user strings never reach rich markup
        if check:
            style = "red" if result["verdict"] == "fail" else ""
            cells.append(Text(result["finding"], style=style))
        if any(details):
            cells.append(Text(detail))
        table.add_row(*cells)
    return table


def _report_failures(
    outcomes: list[Outcome],
    comparisons: list[Comparison | None],
    check: bool,
    strict: bool,
    console,
) -> bool:
    """Print every reason an instance fails on stderr, led by its verdict word, and the
    improvements, notes and (unless they fail) input changes on `console`; True when one
    failed."""
    failed = False
    for outcome, comparison in zip(outcomes, comparisons, strict=True):
        name = one_line(Path(outcome.file).name)
        result = verdict(outcome, comparison, strict)
        word = result["finding"]
        for line in result["reasons"]:
            reason = escape(line.removeprefix(f"{word}: "))
            err.print(f"[red]{escape(word)}[/] {escape(name)}: {reason}")
            failed = True
        if not check or comparison is None:
            continue
        for line in comparison.improvements:
            console.print(
                f"improvement {name}: {line} (cheaper and verified; --update freezes it)",
                markup=False,
            )
        if comparison.input_changed and not strict:
            console.print(f"input changed {name}: {comparison.input_changed}", markup=False)
        for line in comparison.notes:
            console.print(f"note {name}: {line}", markup=False)
    return failed


def _markdown(
    outcomes: list[Outcome], comparisons: list[Comparison | None], check: bool, strict: bool
) -> str:
    lines = [
        "# fleetplan batch",
        "",
        "| instance | status | cost / month | GPUs used | bought | verified |"
        + (" vs golden |" if check else ""),
        "|---|---|---:|---:|---:|---|" + ("---|" if check else ""),
    ]
    for outcome, comparison in zip(outcomes, comparisons, strict=True):
        cost = "-" if outcome.cost_per_month is None else f"${outcome.cost_per_month:,.0f}"
        gpus = "-" if outcome.total_gpus is None else str(outcome.total_gpus)
        bought = "-" if outcome.gpus_bought is None else str(outcome.gpus_bought)
        row = (
            f"| {_cell(Path(outcome.file).name)} | {_cell(_status(outcome))} | {cost} | {gpus} | "
            f"{bought} | "
            f"{'yes' if outcome.verified else 'no'} |"
        )
        if check and comparison is not None:
            result = verdict(outcome, comparison, strict)
            word = result["finding"]
            said = [line.removeprefix(f"{word}: ") for line in result["reasons"]]
            said += [f"improved: {i}" for i in comparison.improvements]
            if comparison.input_changed and not strict:
                said.append(comparison.input_changed)
            row += " " + "<br>".join([f"**{word}**", *map(_cell, said)]) + " |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    """A Markdown table cell: pipes and line breaks would end the cell or the row; HTML in
    a name or message is text (cli.render.tables.markdown_text)."""
    from cli.render.tables import markdown_text

    return markdown_text(text).replace("|", "\\|").replace("\n", " ")
