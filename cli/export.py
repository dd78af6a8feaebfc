"""`solve --export-mps`: the program written for another solver before solving."""

from pathlib import Path

from cli.render.console import err
from models.io.loading import load_instance
from models.io.output_files import check_target, write_text
from models.schema.errors import InputError, Issue
from solver.candidates.table import build_candidates
from solver.program.build import build_program
from solver.program.export import FORMATS, program_text


def export_program(file: Path, target: Path) -> None:
    """Build the instance's program and write it to `target` (`.mps` or `.lp` by suffix).

    Raises:
        InputError: an unknown suffix, or a target that cannot be written.
    """
    suffix = target.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(
            [Issue("--export-mps", None, "", f"{target}: give a file ending in .mps or .lp")]
        )
    check_target(target, inputs=(file,))
    instance = load_instance(file)
    program = build_program(instance, build_candidates(instance))
    try:
        text = program_text(program.lp, suffix)
    except ValueError as error:
        raise InputError([Issue("--export-mps", None, "", str(error))]) from None
    write_text(target, text, inputs=(file,))
    size = program.lp.size()
    err.print(
        f"wrote {target}: {size['variables']} columns, {size['constraints']} rows",
        markup=False,
    )
