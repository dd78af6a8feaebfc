"""`fleetplan deploy -o FOLDER` writes over its own files only. A folder holding the user's
own `pools.json` (or a script or manifest of a pool's name) had it replaced without a word
when the plan's files were written; only files of other names were refused. A file is a
deploy's when it carries the 'written by fleetplan deploy' mark (its scripts and YAML
files) or is a list of deployment records (`pools.json`): a second deploy into the same
folder still writes over the first's."""

import json

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked
from tests.synthetic import solved_files

INSTANCE = """
name: deploy-own-files
gpus: [{name: h100-sxm}]
models: [{name: llama-3.1-8b, weight_precisions: [fp8]}]
regions:
  - name: east
    supply: {h100-sxm: {max_gpus: 64, price_per_gpu_hour: 2.40}}
workloads:
  - name: chat
    model: llama-3.1-8b
    demand: {east: {peak_requests_per_s: 40}}
    prompt_tokens: {mean: 1500, p99: 6000}
    output_tokens: {mean: 300, p99: 1000}
    slo: {ttft_p99_ms: 1000, tpot_p99_ms: 50}
policy: {survive: none, tensor_parallel: [1], pipeline_parallel: [1]}
solver: {time_limit_s: 20}
"""


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    return solved_files(tmp_path_factory.mktemp("own"), "deploy-own-files", INSTANCE)


def _deploy(run_cli, planned, target, out, code=0, needles=()):
    instance_file, plan_file = planned
    args = ("deploy", plan_file, "--instance", instance_file, "--target", target, "-o", out)
    return run_checked(run_cli, *args, code=code, needles=needles)


def test_the_users_pools_json_is_never_written_over(run_cli, planned, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "pools.json").write_text('{"mine": true}\n')
    _deploy(run_cli, planned, "vllm", out, code=2, needles=("pools.json", "not written by"))
    assert (out / "pools.json").read_text() == '{"mine": true}\n'
    assert [p.name for p in out.iterdir()] == ["pools.json"]  # nothing else written either


def test_a_second_deploy_writes_over_the_first(run_cli, planned, tmp_path):
    out = tmp_path / "out"
    _deploy(run_cli, planned, "vllm", out)
    first = {p.name: p.read_text() for p in out.iterdir()}
    _deploy(run_cli, planned, "vllm", out)
    assert {p.name: p.read_text() for p in out.iterdir()} == first
    records = json.loads(first["pools.json"])
    assert records and all(r["gpu"] == "h100-sxm" for r in records)


@pytest.mark.parametrize("target", ["k8s", "trtllm"])
def test_a_users_file_of_a_pools_name_is_refused(run_cli, planned, tmp_path, target):
    out = tmp_path / "out"
    _deploy(run_cli, planned, target, out)
    yaml_files = sorted(p for p in out.iterdir() if p.suffix == ".yaml")
    # every YAML file a deploy writes opens with its mark, and still reads as YAML
    for path in yaml_files:
        assert path.read_text().startswith("# written by fleetplan deploy\n")
        assert list(yaml.safe_load_all(path.read_text()))
    mine = yaml_files[0]
    mine.write_text("my: notes\n")
    _deploy(run_cli, planned, target, out, code=2, needles=(mine.name, "not written by"))
    assert mine.read_text() == "my: notes\n"
