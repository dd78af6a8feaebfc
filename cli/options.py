"""Options every command spells the same way (the README's "Command-line conventions").

- `--json` writes the result as JSON: alone (or `--json -`) to standard output, with a
  file name to that file (`-o FILE` too, where `-o` is free). When JSON goes to standard
  output, the human-readable tables go to standard error, so stdout is pure JSON.
- `--markdown` is the same for Markdown.
- `--set path=value` (repeatable) changes the instance document before it is validated
  (models/io/overrides.py).
- Every numeric flag is strict (`within`): NaN, infinity and a value beyond its bound in
  models/schema/limits.py or flag_limits.py exit 2 with a message naming the flag and the
  bound's reason.
  `--jobs` is capped at this machine's CPU count (`capped_at_cores`).
- `--executor local|ray` says where a solve's subproblems run (`ExecutorOption`); `ray`
  needs the optional extra (`pip install 'fleetplan[ray]'`) and exits 2 without it.

`--json` without a value is rewritten to `--json=-` by the app (cli.app.bare_outputs)
before the command parses its arguments, so the value is always a path here.
"""

import importlib.util
import json
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from typer import _click

from models.io.output_files import is_stdout, write_text
from models.io.output_kinds import JSON, OutputKind
from models.schema import limits
from models.schema.errors import InputError, Issue
from models.schema.limits import Bound
from models.schema.quantities import counted, number_text, out_of_range

JSON_HELP = "Write the result as JSON: alone or - for standard output, else to this file."
MARKDOWN_HELP = "Write the result as Markdown: alone or - for standard output, else to this file."

JsonOut = Annotated[Path | None, typer.Option("--json", "-o", metavar="[FILE]", help=JSON_HELP)]
"""`--json [FILE]` / `-o FILE`."""
JsonOnly = Annotated[Path | None, typer.Option("--json", metavar="[FILE]", help=JSON_HELP)]
"""`--json [FILE]` on a command whose `-o` means something else."""
MarkdownOut = Annotated[
    Path | None, typer.Option("--markdown", metavar="[FILE]", help=MARKDOWN_HELP)
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="PATH=VALUE",
        # "\[": help is Rich markup, where a bare [chat] is a style tag and vanishes
        help="Change the instance before validation, e.g. workloads\\[chat].slo.ttft_p99_ms=1200 "
        "(repeatable; the value is read as YAML; \\[0] is the first element, \\[-1] the last).",
    ),
]


def to_stdout(*outputs: Path | None) -> bool:
    """Whether any of the outputs is standard output (then tables go to stderr)."""
    return any(path is not None and is_stdout(path) for path in outputs)


def read_files(engine: str | None, *paths: Path | None) -> tuple[Path, ...]:
    """The files a command reads besides its arguments: an `--engine` that names a profile
    file, and `paths` given (`--model-config`): an output may not replace one of them."""
    from models.physics.profile_files import is_profile_file

    files = [path for path in paths if path is not None]
    if engine is not None and is_profile_file(engine):
        files.append(Path(engine))
    return tuple(files)


def emit_json(
    target: Path | None, data: Any, inputs: tuple[Path, ...] = (), kind: OutputKind = JSON
) -> None:
    """Write `data` (a JSON string, a pydantic model or plain data) to `target`: nothing
    for None, standard output for `-`, else the file (atomically, never over an input,
    and over an existing file only when it is an earlier output of `kind`)."""
    if target is None:
        return
    from cli.render.zeros import json_without_negative_zero

    if isinstance(data, str):
        text = data
    elif hasattr(data, "model_dump_json"):
        text = data.model_dump_json(indent=2)
    else:
        text = json.dumps(data, indent=2)
    write_text(target, json_without_negative_zero(text), inputs, kind=kind)
    if not is_stdout(target):
        from cli.render.console import err

        err.print(f"wrote {target}", markup=False)


def overrides_of(sets: list[str] | None):
    """The parsed `--set` overrides (models.io.overrides), refusing a bad one with exit 2."""
    from models.io.overrides import parse_overrides

    return parse_overrides(sets)


