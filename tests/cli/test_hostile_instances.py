"""Hostile input, round seven: instance fields that were dropped without a word. Each
now says so on stderr, naming the field (the plan is unchanged, as for growth without a
horizon: tests/models/schema/test_growth_warning.py)."""

import yaml

from tests.cli.test_hostile_input import run_checked
from tests.paths import INSTANCES, ONE_MODEL_ONE_REGION

STATIC = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
"""One model in one region at a peak rate: no hourly profile, no reserved or spot price."""


def _instance(tmp_path, data):
    path = tmp_path / "inst.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_a_horizon_on_a_static_instance_is_warned_about(run_cli, tmp_path):
    # 36 months at +1000%/month planned today's demand alone, exit 0 and not a word
    data = {**STATIC, "policy": {**STATIC["policy"], "horizon_months": 36, "monthly_growth": 10}}
    result = run_checked(run_cli, "validate", _instance(tmp_path, data), code=0)
    assert "warning: policy.horizon_months: 36 has no effect on a static plan" in result.stderr


def test_a_horizon_on_an_hourly_instance_is_not_warned_about(run_cli):
    result = run_checked(run_cli, "validate", INSTANCES / "growth-horizon.yaml", code=0)
    assert "horizon_months" not in result.stderr
