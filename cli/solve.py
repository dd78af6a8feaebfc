"""Commands `solve`, `verify` and `explain`: parse, call one solver function, render.

The three commands share their options and output checks; the plan's and the
explanation's tables are in cli/render/plan_tables.py, the hourly plan's in
cli/render/time_tables.py.

Exit codes: 0 solved (or verified), 1 verify found violations, 2 bad input (an output
path that cannot be written included, checked before solving), 3 infeasible (with the
diagnosis), 4 no plan within the time limit (naming the stage it stopped in), 70 the
solver's plan fails its own verifier (a bug: one line naming the first violation).

`--time-limit` bounds the whole command from its start: candidates, program, solve,
pricing, verification and (for explain) the re-solves share one deadline.
"""

import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape

from cli.exit_codes import ExitCode
from cli.options import (
    Executor,
    ExecutorOption,
    JsonOut,
    MarkdownOut,
    SetOption,
    capped_at_cores,
    emit_json,
    given_on_command_line,
    known_backend,
    load,
    print_warnings,
    to_stdout,
    warn_other_instance,
    within,
)
from cli.render.console import err, failure_output, out, progress_to_stderr
from cli.render.plan_tables import (
    explanation_tables,
    plan_header,
    plan_tables,
    procurement_lines,
)
from cli.render.summary_tables import MONTH_ZERO_EXPLAINED, cost_words
from cli.render.tables import TableSpec, markdown_tables, print_tables
from cli.render.time_tables import time_tables
from cli.render.zeros import json_without_negative_zero
from models.io.loading import Lines, load_instance, read_document, schema_issues
from models.io.output_files import check_target, check_targets, is_stdout, write_text
from models.io.output_kinds import JSON, MARKDOWN, PLAN, PROGRAM, OutputKind
from models.schema import limits
from models.schema.backend_names import BACKEND_NAMES
from models.schema.checks import threads_above_cores
from models.schema.errors import InputError, Issue
from models.schema.policy import SolverSettings
from models.schema.quantities import counted, describe
from solver.backends import UnknownBackendError
from solver.errors import BackendUnavailable, Diagnosis, Infeasible, NoSolution, PlanRejected
from solver.plan.schema import Plan, no_plan_reason
from solver.program.lp import Termination
from solver.settings import SolveSettings
from solver.solve import Solved, solve_program
from solver.verify.fleet import Verification

if TYPE_CHECKING:  # `solve` never needs the explanation's modules (levers, re-solves)
    from solver.analysis.explain import Explanation


InstanceFile = Annotated[Path, typer.Argument(help="Instance file (.yaml, .yml or .json).")]
BackendOption = Annotated[
    str | None,
    typer.Option(
        help=f"Solver backend: {', '.join(BACKEND_NAMES)} (default: the instance's).",
        callback=known_backend,
    ),
]
TimeLimit = Annotated[
    float | None,
    typer.Option(
        "--time-limit",
        help="Time limit of the whole run (candidates, solve, pricing, checks), seconds.",
        callback=within(limits.TIME_LIMIT_S),
    ),
]
MipGap = Annotated[
    float | None,
    typer.Option(
        "--mip-gap",
        help="Relative MIP gap to stop at.",
        callback=within(limits.MIP_GAP),
    ),
]
Threads = Annotated[
    int | None, typer.Option(min=1, help="Solver threads (default: the instance's, usually 1).")
]


def solve(
    file: InstanceFile,
    backend: BackendOption = None,
    time_limit: TimeLimit = None,
    mip_gap: MipGap = None,
    threads: Threads = None,
    json_out: JsonOut = None,
    markdown_out: MarkdownOut = None,
    export_mps: Annotated[
        Path | None,
        typer.Option(
            "--export-mps",
            help="Write the program (named rows and columns) to this .mps or .lp file first.",
        ),
    ] = None,
    sets: SetOption = None,
    executor: ExecutorOption = Executor.local,
) -> None:
    """Find the cheapest fleet that meets the instance's SLOs and failure policy.

    Infeasible: the diagnosis on stderr, and as JSON (`{"status": "infeasible",
    "diagnosis": ...}`) where --json asks; exit code 3 either way.
    """
    started = time.monotonic()
    check_outputs(file, json_out, markdown_out, export_mps)
    if export_mps is not None:
        export_program(file, export_mps)
    solved = _solve(
        file, started, backend, time_limit, mip_gap, threads, sets, json_out, executor.value,
        (json_out, markdown_out),
    )  # fmt: skip
    plan = solved.plan
    tables = plan_tables(plan) + time_tables(plan) + _voice_tables(solved)
    _report(plan_header(plan), tables, plan, json_out, markdown_out, file)


