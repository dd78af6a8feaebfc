"""Shared terminal output: one console for results, one for errors."""

import json
import sys
from typing import Any

from rich.console import Console

from models.schema.errors import InputError

# Wide enough for the plan tables when output goes to a file or a CI log.
_WIDTH = None if sys.stdout.isatty() else 160
# No emoji codes: the text printed holds the user's names and paths, and a workload
# called ":fire:" is printed as written.
out = Console(highlight=False, soft_wrap=True, width=_WIDTH, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=_WIDTH, emoji=False)


def print_json(data: Any) -> None:
    """Write `data` as indented JSON on stdout (no colour, no wrapping)."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def report_input_error(error: InputError) -> None:
    """Print every issue of an input error on stderr, one per line."""
    count = len(error.issues)
    err.print(f"[bold red]error:[/] {count} problem{'s' if count != 1 else ''} in the input")
    for issue in error.issues:
        err.print(f"  {issue}", markup=False)
