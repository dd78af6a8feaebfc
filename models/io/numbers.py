"""Numbers as a CSV file or a Kubernetes object writes them: ASCII digits.

Python's `int` and `float` read more than any such file means: `1_6` as 16 (PEP 515's
digit separator) and digits of other scripts (Arabic-Indic U+0662 as 2). A value read
from a user's text goes through here first, so that those are refused, not read as a
number nobody wrote.
"""

import re

_WHOLE = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(
    r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
    re.IGNORECASE,
)
"""A decimal as `float` writes one, and the infinities and NaN it reads (which the
readers refuse by their own messages as not finite)."""


def whole_number(text: str) -> int | None:
    """`text` (spaces around allowed) as a whole number of ASCII digits with an optional
    sign, else None."""
    text = text.strip()
    return int(text) if _WHOLE.fullmatch(text) else None


def is_decimal(text: str) -> bool:
    """Whether `text` (spaces around allowed) is a decimal of ASCII digits, an optional
    sign, point and exponent, or inf/infinity/nan in any case."""
    return _DECIMAL.fullmatch(text.strip()) is not None
