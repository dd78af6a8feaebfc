"""Reading instance files: YAML (safe loading only) or JSON, validated in full.

Every error reads `FILE:LINE: field.path: message`, with the line wherever the file
gives one, and all errors are reported at once (up to `MAX_ISSUES_REPORTED`, then a
count). Reading itself is bounded by `models.io.documents.read_document`.
"""

import math
import types
import typing
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from models.io.documents import LineMap, Lines, dotted, read_document
from models.schema import reading_limits
from models.schema.checks import cross_check
from models.schema.errors import InputError, Issue
from models.schema.instance import Instance
from models.schema.quantities import counted, describe

__all__ = [
    "LineMap",
    "Lines",
    "capped",
    "load_instance",
    "read_document",
    "schema_issues",
    "validate_instance",
]


def load_instance(path: str | Path) -> Instance:
    """Read, validate and cross-check an instance file.

    Raises:
        InputError: with every problem found, each naming file, line and field.
    """
    path = Path(path)
    data, lines = read_document(path, what="instance")
    return validate_instance(data, str(path), lines, instance_dir=path.parent)


def validate_instance(
    data: Any,
    file: str = "<instance>",
    lines: Lines | None = None,
    instance_dir: Path | None = None,
) -> Instance:
    """Validate parsed data as an `Instance` and cross-check its references; paths in the
    data (`models[].config`) are relative to `instance_dir` (default: the working folder)."""
    lines = {} if lines is None else lines
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise InputError([Issue(file, 1, "", f"an instance is a mapping of sections, got {kind}")])
    if "replicas" in data and "workloads" not in data:  # `verify plan.json instance.yaml`
        raise InputError(
            [Issue(file, 1, "", "is a plan (it has replicas and no workloads), not an instance: "
                   "were the instance and the plan given the other way round?")]
        )  # fmt: skip
    if "axes" in data and "workloads" not in data:  # a grid's `instance:` naming a grid
        raise InputError(
            [Issue(file, 1, "", "is a sweep grid (it has axes and no workloads), not an "
                   "instance: `fleetplan sweep` takes the grid, and the grid's instance: "
                   "names the instance file its axes vary")]
        )  # fmt: skip
    try:
        context = {"instance_dir": str(instance_dir)} if instance_dir is not None else None
        instance = Instance.model_validate(data, context=context)
    except ValidationError as error:
        raise InputError(schema_issues(error, Instance, file, lines, data)) from None
    problems = cross_check(instance)
    if problems:
        raise InputError(
            capped(
                file,
                [Issue(file, _line_for(path, lines), dotted(path), msg) for path, msg in problems],
                len(problems),
            )
        )
    return instance


def capped(file: str, issues: list[Issue], total: int) -> list[Issue]:
    """The first `MAX_ISSUES_REPORTED` of `total` issues, then one that counts the rest
    (every reader's list of problems: a plan of 50,000 bad pools printed 50,000 lines)."""
    if total <= reading_limits.MAX_ISSUES_REPORTED:
        return issues
    rest = total - reading_limits.MAX_ISSUES_REPORTED
    return [
        *issues[: reading_limits.MAX_ISSUES_REPORTED],
        Issue(file, None, "", f"... and {rest:,} more problems (MAX_ISSUES_REPORTED)"),
    ]


_SHAPES = {"links": "a link is a list [region, region, round-trip ms], e.g. [us-east, eu-west, 80]"}
"""The shape of each list entry the schema holds as a tuple, said where one is mistyped."""


def schema_issues(
    error: ValidationError,
    model: type[BaseModel],
    file: str,
    lines: Lines,
    data: Any,
    unknown_key: str = "",
) -> list[Issue]:
    """Each field pydantic refused in `data` (a document read from `file` and validated as
    `model`: an instance, a plan) as `FILE:LINE: path[0].field: message`, the path as the
    document writes it and the value shown; at most `MAX_ISSUES_REPORTED`, then a count.
    An unknown key like no field is said to be unknown with `unknown_key` where given
    (a plan's: another version's key), else with the fields allowed there."""
    shown = error.errors()[: reading_limits.MAX_ISSUES_REPORTED]
    issues = [_issue_from_pydantic(item, file, lines, data, model, unknown_key) for item in shown]
    return capped(file, issues, error.error_count())


