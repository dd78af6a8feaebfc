"""The shared table spec: a report as header lines, tables of strings and a closing note,
printed to the terminal or written as Markdown. Every command that shows tables builds
`TableSpec`s and hands them to `print_tables` or `markdown_tables`."""

import re
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table
from rich.text import Text

from cli.render.console import out
from cli.render.plain_tables import plain_table
from cli.render.zeros import unsigned_zero
from models.io.output_files import one_line, terminal_safe


@dataclass(frozen=True)
class TableSpec:
    """A table as strings, rendered to the terminal or to Markdown; a cell that reads as
    a negative zero ("-0", "-$0", "-0.00") is kept without its minus (cli.render.zeros)."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""

    def __post_init__(self) -> None:
        clean = tuple(tuple(unsigned_zero(cell) for cell in row) for row in self.rows)
        object.__setattr__(self, "rows", clean)


def print_tables(
    header: list[str], tables: list[TableSpec], note: str = "", console: Console = out
) -> None:
    """Print the header lines, each table (its note as the caption) and the note, on
    `console` (standard output unless a `-` output has it). A line break in a header
    line, a title or a cell is a name's (an instance, region or workload may hold one):
    shown as `\\u000a` (`one_line`), where it started a line of its own ("east" alone
    above the table titled "us\\neast"); the notes' own line breaks are kept."""
    wrap = console.is_terminal  # a terminal's lines wrap at its width; a file's stay whole
    for line in header:
        console.print(one_line(line), markup=False, emoji=False, soft_wrap=not wrap)
    for spec in map(_one_line, tables):
        groups = column_groups(spec, console.width - TABLE_MARGIN)
        for number, group in enumerate(groups):
            title = spec.title if number == 0 else f"{spec.title} (continued)"
            last = number == len(groups) - 1
            plain = plain_table(
                console,
                title,
                [spec.columns[index] for index in group],
                [[row[index] for index in group] for row in spec.rows],
                spec.note if last else "",
            )
            if plain is not None:  # what rich would draw, without its cell-by-cell layout
                console.print(plain, markup=False, emoji=False, highlight=False, soft_wrap=True)
                continue
            # Text, not markup: a name like ":fire:" or "[b]" is printed as written (no
            # emoji codes, no styles), as the plain writer prints it
            table = Table(
                title=Text(title),
                caption=Text(spec.note) if last and spec.note else None,
                title_justify="left",
            )
            for index in group:
                table.add_column(
                    Text(spec.columns[index]), overflow="fold", min_width=_unbroken(spec, index)
                )
            for row in spec.rows:
                table.add_row(*(Text(row[index]) for index in group))
            width = _fitted_width(console, table, soft_wrap=not wrap)
            console.print(table, soft_wrap=not wrap, width=width)
    if note:
        console.print(note, markup=False, emoji=False, soft_wrap=not wrap)


def _one_line(spec: TableSpec) -> TableSpec:
    """`spec` with each title, column and cell on one line (`one_line`); its note as is."""
    return TableSpec(
        one_line(spec.title),
        tuple(map(one_line, spec.columns)),
        tuple(tuple(map(one_line, row)) for row in spec.rows),
        spec.note,
    )


FIT_TRIES = 4
"""Narrowings `_fitted_width` tries before it gives up (one or two suffice)."""


def _fitted_width(console: Console, table: Table, soft_wrap: bool) -> int:
    """The width to lay `table` out in so that none of its lines passes the console's
    (`COLUMNS`, the terminal or the file width): rich's column collapse rounds widths up,
    so a table asked for 70 characters with narrow minimum widths may draw 71. Narrow by
    the overshoot until it fits. The caption is left out of the measure: a file's prose
    stays whole (`print_tables`)."""
    caption, table.caption = table.caption, None
    width = console.width
    for _ in range(FIT_TRIES):
        with console.capture() as drawn:
            console.print(table, soft_wrap=soft_wrap, width=width)
        lines = drawn.get().splitlines()  # styles as escape codes: measure the text
        widest = max((Text.from_ansi(line).cell_len for line in lines), default=0)
        if widest <= console.width or width == 1:
            break
        width = max(width - (widest - console.width), 1)
    table.caption = caption
    return width


UNBROKEN_CELL = 16
"""Cells up to this long (names, numbers) are never folded when a table is narrowed."""


