"""The stored references each deploy target is checked against (references/*.yaml).

Each file names the target's version and the source it was read from (repository, path,
commit), and lists what fleetplan writes: command-line flags (`flags`, with `choices` for
enumerated values, `json_keys` and `json_choices` for a flag whose value is JSON) for the
engines, dotted key paths (`keys`) for the configuration
formats. `unknown_flags` and `unknown_keys` compare what was written with them.
"""

import json
from functools import cache
from pathlib import Path

import yaml

FOLDER = Path(__file__).with_name("references")


@cache
def reference(name: str) -> dict:
    """The reference `references/<name>.yaml` (vllm, sglang, trtllm, llm-d, dynamo, lws)."""
    return yaml.safe_load((FOLDER / f"{name}.yaml").read_text(encoding="utf-8"))


def written_flags(command: list[str]) -> list[tuple[str, str | None]]:
    """(flag, its value or None) of every `--flag` in a command line."""
    pairs = []
    for index, word in enumerate(command):
        if word.startswith("--"):
            following = command[index + 1] if index + 1 < len(command) else None
            value = None if following is None or following.startswith("--") else following
            pairs.append((word, value))
    return pairs


def unknown_flags(name: str, command: list[str]) -> list[str]:
    """Flags of `command` the reference does not list, values outside its choices, and in
    a JSON value (`json_keys`) keys it does not list or values outside `json_choices`."""
    known = reference(name)
    choices = known.get("choices") or {}
    problems = []
    for flag, value in written_flags(command):
        if flag not in known["flags"]:
            problems.append(f"{flag} is not a {name} flag")
        elif flag in choices and value not in choices[flag]:
            problems.append(f"{flag} {value} is not among {choices[flag]}")
        elif flag in (known.get("json_keys") or {}):
            problems += _json_problems(known, flag, value)
    return problems


def _json_problems(known: dict, flag: str, value: str | None) -> list[str]:
    try:
        data = json.loads(value or "")
    except json.JSONDecodeError:
        return [f"{flag} {value!r} is not JSON"]
    choices = known.get("json_choices") or {}
    problems = [
        f"{flag}: {key} is not a key" for key in data if key not in known["json_keys"][flag]
    ]
    return problems + [
        f"{flag}: {key} {data[key]!r} is not among {choices[key]}"
        for key in data
        if key in choices and data[key] not in choices[key]
    ]


def key_paths(data, prefix: str = "", star: frozenset[str] = frozenset()) -> set[str]:
    """Every leaf key path of `data` (`a.b`, `a[].b` inside lists); a mapping whose path
    is in `star` has its keys written as `*`."""
    if isinstance(data, dict):
        paths: set[str] = set()
        for key, value in data.items():
            name = "*" if prefix in star else str(key)
            path = f"{prefix}.{name}" if prefix else name
            inner = key_paths(value, path, star)
            paths |= inner or {path}
        return paths
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        return set().union(*(key_paths(item, f"{prefix}[]", star) for item in data))
    return set()


def unknown_keys(name: str, document: dict, star: frozenset[str] = frozenset()) -> list[str]:
    """Key paths of `document` that are not a key of the reference, nor below one."""
    known = reference(name)["keys"]
    return sorted(
        path
        for path in key_paths(document, "", star)
        if not any(path == key or path.startswith(key + ".") for key in known)
    )
