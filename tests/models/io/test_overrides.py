"""`--set path=value` on a parsed document (models/io/overrides.py)."""

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.io.overrides import apply_overrides, parse_override, parse_overrides
from models.schema.errors import InputError

DOCUMENT = {
    "name": "demo",
    "workloads": [
        {"name": "chat", "slo": {"ttft_p99_ms": 800}},
        {"name": "code.v2", "slo": {"ttft_p99_ms": 1500}},
    ],
    "regions": [{"name": "us-east", "supply": {"h100-sxm": {"price_per_gpu_hour": 2.4}}}],
}


def _set(*texts: str) -> dict:
    return apply_overrides(DOCUMENT, parse_overrides(list(texts)))


def test_index_name_and_dotted_keys_reach_the_same_kinds_of_places():
    changed = _set(
        "workloads[0].slo.ttft_p99_ms=1200",
        "workloads[code.v2].slo.tpot_p99_ms=40",
        "regions[us-east].supply.h100-sxm.price_per_gpu_hour=2.1",
    )
    assert changed["workloads"][0]["slo"] == {"ttft_p99_ms": 1200}
    assert changed["workloads"][1]["slo"] == {"ttft_p99_ms": 1500, "tpot_p99_ms": 40}
    assert changed["regions"][0]["supply"]["h100-sxm"]["price_per_gpu_hour"] == 2.1


@pytest.mark.parametrize(
    ("raw", "value"),
    [("1200", 1200), ("0.8", 0.8), ("null", None), ("", None), ("true", True),
     ("region", "region"), ("[1, 2]", [1, 2]), ("{a: 1}", {"a": 1})],
)  # fmt: skip
def test_values_are_read_as_yaml(raw, value):
    assert parse_override(f"policy.x={raw}").value == value


def test_missing_mappings_on_the_way_are_created():
    assert _set("policy.max_utilization=0.8")["policy"] == {"max_utilization": 0.8}


def test_the_input_document_is_never_changed():
    before = copy.deepcopy(DOCUMENT)
    _set("workloads[chat].slo.ttft_p99_ms=1", "name=other")
    assert before == DOCUMENT


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("workloads[2].slo=1", "workloads has 2 elements; index 2 is out of range"),
        ("workloads[batch].slo=1", "no element named 'batch' (chat, code.v2)"),
        ("name[0]=1", "name is the value 'demo', not a list"),
        ("workloads.slo=1", "workloads is a list, not a mapping"),
        ("workloads[0=1", "cannot read"),
        ("=1", "cannot read"),
        ("no-equals-sign", "write path=value"),
        ("policy.x=[1,", "is not a YAML value"),
    ],
)
def test_a_bad_override_names_itself(text, message):
    with pytest.raises(InputError) as raised:
        _set(text)
    (issue,) = raised.value.issues
    assert issue.file == "--set" and message in issue.message


KEYS = st.text(st.sampled_from("abcxyz_-"), min_size=1, max_size=6)


@given(path=st.lists(KEYS, min_size=1, max_size=4), value=st.integers() | st.floats(0, 10))
def test_a_set_value_is_read_back_where_it_was_put(path, value):
    changed = apply_overrides({"root": {}}, parse_overrides([f"root.{'.'.join(path)}={value}"]))
    node = changed["root"]
    for key in path:
        node = node[key]
    assert node == value
