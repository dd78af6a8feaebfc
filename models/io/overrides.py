"""`--set path=value`: what-if changes to an instance document without editing its file.

An override names one place in the parsed document (before validation) and the value to
put there:

    workloads[0].slo.ttft_p99_ms=1200        a list element by position
    workloads[-1].slo.ttft_p99_ms=1200       ... counted from the end (-1 the last)
    workloads[chat].slo.ttft_p99_ms=1200     a list element by its `name`
    regions[us-east].supply.h100-sxm.price_per_gpu_hour=2.1
    policy.max_utilization=0.8               a key the file does not have yet is added
    workloads[chat].demand."ap.south".requests_per_day=900000    a key holding a dot
    regions["eu-west[1]"].supply.h100-sxm.max_gpus=64            a name holding brackets

Grammar: keys separated by dots, each optionally followed by `[index]` or `[name]`
selectors. A bare key holds any character but `.`, `[`, `]`, `=` and quotes; a bare name
any but `[`, `]` and `=`. In double or single quotes a key or a name holds any character
(a backslash escapes the next one: `\\"` for a quote), and a quoted selector is always a
name (`["0"]` is the element named 0). The path ends at the first `=` outside quotes.
The value is read as a YAML scalar or flow collection (`1200` an integer, `0.8` a float,
`null`, `true`, `[1, 2]`, `{a: 1}`; anything else a string), so it means what it would
mean written in the file. The changed document then goes through the full validation,
so a value of the wrong type or out of bounds is reported like one in the file.

A path that does not lead anywhere (an index out of range, a name no element has, a key
under a number, a key the mapping lacks before a selector) is an `InputError` naming the
override and the step: the command line exits 2. Missing mappings on the way are created
(`policy.pue=1.3` with no `policy` section), except where the mapping holds a key that
the unquoted path split at a dot or a bracket (`demand.ap.south` beside a key `ap.south`).
"""

import copy
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from models.io.documents import check_yaml_text, dotted, not_utf8
from models.physics.yaml_files import BaseSixtyNumber, CheckedLoader, DuplicateKey
from models.schema.errors import InputError, Issue, shown_name
from models.schema.quantities import counted

_BARE_KEY = re.compile(r"[^.\[\]=\"']+")
"""A key that needs no quotes (`key_text` quotes any other)."""
_QUOTES = "\"'"
_MOST_INDEX_DIGITS = 18
"""Digits a list position may have (`workloads[5]`): more is no list, and past 4,300
Python refuses to read the number at all."""
MAX_OVERRIDES = 1000
"""Overrides one command or one sweep point may give (a bound against runaway input)."""


@dataclass(frozen=True)
class Override:
    """One `path=value`: where (the steps, each a key or a list selector) and what."""

    text: str
    """As the user wrote it (named in every error)."""
    steps: tuple[str | int | tuple[str, str], ...]
    """Mapping keys (str), list positions (int) and list names (("name", value))."""
    value: Any

    @property
    def path(self) -> str:
        """The path part of the override."""
        split = _split_value(self.text)
        return self.text if split is None else split[0]


def _cut(text: str, most: int = 40) -> str:
    """`text`, cut to `most` characters for a message (a value may run to megabytes)."""
    return text if len(text) <= most else f"{text[:most]}... ({len(text):,} characters)"


def _refuse(text: str, message: str) -> InputError:
    split = _split_value(text)
    path = text if split is None else split[0]
    return InputError([Issue("--set", None, _cut(path, 120), message)])


def parse_path(text: str, path: str) -> tuple[str | int | tuple[str, str], ...]:
    """The steps of a dotted path with `[index]` / `[name]` selectors, keys and names
    optionally quoted.

    Raises:
        InputError: naming the override when the path is malformed.
    """
    steps: list[str | int | tuple[str, str]] = []
    reader = _PathReader(text, path.strip())
    if not reader.path:
        raise _refuse(text, f"cannot read the path {path!r}: write key.key, key[0] or key[name]")
    while True:
        steps.append(reader.key())
        while reader.peek() == "[":
            steps.append(reader.selector())
        if reader.at_end():
            return tuple(steps)
        if reader.peek() != ".":
            raise reader.bad(f"{reader.peek()!r} after a key; write key.key, key[0] or key[name]")
        reader.position += 1