def _voice_tables(solved: Solved) -> list[TableSpec]:
    """The voice budget of each voice workload (none for other instances)."""
    instance = solved.program.sets.instance
    if not any(workload.voice for workload in instance.workloads):
        return []
    from cli.voice import voice_tables

    return voice_tables(instance)


def explain(
    ctx: typer.Context,
    file: InstanceFile,
    backend: BackendOption = None,
    time_limit: TimeLimit = None,
    mip_gap: MipGap = None,
    threads: Threads = None,
    json_out: JsonOut = None,
    markdown_out: MarkdownOut = None,
    levers: Annotated[
        bool, typer.Option("--levers", help="Also re-solve with each lever; rank by $ saved.")
    ] = False,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs", "-j", min=1, help="Lever re-solves at once.", callback=capped_at_cores
        ),
    ] = 2,
    levers_time_limit: Annotated[
        float | None,
        typer.Option(
            "--levers-time-limit",
            help="One time limit the levers share, seconds: each lever as it starts gets an "
            "even share of what is left over the levers still to end, one stopped unproven "
            "is tried again with what the others left, and a lever not proven shows its gap; "
            "default: what is left of the run's time limit after the base solve (an hourly "
            "or month plan: each lever the run's time limit).",
            callback=within(limits.TIME_LIMIT_S),
        ),
    ] = None,
    sets: SetOption = None,
) -> None:
    """Solve, then explain the plan: what binds, at what price, and what else would cost."""
    started = time.monotonic()
    if not levers and levers_time_limit is not None:  # it changed nothing, without a word
        raise InputError(
            [Issue("command line", None, "--levers-time-limit", "limits the levers: give --levers")]
        )
    if not levers and given_on_command_line(ctx, "jobs"):  # as --levers-time-limit
        raise InputError(
            [Issue("command line", None, "--jobs", "sets the levers at once: give --levers")]
        )
    check_outputs(file, json_out, markdown_out)
    from solver.candidates.pools import shared_physics

    # the levers' tables (in this process and in their workers) start from the base's physics
    with shared_physics() if levers else nullcontext():
        solved = _solve(
            file, started, backend, time_limit, mip_gap, threads, sets, json_out,
            outputs=(json_out, markdown_out),
        )  # fmt: skip
        from solver.analysis.explain import explain_solved

        running = None
        if levers:  # the levers' re-solves run beside the explanation's own
            from cli.levers import RunningLevers

            running = RunningLevers(solved, backend, jobs, levers_time_limit)
        try:
            busy = 0 if running is None else running.beside
            explanation = explain_solved(solved, progress=_progress_after(started), busy=busy)
        except NoSolution as stopped:
            if running is not None:
                running.close(cancel=True)
            err.print(f"[bold red]no explanation:[/] {escape(f'{file}: {stopped}')}")
            raise typer.Exit(ExitCode.TIME_LIMIT) from None
        header = explain_header(explanation)
        tables = explanation_tables(explanation) + _voice_tables(solved)
        if explanation.plan.hours:  # an hourly plan: its hours, headroom, budget and months too
            tables += time_tables(explanation.plan)
        if running is not None:
            from cli.levers import with_levers

            explanation, tables = with_levers(running, explanation, tables)
        _report(header, tables, explanation, json_out, markdown_out, file)


