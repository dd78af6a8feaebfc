"""`--set path=value` on a parsed document (models/io/overrides.py)."""

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.io.overrides import (
    apply_overrides,
    key_text,
    load_instance_with,
    parse_override,
    parse_overrides,
    selector_text,
)
from models.schema.errors import InputError
from tests.paths import DEFAULT_INSTANCE

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


ODD_NAMES = {
    "regions": [
        {"name": "eu-west[1]", "supply": {"h100-sxm": {"max_gpus": 8}}},
        {"name": "ap.south", "supply": {}},
        {"name": "a=b", "supply": {}},
    ],
    "workloads": [
        {"name": "0", "demand": {"ap.south": {"requests_per_day": 1}, "eu-west[1]": {}}},
        {"name": "chat", "demand": {}},
    ],
}


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('regions["eu-west[1]"].supply.h100-sxm.max_gpus=64',
         ("regions", 0, "supply", "h100-sxm", "max_gpus")),
        ("regions['ap.south'].supply.b200=64", ("regions", 1, "supply", "b200")),
        ("regions[ap.south].supply.b200=64", ("regions", 1, "supply", "b200")),
        ('regions["a=b"].supply=64', ("regions", 2, "supply")),
        ('workloads[chat].demand."ap.south"=64', ("workloads", 1, "demand", "ap.south")),
        ('workloads[0].demand."ap.south".requests_per_day=64',
         ("workloads", 0, "demand", "ap.south", "requests_per_day")),
        ("workloads[\"0\"].demand.'eu-west[1]'.peak=64",
         ("workloads", 0, "demand", "eu-west[1]", "peak")),
        ('workloads["chat"].demand."say \\"hi\\"\\\\"=64',
         ("workloads", 1, "demand", 'say "hi"\\')),
    ],
)  # fmt: skip
def test_quoted_keys_and_names_address_any_name(text, where):
    """A name holding `.`, `[`, `]`, `=` or quotes is reached by quoting it; `["0"]`
    is the element named 0 (here the first), not position 0 by chance."""
    node = apply_overrides(ODD_NAMES, parse_overrides([text]))
    for step in where:
        node = node[step]
    assert node == 64


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # the unquoted name with brackets: the quoted spelling in the message
        ("regions[eu-west[1]].supply=1", 'is quoted: ["eu-west[1]"]'),
        # a key cut at its dot: created as 'ap', it matched nothing; named, with the quote
        ("workloads[0].demand.ap.south.requests_per_day=1",
         "workloads[0].demand has no key 'ap' (keys: \"ap.south\", \"eu-west[1]\"); "
         'a key holding a dot or a bracket is quoted: workloads[0].demand."ap.south"'),
        # a key cut at its bracket: no empty list to index
        ("workloads[0].demand.eu-west[1].peak=1", "workloads[0].demand has no key 'eu-west'"),
        ("regions[eu-west].supply=1", "regions has no element named 'eu-west'"),
        ('regions["eu-west[1].supply=1', "is not closed"),
        ("regions[].supply=1", "an empty selector"),
        ("regions..supply=1", "an empty key"),
    ],
)  # fmt: skip
def test_a_key_or_name_that_matches_nothing_is_named(text, message):
    with pytest.raises(InputError) as raised:
        apply_overrides(ODD_NAMES, parse_overrides([text]))
    (issue,) = raised.value.issues
    assert issue.file == "--set" and message in issue.message, issue.message


NAMES = st.text(st.sampled_from("ab.[]='\"\\ -1"), min_size=1, max_size=8).filter(
    lambda name: name == name.strip()
)


@given(name=NAMES, value=st.integers())
def test_key_text_reaches_every_name(name, value):
    """A key or a name written by key_text leads back to itself, whatever it holds."""
    document = {"regions": [{"name": name, "supply": {}}]}
    text = f"regions{selector_text(name)}.supply.{key_text(name)}={value}"
    changed = apply_overrides(document, parse_overrides([text]))
    assert changed["regions"][0]["supply"] == {name: value}


def test_an_invalid_value_under_a_bracketed_name_is_named_at_its_own_path(tmp_path):
    """A region named `eu-west[1]` reads like pydantic's union tags (`function-after[...]`),
    which a location drops: the error said `workloads[0].demand.peak_requests_per_s`, no
    region, and without the --set that put the value there. Now the full path and the --set."""
    text = DEFAULT_INSTANCE.read_text().replace("eu-west", "eu-west[1]")
    text = text.replace("- [us-east, eu-west[1], 75]", '- [us-east, "eu-west[1]", 75]')
    text = text.replace("- [us-west, eu-west[1], 140]", '- [us-west, "eu-west[1]", 140]')
    text = text.replace("eu-west[1]: {peak", '"eu-west[1]": {peak')
    text = text.replace("name: eu-west[1]", 'name: "eu-west[1]"')
    (tmp_path / "odd.yaml").write_text(text)
    load_instance_with(tmp_path / "odd.yaml", parse_overrides(["name=ok"]))  # valid as written
    change = 'workloads[chat].demand."eu-west[1]".peak_requests_per_s=-1'
    with pytest.raises(InputError) as raised:
        load_instance_with(tmp_path / "odd.yaml", parse_overrides([change]))
    (issue,) = raised.value.issues
    assert issue.path == "workloads[0].demand.eu-west[1].peak_requests_per_s"
    assert issue.message.endswith(f"(after --set {change})")


def test_a_negative_index_counts_from_the_end_as_documented():
    """`[-1]` is the last element (Python's rule, which the path reader always followed,
    undocumented until the README, the module and --set's help said so); past the
    start is out of range. DOCUMENT has 2 workloads: -1 is chat's neighbour code.v2,
    -2 is chat, -3 is nothing."""
    assert _set("workloads[-1].slo.ttft_p99_ms=1")["workloads"][1]["slo"] == {"ttft_p99_ms": 1}
    assert _set("workloads[-2].slo.ttft_p99_ms=1")["workloads"][0]["slo"] == {"ttft_p99_ms": 1}
    with pytest.raises(InputError) as raised:
        _set("workloads[-3].slo=1")
    assert "workloads has 2 elements; index -3 is out of range" in raised.value.issues[0].message
    from cli.options import SetOption
    from tests.paths import REPO

    (option,) = SetOption.__metadata__
    assert "[-1] the last" in option.help
    assert "`[-1]` the last" in (REPO / "README.md").read_text(encoding="utf-8")
