"""Hostile input, round twenty-one: a mapping key YAML reads as something other than text
(`true:`, `~:`, `12:`) is named as the file spells it, at its own line, where it was named
`demand[1]` (a list's second item), `demand.None` or `demand[12]` at its mapping's line; a
null where text belongs says `null`, not Python's `None`; fleet-import names a GPU type the
instance does not offer as the fleet spells it, not as a field of the instance written."""

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.cli.test_hostile_round11 import _instance_with
from tests.cli.test_hostile_side_files import FLEET_HEADER, _fleet_args

_DEMAND = "    demand: {us-east: {peak_requests_per_s: 20}}\n"


def _demand_with_key(key: str) -> str:
    """The fixture's demand as a block mapping whose second key is `key` (at line +2)."""
    return (
        "    demand:\n"
        "      us-east: {peak_requests_per_s: 20}\n"
        f"      {key}: {{peak_requests_per_s: 5}}\n"
    )


def _key_line(path) -> int:
    """The line of the demand's second key: the fixture's demand line + 2."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return lines.index("    demand:") + 1 + 2


@pytest.mark.parametrize(
    ("key", "field", "reason"),
    [
        # before: 'workloads[0].demand[1]: must be text, got True' at the demand's line
        ("true", "workloads[0].demand.true", "got true: YAML reads an unquoted true or false"),
        # before: 'workloads[0].demand.None: Input should be a valid string (got None)'
        ("~", "workloads[0].demand.null", "got null: YAML reads null, ~ or nothing as no value"),
        ("null", "workloads[0].demand.null", "got null"),
        # before: 'workloads[0].demand[12]', a list index
        ("12", "workloads[0].demand.12", "got 12: YAML reads an unquoted number as a number"),
        # before: 'workloads[0].demand.inf', at the demand's line
        (".inf", "workloads[0].demand..inf", "got inf"),
    ],
    ids=["true", "tilde", "null", "int", "inf"],
)
def test_a_key_that_is_not_text_is_named_as_written_at_its_line(
    run_cli, tmp_path, key, field, reason
):
    path = _instance_with(tmp_path, _DEMAND, _demand_with_key(key))
    needle = f"{path}:{_key_line(path)}: {field}: must be text, {reason}"
    result = run_checked(run_cli, "validate", path, needles=(needle,))
    assert "None" not in result.stderr and "[1]" not in result.stderr


def test_a_null_where_text_belongs_says_null(run_cli, tmp_path):
    """`model: ~` read 'Input should be a valid string (got None)', a Python word."""
    path = _instance_with(tmp_path, "model: llama-3.1-8b", "model: ~")
    needle = "workloads[0].model: must be text, got null: YAML reads null, ~ or nothing"
    result = run_checked(run_cli, "validate", path, needles=(needle,))
    assert "None" not in result.stderr


def test_a_boolean_where_a_word_belongs_says_false(run_cli, tmp_path):
    """`survive: false` showed '(got False)', Python's spelling of the YAML the user wrote."""
    path = _instance_with(tmp_path, "survive: none", "survive: false")
    run_checked(run_cli, "validate", path, needles=("(got false): YAML reads an unquoted",))


@pytest.mark.parametrize(
    ("gpu", "told"),
    [
        # before: "regions[0].existing. 1: unknown GPU ' 1' ... (the fleet raises `existing`)"
        (" 1", "the fleet runs GPU types the instance does not offer: ' 1' (instance gpus: "
               "'h100-sxm')"),
        # before: "regions[0].existing.h100: unknown GPU 'h100'; did you mean 'h100-sxm'?"
        ("H100-SXM", "'H100-SXM' (instance gpus: 'h100-sxm'); did you mean 'h100-sxm' for "
                     "'H100-SXM'?"),
    ],
    ids=["space-one", "upper-case"],
)  # fmt: skip
def test_a_fleet_gpu_the_instance_does_not_offer_is_named_as_the_fleet_spells_it(
    run_cli, tmp_path, gpu, told
):
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(f"{FLEET_HEADER}\nchat,us-east,{gpu},fp8,1,1,2\n")
    out = tmp_path / "out.yaml"
    result = run_checked(run_cli, *_fleet_args(fleet, out), needles=(f"{fleet}: ", told))
    assert "existing" not in result.stderr and not out.exists()


def test_a_fleet_of_many_long_unknown_names_gets_a_short_message(run_cli, tmp_path):
    """130 rows on GPUs named with 6,000 characters each: the message listed every name
    in full (780,000 characters). It names 10, each cut at 80 characters (77 + '...'),
    and says how many more: 130 - 10 = 120."""
    fleet = tmp_path / "fleet.csv"
    rows = "".join(f"chat,us-east,g{i:03d}{'h' * 6000},fp8,1,1,2\n" for i in range(130))
    fleet.write_text(f"{FLEET_HEADER}\n{rows}")
    out = tmp_path / "out.yaml"
    first = repr(f"g000{'h' * 6000}")[:77] + "..."
    result = run_checked(
        run_cli, *_fleet_args(fleet, out), needles=(first, " and 120 more (instance gpus: ")
    )
    assert len(result.stderr) < 2_000 and not out.exists()
