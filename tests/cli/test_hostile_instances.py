"""Hostile input, round seven: instance fields that were dropped without a word. Each
now says so on stderr, naming the field (the plan is unchanged, as for growth without a
horizon: tests/models/schema/test_growth_warning.py)."""

import json
import time

import pytest
import yaml

from models.schema import reading_limits
from models.schema.errors import SHOWN_MESSAGE_CHARS, SHOWN_PATH_CHARS
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


def _named(region: str, workload: str) -> dict:
    data = json.loads(json.dumps(STATIC))
    data["regions"][0]["name"] = region
    data["workloads"][0]["name"] = workload
    data["workloads"][0]["demand"] = {region: STATIC["workloads"][0]["demand"]["us-east"]}
    return data


@pytest.mark.parametrize(
    ("where", "field"),
    [
        ("regions", "regions[0].name"),
        ("workloads", "workloads[0].name"),
        ("gpus", "gpus[0].name"),
        ("instance", "name"),
    ],
)
def test_a_name_of_100000_characters_is_refused_naming_the_field(run_cli, tmp_path, where, field):
    # 100,000-character names validated and hung `report` past 20 s in the charts' layout
    long = "x" * 100_000
    data = _named(
        long if where == "regions" else "us-east", long if where == "workloads" else "chat"
    )
    if where == "gpus":
        data["gpus"][0]["name"] = long
    if where == "instance":
        data["name"] = long
    needles = (f"{field}: is 100,000 characters long; at most {reading_limits.MAX_NAME_CHARS}",)
    result = run_checked(run_cli, "validate", _instance(tmp_path, data), needles=needles)
    assert long not in result.stderr, "the message quotes the start of the name only"


def test_names_at_the_bound_solve_and_report_in_seconds(run_cli, tmp_path):
    most = reading_limits.MAX_NAME_CHARS
    path = _instance(tmp_path, {**_named("r" * most, "w" * most), "name": "n" * most})
    started = time.process_time()  # CPU: a blow-up, not the machine's load
    run_checked(run_cli, "report", path, "-o", tmp_path / "report.html", code=0)
    assert time.process_time() - started < 30


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("false", "as a boolean; quote it"),  # `no`, Norway's code, is text (YAML 1.2)
        ("1.0", "as a number; quote it"),
    ],
)
def test_a_name_yaml_reads_as_another_type_says_to_quote_it(run_cli, tmp_path, text, why):
    path = tmp_path / "inst.yaml"
    source = ONE_MODEL_ONE_REGION.read_text(encoding="utf-8")
    path.write_text(source.replace("name: one-model-one-region", f"name: {text}"))
    run_checked(run_cli, "validate", path, needles=("name: must be text, got", why))


def test_a_plan_given_as_the_instance_is_named_as_a_plan(run_cli, tmp_path):
    # `verify plan.json instance.yaml`: 51 schema problems, none saying what happened
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"instance": "x", "replicas": [], "cost_per_month": 0.0}))
    result = run_checked(run_cli, "verify", plan, ONE_MODEL_ONE_REGION, needles=("is a plan",))
    assert "other way round" in result.stderr and "1 problem" in result.stderr


@pytest.mark.parametrize("where", ["demand", "supply", "config", "base"])
def test_a_100000_character_key_or_path_gives_a_message_of_a_screenful(run_cli, tmp_path, where):
    # the key was echoed whole in the field path and the message: 200 KB on stderr
    long = "k" * 100_000
    data = json.loads(json.dumps(STATIC))
    if where == "demand":
        data["workloads"][0]["demand"][long] = {"peak_requests_per_s": 3}
    elif where == "supply":
        data["regions"][0]["supply"][long] = {"max_gpus": 3}
    elif where == "config":
        data["models"][0]["config"] = long
    else:
        data["models"].append({"name": "adapter", "base": long})
    result = run_checked(run_cli, "validate", _instance(tmp_path, data))
    # one problem: a line of at most a file name, a path and a message, each cut
    assert len(result.stderr) < 2 * SHOWN_PATH_CHARS + SHOWN_MESSAGE_CHARS + 200
