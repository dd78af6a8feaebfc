"""Hostile input, round eight: a fleet of replicas only ({"replicas": [...]}, as
fleet-import writes) given to simulate. It read "--scenario: scenario 'none' is not in
the plan; it has none"; now it names the plan file and what reads such a fleet."""

import json

import yaml

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION


def test_simulate_names_a_fleet_without_a_scenario_table(run_cli, tmp_path):
    pool = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8"}
    fleet = tmp_path / "fleet.json"
    fleet.write_text(json.dumps({"replicas": [{**pool, "tp": 1, "pp": 1, "count": 4}]}))
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, fleet, code=0)  # a fleet that serves
    needles = (f"PLAN: {fleet} states no scenario table", "`fleetplan verify`")
    result = run_checked(run_cli, "simulate", ONE_MODEL_ONE_REGION, fleet, needles=needles)
    assert "it has none" not in result.stderr


def test_a_plan_stating_growth_or_headroom_out_of_bounds_is_refused(run_cli, tmp_path):
    # before: verified (they are the plan's own record), and report wrote 'planned for
    # -1x today's demand, pools at most 100000000000% of their capacity at the SLO'
    pool = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8"}
    plan = tmp_path / "plan.json"
    replicas = [{**pool, "tp": 1, "pp": 1, "count": 4}]
    plan.write_text(json.dumps({"replicas": replicas, "demand_growth": -1, "max_utilization": 1e9}))
    needles = ("demand_growth: must be at least 0.001, got -1",
               "max_utilization: must be at most 1")  # fmt: skip
    run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, needles=needles)
    html = tmp_path / "r.html"
    run_checked(
        run_cli, "report", ONE_MODEL_ONE_REGION, "-o", html, "--plan", plan, needles=needles
    )
    assert not html.exists()


def test_a_name_with_a_line_break_stays_in_its_markdown_cell(run_cli, tmp_path):
    # before: the break ended the table row, and the rest of the name began a line
    # outside the table
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    data["workloads"][0]["name"] = "a|b\nc"
    instance = tmp_path / "inst.json"
    instance.write_text(json.dumps(data), encoding="utf-8")
    out = tmp_path / "plan.md"
    run_checked(run_cli, "solve", instance, "--markdown", out, code=0)
    rows = [line for line in out.read_text().splitlines() if "a\\|b" in line]
    assert rows and all(line.startswith("| ") and line.endswith(" |") for line in rows)
    assert all("a\\|b<br>c" in line for line in rows)
