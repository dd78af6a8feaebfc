"""Hostile input, round eight: an hourly plan whose hour states a pool of 10^9 replicas.
verify, simulate and report ran the pools' M/G/c queueing on it (a sum of 10^9 terms)
past 20 s; the hour's GPUs are now compared with the region's supply first, by integer
sums, as the static verifier does, and the plan is refused at once."""

import json

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.guards import failing_after
from tests.paths import INSTANCES

HOURLY = INSTANCES / "diurnal-chat-batch.yaml"


@pytest.fixture(scope="module")
def hourly_plan(tmp_path_factory):
    """An hourly plan of HOURLY: solved at TP8 alone, one of the instance's layouts (TP 2,
    4 and 8), so a plan of it as it stands (0.4 s of CPU to solve, 2.5 s at all three)."""
    from models.io.overrides import load_instance_with, parse_overrides
    from solver.solve import solve

    tp8 = parse_overrides(["policy.tensor_parallel=[8]"])
    return json.loads(solve(load_instance_with(HOURLY, tp8)).model_dump_json())


@pytest.mark.parametrize("command", ["verify", "simulate", "report"])
def test_an_hour_of_a_billion_replicas_is_refused_without_the_physics(
    run_cli, tmp_path, hourly_plan, command
):
    plan = json.loads(json.dumps(hourly_plan))
    pool = plan["hours"][0]["pools"][0]
    pool["count"] = 10**9
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    gpus = 10**9 * pool["tp"] * pool["pp"] * pool["dp"]
    args = {
        "verify": ("verify", HOURLY, path),
        "simulate": ("simulate", HOURLY, path, "--no-tolerance"),
        "report": ("report", HOURLY, "-o", tmp_path / "r.html", "--plan", path),
    }[command]
    with failing_after(20, f"{command} of an hour of 10^9 replicas"):
        result = run_checked(run_cli, *args, code=1)
    said = result.stdout + result.stderr
    assert f"UTC hour {plan['hours'][0]['hour']}: uses {gpus:,} {pool['gpu']}" in said
    assert not (tmp_path / "r.html").exists()
