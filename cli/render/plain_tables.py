"""A table as rich draws it for a file or a pipe, written out directly.

Rich lays a table out cell by cell (measuring, wrapping and padding each through its
renderables), about 50 us a cell: a 10-region x 20-workload plan's report has about 4,000
cells, a fifth of a second of a five-second solve. Where no wrapping can happen the
layout is simple arithmetic, and this module writes the same characters itself:

    title                        (left-justified, in full)
    ┏━━━━━┳━━━━━┓                each column its widest cell or header plus one space
    ┃ a   ┃ b   ┃                of padding each side (box.HEAVY_HEAD)
    ┡━━━━━╇━━━━━┩
    │ 1   │ 2   │
    └─────┴─────┘
    caption                      (in full)

It applies only where rich would draw exactly that: output that is not a terminal and
has no colour (no styles to write; `print_tables` then prints with soft wrapping, so
titles and captions are not wrapped), title and caption within the console's width, every
string printable ASCII on one line with no space at either end and none doubled
(rich's wrapping would move such spaces), and the table's natural width within the
console's (rich would shrink columns). Anything else goes to rich. A hypothesis test
holds the two to the same characters (tests/cli/test_plain_tables.py).
"""

from rich.console import Console

HEAVY_TOP = ("┏", "━", "┳", "┓")
HEAVY_HEAD = ("┃", "┃", "┃")
HEAD_RULE = ("┡", "━", "╇", "┩")
BODY = ("│", "│", "│")
BOTTOM = ("└", "─", "┴", "┘")


def plain_table(
    console: Console,
    title: str,
    columns: list[str],
    rows: list[list[str]],
    caption: str,
) -> str | None:
    """The table's lines as rich would print them on `console`, or None where rich must
    draw it (module docstring). `title` and `caption` may be empty (none)."""
    if console.is_terminal or console.color_system is not None:
        return None
    strings = [title, caption, *columns, *(cell for row in rows for cell in row)]
    if not all(_plain(text) for text in strings):
        return None
    if max(len(title), len(caption)) > console.width:
        return None
    if any(len(row) != len(columns) for row in rows):
        return None
    widths = [
        max(len(header), *(len(row[index]) for row in rows)) if rows else len(header)
        for index, header in enumerate(columns)
    ]
    if sum(widths) + 3 * len(widths) + 1 > console.width:
        return None
    lines = [title] if title else []
    lines.append(_rule(HEAVY_TOP, widths))
    lines.append(_cells(HEAVY_HEAD, columns, widths))
    lines.append(_rule(HEAD_RULE, widths))
    lines += [_cells(BODY, row, widths) for row in rows]
    lines.append(_rule(BOTTOM, widths))
    if caption:
        lines.append(caption)
    return "\n".join(lines)


def _plain(text: str) -> bool:
    """Printable ASCII on one line, no space at either end, none doubled."""
    return text.isascii() and text.isprintable() and text == text.strip() and "  " not in text


def _rule(parts: tuple[str, str, str, str], widths: list[int]) -> str:
    left, fill, cross, right = parts
    return left + cross.join(fill * (width + 2) for width in widths) + right


def _cells(parts: tuple[str, str, str], cells: list[str], widths: list[int]) -> str:
    left, cross, right = parts
    padded = (f" {cell.ljust(width)} " for cell, width in zip(cells, widths, strict=True))
    return left + cross.join(padded) + right