class _PathReader:
    """Reads a path one step at a time, with quoting (`parse_path`)."""

    def __init__(self, text: str, path: str) -> None:
        self.text, self.path, self.position = text, path, 0

    def peek(self) -> str:
        return self.path[self.position] if self.position < len(self.path) else ""

    def at_end(self) -> bool:
        return self.position >= len(self.path)

    def bad(self, why: str) -> InputError:
        return _refuse(self.text, f"cannot read the path {_cut(self.path)!r}: {why}")

    def key(self) -> str:
        """A mapping key: quoted, or bare up to the next `.` or `[`."""
        self._skip_spaces()
        if self.peek() in _QUOTES and not self.at_end():
            key = self._quoted()
        else:
            match = _BARE_KEY.match(self.path, self.position)
            if match is None:
                where = "an empty key" if self.peek() in ("", ".") else f"{self.peek()!r}"
                raise self.bad(f"{where} where a key belongs; write key.key, key[0] or key[name]")
            key, self.position = match[0].strip(), match.end()
        self._skip_spaces()
        return key

    def selector(self) -> int | tuple[str, str]:
        """`[index]`, `[name]` or `["name"]` (the reader at its `[`)."""
        self.position += 1
        self._skip_spaces()
        if self.peek() in _QUOTES and not self.at_end():
            name = self._quoted()
            self._skip_spaces()
            self._close()
            return ("name", name)
        end = self.position
        while end < len(self.path) and self.path[end] not in "[]":
            end += 1
        content = self.path[self.position : end].strip()
        if end < len(self.path) and self.path[end] == "[":
            raise self.bad(
                "a name holding '[' or ']' is quoted: "
                + selector_text(_bracketed(self.path, self.position - 1))
            )
        self.position = end
        self._close()
        if not content:
            raise self.bad("an empty selector []; write key[0] or key[name]")
        if re.fullmatch(r"-?\d+", content):
            if len(content.lstrip("-")) > _MOST_INDEX_DIGITS:
                raise _refuse(
                    self.text,
                    f"index [{_cut(content)}] has more than "
                    f"{_MOST_INDEX_DIGITS} digits; no list is that long",
                )
            return int(content)
        return ("name", content)

    def _close(self) -> None:
        if self.peek() != "]":
            raise self.bad("a '[' without its ']'")
        self.position += 1
        self._skip_spaces()

    def _quoted(self) -> str:
        """The text between a quote and its match, backslash escaping the next character."""
        quote, start = self.path[self.position], self.position
        self.position += 1
        chars: list[str] = []
        while self.position < len(self.path):
            char = self.path[self.position]
            if char == "\\" and self.position + 1 < len(self.path):
                chars.append(self.path[self.position + 1])
                self.position += 2
                continue
            self.position += 1
            if char == quote:
                return "".join(chars)
            chars.append(char)
        raise self.bad(f"the quote at {_cut(self.path[start:])!r} is not closed")

    def _skip_spaces(self) -> None:
        while self.peek().isspace() and self.peek():
            self.position += 1


def _bracketed(path: str, start: int) -> str:
    """The text inside the brackets that open at `start`, nested ones included
    (`eu-west[1]` in `regions[eu-west[1]].x`)."""
    depth = 0
    for end in range(start, len(path)):
        depth += {"[": 1, "]": -1}.get(path[end], 0)
        if depth == 0:
            return path[start + 1 : end]
    return path[start + 1 :]


def key_text(name: str) -> str:
    """`name` as a path step names a mapping key: bare where it can be, else in double
    quotes with quotes and backslashes escaped (`"ap.south"`)."""
    if _BARE_KEY.fullmatch(name) and name == name.strip():
        return name
    return _quoted(name)


def selector_text(name: str) -> str:
    """`[name]`, the selector of the list element called `name`: bare where it can be,
    else quoted (`["eu-west[1]"]`, and `["0"]`, which bare would be a position)."""
    bare = re.fullmatch(r"[^\[\]=\"']+", name) and name == name.strip()
    return f"[{name}]" if bare and not re.fullmatch(r"-?\d+", name) else f"[{_quoted(name)}]"


def _quoted(name: str) -> str:
    escaped = name.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def _split_value(text: str) -> tuple[str, str] | None:
    """(path, raw value) split at the first `=` outside quotes; None without one."""
    equals, _ = _scan(text)
    return None if equals is None else (text[:equals], text[equals + 1 :])


def _scan(text: str) -> tuple[int | None, str]:
    """The position of the first `=` outside quotes (None: none), and the quote left open
    where the scan stopped ('' when none is)."""
    quote = ""
    escaped = False
    for position, char in enumerate(text):
        if escaped:
            escaped = False
        elif quote and char == "\\":
            escaped = True
        elif quote:
            quote = "" if char == quote else quote
        elif char in _QUOTES:
            quote = char
        elif char == "=":
            return position, ""
    return None, quote


def parse_override(text: str) -> Override:
    """One `path=value` from the command line (or a sweep axis).

    Raises:
        InputError: naming the override when it has no `=`, a malformed path or a value
            that is not YAML.
    """
    split = _split_value(text)
    if split is None:
        if _scan(text)[1]:
            raise _refuse(text, f"the quote {_scan(text)[1]} in the path is not closed")
        raise _refuse(text, "write path=value (e.g. workloads[0].slo.ttft_p99_ms=1200)")
    path, raw = split
    for part, what in ((path, "path"), (raw, "value")):
        if (problem := not_utf8(part, what)) is not None:
            raise _refuse(text, problem)
    steps = parse_path(text, path.strip())
    return Override(text=text, steps=steps, value=parse_value(text, raw))


