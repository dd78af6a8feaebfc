"""`fleetplan deploy --month N`: a plan of months (policy.horizon_months) deploys month
N's fleet and schedule. Before, deploy had no --month: a 3-month plan whose chat grows
50% a month deployed month 0's replicas whatever month the operator was in (simulate has
--month). Out of range exits 2 naming the months the plan has, as simulate's does."""

import json

import pytest
import yaml

from solver.deploy.fleet_import import pools_from_objects, schedules_from_objects
from tests.synthetic import solved_files

INSTANCE = """
name: deploy-months
gpus: [{name: h100-sxm}]
models: [{name: llama-3.1-8b, weight_precisions: [fp8]}]
regions:
  - name: east
    supply: {h100-sxm: {max_gpus: 64, price_per_gpu_hour: 2.40, reserved_price_per_gpu_hour: 1.44}}
workloads:
  - name: chat
    model: llama-3.1-8b
    demand: {east: {peak_requests_per_s: 40}}
    prompt_tokens: {mean: 1500, p99: 6000}
    output_tokens: {mean: 300, p99: 1000}
    slo: {ttft_p99_ms: 1000, tpot_p99_ms: 50}
policy:
  survive: none
  tensor_parallel: [1]
  pipeline_parallel: [1]
  horizon_months: 3
  monthly_growth: 0.5
  lead_time_months: 0
solver: {time_limit_s: 20}
"""


@pytest.fixture(scope="module")
def months_plan(tmp_path_factory):
    return solved_files(tmp_path_factory.mktemp("months"), "deploy-months", INSTANCE)


def _objects(folder) -> list:
    return [
        doc for path in sorted(folder.iterdir()) for doc in yaml.safe_load_all(path.read_text())
    ]


def test_month_2_deploys_month_2s_replicas_and_hours(run_cli, months_plan, tmp_path):
    instance_file, plan_file = months_plan
    data = json.loads(plan_file.read_text())
    (month,) = [m for m in data["months"] if m["month"] == 2]
    # month 2's fleet by hand: each pool at its largest count over month 2's hours
    expected: dict[tuple[str, str, str], int] = {}
    for hour in month["hours"]:
        for pool in hour["pools"]:
            key = (pool["workload"], pool["region"], pool["gpu"])
            expected[key] = max(expected.get(key, 0), pool["count"])
    month_0 = {(p["workload"], p["region"], p["gpu"]): p["count"] for p in data["replicas"]}
    # 40 req/s at 1.5^2 = 2.25 x: month 2 runs more replicas than month 0
    assert sum(expected.values()) > sum(month_0.values())
    out = tmp_path / "k8s"
    args = ("deploy", plan_file, "--instance", instance_file, "--target", "k8s", "-o", out)
    result = run_cli(*args, "--month", "2")
    assert result.exit_code == 0, result.stderr
    objects = _objects(out)
    deployed: dict[tuple[str, str, str], int] = {}
    for pool in pools_from_objects(objects):  # each pool's Deployment + spare object
        key = (pool.workload, pool.region, pool.gpu)
        deployed[key] = deployed.get(key, 0) + pool.count
    assert deployed == expected
    (schedule,) = schedules_from_objects(objects)
    assert [[p["count"] for p in h["pools"]] for h in schedule["hours"]] == [
        [p["count"] for p in h["pools"]] for h in month["hours"]
    ]


def test_month_0_is_the_default(run_cli, months_plan, tmp_path):
    """--month 0 writes the files no --month writes: the plan's own hours and horizon."""
    instance_file, plan_file = months_plan
    default, zero = tmp_path / "default", tmp_path / "zero"
    args = ("deploy", plan_file, "--instance", instance_file, "--target", "k8s", "-o")
    assert run_cli(*args, default).exit_code == 0
    assert run_cli(*args, zero, "--month", "0").exit_code == 0
    assert {p.name: p.read_text() for p in default.iterdir()} == {
        p.name: p.read_text() for p in zero.iterdir()
    }


def test_a_month_the_plan_lacks_exits_2_naming_its_months(run_cli, months_plan, tmp_path):
    instance_file, plan_file = months_plan
    out = tmp_path / "k8s"
    args = ("deploy", plan_file, "--instance", instance_file, "--target", "k8s", "-o", out)
    result = run_cli(*args, "--month", "3")
    assert result.exit_code == 2
    assert "--month" in result.stderr and "the plan has months 0 to 2, got 3" in result.stderr
    assert "Traceback" not in result.stderr and not out.exists()


def test_month_on_a_plan_without_months_exits_2(run_cli, months_plan, tmp_path):
    """The months plan with its months taken out: refused before the verifier's work."""
    instance_file, plan_file = months_plan
    data = json.loads(plan_file.read_text())
    data["months"] = []
    hourly = tmp_path / "hourly.json"
    hourly.write_text(json.dumps(data))
    out = tmp_path / "k8s"
    args = ("deploy", hourly, "--instance", instance_file, "--target", "k8s", "-o", out)
    result = run_cli(*args, "--month", "1")
    assert result.exit_code == 2
    assert "the plan has no months" in result.stderr and not out.exists()


def test_a_deployed_months_plan_reads_back_through_the_written_instance(
    run_cli, months_plan, tmp_path
):
    """deploy -> fleet-import -> verify of the instance fleet-import writes: the schedule
    reserves and rents its GPUs hour by hour, so they are not also owned (`existing`
    stays as the instance states it, none here). Raised by the Deployments' 2 GPUs, each
    month read 'owns 8; existing 2 + committed 8' (the GPUs counted twice) and verify
    failed with 8 violations."""
    instance_file, plan_file = months_plan
    out = tmp_path / "k8s"
    args = ("deploy", plan_file, "--instance", instance_file, "--target", "k8s", "-o", out)
    assert run_cli(*args).exit_code == 0
    running, fleet = tmp_path / "running.yaml", tmp_path / "fleet.json"
    imported = run_cli(
        "fleet-import",
        out,
        "--instance",
        instance_file,
        "--instance-out",
        running,
        "--plan-out",
        fleet,
    )
    assert imported.exit_code == 0, imported.stderr
    assert "existing" not in running.read_text()
    assert "schedule" in imported.stderr  # says why `existing` is left as it was
    checked = run_cli("verify", running, fleet)
    assert checked.exit_code == 0, checked.stderr
    plan = json.loads(plan_file.read_text())
    assert f"${plan['cost_per_month']:,.0f}/month" in checked.stdout + checked.stderr
