"""Options every command spells the same way (the README's "Command-line conventions").

- `--json` writes the result as JSON: alone (or `--json -`) to standard output, with a
  file name to that file (`-o FILE` too, where `-o` is free). When JSON goes to standard
  output, the human-readable tables go to standard error, so stdout is pure JSON.
- `--markdown` is the same for Markdown.
- `--set path=value` (repeatable) changes the instance document before it is validated
  (models/io/overrides.py).

`--json` without a value is rewritten to `--json=-` by the app (cli.app.bare_outputs)
before the command parses its arguments, so the value is always a path here.
"""

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from models.io.output_files import is_stdout, write_text

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
        help="Change the instance before validation, e.g. workloads[chat].slo.ttft_p99_ms=1200 "
        "(repeatable; the value is read as YAML).",
    ),
]


def to_stdout(*outputs: Path | None) -> bool:
    """Whether any of the outputs is standard output (then tables go to stderr)."""
    return any(path is not None and is_stdout(path) for path in outputs)


def emit_json(target: Path | None, data: Any, inputs: tuple[Path, ...] = ()) -> None:
    """Write `data` (a JSON string, a pydantic model or plain data) to `target`: nothing
    for None, standard output for `-`, else the file (atomically, never over an input)."""
    if target is None:
        return
    from cli.render.zeros import json_without_negative_zero

    if isinstance(data, str):
        text = data
    elif hasattr(data, "model_dump_json"):
        text = data.model_dump_json(indent=2)
    else:
        text = json.dumps(data, indent=2)
    write_text(target, json_without_negative_zero(text), inputs)
    if not is_stdout(target):
        from cli.render.console import err

        err.print(f"wrote {target}", markup=False)


def overrides_of(sets: list[str] | None):
    """The parsed `--set` overrides (models.io.overrides), refusing a bad one with exit 2."""
    from models.io.overrides import parse_overrides

    return parse_overrides(sets)


def load(file: Path, sets: list[str] | None):
    """The instance in `file` with the `--set` overrides applied, validated in full; its
    warnings (models.schema.checks.input_warnings) printed on stderr."""
    from models.io.overrides import load_instance_with
    from models.schema.checks import input_warnings

    instance = load_instance_with(file, overrides_of(sets))
    print_warnings(input_warnings(instance))
    return instance


def print_warnings(lines: list[str]) -> None:
    """Each warning on stderr, one line each."""
    from cli.render.console import err

    for line in lines:
        err.print(f"warning: {line}", markup=False)
