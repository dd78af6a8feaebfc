"""What an output may write over: a new file, an empty one, or an earlier output of its
own kind, recognised by its content (`OutputKind.replaces`).

`solve x.yaml --markdown plan.json` wrote Markdown over the plan a 35-second solve had
made, and `simulate ... --json notes.md` JSON over a user's notes; only instance files
were protected. Every output flag now names the kind it writes (`models.io.output_files.
check_target`), and an existing file that does not read as that kind is refused before
any work, naming what it is. The kinds, and what counts as an earlier one:

- PLAN (`solve`/`explain --json`, `fleet-import --plan-out`): a JSON mapping with a
  `status` or `replicas` (a plan, an explanation, a no-solution document, a golden
  result, fleet-import's `{"replicas": [...]}`).
- JSON (every other `--json`): a JSON document that is not a plan or an explanation (a
  mapping with `replicas` or `plan`): a verdict or a table never replaces the plan.
- MARKDOWN (`--markdown`): a file whose first line is a heading and that holds a pipe
  table, with no code fence (a README's ```), as every fleetplan Markdown report does.
- HTML (`report -o`): a file opening as fleetplan's report does.
- PROGRAM (`--export-mps`): an MPS (`NAME`, `ROWS`) or LP (`\\`, `min`, `max`) file.
- PROFILE (`calibrate -o`): a profile opening with calibrate's header line.
- JUNIT (`batch --junit`): an XML file with a `<testsuites>` element.
- an instance (`fleet-import --instance-out`, output_files' `instance`): an instance.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from models.schema.reading_limits import MAX_PLAN_BYTES

HEAD_BYTES = 64 * 2**10
"""How much of a file the text kinds read to judge it (their marks are at the top)."""


@dataclass(frozen=True)
class OutputKind:
    """One kind of output: its name in messages and the test of an earlier one."""

    name: str
    """What it is, after "an earlier ...": "plan (solve --json)", "Markdown report"."""
    recognises: Callable[[str], bool]
    """Whether a file's text (all of it for JSON, `HEAD_BYTES` otherwise) is one."""
    whole: bool = False
    """Whether `recognises` needs the whole file (JSON), not its head."""

    def replaces(self, text: str) -> bool:
        """Whether an existing file holding `text` may be replaced by this kind."""
        return not text.strip() or self.recognises(text)


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _solve_result(text: str) -> bool:
    data = _json(text)
    return isinstance(data, dict) and bool(data.keys() & {"status", "replicas"})


def _other_json(text: str) -> bool:
    data = _json(text)
    if isinstance(data, dict):
        return not data.keys() & {"replicas", "plan"}
    return isinstance(data, list)


_TABLE_RULE = re.compile(r"^\|(?: *:?-+:? *\|)+ *$", re.MULTILINE)
"""A pipe table's delimiter row (`|---|---|`)."""


def _markdown(text: str) -> bool:
    first = text.lstrip().split("\n", 1)[0]
    return (
        first.startswith("#")
        and _TABLE_RULE.search(text) is not None
        and not re.search(r"^ {0,3}(```|~~~)", text, re.MULTILINE)
    )


HTML_OPENING = '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n<title>'
"""How fleetplan's HTML report opens (cli.render.html_report.report_html writes it)."""

PROFILE_OPENING = "# fleetplan engine profile, written by `fleetplan calibrate`"
"""The first line `calibrate -o` writes (cli.calibrate), before its date."""


def _program(text: str) -> bool:
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("*")]
    if not lines:
        return False
    first = lines[0].strip()
    return first.startswith("\\") or first.split()[0].lower() in _PROGRAM_OPENINGS


_PROGRAM_OPENINGS = ("name", "rows", "min", "max", "minimize", "maximize")
"""First words of an MPS file (NAME, ROWS) or an LP file's objective."""


def _junit(text: str) -> bool:
    return text.lstrip().startswith("<?xml") and "<testsuites" in text[:4096]


PLAN = OutputKind("plan (solve --json)", _solve_result, True)
JSON = OutputKind("JSON output", _other_json, True)
MARKDOWN = OutputKind("Markdown report", _markdown)
HTML = OutputKind("HTML report", lambda text: text.startswith(HTML_OPENING))
PROGRAM = OutputKind("program file (MPS or LP)", _program)
PROFILE = OutputKind("profile from calibrate", lambda text: text.startswith(PROFILE_OPENING))
JUNIT = OutputKind("JUnit XML report", _junit)

READ_AT_MOST = MAX_PLAN_BYTES
"""A file larger than this is no earlier output of any kind (no plan is larger)."""


def described(text: str) -> str:
    """What an existing file's text is, for the message that refuses to replace it."""
    data = _json(text)
    if isinstance(data, dict) and "replicas" in data:
        return "a plan (JSON with replicas)"
    if isinstance(data, dict) and "plan" in data:
        return "an explanation (JSON holding a plan)"
    if data is not None or text.strip() == "null":
        return "JSON"
    if text.lstrip().startswith("{") and '"replicas"' in text:  # a plan's head (HEAD_BYTES)
        return "what reads as a plan (JSON with replicas)"
    if re.search(r"^kind: *fleetplan-engine-profile *$", text, re.MULTILINE):
        if text.startswith(PROFILE_OPENING):
            return "an engine profile"
        return "an engine profile calibrate did not write (no calibrate header line)"
    for kind in (MARKDOWN, HTML, PROGRAM, PROFILE, JUNIT):
        if kind.recognises(text):
            return ("an " if kind.name[0] in "aeiouH" else "a ") + kind.name
    return "another kind of file"
