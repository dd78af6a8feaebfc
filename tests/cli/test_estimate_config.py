"""Assumptions of `fleetplan estimate` from flags and config files (`cli.estimate_config`):
flags win, the defaults fill the rest, every problem named by flag or file, line and key."""

from pathlib import Path

import pytest

from cli.estimate_config import assumptions_from, flag_name, read_config
from models.schema.errors import InputError


def test_flag_name_of_a_field():
    assert flag_name("requests_per_day") == "--requests-per-day"


def test_flags_override_config(tmp_path: Path):
    path = tmp_path / "plan.yaml"
    path.write_text("requests-per-day: 1000000\npeak_to_average: 2\nzones: 3\n")
    assumptions = assumptions_from({"peak_to_average": 5.0, "slo": None}, read_config(path))
    assert assumptions.requests_per_day == 1_000_000
    assert assumptions.peak_to_average == 5.0
    assert assumptions.zones == 3
    assert assumptions.slo == 0.999


def test_bad_flag_names_the_flag():
    with pytest.raises(InputError) as caught:
        assumptions_from({"slo": 1.5, "target_utilization": 0.0})
    text = str(caught.value)
    assert "--slo" in text
    assert "--target-utilization" in text
    assert len(caught.value.issues) == 2


def test_bad_config_key_names_key_and_line(tmp_path: Path):
    path = tmp_path / "plan.yaml"
    path.write_text("requests_per_day: 1000\nrequests_per_dya: 5\nslo: lots\n")
    with pytest.raises(InputError) as caught:
        assumptions_from({}, read_config(path))
    unknown, bad_value = caught.value.issues  # every problem at once
    assert (unknown.line, unknown.path) == (2, "requests_per_dya")
    assert "requests_per_day" in unknown.message  # the suggestion
    assert (bad_value.line, bad_value.path) == (3, "slo")


def test_bad_config_value_names_key_and_line(tmp_path: Path):
    path = tmp_path / "plan.yaml"
    path.write_text("requests_per_day: 1000\nslo: lots\n")
    with pytest.raises(InputError) as caught:
        assumptions_from({}, read_config(path))
    (issue,) = caught.value.issues
    assert (issue.file, issue.line, issue.path) == (str(path), 2, "slo")


def test_config_must_be_a_mapping(tmp_path: Path):
    path = tmp_path / "plan.yaml"
    path.write_text("- 1\n- 2\n")
    with pytest.raises(InputError, match="mapping"):
        read_config(path)


def test_burn_rate_beyond_all_requests_failing_is_rejected():
    with pytest.raises(InputError, match="incidents"):
        assumptions_from({"slo": 0.9}, None)  # 14.4x and 50x of a 10% budget exceed 100%