def explain_header(explanation) -> list[str]:
    """explain's lines above its tables: the plan's cost as solve's summary states it (a
    plan of months: month 0's and the horizon's, and that month 0 is what is explained),
    whether it is proven, its growth, headroom and simplicity."""
    header = [
        f"{explanation.instance}: explanation of the {explanation.status} plan at "
        f"{cost_words(explanation.cost_per_month, explanation.plan)}"
    ]
    if explanation.plan.months:
        header.append(MONTH_ZERO_EXPLAINED)
    if not explanation.plan.optimal:
        header.append(
            "not proven optimal: the plan's cost is an upper bound, so what each pool "
            "saves against its alternative is not shown"
        )
    return header + procurement_lines(explanation.plan)


def verify(
    file: InstanceFile,
    plan_file: Annotated[
        Path, typer.Argument(help='Plan JSON (from `solve --json`, or {"replicas": [...]}).')
    ],
    json_out: JsonOut = None,
    sets: SetOption = None,
) -> None:
    """Check a plan, or a fleet you own, against the instance with the physics alone.

    Judges the requirements (capacity against load in every scenario, latency within the
    SLO, memory, supply, cost); a figure the plan states that differs from the
    recomputed one without breaking a requirement is a warning. Exit 0 when every
    requirement holds, 1 otherwise.
    """
    if json_out is not None:
        check_target(json_out, (file, plan_file), kind=JSON)
    instance = load(file, sets, (json_out,))
    from solver.verify.hours import verify_any as verify_plan  # `verify`'s alone (issue 19)

    plan = _read_plan(plan_file)
    warn_other_instance(instance, plan, plan_file)
    result = verify_plan(instance, plan)
    emit_json(json_out, result, (file, plan_file))
    if json_out is None or not is_stdout(json_out):
        _print_verification(plan_file, result)
    if not result.ok:
        raise typer.Exit(ExitCode.CHECK_FAILED)


# --- the one library call, and its failures -------------------------------------------


PROGRESS_AFTER_S = 2.0
"""A command that has run this long tells its progress on stderr."""


def _progress_after(started: float, after_s: float = PROGRESS_AFTER_S):
    """A progress callback that writes each line on stderr once the command has run
    `after_s` seconds (a quick run stays quiet)."""

    def tell(line: str) -> None:
        if time.monotonic() - started >= after_s:
            err.print(escape(line), highlight=False)

    return tell


def check_outputs(
    file: Path, json_out: Path | None, markdown_out: Path | None, program: Path | None = None
) -> None:
    """Refuse, before any work, an output path that cannot or must not be written
    (models.io.output_files.check_targets, two outputs in one file included, and a file
    that is not an earlier output of the kind written over): exit code 2 naming the path."""
    check_targets(((json_out, PLAN), (markdown_out, MARKDOWN), (program, PROGRAM)), (file,))


def _solve(
    file: Path,
    started: float,
    backend: str | None,
    time_limit: float | None,
    mip_gap: float | None,
    threads: int | None,
    sets: list[str] | None = None,
    json_out: Path | None = None,
    executor: str = "local",
    outputs: tuple[Path | None, ...] = (),
) -> Solved:
    replaced = ("solver.threads",) if threads is not None else ()  # one warning: the flag's
    instance = load(file, sets, outputs, replaced)
    _check_flags(time_limit, mip_gap, threads)
    try:
        settings = SolveSettings.of(
            instance, backend, time_limit, mip_gap, threads, executor=executor
        )
    except ValueError as error:
        raise InputError([Issue("solver", None, "", str(error))]) from None
    settings = settings.started(at=started)
    progress_to_stderr()
    try:
        return solve_program(instance, settings)
    except Infeasible as infeasible:
        _print_diagnosis(file, infeasible.diagnosis)
        with failure_output():  # a reader gone: the diagnosis said on stderr, exit 3 still
            emit_json(json_out, diagnosis_json(instance.name, infeasible.diagnosis), (file,), PLAN)
        raise typer.Exit(ExitCode.INFEASIBLE) from None
    except (UnknownBackendError, BackendUnavailable) as error:
        raise InputError([Issue("--backend", None, "", str(error))]) from None
    except PlanRejected as rejected:
        err.print(f"[bold red]internal error:[/] {escape(f'{file}: {rejected.headline}')}")
        raise typer.Exit(ExitCode.INTERNAL_ERROR) from None  # a bug, never an answer
    except NoSolution as stopped:
        if stopped.termination == Termination.ERROR:  # the backend refused our program: a bug
            line = " ".join(str(stopped).split())
            err.print(f"[bold red]internal error:[/] {escape(f'{file}: {line}')}")
            raise typer.Exit(ExitCode.INTERNAL_ERROR) from None
        err.print(f"[bold red]no plan:[/] {escape(f'{file}: {stopped}')}")
        with failure_output():
            emit_json(json_out, no_solution_json(instance.name, stopped), (file,), PLAN)
        raise typer.Exit(ExitCode.TIME_LIMIT) from None


