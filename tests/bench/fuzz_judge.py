"""The hostile-input fuzz's judge: a command run in process (`run`), its outcome judged
(`judge`) for tests/bench/fuzz_run.py.

A finding is one of: `internal` (exit 70 or any code outside 0-4, or a Python exception
out of `main`), `traceback` (one printed), `hang` (past `HANG_S` of wall clock), `slow`
(a refusal that took more than `SLOW_CPU_S` of CPU), `accepted` (exit 0 on a mutation a
correct reader refuses: a value dropped or misread), `unnamed` (a refusal whose message
names neither the field changed nor a line, row or document), `changed-input` (an input
file's bytes differ after the run, or it is gone).
"""

import io
import re
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.bench import fuzz_mutate as mutate

HANG_S = 120
"""Wall-clock seconds after which a run counts as a hang (the machine is shared: CPU
seconds judge speed, `SLOW_CPU_S`)."""
SLOW_CPU_S = 5.0
"""CPU seconds past which a refusal is slow: bad input must be refused within seconds."""
DOCUMENTED = {0, 1, 2, 3, 4}


class _Hang(BaseException):
    """Raised by the alarm; a BaseException so `main`'s last line of defence passes it on."""


@dataclass
class Outcome:
    code: object
    stdout: str
    stderr: str
    cpu_s: float
    wall_s: float


def run(argv: list[str], hang_s: int = HANG_S) -> Outcome:
    """`fleetplan ARGV` in process, its output captured, stopped after `hang_s`."""
    from cli.app import main

    saved = sys.argv, sys.stdout, sys.stderr
    out, err = io.StringIO(), io.StringIO()
    sys.argv, sys.stdout, sys.stderr = ["fleetplan", *map(str, argv)], out, err

    def alarm(signum, frame):
        raise _Hang

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(hang_s)
    cpu, wall = time.process_time(), time.monotonic()
    code: object = 0
    try:
        main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except _Hang:
        code = "hang"
    except BaseException as error:  # the finding is the escape itself
        import traceback

        code = "raised"
        err.write("Traceback (escaped main)\n" + "".join(traceback.format_exception(error)))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        sys.argv, sys.stdout, sys.stderr = saved
    return Outcome(
        code, out.getvalue(), err.getvalue(), time.process_time() - cpu, time.monotonic() - wall
    )


@dataclass(frozen=True)
class Finding:
    what: str
    kind: str
    target: str
    command: str
    where: str
    detail: str

    def __str__(self) -> str:
        return (
            f"[{self.what}] {self.target} {self.command} {self.kind} at {self.where}: {self.detail}"
        )


def _named(outcome: Outcome, where: tuple) -> bool:
    """Whether the refusal names the place changed: one of its keys (or its list item's
    index), or a line of the file."""
    text = outcome.stderr + outcome.stdout
    if not where:
        return True
    keys = [str(step) for step in where if isinstance(step, str)]
    if any(key[:60] in text for key in keys):
        return True
    return bool(_PLACE.search(text))


_PLACE = re.compile(r":\d+:|\bline \d|\brow \d|\bdocument \d")
"""A line, row or document of the file, as a message names one."""


def judge(
    outcome: Outcome, mutant: "mutate.Mutant", inputs: dict[Path, bytes]
) -> list[tuple[str, str]]:
    """The findings of one run: (what, detail) pairs."""
    found = []
    tail = (outcome.stderr.strip().splitlines() or [""])[-1][:300]
    if outcome.code == "hang":
        found.append(("hang", f"past {HANG_S} s"))
    elif outcome.code not in DOCUMENTED:
        found.append(("internal", f"exit {outcome.code}: {tail}"))
    if "Traceback" in outcome.stderr + outcome.stdout:
        found.append(("traceback", tail))
    if outcome.code not in (0, "hang") and outcome.cpu_s > SLOW_CPU_S:
        found.append(("slow", f"{outcome.cpu_s:.1f} s CPU to exit {outcome.code}"))
    if outcome.code == 0 and mutant.must_refuse:
        found.append(("accepted", "exit 0"))
    if outcome.code == 2 and not _named(outcome, mutant.where):
        found.append(("unnamed", tail))
    for path, content in inputs.items():
        if not path.exists() or (path.is_file() and path.read_bytes() != content):
            found.append(("changed-input", str(path)))
    return found
