"""Reading instance files: YAML (safe loading only) or JSON, validated in full.

Every error reads `FILE:LINE: field.path: message`, with the line wherever the file
gives one, and all errors are reported at once.
"""

import json
import types
import typing
from difflib import get_close_matches
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from models.errors import InputError, Issue
from models.instance import Instance, cross_check

LineMap = dict[tuple[str | int, ...], int]


def load_instance(path: str | Path) -> Instance:
    """Read, validate and cross-check an instance file.

    Raises:
        InputError: with every problem found, each naming file, line and field.
    """
    path = Path(path)
    data, lines = read_document(path)
    return validate_instance(data, str(path), lines, instance_dir=path.parent)


def read_document(path: Path) -> tuple[Any, LineMap]:
    """Parse a YAML or JSON file into plain data and a map from field path to line."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError([Issue(name, None, "", "no such file")]) from None
    except IsADirectoryError:
        raise InputError([Issue(name, None, "", "is a directory, not an instance file")]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise InputError([Issue(name, None, "", f"cannot read: {error}")]) from None

    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError([Issue(name, error.lineno, "", f"JSON syntax: {error.msg}")]) from None
    elif path.suffix.lower() in (".yaml", ".yml"):
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            line = mark.line + 1 if mark is not None else None
            problem = getattr(error, "problem", None) or str(error)
            raise InputError([Issue(name, line, "", f"YAML syntax: {problem}")]) from None
    else:
        raise InputError(
            [Issue(name, None, "", f"unknown file type {path.suffix!r}: use .yaml, .yml or .json")]
        )
    return data, _line_map(text)


def validate_instance(
    data: Any,
    file: str = "<instance>",
    lines: LineMap | None = None,
    instance_dir: Path | None = None,
) -> Instance:
    """Validate parsed data as an `Instance` and cross-check its references; paths in the
    data (`models[].config`) are relative to `instance_dir` (default: the working folder)."""
    lines = lines or {}
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise InputError([Issue(file, 1, "", f"an instance is a mapping of sections, got {kind}")])
    try:
        context = {"instance_dir": str(instance_dir)} if instance_dir is not None else None
        instance = Instance.model_validate(data, context=context)
    except ValidationError as error:
        raise InputError(
            [_issue_from_pydantic(item, file, lines) for item in error.errors()]
        ) from None
    problems = cross_check(instance)
    if problems:
        raise InputError(
            [Issue(file, _line_for(path, lines), _dotted(path), msg) for path, msg in problems]
        )
    return instance


def _issue_from_pydantic(item: dict[str, Any], file: str, lines: LineMap) -> Issue:
    loc = tuple(part for part in item["loc"] if not _is_union_tag(part))
    message = item["msg"]
    if item["type"] == "extra_forbidden":
        allowed = _fields_at(Instance, loc[:-1])
        key = str(loc[-1])
        close = [name for name in allowed if name.startswith(key)] or get_close_matches(
            key, allowed, n=1
        )
        message = f"unknown key {loc[-1]!r}"
        if close:
            message += f"; did you mean {close[0]!r}?"
        elif allowed:
            message += f" (allowed: {', '.join(allowed)})"
    elif item["type"] == "missing":
        message = "required field is missing"
    elif "input" in item and item["type"] not in ("value_error", "assertion_error"):
        message += f" (got {item['input']!r})"
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return Issue(file, _line_for(loc, lines), _dotted(loc), message)


def _is_union_tag(part: str | int) -> bool:
    # pydantic inserts the union member's type name into the location ("function-after[...]").
    return isinstance(part, str) and ("[" in part or part in {"float", "int", "str", "none"})


def _dotted(path: tuple[str | int, ...]) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _line_for(path: tuple[str | int, ...], lines: LineMap) -> int | None:
    for cut in range(len(path), -1, -1):
        line = lines.get(tuple(path[:cut]))
        if line is not None:
            return line
    return None


def _line_map(text: str) -> LineMap:
    """Line (1-based) of every mapping key and sequence item, by field path."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return {}
    lines: LineMap = {}

    def walk(node: yaml.Node, path: tuple[str | int, ...]) -> None:
        lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                key_path = (*path, str(key_node.value))
                lines[key_path] = key_node.start_mark.line + 1
                walk(value_node, key_path)
        elif isinstance(node, yaml.SequenceNode):
            for index, child in enumerate(node.value):
                walk(child, (*path, index))

    if root is not None:
        walk(root, ())
    return lines


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
