"""Comparing README markers with their checks, and rewriting the README from them."""

from __future__ import annotations

from tests.paths import REPO
from tests.readme.checks import CHECKS
from tests.readme.markers import (
    Marker,
    fenced_content,
    find_markers,
    rewrite,
    shown_in_section,
    token_pattern,
)
from tests.readme.runner import Runner

README = REPO / "README.md"


def problems(text: str, marker: Marker, run: Runner) -> list[str]:
    """What is wrong with one marker against the tool now (empty: it holds)."""
    where = f"README line {marker.line + 1} ({marker.name})"
    check = CHECKS.get(marker.name)
    if check is None:
        return [f"{where}: no check named {marker.name!r} in tests/readme/checks.py"]
    found = []
    if not shown_in_section(text, marker, check.command):
        found.append(f"{where}: the section does not show the command {check.command!r}")
    figures = check.compute(run)
    if marker.kind == "output":
        if not isinstance(figures, str):
            return [*found, f"{where}: check {marker.name!r} gives figures, not a block"]
        if fenced_content(text, marker) != figures:
            found.append(f"{where}: the block differs from what the command prints now")
        return found
    if isinstance(figures, str):
        return [*found, f"{where}: check {marker.name!r} gives a block, not figures"]
    if set(figures) != set(marker.values):
        found.append(f"{where}: keys {sorted(marker.values)}, the check gives {sorted(figures)}")
    body = "\n".join(text.split("\n")[marker.body[0] : marker.body[1]])
    for key, value in marker.values.items():
        now = figures.get(key)
        if now is not None and now != value:
            found.append(f"{where}: {key} reads {value!r}, the tool gives {now!r} now")
        if not token_pattern(value).search(body):
            found.append(f"{where}: {key}={value!r} is not quoted in the text under the marker")
    return found


def unused_checks(text: str) -> list[str]:
    """Checks no marker names (a figure removed from the README leaves its check behind)."""
    named = {marker.name for marker in find_markers(text)}
    return sorted(set(CHECKS) - named)


def write(text: str, run: Runner, slow: bool) -> tuple[str, list[str]]:
    """The README with every marker (slow ones only if `slow`) set to the tool's figures
    now, and what must be mended by hand. Markers are rewritten last to first, so the
    line numbers of those still to do hold."""
    left = []
    for marker in reversed(find_markers(text)):
        check = CHECKS.get(marker.name)
        if check is None or (check.slow and not slow):
            continue
        text, todo = rewrite(text, marker, check.compute(run))
        left.extend(todo)
    return text, left
