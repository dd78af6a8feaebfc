"""Assumptions of `fleetplan estimate` from its flags and a YAML or JSON config file.

Flags win over the file's keys, the defaults of `models.calculators.estimate.EstimateAssumptions`
fill the rest; every problem is reported at once, naming the flag, or the file, line and
key (an `InputError`, exit code 2 at the command line).
"""

from collections.abc import Mapping
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from models.calculators.estimate import EstimateAssumptions
from models.io.loading import read_document
from models.schema.errors import InputError, Issue

COMMAND_LINE = "command line"
"""Where an issue from a flag (not a file) comes from."""


@dataclass(frozen=True)
class ConfigFile:
    """A parsed file of assumptions, with the line of each key for messages."""

    name: str
    data: Mapping[str, Any]
    lines: Mapping[tuple[str | int, ...], int]


def read_config(path: Path) -> ConfigFile:
    """Read a YAML (safe loading) or JSON file of assumptions.

    Raises:
        InputError: when the file is missing, unreadable, malformed or not a mapping.
    """
    data, lines = read_document(path, what="estimate config")
    name = str(path)
    if not isinstance(data, Mapping):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise InputError([Issue(name, 1, "", f"expected a mapping of assumptions, got {kind}")])
    return ConfigFile(name, data, lines)


def flag_name(field: str) -> str:
    """The command-line flag of an assumption: `requests_per_day` -> `--requests-per-day`."""
    return "--" + field.replace("_", "-")


def assumptions_from(
    flags: Mapping[str, Any], config: ConfigFile | None = None
) -> EstimateAssumptions:
    """Validate assumptions from flags (those not None) over a config file's keys.

    Config keys may use dashes or underscores. Flags win over the file; the defaults fill
    the rest. Every problem is reported at once, each naming the flag, or the file, line
    and key.

    Raises:
        InputError: with one issue per bad flag or key.
    """
    fields = list(EstimateAssumptions.model_fields)
    issues: list[Issue] = []
    merged: dict[str, Any] = {}
    origin: dict[str, tuple[str, ...]] = {}
    if config is not None:
        for key, value in config.data.items():
            name = str(key).replace("-", "_")
            if name not in fields:
                close = get_close_matches(name, fields, n=1)
                hint = f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(fields)}"
                line = config.lines.get((str(key),))
                issues.append(Issue(config.name, line, str(key), f"unknown key; {hint}"))
                continue
            if name in origin:  # `requests-per-day` and `requests_per_day`: one would be lost
                first = origin[name][0]
                message = (
                    f"given twice, as {first!r} (line {config.lines.get((first,))}) and "
                    f"{str(key)!r}: the second would silently replace the first"
                )
                issues.append(Issue(config.name, config.lines.get((str(key),)), str(key), message))
                continue
            merged[name] = value
            origin[name] = (str(key),)
    for name, value in flags.items():
        if value is None:
            continue
        if name not in fields:
            raise ValueError(f"no assumption named {name!r}")
        merged[name] = value
        origin.pop(name, None)
    try:
        assumptions = EstimateAssumptions.model_validate(merged)
    except ValidationError as error:
        issues.extend(_issue(item, origin, config) for item in error.errors())
    if issues:
        raise InputError(issues)
    return assumptions


def _issue(
    item: Mapping[str, Any], origin: Mapping[str, tuple[str, ...]], config: ConfigFile | None
) -> Issue:
    loc = tuple(item["loc"])
    message = str(item["msg"]).removeprefix("Value error, ")
    if "input" in item and item["type"] not in ("value_error", "assertion_error", "too_long"):
        message += f" (got {item['input']!r})"
    if not loc:  # a model-level check: name the fields it mentions through the message
        return Issue(COMMAND_LINE if config is None else config.name, None, "", message)
    name = str(loc[0])
    rest = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc[1:])
    if name in origin and config is not None:
        key_path = (*origin[name], *loc[1:])
        line = None
        for cut in range(len(key_path), 0, -1):
            line = config.lines.get(tuple(key_path[:cut]))
            if line is not None:
                break
        return Issue(config.name, line, origin[name][0] + rest, message)
    return Issue(COMMAND_LINE, None, flag_name(name) + rest, message)


MODEL_GIVES = {
    "latency_s": "the request duration at the performance model's operating point",
    "seqs_per_gpu": "the sequences per GPU its memory holds at that point",
}
"""The assumptions `--model` replaces (models.calculators.estimate.estimate_with_model)."""
TARGET_GIVES = {
    "target_utilization": "1: the capacity at the p99 target already holds the queueing margin",
}
"""What a latency target (--ttft-p99-ms, --tpot-p99-ms) with `--model` replaces."""


def check_replaced(
    flags: Mapping[str, Any], config: ConfigFile | None, model: bool, targets: bool
) -> None:
    """Refuse an assumption the performance model replaces: `--model` sets the request
    duration and the sequences per GPU, and a latency target the utilisation, so a
    --latency-s, --seqs-per-gpu or --target-utilization (flag or --config key) beside
    them was replaced without a word (--target-utilization 0.5 with --ttft-p99-ms 500
    printed 'target utilisation at peak 100%').

    Raises:
        InputError: naming each flag or file line and key, and what replaces it.
    """
    replaced = {**(MODEL_GIVES if model else {}), **(TARGET_GIVES if model and targets else {})}
    keys = {str(key).replace("-", "_"): key for key in (config.data if config else {})}
    issues = []
    for name, by in replaced.items():
        why = f"is replaced by {by}: drop it, or leave out --model"
        if flags.get(name) is not None:
            issues.append(Issue("command line", None, flag_name(name), why))
        elif config is not None and name in keys:
            issues.append(Issue(config.name, config.lines.get((keys[name],)), name, why))
    if issues:
        raise InputError(issues)
