"""Shared terminal output: one console for results, one for errors."""

import json
import logging
import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

from rich.console import Console
from rich.segment import Segment

from cli.render.zeros import json_without_negative_zero
from models.io.output_files import one_line, terminal_safe
from models.schema.errors import InputError

if TYPE_CHECKING:
    from rich.progress import Progress


READER_GONE = 128 + 13
"""The exit status of a command whose reader closed the pipe (`fleetplan solve ... | head
-1`): the shell's for a process killed by SIGPIPE, as `yes | head -1` leaves `yes`."""


def end_for_a_closed_pipe(stream: Any = None) -> NoReturn:
    """End quietly because the reader of `stream` (stdout by default) has gone: what is
    still buffered for it goes to /dev/null (so the flush at exit raises nothing) and the
    process exits `READER_GONE`, saying nothing, as Unix tools do."""
    to_devnull(stream if stream is not None else sys.stdout)
    raise SystemExit(READER_GONE)


@contextmanager
def failure_output() -> Iterator[None]:
    """Within: stdout written for a command that fails (a bad file's problems as JSON, an
    infeasible diagnosis) whose reader has gone leaves the failure to end the command, so
    its message still reaches stderr and its exit code stays (2, 3), not `READER_GONE`:
    `validate bad.yaml --json | head -0` exited 141 with nothing said."""
    try:
        yield
    except BrokenPipeError:
        to_devnull(sys.stdout)
    except SystemExit as stop:
        if stop.code != READER_GONE:
            raise


def to_devnull(stream: Any) -> None:
    """Put /dev/null on `stream`'s descriptor, so that what is still buffered for a reader
    that has gone flushes without a word."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
    except (OSError, ValueError):  # no descriptor (a test's capture): nothing to flush
        pass


class SafeConsole(Console):
    """A console that shows the characters a terminal would act on instead of sending
    them: the text printed holds the user's names and paths, and a workload called
    "chat\\u001b]0;title\\u0007" must not retitle, recolour or clear the user's terminal.
    Every text segment passes `terminal_safe` as the output is assembled (rich's own
    control segments, cursor moves, are kept), so tables and messages alike are covered.
    A closed pipe on stdout ends the process quietly with `READER_GONE` (rich's own
    handler exits 1). On stderr (`2>&1 | head -1`) the messages after it are dropped and
    the command ends as it would: a bad file's message cut short still exits 2 (it
    exited 141, as a solve cut short does).
    """

    def on_broken_pipe(self) -> None:
        self.quiet = True
        if self.stderr:
            to_devnull(self.file)
            return
        end_for_a_closed_pipe(self.file)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
            segment if segment.control else Segment(terminal_safe(segment.text), segment.style)
            for segment in buffer
        )


FILE_WIDTH = 160
"""Wide enough for the plan tables when output goes to a file or a CI log."""


def output_width(environ: Mapping[str, str] = os.environ, is_terminal: bool = False) -> int | None:
    """The width tables are laid out in: `COLUMNS` when it is set to a positive number
    (the user's word, terminal or not), else the terminal's own (None: rich asks it), else
    `FILE_WIDTH` for a file or a pipe."""
    columns = environ.get("COLUMNS", "").strip()
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return None if is_terminal else FILE_WIDTH


_WIDTH = output_width(is_terminal=sys.stdout.isatty())
# No emoji codes: the text printed holds the user's names and paths, and a workload
# called ":fire:" is printed as written.
out = SafeConsole(highlight=False, soft_wrap=True, width=_WIDTH, emoji=False)
err = SafeConsole(stderr=True, highlight=False, soft_wrap=True, width=_WIDTH, emoji=False)


def job_progress(label: str) -> "Progress":
    """The bar on stderr of jobs that end one by one: `label`, the bar, done of total,
    the time spent and the last job's description; gone once it stops."""
    from rich.progress import (  # only the commands that run jobs draw it
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=err,
        transient=True,
    )


def print_json(data: Any) -> None:
    """Write `data` as indented JSON on stdout (no colour, no wrapping)."""
    text = json.dumps(data, indent=2, sort_keys=False)
    sys.stdout.write(json_without_negative_zero(text) + "\n")


def report_input_error(error: InputError) -> None:
    """Print every issue of an input error on stderr, one per line (a name's line break
    shown as `\\u000a`: `one_line`)."""
    count = len(error.issues)
    err.print(f"[bold red]error:[/] {count} problem{'s' if count != 1 else ''} in the input")
    for issue in error.issues:
        err.print(f"  {one_line(str(issue))}", markup=False)


class _Stderr(logging.Handler):
    """Writes each record to the stderr of the moment (a test's capture included)."""

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(self.format(record) + "\n")
        sys.stderr.flush()


def progress_to_stderr() -> None:
    """Send the solver's progress (solver.progress: the stage, the incumbent and the gap of
    a run past 2 s) to stderr, never to stdout where `--json -` writes."""
    logger = logging.getLogger("fleetplan.progress")
    if not any(isinstance(h, _Stderr) for h in logger.handlers):
        logger.addHandler(_Stderr())
    logger.setLevel(logging.INFO)
    logger.propagate = False
