"""`fleetplan calibrate`: measurements in, a profile file out, and the profile used by
`solve` (through `engine:`) and `perf` (through `--engine`)."""

import json

import yaml

from tests.models.profiles.test_profile_fit import TRUTH, synthetic_runs
from tests.paths import ONE_MODEL_ONE_REGION

COLUMNS = (
    "model,gpu,precision,tp,isl,osl,concurrency,num_requests,output_tok_s,ttft_mean_ms,tpot_mean_ms"
)


def _write_runs(path, request_overhead_s: float = 0.0, tok_s_scale: float = 1.0):
    lines = [COLUMNS]
    shapes = [(2000, 64, 1), (256, 256, 1), (256, 256, 32)]
    for run in synthetic_runs(shapes, request_overhead_s):
        lines.append(
            f"{run.model},{run.gpu},bf16,1,{run.prompt_tokens},{run.output_tokens},"
            f"{run.concurrency},{run.requests},{run.output_tokens_per_s * tok_s_scale:.4f},"
            f"{run.ttft_mean_ms:.4f},{run.tpot_mean_ms:.4f}"
        )
    path.write_text("\n".join(lines) + "\n")


def test_calibrate_writes_a_profile_that_solve_and_perf_use(run_cli, tmp_path):
    runs = tmp_path / "runs.csv"
    _write_runs(runs)
    profile = tmp_path / "mine.yaml"
    result = run_cli("calibrate", runs, "-o", profile, "--no-leave-one-out")
    assert result.exit_code == 0, result.stderr
    assert "Fitted factors" in result.stdout and "-0.0%" not in result.stdout
    document = yaml.safe_load(profile.read_text())
    assert document["kind"] == "fleetplan-engine-profile" and document["profile"] == "mine"
    fitted = document["by_key"]["default"]
    assert abs(fitted["hbm_fraction"] - TRUTH["hbm_fraction"]) / TRUTH["hbm_fraction"] < 0.03

    instance = tmp_path / "inst.yaml"
    instance.write_text(ONE_MODEL_ONE_REGION.read_text() + "engine: mine.yaml\n")  # beside it
    solved = run_cli("solve", instance, "--json", tmp_path / "plan.json")
    assert solved.exit_code == 0, solved.stderr
    assert "engine profile: mine (" in solved.stdout
    assert json.loads((tmp_path / "plan.json").read_text())["engine"] == str(profile)

    shape = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16",
             "-i", "1000", "-o", "200", "--json")  # fmt: skip
    perf = run_cli("perf", *shape, "--engine", profile)
    assert perf.exit_code == 0, perf.stderr
    default = run_cli("perf", *shape)
    assert perf.stdout != default.stdout  # the profile's factors moved the numbers


def test_a_fit_that_misses_its_own_runs_says_so(run_cli, tmp_path):
    """Output tokens/s entered 1,000x too small (tokens per ms): the physics cannot go that
    slow with factors in their bounds, so the fit misses its runs by far more than
    POOR_FIT_PCT (50%) and says to check the units; the runs as measured fit within 3%
    (the test above) and say nothing."""
    runs = tmp_path / "runs.csv"
    _write_runs(runs, tok_s_scale=1e-3)
    result = run_cli("calibrate", runs, "-o", tmp_path / "mine.yaml", "--no-leave-one-out")
    assert result.exit_code == 0, result.stderr
    assert "warning: the fitted profile misses its own runs" in result.stderr
    assert "check the runs' units" in result.stderr
    _write_runs(runs)
    fine = run_cli("calibrate", runs, "-o", tmp_path / "fine.yaml", "--no-leave-one-out")
    assert fine.exit_code == 0 and "misses its own runs" not in fine.stderr


def test_a_file_that_is_not_a_profile_is_bad_input(run_cli, tmp_path):
    bogus = tmp_path / "bogus.yaml"
    bogus.write_text("kind: something-else\n")
    instance = tmp_path / "inst.yaml"
    instance.write_text(ONE_MODEL_ONE_REGION.read_text() + "engine: bogus.yaml\n")
    result = run_cli("validate", instance)
    assert result.exit_code == 2
    assert "engine" in result.stderr and "kind: fleetplan-engine-profile" in result.stderr
    missing = run_cli("perf", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-i", "100",
                      "-o", "10", "--engine", tmp_path / "absent.yaml")  # fmt: skip
    assert missing.exit_code == 2 and "cannot be read" in missing.stderr


def test_calibrate_refuses_bad_measurements_and_outputs(run_cli, tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text(COLUMNS + "\nllama-3.1-8b,h100-sxm,bf16,1,100,10,1,10,nan,,\n")
    result = run_cli("calibrate", runs, "-o", tmp_path / "p.yaml")
    assert result.exit_code == 2 and f"{runs}:2: output_tok_s" in result.stderr
    assert not (tmp_path / "p.yaml").exists()
    wrong = run_cli("calibrate", runs, "-o", tmp_path / "p.txt")
    assert wrong.exit_code == 2 and "--output" in wrong.stderr


def test_calibrate_fits_a_known_request_overhead_and_the_plan_carries_it(run_cli, tmp_path):
    """Runs made with an 80 ms request overhead: calibrate prints and writes it back
    (median over the two one-user runs of measured TTFT less the replayed prefill), and
    perf with the profile adds it to the TTFT: a lone request's p99 TTFT with the profile
    is 80 ms above the same profile with the overhead set to 0."""
    runs = tmp_path / "runs.csv"
    _write_runs(runs, request_overhead_s=0.080)
    profile = tmp_path / "mine.yaml"
    result = run_cli("calibrate", runs, "-o", profile, "--no-leave-one-out")
    assert result.exit_code == 0, result.stderr
    assert "request_overhead_s" in result.stdout and "median over 2 one-user runs" in result.stdout
    document = yaml.safe_load(profile.read_text())
    overhead_s = document["by_key"]["default"]["request_overhead_s"]
    assert abs(overhead_s - 0.080) / 0.080 < 0.02
    assert "request_overhead_s" in document["fit"]["fitted"]

    document["by_key"]["default"]["request_overhead_s"] = 0.0
    bare = tmp_path / "bare.yaml"
    bare.write_text(yaml.safe_dump(document))
    shape = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16",
             "-i", "1000", "-o", "200", "--ttft-p99-ms", "2000", "--json")  # fmt: skip
    paid = run_cli("perf", *shape, "-", "--engine", profile)
    unpaid = run_cli("perf", *shape, "-", "--engine", bare)
    assert paid.exit_code == 0 and unpaid.exit_code == 0, paid.stderr + unpaid.stderr
    best = [json.loads(r.stdout)["best_ttft_p99_ms"] for r in (paid, unpaid)]
    assert abs(best[0] - best[1] - overhead_s * 1e3) < 0.01  # ms, as JSON rounds them
