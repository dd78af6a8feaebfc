"""Hostile input, round eighteen: dates read as YAML 1.2's core schema reads them, plan
files' errors worded as instance errors are, two sweeps into one results file, and a
plan's hours or months that its instance does not plan."""

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

TEXT = ONE_MODEL_ONE_REGION.read_text(encoding="utf-8")

# --- dates are text, as every other plain scalar YAML 1.2 does not type -----------------------


@pytest.mark.parametrize("date", ["2026-01-05", "2026-01-05T10:00:00", "2026-1-5 10:00:00"])
def test_an_unquoted_date_in_a_name_is_text(run_cli, tmp_path, date):
    """`name: 2026-01-05` was refused ('must be text, got datetime.date(2026, 1, 5)') while
    `name: no` and `name: 6_4` are text: YAML 1.1 types a date, YAML 1.2's core schema
    (JSON's, an editor's) has no dates. A name or a description keeps it as written."""
    path = tmp_path / "dated.yaml"
    path.write_text(
        TEXT.replace("name: one-model-one-region", f"name: {date}")
        + f"description: {date}\n",
        encoding="utf-8",
    )
    result = run_checked(run_cli, "validate", path, code=0)
    assert "date" not in result.stderr


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("policy.horizon_months=2026-01-05", "policy.horizon_months"),
        ("policy.lead_time_months=2026-01-05", "policy.lead_time_months"),
        ("policy.hours_per_month=2026-01-05", "policy.hours_per_month"),
        ("policy.monthly_growth=2026-01-05", "policy.monthly_growth"),
        ("workloads[0].monthly_growth=2026-01-05T10:00:00", "workloads[0].monthly_growth"),
    ],
)
def test_a_date_in_a_month_field_is_text_a_number_field_refuses(run_cli, override, field):
    """`--set policy.horizon_months=2026-01-05` said 'Input should be a valid integer (got
    datetime.date(2026, 1, 5))', pydantic's words about a Python object; as text it is
    refused as `abc` is, naming the field and showing what was written."""
    value = override.split("=", 1)[1]
    needles = (f"{field}: must be a number, got the text {value!r}",)
    result = run_checked(run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", override,
                         needles=needles)  # fmt: skip
    assert "datetime" not in result.stderr