def parse_value(text: str, raw: str) -> Any:
    """`raw` read as YAML (a scalar or a flow collection), held to the limits of a file
    (models.io.documents.check_yaml_text: an alias bomb is refused before it is built);
    an empty value is null. Scalars read as a file's (models.physics.yaml_files.ValueLoader:
    `2e-05` is a number, `"2e-05"` text)."""
    try:
        check_yaml_text(raw, "--set")  # the file limits: no alias bomb, no deep nesting
    except InputError as error:
        raise _refuse(text, error.issues[0].message) from None
    try:
        value = yaml.load(raw, Loader=CheckedLoader) if raw.strip() else None
    except BaseSixtyNumber as number:
        raise _refuse(text, f"value {number}") from None
    except DuplicateKey as twice:  # a file's rule: YAML keeps the later without a word
        message = f"value gives the key {twice.key!r} twice: the second would silently "
        raise _refuse(text, message + "replace the first") from None
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise _refuse(text, f"value {_cut(raw)!r} is not a YAML value: {problem}") from None
    except (ValueError, OverflowError):  # an integer of 5,000 digits: Python refuses to read it
        digits = sys.get_int_max_str_digits()
        raise _refuse(
            text, f"value {_cut(raw)!r}: a number has more than {digits:,} digits"
        ) from None
    return value


def parse_overrides(texts: list[str] | tuple[str, ...] | None) -> tuple[Override, ...]:
    """Every `--set` of a command, parsed (none: an empty tuple)."""
    texts = list(texts or ())
    if len(texts) > MAX_OVERRIDES:
        raise InputError(
            [Issue("--set", None, "", f"{len(texts)} overrides; at most {MAX_OVERRIDES}")]
        )
    return tuple(parse_override(text) for text in texts)


def apply_overrides(document: Any, overrides: tuple[Override, ...]) -> Any:
    """A copy of the parsed `document` with every override applied, in order.

    Raises:
        InputError: naming the first override whose path does not lead anywhere.
    """
    if not overrides:
        return document
    return _applied(document, overrides)[0]


def landed_paths(document: Any, overrides: tuple[Override, ...]) -> tuple[Any, list[str]]:
    """apply_overrides, and the field path each override landed on, with positions
    (`workloads[0].slo.ttft_p99_ms` for `workloads[chat].slo.ttft_p99_ms`): two spellings
    of one field land on one path."""
    return _applied(document, overrides)


def overridden(landed: list[str]) -> list[tuple[int, int]]:
    """(i, j) for each override i that a later override j replaces: j lands on i's field
    or on a field holding it (`policy` after `policy.survive`), so i's value is lost."""
    return [
        (i, j)
        for i, path in enumerate(landed)
        for j in range(i + 1, len(landed))
        if _within(path, landed[j])
    ]


def replaced_because(landed: list[str], i: int, j: int) -> str:
    """Why override j replaces override i (`overridden`), with what to do about it."""
    where = (
        f"both land on {landed[i]}" if landed[i] == landed[j] else f"{landed[j]} holds {landed[i]}"
    )
    return f"({where}): give each field once"


def _applied(document: Any, overrides: tuple[Override, ...]) -> tuple[Any, list[str]]:
    """apply_overrides, and where each override landed as a field path with positions
    (`workloads[0].slo.ttft_p99_ms` for `workloads[chat].slo.ttft_p99_ms`), as input
    errors name fields."""
    if not isinstance(document, dict):
        raise _refuse(overrides[0].text, "the document is not a mapping of sections")
    document = copy.deepcopy(document)
    return document, [_apply(document, override) for override in overrides]


def _apply(document: dict, override: Override) -> str:
    """Put the override's value in place; the field path it landed on."""
    node: Any = document
    walked: list[str] = []
    landed: list[str | int] = []
    for step, after in zip(override.steps, (*override.steps[1:], None), strict=True):
        last = after is None
        if isinstance(step, tuple) and isinstance(node, dict):  # a key: demand[eu.west]
            step = step[1]  # a key holding a dot cannot be written .key
        if isinstance(step, str):
            if not isinstance(node, dict):
                hint = ""
                if isinstance(node, list):  # `regions.us-east.zones`: the list needs a selector
                    hint = f": select an element, {_at(walked)}[{step}] or {_at(walked)}[0]"
                    if step.isdigit():  # `workloads.0`: 'workloads[0] or workloads[0]'
                        hint = f": write its position in brackets, {_at(walked)}[{step}]"
                raise _refuse(override.text, f"{_at(walked)} is {_kind(node)}, not a mapping{hint}")
            landed.append(step)
            if last:
                node[step] = override.value
                return dotted(tuple(landed))
            if step not in node:
                _refuse_missing_key(override, node, step, after, walked)
            if node.get(step) is None:
                node[step] = [] if not isinstance(after, str) else {}
            node = node[step]
            walked.append(step)
            continue
        if not isinstance(node, list):
            raise _refuse(override.text, f"{_at(walked)} is {_kind(node)}, not a list")
        index = _index(override, node, step, walked)
        walked[-1] += f"[{step if isinstance(step, int) else step[1]}]"
        landed.append(index % len(node))
        if last:
            node[index] = override.value
            return dotted(tuple(landed))
        node = node[index]
    raise AssertionError("an override has at least one step")  # parse_path refuses none


