"""The grid file of `fleetplan sweep`: a base instance and the changes to try on it.

    instance: chat.yaml              # relative to the grid file
    set:                             # applied to every point (optional)
      policy.max_utilization: 0.9
    axes:                            # path (as for --set): the values it takes
      demand_growth: [1.0, 1.25, 1.5]
      regions[us-east].supply.h100-sxm.price_per_gpu_hour: [2.0, 2.4, 3.0]

The grid is the cartesian product of the axes (3 x 3 = 9 points above), in the order the
axes are written, the last axis varying fastest. Each point is the base document with
`set` and then its axis values applied (models/io/overrides.py), validated in full.
"""

import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from models.io.documents import read_document
from models.io.overrides import (
    Override,
    apply_overrides,
    landed_paths,
    overridden,
    parse_override,
    replaced_because,
)
from models.schema.errors import InputError, Issue, shown_name
from models.schema.quantities import FilePath

MAX_AXES = 8
"""Axes one grid may have: a what-if over more dimensions than this is better split."""
MAX_VALUES = 100
"""Values one axis may take."""
MAX_POINTS = 10_000
"""Points one grid may have (at a second a solve, about three hours on one core)."""


class SweepGrid(BaseModel):
    """A sweep: the base instance, fixed changes, and the axes of the grid."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    instance: FilePath
    """The base instance file, relative to the grid file."""
    set: dict[str, Any] = Field(default_factory=dict)
    """Changes applied to every point: `path: value`, paths as for `--set`."""
    axes: Annotated[dict[str, list[Any]], Field(min_length=1, max_length=MAX_AXES)]
    """Each axis: a `--set` path and the list of values it takes."""


def _grid_message(item: Any) -> str:
    """A pydantic error on the grid file, worded as the instance file's are."""
    keys = ", ".join(SweepGrid.model_fields)
    if item["type"] == "extra_forbidden":
        return f"unknown key {item['loc'][-1]!r}; a grid has {keys}"
    if item["type"] == "missing":
        return "required field is missing"
    if item["type"] == "too_short" and item["loc"] == ("axes",):
        return "is empty; give at least one axis (a --set path and its values)"
    return item["msg"].removeprefix("Value error, ")


@dataclass(frozen=True)
class Point:
    """One point of the grid: its position and the changes that make it."""

    index: int
    values: tuple[tuple[str, Any], ...]
    """(path, value) of every axis, in axis order."""

    @property
    def key(self) -> str:
        """The point's identity in a results file (stable across runs of the same grid)."""
        return json.dumps([[path, value] for path, value in self.values], sort_keys=True)

    def overrides(self) -> tuple[Override, ...]:
        """The point's axis values as overrides."""
        return tuple(_override(path, value) for path, value in self.values)

    @property
    def label(self) -> str:
        """`path=value, ...` for tables; each value as `shown_value` writes it."""
        return ", ".join(f"{path}={shown_value(value)}" for path, value in self.values)


SHOWN_VALUE_CHARS = 120
"""Longest an axis value is shown in a label or a table cell: a 5 MiB description was
printed whole in its progress line and the cost surface (10 MB of output)."""


def shown_value(value: Any) -> str:
    """An axis value as a label or a table shows it: text that does not print as itself
    escaped (`'us-east\\t'`, models.schema.errors.shown_name), anything past
    `SHOWN_VALUE_CHARS` cut with its length said (the results file keeps it whole). Any
    other value as the grid's YAML or JSON spells it (`null`, `true`, `{"a": null}`), not
    as Python does (`None`, `True`)."""
    if isinstance(value, str):
        text = shown_name(value)
    else:
        text = json.dumps(value, ensure_ascii=False, default=str)
    if len(text) <= SHOWN_VALUE_CHARS:
        return text
    return f"{text[: SHOWN_VALUE_CHARS - 40]}... ({len(text):,} characters, cut)"


def _override(path: str, value: Any) -> Override:
    """An override from a path and an already-parsed value (the path checked)."""
    parsed = parse_override(f"{path}=null")
    return Override(text=f"{path}={value}", steps=parsed.steps, value=value)


@dataclass(frozen=True)
class Grid:
    """A read grid: the base document (with `set` applied), where it came from, the points."""

    file: Path
    instance_file: Path
    base: dict
    points: tuple[Point, ...]
    axes: tuple[str, ...]