def load(
    file: Path,
    sets: list[str] | None,
    outputs: tuple[Path | None, ...] = (),
    replaced: tuple[str, ...] = (),
):
    """The instance in `file` with the `--set` overrides applied, validated in full; its
    warnings (models.schema.checks.input_warnings) printed on stderr, but for the fields
    in `replaced` that a flag given replaces. An output among `outputs` that is a file
    the instance reads (`read_by`) is refused."""
    from models.io.overrides import load_instance_with
    from models.schema.checks import input_warnings

    instance = load_instance_with(file, overrides_of(sets))
    check_not_read_by(instance, outputs)
    print_warnings(input_warnings(instance, replaced))
    return instance


def read_by(instance) -> dict[Path, str]:
    """The files `instance` reads besides itself, each with the field that names it: its
    engine profile file (`engine`) and the Hugging Face configs (`models[i].config`)."""
    from models.physics.profile_files import is_profile_file

    files = {
        Path(m.config): f"models[{i}].config" for i, m in enumerate(instance.models) if m.config
    }
    if is_profile_file(instance.engine):
        files[Path(instance.engine)] = "engine"
    return files


def check_not_read_by(instance, outputs: tuple[Path | None, ...]) -> None:
    """Refuse an output that is a file the instance reads (`read_by`): `solve inst.yaml
    --json mine.yaml`, the instance holding `engine: mine.yaml`, wrote the plan over the
    calibrated profile, and the next run refused the instance."""
    from models.io.output_files import resolved_target

    read = {resolved_target(path): field for path, field in read_by(instance).items()}
    for output in outputs:
        if output is None or is_stdout(output):
            continue
        field = read.get(resolved_target(output))
        if field is not None:
            raise InputError(
                [Issue(str(output), None, "", f"is a file the instance reads ({field}); "
                       "choose another output path")]
            )  # fmt: skip


def print_warnings(lines: list[str]) -> None:
    """Each warning on stderr, one line each (a name's line break shown as `\\u000a`)."""
    from cli.render.console import err
    from models.io.output_files import one_line

    for line in lines:
        err.print(f"warning: {one_line(line)}", markup=False)


def _flag(param: typer.CallbackParam) -> str:
    """The flag's long name, as the user reads it in --help (`--input-tokens`)."""
    return max(param.opts, key=len)


NUMERIC = ("int", "float")
"""The bare types (`bare_type()`) of typer's numeric parameters."""


def strict_numbers(command: _click.Command) -> None:
    """Read every int and float parameter of `command` (and of its subcommands) by the
    rule of the instance files and CSVs: typer reads a number with pydantic's lax mode,
    as Python's `float` does, so `--requests-per-day 1_000_000` (PEP 515's separator) or
    Arabic-Indic digits read as numbers nobody wrote; now the text must be ASCII digits
    (`number_text`, models.io.numbers) or the command exits 2 naming the option. The rest
    (the range, the metavar, typer's own refusals) is typer's."""
    for param in command.params:
        if getattr(param, "bare_type", lambda: "")() in NUMERIC:
            param.process_value = _ascii_first(param, param.process_value)
    for sub in getattr(command, "commands", {}).values():
        strict_numbers(sub)


