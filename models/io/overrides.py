"""`--set path=value`: what-if changes to an instance document without editing its file.

An override names one place in the parsed document (before validation) and the value to
put there:

    workloads[0].slo.ttft_p99_ms=1200        a list element by position
    workloads[chat].slo.ttft_p99_ms=1200     a list element by its `name`
    regions[us-east].supply.h100-sxm.price_per_gpu_hour=2.1
    policy.max_utilization=0.8               a key the file does not have yet is added

Grammar: keys separated by dots, each optionally followed by `[index]` or `[name]`
selectors; a key holds any character but `.`, `[`, `]` and `=`. The value is read as a
YAML scalar or flow collection (`1200` an integer, `0.8` a float, `null`, `true`,
`[1, 2]`, `{a: 1}`; anything else a string), so it means what it would mean written in
the file. The changed document then goes through the full validation, so a value of the
wrong type or out of bounds is reported like one in the file.

A path that does not lead anywhere (an index out of range, a name no element has, a key
under a number) is an `InputError` naming the override: the command line exits 2.
Missing mappings on the way are created (`policy.pue=1.3` with no `policy` section).
"""

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from models.io.documents import check_yaml_text
from models.schema.errors import InputError, Issue

_KEY = r"[^.\[\]=]+"
_STEP = re.compile(rf"(?P<key>{_KEY})(?P<selectors>(?:\[[^\[\]]+\])*)")
_SELECTOR = re.compile(r"\[([^\[\]]+)\]")
_EXPONENT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")
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
        return self.text.split("=", 1)[0]


def _refuse(text: str, message: str) -> InputError:
    return InputError([Issue("--set", None, text.split("=", 1)[0], message)])


def parse_path(text: str, path: str) -> tuple[str | int | tuple[str, str], ...]:
    """The steps of a dotted path with `[index]` / `[name]` selectors.

    Raises:
        InputError: naming the override when the path is malformed.
    """
    steps: list[str | int | tuple[str, str]] = []
    parts = _split_dots(path)
    if not parts:
        raise _refuse(text, f"cannot read the path {path!r}: write key.key, key[0] or key[name]")
    for part in parts:
        match = _STEP.fullmatch(part.strip())
        if match is None:
            raise _refuse(text, f"cannot read {part!r}: write key, key[0] or key[name]")
        steps.append(match["key"])
        for selector in _SELECTOR.findall(match["selectors"]):
            selector = selector.strip()
            if re.fullmatch(r"-?\d+", selector):
                steps.append(int(selector))
            else:
                steps.append(("name", selector))
    if not steps:
        raise _refuse(text, "the path is empty")
    return tuple(steps)


def _split_dots(path: str) -> list[str]:
    """`a[x.y].b` -> ["a[x.y]", "b"]: dots inside brackets belong to the selector; no
    parts for unbalanced brackets or an empty step."""
    parts, depth, current = [], 0, []
    for char in path:
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "." and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    if depth != 0 or any(not p.strip() for p in parts):
        return []  # unbalanced brackets or an empty step: refused by the caller
    return parts


def parse_override(text: str) -> Override:
    """One `path=value` from the command line (or a sweep axis).

    Raises:
        InputError: naming the override when it has no `=`, a malformed path or a value
            that is not YAML.
    """
    if "=" not in text:
        raise _refuse(text, "write path=value (e.g. workloads[0].slo.ttft_p99_ms=1200)")
    path, raw = text.split("=", 1)
    steps = parse_path(text, path.strip())
    return Override(text=text, steps=steps, value=parse_value(text, raw))


def parse_value(text: str, raw: str) -> Any:
    """`raw` read as YAML (a scalar or a flow collection), held to the limits of a file
    (models.io.documents.check_yaml_text: an alias bomb is refused before it is built);
    an empty value is null, and an exponent without a dot (`2e-05`, a string to YAML 1.1)
    is the number it reads as."""
    try:
        check_yaml_text(raw, "--set")  # the file limits: no alias bomb, no deep nesting
    except InputError as error:
        raise _refuse(text, error.issues[0].message) from None
    try:
        value = yaml.safe_load(raw) if raw.strip() else None
    except yaml.YAMLError as error:
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise _refuse(text, f"value {raw!r} is not a YAML value: {problem}") from None
    if isinstance(value, str) and _EXPONENT.fullmatch(value.strip()):
        return float(value)
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
    if not isinstance(document, dict):
        raise _refuse(overrides[0].text, "the document is not a mapping of sections")
    document = copy.deepcopy(document)
    for override in overrides:
        _apply(document, override)
    return document


def _apply(document: dict, override: Override) -> None:
    node: Any = document
    walked: list[str] = []
    for step, after in zip(override.steps, (*override.steps[1:], None), strict=True):
        last = after is None
        if isinstance(step, str):
            if not isinstance(node, dict):
                raise _refuse(override.text, f"{_at(walked)} is {_kind(node)}, not a mapping")
            if last:
                node[step] = override.value
                return
            if node.get(step) is None:
                node[step] = [] if not isinstance(after, str) else {}
            node = node[step]
            walked.append(step)
            continue
        if not isinstance(node, list):
            raise _refuse(override.text, f"{_at(walked)} is {_kind(node)}, not a list")
        index = _index(override, node, step, walked)
        walked[-1] += f"[{step if isinstance(step, int) else step[1]}]"
        if last:
            node[index] = override.value
            return
        node = node[index]


def _index(override: Override, items: list, step: int | tuple[str, str], walked: list[str]) -> int:
    """The position a selector names in `items`."""
    if isinstance(step, int):
        if not -len(items) <= step < len(items):
            raise _refuse(
                override.text,
                f"{_at(walked)} has {len(items)} element(s); index {step} is out of range",
            )
        return step
    names = [item.get("name") for item in items if isinstance(item, dict)]
    for position, item in enumerate(items):
        if isinstance(item, dict) and str(item.get("name")) == step[1]:
            return position
    known = ", ".join(str(n) for n in names if n is not None) or "none has a name"
    raise _refuse(override.text, f"{_at(walked)} has no element named {step[1]!r} ({known})")


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
    data = apply_overrides(data, overrides)
    return validate_instance(data, str(path), lines, instance_dir=path.parent)
