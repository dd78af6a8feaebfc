"""The program as a file another solver reads: MPS (free format) or CPLEX LP, with
fleetplan's row and column names, written by HiGHS from the same arrays the `highs`
backend solves (`solver.backends.highs.highs_lp`).

MPS keeps names exactly (they hold no spaces, `solver.program.row_names`). The LP format forbids
`[`, `]`, `=`, `-` and a few more characters in names, so an LP file spells them
LP-safely, one to one: `[` -> `(`, `]` -> `)`, `=` -> `~`, any other character outside
letters, digits and `_.,(){}~!#;@$` -> `_` (`lp_name`); two names that would meet are
refused (write MPS instead). The objective constant is written as the model's offset.

HiGHS writes only to a path, so the text passes through a private temporary folder under a
fixed file name (`program.mps`): nothing from the instance (its `name` may hold `/`,
`..` or an absolute path) ever becomes part of a path. The caller writes the text where
the user asked, through `models.io.output_files`.
"""

import re
import tempfile
from pathlib import Path

from solver.backends.base import compile_program
from solver.backends.highs import _new_highs, highs_lp
from solver.program.lp import LinearProgram

FORMATS = (".mps", ".lp")
"""File suffixes `program_text` can write."""
_LP_SPELLING = str.maketrans({"[": "(", "]": ")", "=": "~"})
_LP_UNSAFE = re.compile(r"[^A-Za-z0-9_.,(){}~!#;@$]")


def lp_name(name: str) -> str:
    """A row or column name as the LP format allows it (see the module docstring)."""
    return _LP_UNSAFE.sub("_", name.translate(_LP_SPELLING))


def _lp_names(names: tuple[str, ...], what: str) -> list[str]:
    spelled = [lp_name(name) for name in names]
    if len(set(spelled)) != len(spelled):
        raise ValueError(f"two {what} names meet when spelled for the LP format: write .mps")
    return spelled


def program_text(lp: LinearProgram, suffix: str) -> str:
    """The program in the format named by `suffix` (`.mps` or `.lp`).

    Raises:
        ValueError: an unknown suffix, or HiGHS refused to write the model.
    """
    if suffix not in FORMATS:
        raise ValueError(f"unknown program format {suffix!r}: use one of {', '.join(FORMATS)}")
    import highspy

    compiled = compile_program(lp)
    model = highs_lp(compiled, names=True)
    if suffix == ".lp":
        model.col_names_ = _lp_names(compiled.variable_names, "column")
        model.row_names_ = _lp_names(compiled.constraint_names, "row")
    highs = _new_highs()
    highs.passModel(model)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"program{suffix}"  # never the instance's name (a path)
        if highs.writeModel(str(path)) == highspy.HighsStatus.kError:
            raise ValueError(f"HiGHS could not write the program as {suffix}")
        return path.read_text(encoding="utf-8")
