"""Hostile input, round eight: engine profile files are held to the bounds an instance's
`efficiency:` is held to. A profile's step of 10^6 s planned with exit 0 and a chunk of
10^12 tokens read 'does not fit' (exit 3, 83,923,359 GiB of activations); each is now
refused naming the file, the entry and the bound. calibrate never writes a profile it
would refuse."""

import pytest
import yaml

from tests.cli.test_hostile_input import run_checked

RUNS = "model,gpu,precision,tp,isl,osl,concurrency,output_tok_s,ttft_mean_ms,tpot_mean_ms\n"
PERF = ("perf", "-g", "h100-sxm", "-i", "1000", "-o", "200", "-m", "llama-3.1-8b")


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory) -> str:
    """The profile `calibrate` writes from one 16-user run, as text: fitted once for the
    module's six tests that read or tamper with it (a fit each was ~0.45 s of CPU)."""
    from typer.testing import CliRunner

    from cli.app import app

    folder = tmp_path_factory.mktemp("calibrated")
    runs, path = folder / "runs.csv", folder / "fitted.yaml"
    runs.write_text(RUNS + "llama-3.1-8b,h100-sxm,fp8,1,1000,200,16,2500,80,6\n")
    argv = ["calibrate", str(runs), "-o", str(path), "--no-leave-one-out"]
    result = CliRunner().invoke(app, argv)
    assert result.exit_code == 0 and "Traceback" not in result.output, result.output
    return path.read_text()


def _written(calibrated: str, folder) -> dict:
    """`calibrated` written to FOLDER/fitted.yaml, and read."""
    (folder / "fitted.yaml").write_text(calibrated)
    return yaml.safe_load(calibrated)


@pytest.mark.parametrize(
    ("factor", "value", "said"),
    [
        ("step_overhead_s", 1e6, "must be at most 10 s, got 1,000,000"),
        ("prefill_chunk_tokens", 10**12, "must be at most 100,000,000 tokens"),
        ("max_batch_sequences", 10**9, "must be at most 1,000,000 sequences"),
    ],
)
def test_a_profile_factor_past_its_bound_is_refused_naming_it(
    run_cli, tmp_path, calibrated, factor, value, said
):
    document = _written(calibrated, tmp_path)
    document["by_key"]["default"][factor] = value
    path = tmp_path / "tampered.yaml"
    path.write_text(yaml.safe_dump(document))
    needles = (f"--engine: engine profile file {path}: by_key.default.{factor}: {said}",)
    run_checked(run_cli, *PERF, "--engine", path, needles=needles)


def test_the_profile_calibrate_writes_is_read_back(run_cli, tmp_path, calibrated):
    _written(calibrated, tmp_path)
    run_checked(run_cli, *PERF, "--engine", tmp_path / "fitted.yaml", code=0)


def test_calibrate_writes_no_profile_it_would_refuse(run_cli, tmp_path):
    # a one-user run's TTFT of 20 s (seconds written as ms?) fitted a request overhead of
    # 20 s: the profile would be refused by every command given it
    runs = tmp_path / "runs.csv"
    runs.write_text(
        RUNS + "llama-3.1-8b,h100-sxm,fp8,1,1000,200,1,150,20000,6\n"
        "llama-3.1-8b,h100-sxm,fp8,1,1000,200,16,2500,20080,6\n"
    )
    path = tmp_path / "slow.yaml"
    needles = ("request_overhead_s: fitted to 19.9", "no profile was written")
    run_checked(run_cli, "calibrate", runs, "-o", path, "--no-leave-one-out", needles=needles)
    assert not path.exists()


@pytest.mark.parametrize(
    ("old", "new", "said"),
    [
        # YAML 1.1 reads 4:16 as the base-60 number 4 x 60 + 16 = 256: a chunk of 256
        # tokens planned without a word (an instance refuses the same line)
        ("prefill_chunk_tokens: 8192", "prefill_chunk_tokens: 4:16",
         "'4:16' reads in YAML 1.1 as the base-60 number 256"),
        # a factor given twice: the second replaced the first without a word
        ("hbm_fraction: ", "hbm_fraction: 0.1\n    hbm_fraction: ",
         "duplicate key 'hbm_fraction' (first on line"),
    ],
    ids=["base-sixty", "key-twice"],
)  # fmt: skip
def test_a_profile_file_is_read_as_strictly_as_an_instance(
    run_cli, tmp_path, calibrated, old, new, said
):
    document = _written(calibrated, tmp_path)
    document["by_key"]["default"]["prefill_chunk_tokens"] = 8192
    text = yaml.safe_dump(document, sort_keys=False).replace(old, new, 1)
    assert new in text
    path = tmp_path / "edited.yaml"
    path.write_text(text)
    needles = (f"--engine: engine profile file {path}:", said)
    run_checked(run_cli, *PERF, "--engine", path, needles=needles)