def no_solution_json(instance: str, stopped: NoSolution) -> dict:
    """A run the time limit (or the backend) stopped without a plan, as data, so that
    `--json -` in a pipeline reads a status rather than nothing (batch calls it
    `no_solution` too)."""
    return {
        "instance": instance,
        "status": "no_solution",
        "termination": str(stopped.termination),
        "stage": getattr(stopped, "stage", None),
        "message": " ".join(str(stopped).split()),
    }


def diagnosis_json(instance: str, diagnosis: Diagnosis) -> dict:
    """An infeasible instance's diagnosis as data: the requirements in conflict, each
    with its numbers and remedy."""
    return {
        "instance": instance,
        "status": "infeasible",
        "diagnosis": {
            "summary": diagnosis.summary,
            "method": diagnosis.method,
            "problems": [
                {"requirement": p.requirement, "message": p.message, "remedy": p.remedy}
                for p in diagnosis.problems
            ],
        },
    }


def _check_flags(time_limit: float | None, mip_gap: float | None, threads: int | None) -> None:
    """The solver flags obey the bounds of the instance's `solver:` section (finite, a
    time limit of at most a day); threads above the CPU count are run on as many threads
    as there are CPUs (`SolveSettings.of`), with a warning."""
    flags = {"time_limit_s": "--time-limit", "mip_gap": "--mip-gap", "threads": "--threads"}
    given = dict(zip(flags, (time_limit, mip_gap, threads), strict=True))
    try:
        SolverSettings.model_validate(
            {key: value for key, value in given.items() if value is not None}
        )
    except ValidationError as error:
        raise InputError(
            [
                Issue(
                    flags[str(item["loc"][0])], None, "", item["msg"].removeprefix("Value error, ")
                )
                for item in error.errors()
            ]
        ) from None
    if threads is not None and threads > limits.max_threads():
        print_warnings([threads_above_cores("--threads", threads, limits.max_threads())])


def export_program(file: Path, target: Path) -> None:
    """Build the instance's program and write it to `target` (`.mps` or `.lp` by suffix).

    Raises:
        InputError: an unknown suffix, or a target that cannot be written.
    """
    from solver.candidates.table import build_candidates
    from solver.program.build import build_program
    from solver.program.export import FORMATS, program_text

    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(
            [Issue("--export-mps", None, "", f"{target}: give a file ending in .mps or .lp")]
        )
    check_target(target, inputs=(file,), kind=PROGRAM)
    instance = load_instance(file)
    program = build_program(instance, build_candidates(instance))
    try:
        text = program_text(program.lp, suffix)
    except ValueError as error:
        raise InputError([Issue("--export-mps", None, "", str(error))]) from None
    write_text(target, text, inputs=(file,), kind=PROGRAM)
    size = program.lp.size()
    err.print(
        f"wrote {target}: {size['variables']:,} columns, {size['constraints']:,} rows",
        markup=False,
    )


def _read_plan(path: Path) -> Plan:
    data, lines = read_document(path, what="plan")
    if (reason := no_plan_reason(data)) is not None:
        raise InputError([Issue(str(path), lines.get(("status",)), "status", reason)])
    return plan_of(data, path, lines)


