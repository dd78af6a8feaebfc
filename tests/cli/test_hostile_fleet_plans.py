"""Hostile input, round eight: a fleet of replicas only ({"replicas": [...]}, as
fleet-import writes) given to simulate. It read "--scenario: scenario 'none' is not in
the plan; it has none"; now it names the plan file and what reads such a fleet."""

import json

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