def _ascii_first(param: Any, process: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """`process` (a parameter's `process_value`) after the text given is checked."""

    def process_value(ctx: Any, value: Any) -> Any:
        if isinstance(value, str):
            try:
                number_text(value)
            except ValueError as error:
                raise InputError([Issue("command line", None, _flag(param), str(error))]) from None
        return process(ctx, value)

    return process_value


def within(bound: Bound) -> Callable[[typer.CallbackParam, Any], Any]:
    """A typer callback for a numeric flag: the value, or exit 2 naming the flag when it
    is NaN, infinite or outside `bound` (the message gives the bound, its unit and why).
    A flag not given (None) passes. Use as `typer.Option(..., callback=within(limits.X))`.
    """

    def check(param: typer.CallbackParam, value: Any) -> Any:
        problem = None if value is None else out_of_range(value, bound)
        if problem is not None:
            raise InputError([Issue("command line", None, _flag(param), problem)])
        return value

    check.bound = bound  # the bound it holds the flag to (the tests read it)
    return check


def given_on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether the option `name` (its parameter name) was given, not left at its default."""
    return ctx.get_parameter_source(name) is not _click.core.ParameterSource.DEFAULT


def capped_at_cores(ctx: typer.Context, param: typer.CallbackParam, jobs: int) -> int:
    """A typer callback for `--jobs`: at most this machine's CPU count
    (`limits.max_threads`), since more workers only oversubscribe it; a larger value
    given on the command line is capped, with a warning that says so."""
    cores = limits.max_threads()
    if jobs <= cores:
        return jobs
    if given_on_command_line(ctx, param.name or ""):
        from cli.render.console import err

        err.print(
            f"warning: {_flag(param)} {jobs:,} is more than this machine's {cores} CPUs; "
            f"running {cores} at a time",
            markup=False,
        )
    return cores


def known_backend(param: typer.CallbackParam, value: str | None) -> str | None:
    """A typer callback for `--backend`: a name not in models.schema.backend_names exits
    2 naming the flag and the choices, before any instance is read or solved (as the
    registry reads names: any case, spaces around). None (not given) passes."""
    from models.schema.backend_names import BACKEND_NAMES

    if value is None or value.strip().lower() in BACKEND_NAMES:
        return value
    problem = f"unknown solver backend {value!r}; choose one of {', '.join(BACKEND_NAMES)}"
    raise InputError([Issue("command line", None, _flag(param), problem)])


def named_backend(param: typer.CallbackParam, value: str | None) -> str | None:
    """A typer callback for a `--backend` whose unknown names are each instance's outcome
    (`batch`): an empty or blank name exits 2 naming the flag, since it would otherwise
    read as not given and run every instance's own backend without a word."""
    if value is not None and not value.strip():
        problem = f"an empty solver backend name; choose one of {_backend_names()}"
        raise InputError([Issue("command line", None, _flag(param), problem)])
    return value


def _backend_names() -> str:
    from models.schema.backend_names import BACKEND_NAMES

    return ", ".join(BACKEND_NAMES)


class Executor(StrEnum):
    """Where the workload, scenario and period subproblems of a solve run."""

    local = "local"
    ray = "ray"


def ray_installed(param: typer.CallbackParam, value: Executor) -> Executor:
    """A typer callback for `--executor`: `ray` exits 2 naming the flag where Ray cannot
    be imported."""
    if value is Executor.ray and importlib.util.find_spec("ray") is None:
        problem = "ray is not installed: pip install 'fleetplan[ray]'"
        raise InputError([Issue("command line", None, _flag(param), problem)])
    return value


ExecutorOption = Annotated[
    Executor,
    typer.Option(
        "--executor",
        help="Where subproblems run: local (worker processes) or ray (Ray tasks; the ray extra).",
        callback=ray_installed,
    ),
]


VIOLATIONS_SHOWN = 20
"""Violations of a refused plan printed on stderr (`verify` lists them all)."""


def warn_other_instance(instance: Any, plan: Any, plan_file: Path) -> None:
    """Warn that `plan` names another instance than `instance`: its verdict, and what is
    done with it, are this instance's (deploy, report and simulate said nothing)."""
    if plan.instance and plan.instance != instance.name:
        print_warnings(
            [
                f"{plan_file} is a plan of instance '{plan.instance}', checked here against "
                f"'{instance.name}': the verdict is this instance's"
            ]
        )


def require_verified(instance: Any, plan: Any, plan_file: Path, command: str) -> None:
    """Return when the independent verifier accepts `plan` for `instance` (hour by hour
    for an hourly plan); otherwise print why and exit. `report --plan` and `simulate` act
    only on such a plan (issue 36): a tampered figure is never shown as a fact, a pool in
    a region the instance does not have is refused, and a count of 10^12 replicas never
    reaches a chart or an event loop (the verifier refuses it before any physics). A plan
    solved for another instance is judged as this one's, with the warning verify gives
    (`warn_other_instance`).

    Raises:
        typer.Exit: code 1 (CHECK_FAILED), the violations on stderr.
    """
    from cli.exit_codes import ExitCode
    from cli.render.console import err
    from solver.verify.hours import verify_any

    warn_other_instance(instance, plan, plan_file)
    check = verify_any(instance, plan)
    for warning in check.warnings:  # a static plan of an hourly instance: said, not refused
        if warning.requirement == "hours":
            err.print(f"warning: {plan_file}: {warning.message}", markup=False)
    if check.ok:
        return
    shown = check.violations[:VIOLATIONS_SHOWN]
    more = f", the first {len(shown)}" if len(shown) < len(check.violations) else ""
    err.print(
        f"{command} refused: {plan_file} fails the verifier: "
        f"{counted(len(check.violations), 'violation')}{more}:",
        markup=False,
    )
    for violation in shown:
        err.print(f"  - {violation}", markup=False)
    raise typer.Exit(ExitCode.CHECK_FAILED)
