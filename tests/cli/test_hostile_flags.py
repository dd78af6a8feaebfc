"""Hostile input, round eight: option values that read as not given. An empty value is
the user's word, not the default."""

import shutil

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION


def _grid(tmp_path):
    instance = tmp_path / "inst.yaml"
    shutil.copy(ONE_MODEL_ONE_REGION, instance)
    grid = tmp_path / "grid.yaml"
    grid.write_text("instance: inst.yaml\naxes:\n  workloads[chat].slo.ttft_p99_ms: [800, 900]\n")
    return grid


@pytest.mark.parametrize("name", ["", "  "])
@pytest.mark.parametrize("command", ["solve", "explain", "sweep", "batch"])
def test_an_empty_backend_is_refused_naming_the_flag(run_cli, tmp_path, command, name):
    # before: '' read as not given: solve, explain, sweep and batch ran the instance's own
    # backend, exit 0 (compare refused it); sweep solved every point of 'gurobi' as bad input
    target = {"sweep": _grid(tmp_path), "batch": _grid(tmp_path).parent}.get(
        command, ONE_MODEL_ONE_REGION
    )
    result = run_checked(run_cli, command, target, "--backend", name)
    assert "command line: --backend:" in result.stderr
    assert "highs, cbc, scip, cpsat" in result.stderr


def test_sweep_refuses_an_unknown_backend_before_any_point(run_cli, tmp_path):
    # before: each point solved and recorded as bad_input, exit 1
    needles = ("command line: --backend: unknown solver backend 'gurobi'",)
    result = run_checked(run_cli, "sweep", _grid(tmp_path), "--backend", "gurobi", needles=needles)
    assert "points" not in result.stderr


def test_estimate_refuses_a_precision_without_a_model(run_cli):
    # before: the assumed 2,000 tokens/s per GPU planned whatever --precision said, exit 0
    result = run_checked(run_cli, "estimate", "--precision", "fp8")
    assert "--precision" in result.stderr and "only applies with --model and --gpu" in (
        result.stderr
    )


def test_estimate_takes_a_precision_with_a_model(run_cli):
    run_checked(
        run_cli, "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision",
        "fp8", code=0,
    )  # fmt: skip


RUNS_CSV = (
    "model,gpu,precision,tp,isl,osl,concurrency,output_tok_s,ttft_mean_ms,tpot_mean_ms\n"
    "llama-3.1-8b,h100-sxm,fp8,1,1000,200,16,2500,80,6\n"
)
"""One run of the 8B model on one H100 at 16 users."""


@pytest.mark.parametrize(
    "flags",
    [("--model", "no-such-model"), ("--tp", "4"), ("--gpu", "b200", "--concurrency", "8")],
)
def test_calibrate_refuses_json_result_flags_given_with_csv_only(run_cli, tmp_path, flags):
    # before: ignored (the CSV's columns win), unchecked (an unknown model passed), exit 0
    runs = tmp_path / "runs.csv"
    runs.write_text(RUNS_CSV)
    profile = tmp_path / "profile.yaml"
    result = run_checked(run_cli, "calibrate", runs, "-o", profile, "--no-leave-one-out", *flags)
    for flag in flags[::2]:
        assert f"command line: {flag}: describes JSON results only" in result.stderr
    assert not profile.exists()


def test_calibrate_refuses_an_empty_name(run_cli, tmp_path):
    # before: the profile was named after the file's stem without a word
    runs = tmp_path / "runs.csv"
    runs.write_text(RUNS_CSV)
    needles = ("command line: --name: is empty",)
    run_checked(
        run_cli, "calibrate", runs, "-o", tmp_path / "p.yaml", "--name", "", needles=needles
    )


def test_calibrate_names_a_run_it_leaves_out_of_the_fit(run_cli, tmp_path):
    # before: '(no fit)' in the table and nothing else; the profile fitted on 1 run of 2
    runs = tmp_path / "runs.csv"
    runs.write_text(RUNS_CSV + "llama-3.1-405b,h100-sxm,bf16,1,1000,200,16,2500,80,6\n")
    result = run_checked(
        run_cli, "calibrate", runs, "-o", tmp_path / "p.yaml", "--no-leave-one-out", code=0
    )
    warned = f"warning: {runs}:3: llama-3.1-405b on h100-sxm bf16 tp1 pp1: the replay cannot"
    assert warned in result.stderr and "left out of the fit" in result.stderr
    assert f"{runs}:2" not in result.stderr.split("Fit per run")[0]
