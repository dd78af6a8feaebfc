"""`fleetplan` run in-process for the README's checks, each command once per session."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shlex
import sys
from dataclasses import dataclass
from typing import Any

from cli.app import main
from cli.render import console
from tests.paths import REPO

# The width of the README's output blocks, as `COLUMNS=100 fleetplan ...` prints them.
README_COLUMNS = 100


@dataclass(frozen=True)
class Ran:
    """What one command printed and how it ended."""

    exit_code: int
    stdout: str
    stderr: str


class Runner:
    """Runs `fleetplan` commands in-process from the repository root, caching each one."""

    def __init__(self) -> None:
        self._ran: dict[tuple[str, ...], Ran] = {}

    def run(self, command: str) -> Ran:
        """`command` as typed (`fleetplan solve instances/x.yaml --set 'a=b'`)."""
        argv = tuple(shlex.split(command))
        if argv[0] != "fleetplan":
            raise ValueError(f"a check runs fleetplan commands, got {command!r}")
        if argv not in self._ran:
            self._ran[argv] = _run_in_process(argv)
        return self._ran[argv]

    def json(self, command: str) -> Any:
        """The command's `--json` result (its tables go to standard error)."""
        ran = self.run(f"{command} --json")
        if not ran.stdout.strip():
            raise RuntimeError(
                f"{command} --json printed nothing (exit {ran.exit_code}): {ran.stderr[-2000:]}"
            )
        return json.loads(ran.stdout)

    def text(self, command: str) -> str:
        """What the command prints, as a terminal shows it at README_COLUMNS columns: the
        tables that `--json` sends to standard error, from the same (cached) run as `json`,
        so a command quoted both ways is run once. For commands that print their tables
        whatever `--json` says (solve, explain, compare, simulate; not perf or voice)."""
        ran = self.run(f"{command} --json")
        return ran.stderr


def _run_in_process(argv: tuple[str, ...]) -> Ran:
    out, err = io.StringIO(), io.StringIO()
    widths = console.out.width, console.err.width
    saved_argv, saved_cwd = sys.argv, os.getcwd()
    code = 0
    try:
        sys.argv = list(argv)
        os.chdir(REPO)
        console.out.width = console.err.width = README_COLUMNS
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main()
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    finally:
        sys.argv = saved_argv
        os.chdir(saved_cwd)
        console.out.width, console.err.width = widths
    # progress lines (solver.progress, stderr past 2 s) depend on the machine's speed
    return Ran(code, out.getvalue(), _without_progress(err.getvalue()))


def _without_progress(text: str) -> str:
    return "".join(
        line for line in text.splitlines(keepends=True) if not line.startswith("progress: ")
    )


def golden(instance: str) -> dict[str, Any]:
    """`instances/NAME.expected.json`: the result `make test`'s `batch --check` holds the
    tool to (cost within its tolerance, GPUs exact)."""
    return json.loads((REPO / "instances" / f"{instance}.expected.json").read_text())
