"""The `fleetplan` application: registers every command and maps errors to exit codes.

Commands load when they run, not when the program starts: `fleetplan --help` and
`fleetplan catalog gpus` never import the solver, its backends (HiGHS, OR-Tools, PuLP) or
the physics they do not use. Each command is named here with the module that holds its
function; its one-line summary for `--help` is read from that function's docstring in the
source, without importing the module.
"""

import ast
import gc
import importlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import typer
from typer import _click
from typer.core import TyperCommand, TyperGroup

from cli.exit_codes import ExitCode
from models.schema.errors import InputError

COMMANDS: dict[str, str] = {
    "validate": "cli.inputs",
    "catalog": "cli.inputs",
    "schema": "cli.inputs",
    "estimate": "cli.estimate",
    "headroom": "cli.estimate",
    "solve": "cli.solve",
    "verify": "cli.solve",
    "explain": "cli.solve",
    "batch": "cli.batch",
    "perf": "cli.perf",
    "simulate": "cli.simulate",
    "voice": "cli.voice",
    "compare": "cli.compare",
    "report": "cli.report",
    "sweep": "cli.sweep",
    "calibrate": "cli.calibrate",
    "deploy": "cli.deploy",
    "fleet-import": "cli.deploy",
}
"""Command name -> the module holding the function of that name (`-` read as `_`), in
`--help` order."""

CONTEXT = {"help_option_names": ["-h", "--help"]}
"""Click settings of the app and of every command: `-h` is `--help`."""


@cache
def summary(name: str) -> str:
    """The first sentence of command `name`'s docstring, read from its module's source."""
    spec = importlib.util.find_spec(COMMANDS[name])
    if spec is None or spec.origin is None:
        return ""
    source = Path(spec.origin).read_text(encoding="utf-8")
    function = name.replace("-", "_")
    for node in _definition(source, function).body:
        if isinstance(node, ast.FunctionDef) and node.name == function:
            paragraph = " ".join((ast.get_docstring(node) or "").split("\n\n")[0].split())
            return paragraph.split("; ")[0].split(". ")[0].rstrip(".") + "."
    return ""


_NEXT_TOP_LEVEL = re.compile(r"\n(?=[^\s)#])")
"""The start of the next top-level statement: a line that begins with neither space, `)`
(the end of a signature spread over lines) nor `#`."""


def _definition(source: str, name: str) -> ast.Module:
    """The top-level `def name(...)` of `source`, parsed alone: a command module runs to
    some 750 lines and `--help` reads fifteen of them, where parsing whole files took a
    fifth of its time (issue 19). The whole file where the cut does not parse."""
    start = source.find(f"\ndef {name}(")
    if start >= 0:
        following = _NEXT_TOP_LEVEL.search(source, start + 1)
        chunk = source[start + 1 : following.start() if following else len(source)]
        try:
            return ast.parse(chunk)
        except SyntaxError:
            pass
    return ast.parse(source)


@cache
def load_command(name: str) -> _click.Command:
    """The real command `name`: its module imported and its function built by typer, its
    numbers read as files read them (`cli.options.strict_numbers`)."""
    from cli.options import strict_numbers

    function = getattr(importlib.import_module(COMMANDS[name]), name.replace("-", "_"))
    single = typer.Typer(
        add_completion=False, pretty_exceptions_enable=False, context_settings=CONTEXT
    )
    single.command(name=name)(function)
    command = typer.main.get_command(single)
    strict_numbers(command)
    command.name = name
    command.help = reflowed(command.help)
    _end_of_start_up()
    return command


def reflowed(text: str | None) -> str | None:
    """A docstring's paragraphs as single lines, for `-h` to wrap to the terminal (the
    help keeps the docstring's own line breaks, so lines wrapped at 88 columns broke
    again mid-sentence at 80); a line that starts a list item (`-`, `*`) or is indented
    starts a new line, and blank lines still part paragraphs."""
    if not text:
        return text
    paragraphs = []
    for block in inspect.cleandoc(text).split("\n\n"):
        lines: list[str] = []
        for line in block.splitlines():
            starts_item = line.lstrip().startswith(("- ", "* ")) or line.startswith(" ")
            if lines and not starts_item:
                lines[-1] += " " + line.strip()
            else:
                lines.append(line.rstrip())
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


