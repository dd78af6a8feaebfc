"""Hostile input, round eight: names that `deploy` turns into file names. Every group of
pools gets a file of its own and a name Kubernetes takes; none is written over another."""

import copy
import json

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION

ONE = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
"""One 8B chat workload in us-east, no failure policy (solves in under a second)."""


def _workload(name: str, region: str) -> dict:
    workload = copy.deepcopy(ONE["workloads"][0])
    workload["name"] = name
    workload["demand"] = {region: {"peak_requests_per_s": 5}}
    return workload


def _deployed(run_cli, tmp_path, regions: list[str], workloads: list[tuple[str, str]]):
    """Solve an instance of these regions and (workload, region) pairs, deploy its plan
    for Dynamo, and return the files written and the graphs' names."""
    data = copy.deepcopy(ONE)
    data["regions"] = [{**ONE["regions"][0], "name": region} for region in regions]
    data["workloads"] = [_workload(name, region) for name, region in workloads]
    instance = tmp_path / "inst.yaml"
    instance.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    plan = tmp_path / "plan.json"
    run_checked(run_cli, "solve", instance, "--json", plan, code=0)
    out = tmp_path / "dynamo"
    out.mkdir()
    run_checked(
        run_cli, "deploy", plan, "--instance", instance, "--target", "dynamo", "--out", out, code=0
    )
    files = sorted(path.name for path in out.iterdir())
    names = [yaml.safe_load((out / name).read_text())["metadata"]["name"] for name in files]
    return files, names


@pytest.mark.parametrize(
    ("regions", "workloads"),
    [
        # names that differ in case only: both became chat-us-east.yaml, the second kept
        (["us-east"], [("chat", "us-east"), ("Chat", "us-east")]),
        # a-b in c and a in b-c: both a-b-c
        (["c", "b-c"], [("a-b", "c"), ("a", "b-c")]),
    ],
)
def test_two_groups_of_one_dns_name_write_two_graphs(run_cli, tmp_path, regions, workloads):
    # before: one file for the two (workload, region) groups, the first graph lost, exit 0
    files, names = _deployed(run_cli, tmp_path, regions, workloads)
    assert len(files) == 2 == len(set(names)), files
    assert all(f"{name}.yaml" in files for name in names)


def test_a_name_of_no_ascii_letter_still_names_the_graph():
    # before: dns_name of '日本' and '東京' is empty: a hidden file '.yaml', metadata.name ''.
    # A region of no ASCII letter is now refused by deploy (no node label can hold it:
    # test_hostile_round11), so the graph's name is checked where it is made
    from solver.deploy.manifests import _graph_names

    assert _graph_names([("日本", "東京"), ("日本", "大阪")]) == {
        ("日本", "東京"): "graph",
        ("日本", "大阪"): "graph-2",
    }


FLEET_CSV = "workload,region,gpu,precision,tp,pp,replicas\nchat,us-east,h100-sxm,fp8,1,1,3\n"
"""Three one-GPU replicas of the 8B chat pool: 3 H100s held in us-east."""


def _fleet(tmp_path):
    fleet = tmp_path / "fleet.csv"
    fleet.write_text(FLEET_CSV, encoding="utf-8")
    instance = tmp_path / "inst.json"
    instance.write_text(json.dumps(ONE), encoding="utf-8")
    return fleet, instance


@pytest.mark.parametrize("name", ["out.json", "out.yaml", "out.YML"])
def test_fleet_import_writes_the_instance_in_the_form_its_suffix_is_read(run_cli, tmp_path, name):
    # before: YAML text in out.json, which no command could load ('JSON syntax')
    fleet, instance = _fleet(tmp_path)
    out = tmp_path / name
    run_checked(
        run_cli, "fleet-import", fleet, "--instance", instance, "--instance-out", out, code=0
    )
    run_checked(run_cli, "validate", out, code=0)
    if name.endswith(".json"):
        assert json.loads(out.read_text())["regions"][0]["existing"] == {"h100-sxm": 3}


@pytest.mark.parametrize(("name", "said"), [("out.txt", "got '.txt'"), ("out", "got no suffix")])
def test_fleet_import_refuses_an_instance_out_no_command_would_load(run_cli, tmp_path, name, said):
    # before: written (exit 0), then 'unknown file type' from every command given it
    fleet, instance = _fleet(tmp_path)
    out = tmp_path / name
    needles = (f"--instance-out: {out}: an instance file is .yaml, .yml or .json, {said}",)
    run_checked(
        run_cli,
        "fleet-import",
        fleet,
        "--instance",
        instance,
        "--instance-out",
        out,
        needles=needles,
    )
    assert not out.exists()


@pytest.mark.parametrize("target", ["vllm", "sglang", "trtllm"])
def test_a_name_with_a_newline_never_becomes_a_command_of_a_launch_script(
    run_cli, tmp_path, target
):
    # before: the region 'x\ntouch .../PWNED #' ended the script's comment line, and
    # running the script ran `touch`
    region = f"x\ntouch {tmp_path / 'PWNED'} #"
    data = copy.deepcopy(ONE)
    data["regions"][0]["name"] = region
    data["workloads"][0]["demand"] = {region: {"peak_requests_per_s": 5}}
    instance = tmp_path / "inst.json"
    instance.write_text(json.dumps(data), encoding="utf-8")
    plan = tmp_path / "plan.json"
    run_checked(run_cli, "solve", instance, "--json", plan, code=0)
    out = tmp_path / "out"
    run_checked(
        run_cli, "deploy", plan, "--instance", instance, "--target", target, "--out", out, code=0
    )
    scripts = list(out.glob("*.sh"))
    assert scripts
    for script in scripts:
        lines = script.read_text().splitlines()
        assert len(lines) == 3 and lines[0] == "#!/bin/sh" and lines[2].startswith("exec ")
        assert lines[1].startswith("# ") and "x\\u000atouch" in lines[1]
