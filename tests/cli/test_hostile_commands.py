"""Hostile input, round seven: options and plans given to the commands. An unknown
`compare --backend` exited 70 after both solves; each case now exits 2 naming the flag
or the file, before any work."""

import json
import os
import shutil
import time

import pytest
import yaml

from models.schema import reading_limits
from tests.cli.test_hostile_input import run_checked
from tests.guards import failing_after
from tests.paths import ONE_MODEL_ONE_REGION


def test_compare_refuses_an_unknown_backend_naming_the_flag(run_cli):
    args = ("compare", ONE_MODEL_ONE_REGION, ONE_MODEL_ONE_REGION, "--backend", "gurobi")
    result = run_checked(run_cli, *args, needles=("--backend", "'gurobi'", "highs, cbc"))
    assert "internal error" not in result.stderr


@pytest.fixture
def hang_guard():
    """Fail instead of hanging the suite when a command runs past 20 s."""
    with failing_after(20, "the command"):
        yield


def _fleet_plan(path, count: int):
    pool = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8"}
    path.write_text(json.dumps({"replicas": [{**pool, "tp": 1, "pp": 1, "count": count}]}))
    return path


def test_deploy_refuses_a_plan_the_verifier_rejects_before_any_physics(
    run_cli, tmp_path, hang_guard
):
    # 10^12 replicas: the pools' M/G/c queueing maths summed 10^12 terms (a hang)
    plan = _fleet_plan(tmp_path / "plan.json", 10**12)
    args = ("deploy", plan, "--instance", ONE_MODEL_ONE_REGION, "--target", "vllm")
    run_checked(run_cli, *args, "-o", tmp_path / "out", code=1, needles=("deploy refused",))
    assert not (tmp_path / "out").exists(), "nothing is written for a refused plan"


def test_deploy_still_writes_a_plan_the_verifier_accepts(run_cli, tmp_path):
    plan = _fleet_plan(tmp_path / "plan.json", 4)  # 4 x 8B on H100 for 20 requests/s
    args = ("deploy", plan, "--instance", ONE_MODEL_ONE_REGION, "--target", "vllm")
    run_checked(run_cli, *args, "-o", tmp_path / "out", code=0)
    assert list((tmp_path / "out").glob("*.sh"))


def test_batch_reports_an_instance_it_cannot_read_instead_of_leaving_it_out(
    run_cli, tmp_path, hang_guard
):
    shutil.copy(ONE_MODEL_ONE_REGION, tmp_path / "good.yaml")
    os.mkfifo(tmp_path / "pipe.yaml")
    (tmp_path / "moved.yaml").symlink_to(tmp_path / "gone.yaml")  # a dangling link
    (tmp_path / "notes.yaml").mkdir()  # a folder: not an instance, left out
    result = run_checked(run_cli, "batch", tmp_path, code=1)
    assert "bad input pipe.yaml" in result.stderr and "FIFO" in result.stderr
    assert "bad input moved.yaml" in result.stderr and "no such file" in result.stderr
    assert "notes.yaml" not in result.stderr + result.stdout


PERF_8B = ("perf", "-g", "h100-sxm", "-m", "llama-3.1-8b", "-i", "1000", "-o", "100")


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (("--host-memory-gib-per-gpu", "500"), "give it with --kv-tiers"),
        (("--nvme-dwpd", "3"), "give it with --kv-tiers"),
        (("--prefix-share", "0.5"), "give it with --prefix-tokens"),
        (("--prefix-affinity",), "give it with --prefix-tokens"),
    ],
)
def test_perf_refuses_a_flag_that_would_change_nothing(run_cli, flags, needle):
    # each printed the same numbers as without it, exit 0
    run_checked(run_cli, *PERF_8B, *flags, needles=(flags[0], needle))


def test_perf_takes_those_flags_with_what_they_refine(run_cli):
    flags = ("--prefix-tokens", "200", "--prefix-share", "0.5", "--prefix-affinity")
    run_checked(run_cli, *PERF_8B, *flags, "--kv-tiers", "--nvme-dwpd", "3", code=0)


@pytest.mark.parametrize("command", ["solve", "explain"])
def test_two_outputs_on_standard_output_are_refused_before_any_work(run_cli, command):
    # JSON then Markdown on stdout, one after the other: neither parsed
    args = (command, ONE_MODEL_ONE_REGION, "--json", "-", "--markdown", "-")
    result = run_checked(run_cli, *args, needles=("two outputs are - (standard output)",))
    assert result.stdout == ""


def test_batch_refuses_json_and_junit_both_on_standard_output(run_cli, tmp_path):
    shutil.copy(ONE_MODEL_ONE_REGION, tmp_path / "one.yaml")
    args = ("batch", tmp_path, "--json", "-", "--junit", "-")
    run_checked(run_cli, *args, needles=("two outputs are -",))


