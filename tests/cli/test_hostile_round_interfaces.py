"""Hostile input on this round's interfaces, through the real entry point: each case
exits 2 naming the flag (or field) within seconds, never a traceback, a hang or a value
silently dropped."""

import json

from cli.exit_codes import ExitCode
from models.schema import catalog_limits, flag_limits
from models.serving.latency import REQUESTS_PER_USER
from tests.paths import INSTANCES, ONE_MODEL_ONE_REGION

ONE = ("perf", "-m", "llama-3.3-70b", "--gpu", "h100-sxm", "-p", "fp8", "-i", "4000",
       "-o", "300", "--tp", "4")  # fmt: skip
PAIR = (*ONE, "--prefill-workers", "3", "--decode-workers", "1", "--concurrency", "32")


def test_an_engine_version_of_5000_digits_is_bad_input_not_a_crash(run_cli):
    """`int` refuses a string past 4,300 digits: the name is not a version, so exit 2."""
    result = run_cli(*ONE, "--engine", "trtllm-" + "9" * 5000)
    assert result.exit_code == ExitCode.BAD_INPUT, result.stderr
    assert "--engine" in result.stderr and "unknown engine profile" in result.stderr


def test_an_instance_engine_of_5000_digits_is_bad_input_not_a_crash(run_cli, tmp_path):
    instance = tmp_path / "engine.yaml"
    text = ONE_MODEL_ONE_REGION.read_text()
    instance.write_text(text + f"\nengine: vllm-0.{'1' * 5000}\n")
    result = run_cli("validate", instance)
    assert result.exit_code == ExitCode.BAD_INPUT, result.stderr
    assert "engine" in result.stderr and "internal error" not in result.stderr


def test_a_tagged_release_runs_on_the_profile_of_its_version(run_cli):
    """PEP 440 tags: sglang-0.5.6.post1 is 0.5.6 (>= 0.5: sglang-0.5), vllm-0.11.0rc1 is
    0.11.0 (>= 0.11: vllm-0.11), as the untagged releases resolve."""
    for asked, profile in (("sglang-0.5.6.post1", "sglang-0.5"), ("vllm-0.11.0rc1", "vllm-0.11")):
        result = run_cli(*ONE, "--engine", asked, "--json", "-")
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["engine"] == profile


def test_a_vanishing_kv_link_is_refused_naming_the_flag(run_cli):
    """1e-300 GB/s underflowed to a TPOT of 0 ms; the bound's floor is 0.01 GB/s."""
    result = run_cli(*PAIR, "--kv-link-gb-s", "1e-300")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "--kv-link-gb-s" in result.stderr and "at least 0.01" in result.stderr
    at_floor = run_cli(*PAIR, "--kv-link-gb-s", str(catalog_limits.KV_LINK_GB_S.low), "--json", "-")
    assert at_floor.exit_code == 0, at_floor.stderr


def test_prefix_affinity_on_a_pair_is_refused_not_dropped(run_cli):
    """The pair has no router over replicas: the flag would change nothing."""
    result = run_cli(*PAIR, "--prefix-tokens", "1000", "--prefix-share", "0.5",
                     "--prefix-affinity")  # fmt: skip
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "--prefix-affinity" in result.stderr


def test_simulate_refuses_a_closed_loop_past_the_request_limit_at_once(run_cli, tmp_path):
    """Users x replicas x 10 requests over flag_limits.CLOSED_LOOP_REQUESTS exits 2 before any
    replay (10^9 users ran out of memory, 10^5 ran for many minutes)."""
    instance, plan = INSTANCES / "seed-chat-sizing.yaml", tmp_path / "plan.json"
    assert run_cli("solve", instance, "--json", plan).exit_code == 0
    replicas = sum(pool["count"] for pool in json.loads(plan.read_text())["replicas"])
    over = flag_limits.CLOSED_LOOP_REQUESTS.count // (replicas * REQUESTS_PER_USER) + 1
    for users in (over, 10**9):
        result = run_cli("simulate", instance, plan, "--arrivals", "burst",
                         "--concurrency", users, "--no-tolerance")  # fmt: skip
        assert result.exit_code == ExitCode.BAD_INPUT, result.stderr
        assert "--concurrency" in result.stderr
        assert f"{users * replicas * REQUESTS_PER_USER:,} requests" in result.stderr


def test_perf_json_never_replaces_the_model_config_or_engine_profile_it_reads(run_cli, tmp_path):
    """`--json` onto the `--model-config` or `--engine` file it reads: exit 2, the file
    byte for byte as it was (it was replaced by the JSON before)."""
    config = tmp_path / "config.json"
    hf_config = ONE_MODEL_ONE_REGION.parent / "hf_configs" / "gpt-oss-120b.json"
    config.write_text(hf_config.read_text())
    before = config.read_bytes()
    result = run_cli("perf", "--model-config", config, "--gpu", "h100-sxm", "-p", "fp8",
                     "--tp", "8", "-i", "1000", "-o", "100", "--json", config)  # fmt: skip
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "is the input file" in result.stderr and config.read_bytes() == before
    profile = tmp_path / "mine.yaml"
    profile.write_text("kind: fleetplan-engine-profile\n")  # never read: refused first
    result = run_cli(*ONE, "--engine", profile, "--json", profile)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "is the input file" in result.stderr
    assert profile.read_text() == "kind: fleetplan-engine-profile\n"


def test_calibrate_never_writes_over_the_profile_it_starts_from(run_cli, tmp_path):
    profile = tmp_path / "base.yaml"
    profile.write_text("kind: fleetplan-engine-profile\n")
    runs = tmp_path / "runs.csv"
    runs.write_text("model,gpu,precision,tp,isl,osl,concurrency,output_tok_s\n"
                    "llama-3.1-8b,h100-sxm,bf16,1,256,256,1,100\n")  # fmt: skip
    result = run_cli("calibrate", runs, "-o", profile, "--engine", profile)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "is the input file" in result.stderr
    assert profile.read_text() == "kind: fleetplan-engine-profile\n"


def test_arrivals_without_a_concurrency_is_refused_not_ignored(run_cli):
    """--arrivals says how --concurrency users arrive; alone (or with --rate) it changed
    nothing and exited 0."""
    for extra in ((), ("--rate", "2")):
        result = run_cli(*ONE, "--arrivals", "steady", *extra)
        assert result.exit_code == ExitCode.BAD_INPUT
        assert "--arrivals" in result.stderr and "give --concurrency" in result.stderr
    assert run_cli(*ONE, "--concurrency", "32", "--length-cv", "0.5").exit_code == 0
