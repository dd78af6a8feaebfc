"""Shared terminal output: one console for results, one for errors."""

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from models.errors import InputError, Issue

# Wide enough for the plan tables when output goes to a file or a CI log.
_WIDTH = None if sys.stdout.isatty() else 160
out = Console(highlight=False, soft_wrap=True, width=_WIDTH)
err = Console(stderr=True, highlight=False, soft_wrap=True, width=_WIDTH)


def print_json(data: Any) -> None:
    """Write `data` as indented JSON on stdout (no colour, no wrapping)."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def write_new_file(path: Path, text: str) -> None:
    """Write `text` to `path`, refusing to touch what is not a regular file.

    Raises InputError when the path is a directory or its folder does not exist, so a
    report never lands somewhere unexpected.
    """
    if path.is_dir():
        raise InputError([Issue(str(path), None, "", "is a directory; give a file name")])
    if not path.parent.exists():
        raise InputError([Issue(str(path), None, "", f"folder {path.parent} does not exist")])
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def report_input_error(error: InputError) -> None:
    """Print every issue of an input error on stderr, one per line."""
    count = len(error.issues)
    err.print(f"[bold red]error:[/] {count} problem{'s' if count != 1 else ''} in the input")
    for issue in error.issues:
        err.print(f"  {issue}", markup=False)