def _unbroken(spec: TableSpec, index: int) -> int | None:
    """The column's longest cell, as its minimum width, when that is short."""
    longest = max(
        [
            max((len(word) for word in spec.columns[index].split()), default=0),
            *(len(row[index]) for row in spec.rows if index < len(row)),
        ]
    )
    return longest if longest <= UNBROKEN_CELL else None


TABLE_MARGIN = 2
"""Characters kept free at the right edge (rich rounds column widths up)."""
CELL_FRAME = 3
"""Characters a rich table adds per column (a border and a space each side)."""


def column_groups(spec: TableSpec, width: int) -> list[tuple[int, ...]]:
    """The table's columns in groups that each fit `width` characters, so that a table
    wider than the terminal wraps deliberately: the first group as many columns as fit,
    each further group the first (key) column again and the next columns that fit.

    A column's natural width is its longest cell or the longest word of its header
    (headers wrap at spaces); one column wider than the terminal folds in its group.
    """
    count = len(spec.columns)
    natural = [
        max(
            [
                max((len(word) for word in spec.columns[i].split()), default=1),
                *(len(row[i]) for row in spec.rows if i < len(row)),
            ]
        )
        + CELL_FRAME
        for i in range(count)
    ]
    if count <= 2 or sum(natural) + 1 <= width:
        return [tuple(range(count))]
    groups, current, used = [], [0], natural[0] + 1
    for index in range(1, count):
        if used + natural[index] > width and len(current) > 1:
            groups.append(tuple(current))
            current, used = [0], natural[0] + 1
        current.append(index)
        used += natural[index]
    groups.append(tuple(current))
    return groups


_HTML_OPENING = re.compile(r"<(?=[A-Za-z/!?])")
"""A `<` that Markdown reads as the start of HTML (a tag, a closing tag, a comment, a
declaration); any other `<` (`1 <`, `p99 < 50 ms`) shows as itself."""
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
"""An `&` that Markdown reads as the start of an entity (`&lt;`, `&#60;`)."""


def markdown_text(text: str) -> str:
    """Text as Markdown shows it as written: a `<` opening HTML and an `&` opening an entity
    written as entities, other text unchanged. A name is text, never HTML: a workload named
    `chat<!--` opened a comment that hid the rest of a rendered report (a pull request's,
    a wiki's), `<img src=x onerror=...>` became an image."""
    return _HTML_OPENING.sub("&lt;", _ENTITY.sub("&amp;", text))


def _markdown_cell(text: str) -> str:
    """A table cell that stays one cell: `|` escaped, a line break (a name may hold one)
    written as `<br>`; it ended the row, and the rest of the name began a line of its own
    outside the table. HTML in it is text (`markdown_text`)."""
    return _markdown_line(text).replace("|", "\\|")


def _markdown_line(text: str) -> str:
    """A heading or header line that stays one line: a line break (a name's) as `<br>`;
    "## us\\neast" was a heading "us" and a paragraph "east". HTML in it is text."""
    text = markdown_text(text)
    return text.replace("\r\n", "<br>").replace("\n", "<br>").replace("\r", "<br>")


def markdown_tables(header: list[str], tables: list[TableSpec], note: str = "") -> str:
    """The same report as Markdown: the first header line as the title (none without a
    header), a section and a pipe table per table; control and direction characters of
    the names written out as `\\uNNNN`, as the terminal shows them (`terminal_safe`)."""
    header = [_markdown_line(line) for line in header]  # a name's line break: one line
    lines = [f"# {header[0]}", "", *header[1:], ""] if header else []
    for spec in tables:
        lines += [f"## {_markdown_line(spec.title)}", ""]
        lines.append("| " + " | ".join(map(_markdown_cell, spec.columns)) + " |")
        lines.append("|" + "---|" * len(spec.columns))
        lines += ["| " + " | ".join(map(_markdown_cell, row)) + " |" for row in spec.rows]
        if spec.note:
            lines += ["", markdown_text(spec.note)]
        lines.append("")
    if note:
        lines += [markdown_text(note), ""]
    return terminal_safe("\n".join(lines))


@dataclass(frozen=True)
class Report:
    """A whole report in the table spec: header lines, tables, a closing note."""

    header: list[str]
    tables: list[TableSpec]
    note: str = ""

    def print(self, console: Console = out) -> None:
        """Print it to the terminal (`print_tables`), on `console`."""
        print_tables(self.header, self.tables, self.note, console)

    def markdown(self) -> str:
        """It as Markdown (`markdown_tables`)."""
        return markdown_tables(self.header, self.tables, self.note)