def read_grid(path: Path) -> Grid:
    """Read and check a grid file and its base instance document.

    Raises:
        InputError: naming the grid's field (a bad path, too many points, a missing
            instance file) or the base instance's problem.
    """
    data, lines = read_document(path, what="sweep grid")
    try:
        grid = SweepGrid.model_validate(data)
    except ValidationError as error:
        raise InputError(
            [
                Issue(
                    str(path),
                    lines.get(tuple(item["loc"][:1])),
                    ".".join(str(p) for p in item["loc"]),
                    _grid_message(item),
                )
                for item in error.errors()
            ]
        ) from None
    not_finite = "not a finite number (NaN and infinity have no place in a plan)"
    problems = [
        Issue(str(path), None, where, not_finite)
        for where in _non_finite(grid.set, "set") + _non_finite(grid.axes, "axes")
    ]
    problems += [
        Issue(
            str(path),
            None,
            where,
            f"{kind} is not a value JSON can hold (each result line is JSON); "
            "quote it for a string",
        )
        for where, kind in _not_json(grid.axes, "axes")
    ]
    for axis, values in grid.axes.items():
        if not values:
            problems.append(Issue(str(path), None, f"axes.{axis}", "an axis needs a value"))
        elif len(values) > MAX_VALUES:
            message = f"{len(values)} values; at most {MAX_VALUES}"
            problems.append(Issue(str(path), None, f"axes.{axis}", message))
    count = 1
    for values in grid.axes.values():
        count *= max(len(values), 1)
    if count > MAX_POINTS:
        problems.append(Issue(str(path), None, "axes", f"{count:,} points; at most {MAX_POINTS:,}"))
    if problems:
        raise InputError(problems)
    line = lines.get(("instance",))
    try:  # a link that loops raises RuntimeError in Path.resolve (exit 70 before)
        instance_file = (path.parent / grid.instance).resolve()
        is_file, exists = instance_file.is_file(), instance_file.exists()
    except (OSError, RuntimeError) as error:
        message = f"{path.parent / grid.instance}: cannot be read ({error})"
        raise InputError([Issue(str(path), line, "instance", message)]) from None
    if not is_file:
        why = "is not a file" if exists else "no such file"
        raise InputError([Issue(str(path), line, "instance", f"{instance_file}: {why}")])
    base, _ = read_document(instance_file, what="instance")
    fixed = tuple(_override(p, v) for p, v in grid.set.items())
    base, landed = landed_paths(base, fixed) if fixed else (base, [])
    axes = tuple(grid.axes)
    points = tuple(
        Point(index, tuple(zip(axes, combination, strict=True)))
        for index, combination in enumerate(itertools.product(*grid.axes.values()))
    )
    for axis in axes:  # every axis path must lead somewhere in the base document
        landed += landed_paths(base, (_override(axis, grid.axes[axis][0]),))[1]
    _refuse_lost_changes(path, lines, grid, landed)
    return Grid(path, instance_file, base, points, axes)


def _refuse_lost_changes(path: Path, lines: Any, grid: SweepGrid, landed: list[str]) -> None:
    """Refuse a change the grid would lose without a word: a `set` path or an axis that a
    later axis lands on again (two spellings of one field, `workloads[chat]` and
    `workloads[0]`, or a field and the section holding it; each point was solved at the
    later value and labelled with both), and a value an axis gives twice (the same point
    solved twice; 10, 10.0 and 1e1 are one value, as the instance reads them)."""
    named = [f"set.{key}" for key in grid.set] + [f"axes.{axis}" for axis in grid.axes]
    problems = [
        Issue(
            str(path),
            lines.get((named[i].split(".", 1)[0],)),
            named[i],
            f"is replaced at every point by {named[j]} " + replaced_because(landed, i, j),
        )
        for i, j in overridden(landed)
    ]
    for axis, values in grid.axes.items():
        seen: dict[str, int] = {}
        for index, value in enumerate(values):
            key = json.dumps(_numbers_as_read(value), sort_keys=True)
            if key in seen:
                first = seen[key]
                message = f"{_shown(value)} is given twice: each point once"
                if values[first] != value or type(values[first]) is not type(value):
                    message += f" ({_shown(values[first])} at [{first}] reads the same)"
                problems.append(Issue(str(path), None, f"axes.{axis}[{index}]", message))
            seen.setdefault(key, index)
    if problems:
        raise InputError(problems)


_NUMBER_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
"""A number YAML 1.1 leaves a string (1e3: its floats need a dot) and the schema reads."""


def _numbers_as_read(value: Any) -> Any:
    """`value` with each number as the schema reads it, a whole one as an int (10.0, 1e1
    and '1e1' as 10; -0.0 as 0): an axis giving two spellings of one number solved one
    point twice under two labels. Booleans stay booleans."""
    if isinstance(value, str) and _NUMBER_TEXT.fullmatch(value):
        value = float(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: _numbers_as_read(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_numbers_as_read(item) for item in value]
    return value


def _shown(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _non_finite(value: Any, where: str) -> list[str]:
    """Where in `value` (a parsed YAML/JSON tree) a float is NaN or infinite: such a value
    would reach the instance only to be refused point by point, and JSON Lines results
    cannot carry it (json.dumps writes a bare NaN, which no JSON reader accepts)."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [where]
    if isinstance(value, dict):
        return [w for key, item in value.items() for w in _non_finite(item, f"{where}.{key}")]
    if isinstance(value, list):
        return [w for i, item in enumerate(value) for w in _non_finite(item, f"{where}[{i}]")]
    return []


_JSON_SCALARS = (str, int, float, bool, type(None))


def _not_json(value: Any, where: str) -> list[tuple[str, str]]:
    """Where in `value` (a parsed YAML tree) a value JSON cannot write sits, and its type:
    YAML reads `!!timestamp 2025-01-01` as a date and `!!binary`, `!!set` as bytes and a
    set, and an axis value is written into every result line (json.dumps raised TypeError,
    exit 70). An unquoted date is text (models.physics.yaml_files.CORE_SCALARS)."""
    if isinstance(value, dict):
        found = []
        for key, item in value.items():
            if not isinstance(key, _JSON_SCALARS):
                found.append((f"{where}.{key}", f"a key of type {type(key).__name__}"))
            found += _not_json(item, f"{where}.{key}")
        return found
    if isinstance(value, list):
        return [w for i, item in enumerate(value) for w in _not_json(item, f"{where}[{i}]")]
    if isinstance(value, _JSON_SCALARS):
        return []
    return [(where, f"{value!r:.60} (a {type(value).__name__})")]


def point_document(grid: Grid, point: Point) -> dict:
    """The base document with the point's changes applied (not yet validated)."""
    return apply_overrides(grid.base, point.overrides())