_BOUNDS = ("greater_than", "greater_than_equal", "less_than", "less_than_equal")
"""pydantic's error types of a number's bound (`Field(ge=0)`)."""


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _issue_from_pydantic(
    item: Any, file: str, lines: Lines, data: Any, model: type[BaseModel], unknown_key: str
) -> Issue:
    loc, spelled = _document_loc(item["loc"], data)
    message = item["msg"]
    if item["type"] == "extra_forbidden":
        allowed = _fields_at(model, loc[:-1])
        key = str(loc[-1])
        close = [name for name in allowed if name.startswith(key)] or get_close_matches(
            key, allowed, n=1
        )
        message = f"unknown key {loc[-1]!r}"
        if close:
            message += f"; did you mean {close[0]!r}?"
        elif unknown_key:
            message += f": {unknown_key}"
        elif allowed:
            message += f" (allowed: {', '.join(allowed)})"
    elif item["type"] == "missing":
        message = "required field is missing"
    elif item["type"] == "finite_number" or (
        item["type"] in _BOUNDS and _is_nan(item.get("input"))
    ):
        # a NaN fails every bound ('Input should be greater than or equal to 0 (got nan)')
        message = f"must be a finite number, got {_shown(item.get('input'))}"
    elif item["type"] == "too_short" and item.get("ctx", {}).get("actual_length") == 0:
        # pydantic: "List should have at least 1 item after validation, not 0"
        least = item["ctx"].get("min_length", 1)
        message = f"is empty; give at least {counted(least, 'entry', 'entries')}"
    elif item["type"] == "string_too_long" and isinstance(item.get("input"), str):
        most = item.get("ctx", {}).get("max_length")
        message = (
            f"is {len(item['input']):,} characters long; at most {most:,} "
            f"(got {_shown(item['input'])})"
        )
    elif item["type"] in ("tuple_type", "too_long") and len(loc) == 2 and loc[0] in _SHAPES:
        # pydantic: "Input should be a valid tuple" of a mapping, not what a link is
        message = f"{_SHAPES[loc[0]]}, got {_shown(item.get('input'))}"
    elif item["type"] == "int_parsing_size":
        message = f"integer too large to represent, got {_shown(item.get('input'))}"
    elif item["type"] == "string_type" and _unquoted(item.get("input"), file):
        message = f"must be text, got {_shown(item['input'])}: {_unquoted(item['input'], file)}"
    elif item["type"] == "enum" and _unquoted(item.get("input"), file):  # survive: off
        message += f" (got {_shown(item['input'])}): {_unquoted(item['input'], file)}"
    elif item["type"] == "model_type":  # "... or instance of GpuEntry": a class name
        message = f"must be a mapping of fields (key: value), got {_shown(item.get('input'))}"
    elif "input" in item and item["type"] not in ("value_error", "assertion_error"):
        message += f" (got {_shown(item['input'])})"
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return Issue(file, _line_for(loc, lines), dotted(spelled), message)


def _unquoted(value: Any, file: str) -> str:
    """Why the file's reader (JSON for a `.json` file, else YAML) read what was meant as
    text as something else, or "" (None: not text)."""
    reader = "JSON" if file.lower().endswith(".json") else "YAML"
    if value is None:
        spellings = "null" if reader == "JSON" else "null, ~ or nothing"
        return f"{reader} reads {spellings} as no value; give the text, quoted"
    if isinstance(value, bool):
        return f"{reader} reads an unquoted true or false as a boolean; quote it"
    if isinstance(value, int | float):
        return f"{reader} reads an unquoted number as a number; quote it"
    return ""


