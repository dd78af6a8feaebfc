"""The README's check markers: finding them, comparing them with the tool, rewriting them."""

from __future__ import annotations

import re
from dataclasses import dataclass

FIGURES = re.compile(r"^\s*<!-- check (?P<name>[\w.-]+): (?P<values>.*?) -->\s*$")
OUTPUT = re.compile(r"^\s*<!-- output (?P<name>[\w.-]+) -->\s*$")
FENCE = re.compile(r"^\s*```")
HEADING = re.compile(r"^#{1,6} ")


@dataclass(frozen=True)
class Marker:
    """One marker line and the text it vouches for.

    Attributes:
        name: the check it names.
        kind: "figures" (key=value pairs quoted in the text below) or "output" (a fenced block).
        line: index of the marker line in the README (0-based).
        values: the figures the marker records, by key (empty for an output marker).
        body: (start, end) line indices of the text under the marker: up to the next blank
            line, or a whole fenced block (fences included) where the text opens with one.
        section: (start, end) line indices of the README section (heading to heading).
    """

    name: str
    kind: str
    line: int
    values: dict[str, str]
    body: tuple[int, int]
    section: tuple[int, int]


def parse_values(text: str) -> dict[str, str]:
    """`key=value; key=value` as a dict (a value may hold `=` but not `; `)."""
    pairs = [part.split("=", 1) for part in text.split("; ") if part.strip()]
    if any(len(pair) != 2 for pair in pairs):
        raise ValueError(f"marker values must read key=value; key=value, got {text!r}")
    return {key.strip(): value.strip() for key, value in pairs}


def format_values(values: dict[str, str]) -> str:
    return "; ".join(f"{key}={value}" for key, value in values.items())


def _body(lines: list[str], start: int) -> tuple[int, int]:
    if start < len(lines) and FENCE.match(lines[start]):
        end = start + 1
        while end < len(lines) and not FENCE.match(lines[end]):
            end += 1
        return start, min(end + 1, len(lines))
    end = start
    while end < len(lines) and lines[end].strip() and not _is_marker(lines[end]):
        end += 1
    return start, end


def _is_marker(line: str) -> bool:
    return bool(FIGURES.match(line) or OUTPUT.match(line))


def _headings(lines: list[str]) -> list[bool]:
    """Per line, whether it is a Markdown heading: a `#` line inside a fenced block (a
    shell comment, `#   kubectl apply -f k8s/`) is not one."""
    fenced, found = False, []
    for line in lines:
        if FENCE.match(line):
            fenced = not fenced
        found.append(not fenced and bool(HEADING.match(line)))
    return found


def _section(lines: list[str], index: int, headings: list[bool] | None = None) -> tuple[int, int]:
    """The lines of the section holding line `index`: from its heading to the next."""
    heading = headings if headings is not None else _headings(lines)
    start = index
    while start > 0 and not heading[start]:
        start -= 1
    end = index + 1
    while end < len(lines) and not heading[end]:
        end += 1
    return start, end


def find_markers(text: str) -> list[Marker]:
    """Every marker in the README, in order. Raises ValueError on a malformed one."""
    lines = text.split("\n")
    headings = _headings(lines)
    markers = []
    for index, line in enumerate(lines):
        if not line.lstrip().startswith(("<!-- check", "<!-- output")):
            continue
        figures, output = FIGURES.match(line), OUTPUT.match(line)
        if not (figures or output):
            raise ValueError(f"README line {index + 1}: malformed marker {line.strip()!r}")
        if output and not (index + 1 < len(lines) and FENCE.match(lines[index + 1])):
            raise ValueError(f"README line {index + 1}: an output marker must precede a fence")
        values = parse_values(figures["values"]) if figures else {}
        markers.append(
            Marker(
                name=(figures or output)["name"],
                kind="figures" if figures else "output",
                line=index,
                values=values,
                body=_body(lines, index + 1),
                section=_section(lines, index, headings),
            )
        )
    return markers


def token_pattern(value: str) -> re.Pattern[str]:
    """`value` as a whole token: not part of a longer number or word (`24` is not in `124`
    nor in `2.4`, `$4,380` is not in `$14,380`); a space in it matches a line break."""
    words = (re.escape(word) for word in value.split())
    return re.compile(r"(?<![\w.,$])" + r"\s+".join(words) + r"(?!\w|[.,]\d)")


def block_lines(text: str, marker: Marker) -> list[str]:
    lines = text.split("\n")
    return lines[marker.body[0] : marker.body[1]]


def fenced_content(text: str, marker: Marker) -> str:
    """The text between an output marker's fences."""
    inner = block_lines(text, marker)[1:-1]
    return "\n".join(inner)


def shown_in_section(text: str, marker: Marker, command: str) -> bool:
    """Whether the section shows `command` (shell line continuations and line breaks read
    as spaces, and backquotes ignored)."""
    lines = text.split("\n")[marker.section[0] : marker.section[1]]
    flat = " ".join(line.rstrip("\\").strip() for line in lines).replace("`", "")
    return " ".join(command.split()) in " ".join(flat.split())


def rewrite(text: str, marker: Marker, figures: dict[str, str] | str) -> tuple[str, list[str]]:
    """`text` with `marker` and the text under it set to the tool's figures now, and the
    problems a person must mend by hand (a figure the text does not quote)."""
    lines = text.split("\n")
    start, end = marker.body
    if marker.kind == "output":
        assert isinstance(figures, str)
        fence = lines[start]
        lines[start:end] = [fence, *figures.split("\n"), "```"]
        return "\n".join(lines), []
    assert isinstance(figures, dict)
    body = "\n".join(lines[start:end])
    problems = []
    for key, new in figures.items():
        old = marker.values.get(key)
        if old is None or old == new:
            continue
        body, count = token_pattern(old).subn(new.replace("\\", r"\\"), body)
        if count == 0:
            problems.append(f"{marker.name}: {key}: {old!r} is not in the text to replace")
    indent = lines[marker.line][: len(lines[marker.line]) - len(lines[marker.line].lstrip())]
    lines[marker.line] = f"{indent}<!-- check {marker.name}: {format_values(figures)} -->"
    lines[start:end] = body.split("\n")
    return "\n".join(lines), problems