PLAN_UNKNOWN_KEY = (
    "no plan this fleetplan writes or reads has it (a plan of another fleetplan version, "
    "or a key edited by hand?)"
)
"""What an unknown key in a plan like none of its fields is (an instance's lists them)."""


def plan_of(data: object, path: Path, lines: Lines | None = None) -> Plan:
    """`data` read from `path` as a plan; each field pydantic refuses named as an instance's
    are (models.io.loading.schema_issues: `plan.json:7: replicas[0].count: must be a
    number, got the text 'abc'`, the line where `lines` has it); an instance given in the
    plan's place is named as one (it listed 14 fields a plan lacks)."""
    if isinstance(data, dict) and "workloads" in data and "replicas" not in data:
        why = "is an instance (it has workloads and no replicas), not a plan: were the " \
            "instance and the plan given the other way round?"  # fmt: skip
        raise InputError([Issue(str(path), 1, "", why)])
    if not isinstance(data, dict):  # pydantic: 'Input should be a valid dictionary or ...'
        kind = "empty" if data is None else f"a {type(data).__name__}"
        why = f"a plan is a mapping (`fleetplan solve --json` writes one), got {kind}"
        raise InputError([Issue(str(path), 1, "", why)])
    try:
        return Plan.model_validate(data)
    except ValidationError as error:
        issues = schema_issues(error, Plan, str(path), lines or {}, data, PLAN_UNKNOWN_KEY)
        raise InputError(issues) from None


def _write(path: Path | None, text: str, file: Path, kind: OutputKind) -> None:
    if path is not None:
        write_text(path, text, (file,), kind=kind)
        if not is_stdout(path):
            err.print(f"wrote {path}", markup=False)


def _report(
    header: list[str],
    tables: list[TableSpec],
    result: "Plan | Explanation",
    json_out: Path | None,
    markdown_out: Path | None,
    file: Path,
) -> None:
    """Print the result's tables (on stderr when an output is `-`, so standard output
    holds only that output), and write it as JSON and Markdown where asked."""
    console = err if to_stdout(json_out, markdown_out) else out
    print_tables(header, tables, result.shadow_price_note, console)
    _write(json_out, json_without_negative_zero(result.model_dump_json(indent=2)), file, PLAN)
    _write(markdown_out, markdown_tables(header, tables, result.shadow_price_note), file, MARKDOWN)


def _print_diagnosis(file: Path, diagnosis: Diagnosis) -> None:
    summary = diagnosis.summary.removeprefix("infeasible: ")  # said once, in red
    err.print(f"[bold red]infeasible:[/] {escape(f'{file}: {summary}')}")
    err.print(f"  found by {diagnosis.method}", markup=False)
    for problem in diagnosis.problems:
        err.print(f"  - {problem.requirement}: {problem.message}", markup=False)
        if problem.remedy:
            err.print(f"    remedy: {problem.remedy}", markup=False)


def _print_verification(plan_file: Path, result: Verification) -> None:
    counts = (
        f"{counted(result.total_gpus, 'GPU')} used"
        if result.gpus_bought is None
        else f"{counted(result.gpus_bought, 'GPU')} bought, {describe(result.total_gpus)} used"
    )
    cost = result.cost_per_month  # past 10^15 a float's digits are not the cost's
    dollars = f"${cost:,.0f}" if abs(cost) < 1e15 else f"${cost:.3g}"
    summary = (
        f"{counts}, {dollars}/month recomputed, {counted(len(result.checks), 'scenario check')}"
        if result.stopped is None
        else f"nothing recomputed: {result.stopped}"
    )
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/] {escape(str(warning))}")
    if result.ok:
        out.print(f"{plan_file}: ok: {summary}", markup=False)
        return
    count = len(result.violations)
    plural = "s" if count != 1 else ""
    err.print(
        f"[bold red]verify failed:[/] {escape(f'{plan_file}: {count} violation{plural}')}"
        f" ({escape(summary)})"
    )
    for violation in result.violations:
        err.print(f"  - {violation}", markup=False)