def _shown(value: Any) -> str:
    """A short rendering of an input value (huge integers and long strings cut; null and
    booleans as the file spells them, not as Python's `None` and `True`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return describe(value)
    try:
        text = repr(value)
    except ValueError:  # an integer too long to print
        return "a value too large to print"
    return text if len(text) <= 80 else text[:77] + "..."


def _document_loc(loc: tuple[str | int, ...], data: Any) -> tuple[tuple, tuple]:
    """pydantic's error location as a path in the document: union tags dropped, except a
    part that is a key of the document where it stands (a region named `eu-west[1]` under
    `demand`, which reads like a tag). Two paths: with each key as the data holds it (the
    line map's and the schema's), and as the file spells it, each mapping key that is not
    text (YAML's `true:`, `~:`, `12:`) spelled as YAML does (`_key_spelling`), so that
    `dotted` names `demand.true`, not `demand[1]`, a list's second item, nor `demand.None`."""
    kept: list[str | int] = []
    spelled: list[str | int] = []
    node = data
    for part in loc:
        in_list = (
            isinstance(part, int) and isinstance(node, list) and -len(node) <= part < len(node)
        )
        key = _key_of(node, part) if isinstance(node, dict) and not in_list else _NO_KEY
        shown = part
        if in_list:
            node = node[part]
        elif key is not _NO_KEY:
            part, node = key, node[key]
            shown = part if isinstance(part, str) else _key_spelling(part)
        elif _is_union_tag(part):
            continue
        else:
            node = None  # a missing field or an unknown key: the path ends in the schema
        kept.append(part)
        spelled.append(shown)
    return tuple(kept), tuple(spelled)


_NO_KEY = object()


def _key_of(mapping: dict, part: str | int) -> Any:
    """The key of `mapping` that pydantic's location part names, or `_NO_KEY`: a key that
    is not text is named by its int or its str (YAML's `true:` as 1, `~:` as 'None',
    `1.5:` as '1.5')."""
    if isinstance(part, str) and part in mapping:
        return part
    for key in mapping:
        if not isinstance(key, str) and (
            str(key) == part if isinstance(part, str) else key == part
        ):
            return key
    return _NO_KEY


def _key_spelling(key: Any) -> str:
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, float) and not math.isfinite(key):
        return ".nan" if math.isnan(key) else (".inf" if key > 0 else "-.inf")
    return str(key)


def _is_union_tag(part: str | int) -> bool:
    # pydantic inserts the union member's type name into the location ("function-after[...]").
    return isinstance(part, str) and ("[" in part or part in {"float", "int", "str", "none"})


def _line_for(path: tuple[str | int, ...], lines: Lines) -> int | None:
    for cut in range(len(path), -1, -1):
        line = lines.get(tuple(path[:cut]))
        if line is not None:
            return line
    return None


def _fields_at(model: type[BaseModel], path: tuple[str | int, ...]) -> list[str]:
    """Field names of the model reached by following `path` from `model`."""
    current: Any = model
    for part in path:
        if isinstance(part, int) or not _is_model(current):
            current = _inner_model(current)
            if isinstance(part, int):
                continue
        if not _is_model(current) or part not in current.model_fields:
            # a dict key (region name, GPU name): step into the dict's value type
            current = _inner_model(current)
            continue
        current = _inner_model(current.model_fields[part].annotation)
    current = _inner_model(current)
    return list(current.model_fields) if _is_model(current) else []


def _is_model(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _inner_model(tp: Any) -> Any:
    """The first pydantic model inside Optional/list/dict/tuple annotations, else `tp`."""
    if _is_model(tp):
        return tp
    for arg in typing.get_args(tp):
        found = _inner_model(arg)
        if _is_model(found):
            return found
    if isinstance(tp, types.UnionType):
        for arg in tp.__args__:
            if _is_model(arg):
                return arg
    return tp
