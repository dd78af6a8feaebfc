"""Hostile input as properties (issue 16): valid instances and plans with one value
turned into NaN, infinity, 1e308, a negative, 10^37 or the wrong type, one key dropped or
given twice. Whatever the mutation, every command ends with a documented exit code and a
message, never a traceback, and leaves the file as it was."""

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.cli.test_hostile_input import GOOD_DATA, run_checked
from tests.paths import DEFAULT_INSTANCE

DOCUMENTED_EXIT_CODES = {0, 1, 2, 3, 4}


BAD_VALUES = [math.nan, math.inf, -math.inf, 1e308, -1, 0, 10**37, "x", [], {}]


def _paths(value, prefix=()):
    """Every path to a value inside `value` (mapping keys and list indices)."""
    found = [prefix] if prefix else []
    if isinstance(value, (dict, list)):
        children = value.items() if isinstance(value, dict) else enumerate(value)
        for key, child in children:
            found += _paths(child, (*prefix, key))
    return found


def _number(value: float, syntax: str) -> str:
    if math.isnan(value):
        return "NaN" if syntax == "json" else ".nan"
    if math.isinf(value):
        text = "Infinity" if syntax == "json" else ".inf"
        return text if value > 0 else "-" + text
    text = repr(value)  # YAML 1.1 floats need a dot before the exponent
    return text.replace("e", ".0e") if "e" in text and "." not in text else text


def _emit(value, syntax: str, path=(), duplicate=None) -> str:
    """Flow-style text (JSON, or YAML flow), giving the key at `duplicate` twice."""
    if isinstance(value, dict):
        pairs = []
        for key, child in value.items():
            entry = f"{json.dumps(str(key))}: {_emit(child, syntax, (*path, key), duplicate)}"
            pairs += [entry, entry] if (*path, key) == duplicate else [entry]
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, list):
        items = [_emit(child, syntax, (*path, i), duplicate) for i, child in enumerate(value)]
        return "[" + ", ".join(items) + "]"
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, float):
        return _number(value, syntax)
    return json.dumps(value) if isinstance(value, str) else str(value)


def _mutated(data, path, mutation):
    """A deep copy of `data` with the value at `path` replaced or (mutation 'drop') removed."""
    data = json.loads(json.dumps(data))
    parent = data
    for key in path[:-1]:
        parent = parent[key]
    if mutation == "drop":
        del parent[path[-1]]
    elif mutation != "duplicate":
        parent[path[-1]] = mutation
    return data


MUTATIONS = st.sampled_from([*BAD_VALUES, "drop", "duplicate"])
PROPERTY = settings(
    deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=80
)


def _write_mutation(tmp_path, data, path, mutation, syntax) -> Path:
    duplicate = path if mutation == "duplicate" and isinstance(path[-1], str) else None
    text = _emit(_mutated(data, path, mutation), syntax, duplicate=duplicate)
    file = tmp_path / f"mutated.{syntax}"
    file.write_text(text)
    return file


@PROPERTY
@given(st.data())
def test_mutated_instance_validates_or_exits_2_without_traceback(run_cli, tmp_path, data):
    path = data.draw(st.sampled_from(_paths(GOOD_DATA)))
    mutation = data.draw(MUTATIONS)
    syntax = data.draw(st.sampled_from(["yaml", "json"]))
    file = _write_mutation(tmp_path, GOOD_DATA, path, mutation, syntax)
    result = run_checked(run_cli, "validate", file, code=None)
    assert result.exit_code in {0, 2}
    if result.exit_code == 2:
        assert result.stderr.startswith("error:")
    if mutation == "duplicate" and isinstance(path[-1], str):
        assert result.exit_code == 2 and "duplicate key" in result.stderr


@settings(PROPERTY, max_examples=6)
@given(st.data())
def test_mutated_instance_solves_with_a_documented_exit_code(run_cli, tmp_path, data):
    numeric = [p for p in _paths(GOOD_DATA) if isinstance(_value_at(GOOD_DATA, p), (int, float))]
    path = data.draw(st.sampled_from(numeric))
    mutation = data.draw(st.sampled_from([math.nan, 1e308, -1, 0, 10**37, 1e-300, 2.5]))
    file = _write_mutation(tmp_path, GOOD_DATA, path, mutation, "yaml")
    result = run_checked(run_cli, "solve", file, "--time-limit", "5", code=None)
    assert result.exit_code in DOCUMENTED_EXIT_CODES - {1}, result.stderr


def _value_at(data, path):
    for key in path:
        data = data[key]
    return data


@pytest.fixture(scope="module")
def plan_data(default_plan):
    """The reference instance's plan, as `solve --json` writes it (the JSON of the plan
    solved once per test process)."""
    return json.loads(default_plan.model_dump_json())


@settings(PROPERTY, max_examples=25)
@given(st.data())
def test_mutated_plan_is_checked_or_refused_without_traceback(run_cli, tmp_path, plan_data, data):
    path = data.draw(st.sampled_from(_paths(plan_data)))
    mutation = data.draw(MUTATIONS)
    file = _write_mutation(tmp_path, plan_data, path, mutation, "json")
    result = run_checked(run_cli, "verify", DEFAULT_INSTANCE, file, code=None)
    assert result.exit_code in {0, 1, 2}
