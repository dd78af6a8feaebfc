"""`fleetplan deploy` and `fleetplan fleet-import` through the real entry point: files for
every target, the Kubernetes objects read back into an instance and a fleet that
`fleetplan verify` accepts, and bad input exiting 2 with the flag or file named.

The default instance is solved once for the module."""

import json

import pytest
import yaml

from solver.deploy.files import TARGETS
from tests.paths import DEFAULT_INSTANCE


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory, default_plan):
    path = tmp_path_factory.mktemp("plan") / "plan.json"
    path.write_text(default_plan.model_dump_json())
    return path


@pytest.mark.parametrize("target", TARGETS)
def test_deploy_writes_a_folder_for_each_target(run_cli, plan_file, tmp_path, target):
    out = tmp_path / target
    result = run_cli(
        "deploy", plan_file, "--instance", DEFAULT_INSTANCE, "--target", target, "-o", out
    )
    assert result.exit_code == 0, result.stderr
    files = sorted(path.name for path in out.iterdir())
    assert files and f"wrote {len(files)} files for {target}" in result.stderr
    for path in out.iterdir():
        if path.suffix == ".yaml":
            assert list(yaml.safe_load_all(path.read_text()))


def test_k8s_manifests_round_trip_to_a_fleet_verify_accepts(run_cli, plan_file, tmp_path):
    out = tmp_path / "k8s"
    assert (
        run_cli(
            "deploy", plan_file, "--instance", DEFAULT_INSTANCE, "--target", "k8s", "-o", out
        ).exit_code
        == 0
    )
    running, fleet = tmp_path / "running.yaml", tmp_path / "fleet.json"
    result = run_cli(
        "fleet-import",
        out,
        "--instance",
        DEFAULT_INSTANCE,
        "--instance-out",
        running,
        "--plan-out",
        fleet,
    )
    assert result.exit_code == 0, result.stderr
    plan = json.loads(plan_file.read_text())
    existing = {
        (region["name"], gpu): count
        for region in yaml.safe_load(running.read_text())["regions"]
        for gpu, count in (region.get("existing") or {}).items()
    }
    assert existing == {(use["region"], use["gpu"]): use["used"] for use in plan["gpus"]}
    verified = run_cli("verify", running, fleet)
    assert verified.exit_code == 0, verified.stdout + verified.stderr
    assert "$0/month" in verified.stdout  # every GPU is owned now
    assert run_cli("verify", DEFAULT_INSTANCE, fleet).exit_code == 0


def test_an_unknown_target_exits_2_naming_the_flag(run_cli, plan_file, tmp_path):
    result = run_cli(
        "deploy", plan_file, "--instance", DEFAULT_INSTANCE, "--target", "helm", "-o", tmp_path
    )
    assert result.exit_code == 2 and "--target" in result.stderr and "k8s" in result.stderr


def test_an_output_that_is_a_file_exits_2(run_cli, plan_file, tmp_path):
    taken = tmp_path / "taken"
    taken.write_text("x")
    result = run_cli(
        "deploy", plan_file, "--instance", DEFAULT_INSTANCE, "--target", "vllm", "-o", taken
    )
    assert result.exit_code == 2 and "not a folder" in result.stderr


def test_a_bad_csv_fleet_exits_2_naming_the_header(run_cli, tmp_path):
    fleet = tmp_path / "fleet.csv"
    fleet.write_text("workload,region\nchat,us-east\n")
    result = run_cli(
        "fleet-import",
        fleet,
        "--instance",
        DEFAULT_INSTANCE,
        "--instance-out",
        tmp_path / "out.yaml",
    )
    assert result.exit_code == 2 and "missing" in result.stderr
    assert not (tmp_path / "out.yaml").exists()


def test_a_missing_fleet_file_reads_as_any_missing_input(run_cli, tmp_path):
    """It read 'cannot be read: [Errno 2] No such file or directory: ...'."""
    fleet = tmp_path / "fleet.csv"
    result = run_cli(
        "fleet-import", fleet, "--instance", DEFAULT_INSTANCE, "--instance-out", tmp_path / "o.yaml"
    )
    assert result.exit_code == 2
    assert f"{fleet}: no such file" in result.stderr and "Errno" not in result.stderr


def test_fleet_import_never_writes_over_its_instance(run_cli, tmp_path):
    fleet = tmp_path / "fleet.csv"
    fleet.write_text("workload,region,gpu,precision,tp,pp,replicas\nchat,us-east,h200,fp8,1,1,2\n")
    copy = tmp_path / "instance.yaml"
    copy.write_text(DEFAULT_INSTANCE.read_text())
    result = run_cli("fleet-import", fleet, "--instance", copy, "--instance-out", copy)
    assert result.exit_code == 2
    assert copy.read_text() == DEFAULT_INSTANCE.read_text()
