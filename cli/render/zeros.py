"""No negative zero in what the tool prints.

A cost or a count that rounds to zero from below prints as "-0" (`f"{-0.3:,.0f}"`), and
a float that is -0.0 (a negated zero, `round(-1e-9, 2)`) is written "-0.0" in JSON: a
sign with no quantity behind it, which a reader takes for a loss. Signed columns format
with Python's `z` option (`f"{x:+z,.0f}"` gives "+0"); whatever else reaches a table or a
JSON document goes through here:

- `unsigned_zero(cell)`: every "-0", "-0.00", "-$0" or "-0%" token in a table cell (a
  minus not joined to a word, a digit, a dot or another minus, then a zero with only zeros
  after its point) loses its minus; "-0.5", "tp-0" and "2026-01" are untouched;
- `json_without_negative_zero(text)`: every JSON number -0.0 (or -0) becomes 0.0 (0).
"""

import re

_CELL_NEGATIVE_ZERO = re.compile(r"(?<![\w.\-])-(?=\$?0(?:\.0+)?(?![\w.,]))")
_JSON_NEGATIVE_ZERO = re.compile(r"(?<=[\s\[:,])-(?=0(?:\.0+)?(?:[eE][+-]?\d+)?[\s,\]}])")


def unsigned_zero(cell: str) -> str:
    """The cell with the minus of every negative zero dropped (module docstring)."""
    return _CELL_NEGATIVE_ZERO.sub("", cell) if "-" in cell else cell


def json_without_negative_zero(text: str) -> str:
    """JSON text with every number -0.0 (or -0) written unsigned."""
    return _JSON_NEGATIVE_ZERO.sub("", text) if "-0" in text else text