_start_up = {"paused": False}
"""Whether `main` paused the cyclic garbage collector for the start-up."""


def _pause_collection() -> bool:
    """Pause the cyclic garbage collector while the command loads (`main`); returns
    whether it was running.

    Start-up builds some 100,000 objects (modules, classes, pydantic schemas) that all
    live to the end, so every collection of it finds nothing, yet the collector ran
    dozens of times, each pass longer: ~10% of a one-model solve (issue 19).
    """
    running = gc.isenabled()
    if running:
        gc.disable()
        _start_up["paused"] = True
    return running


def _end_of_start_up() -> None:
    """The command is loaded: move what start-up built out of the collector's sight
    (`gc.freeze`: later collections, the one at exit included, skip it) and let the
    collector run again for the command's own work."""
    if _start_up["paused"]:
        _start_up["paused"] = False
        gc.freeze()
        gc.enable()


OPTIONAL_VALUE = ("--json", "--markdown")
"""Output options whose file name may be left out: alone, they mean standard output."""


def bare_outputs(command: _click.Command, args: list[str]) -> list[str]:
    """`args` with a bare `--json` (last, or followed by another option) written
    `--json=-`, for a command whose `--json` takes a file: `--json` alone always means
    standard output, `--json FILE` that file (and the same for `--markdown`)."""
    takes_value = {
        name
        for param in command.params
        if not getattr(param, "is_flag", True)
        for name in param.opts
        if name in OPTIONAL_VALUE
    }
    rewritten = []
    for position, arg in enumerate(args):
        following = args[position + 1] if position + 1 < len(args) else None
        bare = following is None or (following.startswith("-") and following != "-")
        if arg == "--":
            rewritten += args[position:]
            break
        rewritten.append(f"{arg}=-" if arg in takes_value and bare else arg)
    return rewritten


class LazyCommand(TyperCommand):
    """A command known by name and summary until it is used; then the real one takes over
    (its context, parameters, help and invocation)."""

    def __init__(self, name: str) -> None:
        super().__init__(name, short_help=summary(name), help=summary(name))

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra):
        command = load_command(self.name)
        args = bare_outputs(command, args)
        try:
            return command.make_context(info_name, args, parent=parent, **extra)
        except typer.BadParameter as error:  # typer words a refused choice as pydantic does
            error.message = error.message.removeprefix("Value error, ")
            raise

    def invoke(self, ctx: _click.Context) -> Any:
        return load_command(self.name).invoke(ctx)


USAGE_ERROR: list[int] = []
"""The exit code of the usage error the command line ended with (click's, 2), noted as it
leaves the group: typer prints it on a rich console, which exits 1 where stderr's reader
has gone (`fleetplan perf -m x 2>&1 | head -0`), and `_run_app` ends with this code instead,
so a script reading the status still sees a usage error."""


@contextmanager
def _noting_usage_errors() -> Iterator[None]:
    try:
        yield
    except _click.ClickException as error:
        USAGE_ERROR.append(error.exit_code)
        raise


class LazyGroup(TyperGroup):
    """The top-level group: lists `COMMANDS` and loads only the one that runs."""

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: _click.Context, cmd_name: str) -> _click.Command | None:
        return LazyCommand(cmd_name) if cmd_name in COMMANDS else None

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra):
        with _noting_usage_errors():  # `fleetplan --bogus`
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: _click.Context) -> Any:
        """Run the command; a reader that closed the pipe (`| head -1`) ends it quietly
        with `READER_GONE` (typer's own handler exits 1 without a word)."""
        try:
            with _noting_usage_errors():  # a command's flags, `fleetplan nosuch`
                return super().invoke(ctx)
        except BrokenPipeError:
            from cli.render.console import end_for_a_closed_pipe

            end_for_a_closed_pipe()


app = typer.Typer(
    name="fleetplan",
    cls=LazyGroup,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings=CONTEXT,
)