def test_explain_refuses_a_levers_time_limit_without_levers(run_cli):
    # the explanation ran without levers and the limit changed nothing, exit 0
    args = ("explain", ONE_MODEL_ONE_REGION, "--levers-time-limit", "5")
    result = run_checked(run_cli, *args, needles=("--levers-time-limit", "give --levers"))
    assert result.stdout == "", "refused before the solve"


def test_explain_refuses_jobs_without_levers_and_takes_its_default(run_cli):
    # --jobs sets the levers at once: without --levers it changed nothing, exit 0
    args = ("explain", ONE_MODEL_ONE_REGION, "--jobs", "1")
    result = run_checked(run_cli, *args, needles=("--jobs", "give --levers"))
    assert result.stdout == "", "refused before the solve"
    assert run_cli("explain", ONE_MODEL_ONE_REGION).exit_code == 0  # the default is no word


def test_a_plan_of_many_bad_pools_lists_the_first_problems_and_counts_the_rest(run_cli, tmp_path):
    # 5,000 pools of an unknown precision printed 5,000 lines
    pool = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "int3"}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"replicas": [{**pool, "tp": 1, "pp": 1, "count": 1}] * 5000}))
    needles = (f"{plan}:1: replicas[0].precision: Input should be",)  # one line: all pools
    result = run_checked(run_cli, "verify", ONE_MODEL_ONE_REGION, plan, needles=needles)
    rest = 5000 - reading_limits.MAX_ISSUES_REPORTED
    assert f"... and {rest:,} more problems" in result.stderr
    assert len(result.stderr.splitlines()) < reading_limits.MAX_ISSUES_REPORTED + 10


def test_deploy_of_a_verified_plan_of_a_quarter_million_replicas_ends_in_seconds(run_cli, tmp_path):
    # 10^7 requests/s of an 8B model: ~297,000 replicas in one pool, a plan verify accepts;
    # deploy sized its normal scenario by trying n = 1, 2, ... (past 20 s). The blow-up is
    # caught by the deploy's CPU below; the wall-clock guard only keeps a hang from
    # stalling the suite (at 20 s it failed a run at load 12 on 2 cores: 2.8 s of CPU for
    # the solve and the deploy, 20 s of wall clock)
    with failing_after(120, "the solve and deploy of a quarter-million replicas"):
        _deploy_a_quarter_million_replicas(run_cli, tmp_path)


def _deploy_a_quarter_million_replicas(run_cli, tmp_path):
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    data["workloads"][0]["demand"]["us-east"] = {"peak_requests_per_s": 1e7}
    data["regions"][0]["supply"]["h100-sxm"]["max_gpus"] = 1_000_000
    instance = tmp_path / "inst.yaml"
    instance.write_text(yaml.safe_dump(data))
    plan = tmp_path / "plan.json"
    run_checked(run_cli, "solve", instance, "--json", str(plan), code=0)
    started = time.process_time()  # CPU: a blow-up, not the machine's load
    args = ("deploy", plan, "--instance", instance, "--target", "k8s", "-o", tmp_path / "k8s")
    run_checked(run_cli, *args, code=0)
    assert time.process_time() - started < 15
    replicas = [
        document["spec"]["replicas"]
        for path in (tmp_path / "k8s").glob("*.yaml")
        for document in yaml.safe_load_all(path.read_text())
        if document and document.get("kind") == "Deployment"
    ]
    bought = json.loads(plan.read_text())["replicas"][0]["count"]
    assert sum(replicas) == bought, "the normal pool and its spare add up to the plan's count"


@pytest.mark.parametrize("flag", ["--update", "--check"])
def test_batch_refuses_instances_that_share_a_golden(run_cli, tmp_path, flag):
    # a.yaml and a.json both have a.expected.json: --update wrote it twice, the last
    # silently winning, and --check held both to it
    shutil.copy(ONE_MODEL_ONE_REGION, tmp_path / "a.yaml")
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text(encoding="utf-8"))
    (tmp_path / "a.json").write_text(json.dumps(data))
    needles = ("a.expected.json: is the golden of a.json, a.yaml",)
    run_checked(run_cli, "batch", tmp_path, flag, needles=needles)
    assert not (tmp_path / "a.expected.json").exists()


def test_a_plan_checked_against_another_instance_names_what_it_cannot_price(run_cli, tmp_path):
    # region-loss-3's plan (h100-sxm in us-east, us-west, eu-west) against disaggregated
    # (one region): its attribution rows were judged against "$nan"
    from tests.paths import INSTANCES

    plan = tmp_path / "plan.json"
    assert run_cli("solve", INSTANCES / "region-loss-3.yaml", "--json", plan).exit_code == 0
    result = run_cli("verify", INSTANCES / "disaggregated.yaml", plan)
    assert result.exit_code == 1
    text = result.stdout + result.stderr
    assert "$nan" not in text and " nan" not in text
    assert "does not offer, so they have no price here" in text
