"""Hostile input, round eleven: plans edited by hand, names that print alike or as
nothing, and names written into the files people read. Each case below was read without
naming what was wrong, or accepted and shown as something else; each now names the field,
or shows the character instead of obeying it."""

import json

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

POOL = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8"}


# --- simulate: a plan of the wrong shape names its field -------------------------------


@pytest.mark.parametrize(
    ("plan", "needle"),
    [
        # before: 'PLAN: ... is not a plan written by `fleetplan solve --json`: 1 validation
        # error for Plan' (the first line of pydantic's text, naming no field)
        ({"replicas": [], "instance": 5}, "instance: Input should be a valid string"),
        ({"replicas": [{**POOL, "tp": 1, "pp": 1, "count": -2}]},
         "replicas.0.count: Input should be greater than or equal to 0"),
    ],
    ids=["instance-a-number", "negative-count"],
)  # fmt: skip
def test_simulate_names_the_field_of_a_plan_it_cannot_read(run_cli, tmp_path, plan, needle):
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    verified = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, path, needles=(needle,))
    result = run_checked(run_cli, "simulate", ONE_MODEL_ONE_REGION, path, needles=(needle,))
    assert "validation error for Plan" not in result.stderr + verified.stderr
