"""The shared table spec: a report as header lines, tables of strings and a closing note,
printed to the terminal or written as Markdown. Every command that shows tables builds
`TableSpec`s and hands them to `print_tables` or `markdown_tables`."""

from dataclasses import dataclass

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cli.console import out


@dataclass(frozen=True)
class TableSpec:
    """A table as strings, rendered to the terminal or to Markdown."""

    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


def print_tables(
    header: list[str], tables: list[TableSpec], note: str = "", console: Console = out
) -> None:
    """Print the header lines, each table (its note as the caption) and the note, on
    `console` (standard output unless a `-` output has it)."""
    for line in header:
        console.print(line, markup=False)
    for spec in tables:
        table = Table(
            title=escape(spec.title), caption=escape(spec.note) or None, title_justify="left"
        )
        for column in spec.columns:
            table.add_column(escape(column), overflow="fold")
        for row in spec.rows:
            table.add_row(*(Text(cell) for cell in row))
        console.print(table)
    if note:
        console.print(note, markup=False)


def markdown_tables(header: list[str], tables: list[TableSpec], note: str = "") -> str:
    """The same report as Markdown: the first header line as the title (none without a
    header), a section and a pipe table per table."""
    lines = [f"# {header[0]}", "", *header[1:], ""] if header else []
    for spec in tables:
        lines += [f"## {spec.title}", ""]
        lines.append("| " + " | ".join(spec.columns) + " |")
        lines.append("|" + "---|" * len(spec.columns))
        lines += [
            "| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in spec.rows
        ]
        if spec.note:
            lines += ["", spec.note]
        lines.append("")
    if note:
        lines += [note, ""]
    return "\n".join(lines)


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