def version() -> str:
    """fleetplan's version, from the installed package's metadata."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version("fleetplan")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown (not installed)"


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"fleetplan {version()}\n")
        raise typer.Exit(ExitCode.OK)


@app.callback()
def fleetplan(
    show_version: bool = typer.Option(
        False,
        "--version",
        is_eager=True,
        expose_value=False,
        callback=_print_version,
        help="Print fleetplan's version and exit.",
    ),
) -> None:
    """Plan GPU fleets for LLM serving: what to buy, where, laid out how, at what cost."""


def main() -> None:
    """Console entry point: run the app and map every way it can end to an exit code.

    Input errors exit 2. Input that exhausts the interpreter (a recursion or memory
    limit) exits 2 with a message, not a traceback. Anything else unexpected is a bug in
    fleetplan: one line naming the exception, exit 70 (EX_SOFTWARE).
    """
    collecting = _pause_collection()
    try:
        _run_app()
    finally:
        if collecting and not gc.isenabled():
            _start_up["paused"] = False
            gc.enable()


def _run_app() -> None:
    """`app()` with every way it can end mapped to an exit code (`main`)."""
    stdout_was = _device_of_stdout()
    USAGE_ERROR.clear()  # one run's (a test runs many in one process)
    try:
        try:
            app()
        except SystemExit as stop:
            code = USAGE_ERROR[-1] if USAGE_ERROR else stop.code  # printing it met a closed pipe
            _flush_output(stdout_was, code)
            sys.exit(code)
    except InputError as error:
        from cli.render.console import report_input_error

        report_input_error(error)
        _flush_output(stdout_was, ExitCode.BAD_INPUT)  # a reader gone: exit 2 still
        sys.exit(ExitCode.BAD_INPUT)
    except KeyboardInterrupt:
        from cli.render.console import err

        err.print("interrupted")
        sys.exit(130)
    except (RecursionError, MemoryError) as error:
        from cli.render.console import err

        err.print(
            f"[bold red]error:[/] the input is too large or too deeply nested to process "
            f"({type(error).__name__}); see the limits in models/schema/limits.py",
        )
        sys.exit(ExitCode.BAD_INPUT)
    except Exception as error:  # the last line of defence: anything else is a bug
        from rich.markup import escape

        from cli.render.console import err

        err.print(
            "[bold red]internal error:[/] this is a bug in fleetplan, please report it "
            f"with the command and input: {escape(_one_line(error))}"
        )
        sys.exit(ExitCode.INTERNAL_ERROR)


def _device_of_stdout() -> tuple[int, int] | None:
    """What file descriptor 1 is open on (device, inode), None where it is not open."""
    try:
        status = os.fstat(1)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _flush_output(stdout_was: tuple[int, int] | None, code: object = 0) -> None:
    """Write out what is still buffered for stdout before exiting: where its reader has
    gone (`| head -1`), end quietly (`end_for_a_closed_pipe`) rather than let the flush at
    exit print 'Exception ignored ... BrokenPipeError' and exit 120. A rich console of
    typer's (`--help`) that met the closed pipe has put /dev/null on stdout
    and exits 1: that exit is the reader's going too. A command that failed (its exit
    `code` already decided: 1 to 4, 70) keeps its code, its message said on stderr: an
    infeasible `solve --json | head -0` exited 141, as a plan cut short does (where the
    failure's own output met the pipe, `failure_output` put /dev/null on stdout)."""
    try:
        sys.stdout.flush()
        now = _device_of_stdout()
        reader_gone = now != stdout_was and now == _device_of(os.devnull) and code in (0, 1, None)
    except BrokenPipeError:
        if code not in (0, None):
            from cli.render.console import to_devnull

            to_devnull(sys.stdout)
            return
        reader_gone = True
    except (OSError, ValueError):  # a closed or replaced stdout: nothing more to write
        return
    if reader_gone:
        from cli.render.console import end_for_a_closed_pipe

        end_for_a_closed_pipe()


def _device_of(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_dev, status.st_ino


def _one_line(error: BaseException) -> str:
    """`Type: message` on one line, cut to a readable length."""
    message = " ".join(str(error).split())
    text = f"{type(error).__name__}: {message}" if message else type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


if __name__ == "__main__":
    main()