def _refuse_missing_key(
    override: Override, node: dict, step: str, after: Any, walked: list[str]
) -> None:
    """Refuse a key the mapping lacks where creating it cannot be meant: a selector follows
    (a new empty list has no element to select), or the mapping holds a key that this one
    begins, cut at a dot or a bracket (`demand.ap.south` for the key `ap.south`)."""
    keys = [str(key) for key in node]
    split = [key for key in keys if key.startswith((f"{step}.", f"{step}["))]
    if isinstance(after, str) and not split:
        return
    known = ", ".join(key_text(key) for key in keys[:20]) or "none"
    more = f" and {len(keys) - 20} more" if len(keys) > 20 else ""
    hint = ""
    if split:
        at = f"{_at(walked)}." if walked else ""
        hint = f"; a key holding a dot or a bracket is quoted: {at}{key_text(split[0])}"
    raise _refuse(override.text, f"{_at(walked)} has no key {step!r} (keys: {known}{more}){hint}")


def _index(override: Override, items: list, step: int | tuple[str, str], walked: list[str]) -> int:
    """The position a selector names in `items`."""
    if isinstance(step, int):
        if not -len(items) <= step < len(items):
            raise _refuse(
                override.text,
                f"{_at(walked)} has {counted(len(items), 'element')}; index {step} is out of range",
            )
        return step
    names = [item.get("name") for item in items if isinstance(item, dict)]
    for position, item in enumerate(items):
        if isinstance(item, dict) and str(item.get("name")) == step[1]:
            return position
    known = ", ".join(shown_name(n) for n in names if n is not None) or "none has a name"
    odd = [str(n) for n in names if n is not None and selector_text(str(n)) != f"[{n}]"]
    hint = f"; a name holding a bracket or '=' is quoted: {selector_text(odd[0])}" if odd else ""
    raise _refuse(override.text, f"{_at(walked)} has no element named {step[1]!r} ({known}){hint}")


def _at(walked: list[str]) -> str:
    return ".".join(walked) if walked else "the document"


def _kind(node: Any) -> str:
    if isinstance(node, list):
        return "a list"
    if isinstance(node, dict):
        return "a mapping"
    return f"the value {node!r}"


def load_instance_with(path: str | Path, overrides: tuple[Override, ...] = ()):
    """Read an instance file, apply `overrides` to the parsed document, then validate and
    cross-check it in full (models.io.loading.load_instance when there are none).

    Raises:
        InputError: a bad override (naming it) or a bad instance (naming the field).
    """
    from models.io import loading

    if not overrides:
        return loading.load_instance(path)
    path = Path(path)
    read_document, validate_instance = loading.read_document, loading.validate_instance
    data, lines = read_document(path, what="instance")
    data, landed = _applied(data, overrides)
    lost = [
        Issue(
            "--set",
            None,
            "",
            f"{_cut(overrides[i].text)}: is replaced by --set {_cut(overrides[j].text)} "
            + replaced_because(landed, i, j),
        )
        for i, j in overridden(landed)
    ]
    if lost:
        raise InputError(lost)
    try:
        return validate_instance(data, str(path), lines, instance_dir=path.parent)
    except InputError as error:
        raise InputError([_blame(issue, overrides, landed) for issue in error.issues]) from None


def _blame(issue: Issue, overrides: tuple[Override, ...], landed: list[str]) -> Issue:
    """The issue, naming the `--set` overrides that changed its field or a field within or
    above it: the file's line alone would point at a value the file may not hold."""
    if not issue.path:
        return issue
    named = [
        override.text
        for override, path in zip(overrides, landed, strict=True)
        if _within(path, issue.path) or _within(issue.path, path)
    ]
    if not named:
        return issue
    sets = ", ".join(f"--set {text}" for text in named)
    return replace(issue, message=f"{issue.message} (after {sets})")


def _within(path: str, outer: str) -> bool:
    """`path` is `outer` or a field inside it (`models[0].kv_heads` within `models[0]`)."""
    return path == outer or path.startswith((f"{outer}.", f"{outer}["))
