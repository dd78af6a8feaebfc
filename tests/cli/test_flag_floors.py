"""Floors and bounds of calculator flags that the strict-flag sweep (NaN, inf, 1e308) did
not reach: `simulate --burstiness 1e-300` exited 70 (ZeroDivisionError: the gamma gaps'
shape 1/cv^2 overflowed), and `perf --length-cv` took up to 100 where its bound says 10
(a second `flag_limits.LENGTH_CV`, for the flags, replaced the dataset one)."""

from models.schema import flag_limits, limits
from tests.paths import INSTANCES

PERF = ("perf", "-g", "h100-sxm", "-m", "llama-3.1-8b", "-i", "1000", "-o", "200")


def test_a_burstiness_under_its_floor_exits_2_with_the_reason(run_cli, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text('{"replicas": []}')
    result = run_cli("simulate", INSTANCES / "region-loss-3.yaml", plan, "--burstiness", "1e-300")
    assert result.exit_code == 2, result.stderr
    assert "--burstiness: must be at least 0.01, got 1e-300 (the floor: " in result.stderr


def test_the_length_cv_of_a_burst_is_held_to_the_dataset_bound(run_cli):
    assert limits.DATASET_LENGTH_CV.high == 10.0 and flag_limits.LENGTH_CV.high == 100
    result = run_cli(*PERF, "--concurrency", "8", "--arrivals", "burst", "--length-cv", "11")
    assert result.exit_code == 2, result.stderr
    assert "--length-cv: must be at most 10, got 11" in result.stderr
