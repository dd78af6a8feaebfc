"""Hostile `estimate` inputs: each within its own bound, yet nonsense together."""

import json

import pytest


@pytest.mark.parametrize(
    ("flags", "binding"),
    [
        # 1,000 / 86,400 x 4 x 6 s = 0.278 in flight; / (1e-300 x 0.6) = 4.6e299 GPUs
        (["--requests-per-day", "1000", "--seqs-per-gpu", "1e-300"], "concurrency"),
        # 1,000 / 86,400 x 4 x 400 tokens = 18.5 tokens/s; / (1e-300 x 0.6) = 3.1e301 GPUs
        (["--requests-per-day", "1000", "--gpu-tokens-per-s", "1e-300"], "throughput"),
        # 10^12 / 86,400 x 100 x 400 = 4.6e11 tokens/s; / (2,000 x 0.6) = 3.9e8 GPUs
        (["--requests-per-day", "1e12", "--peak-to-average", "100"], "throughput"),
    ],
)
def test_a_fleet_over_the_gpu_bound_is_refused(run_cli, tmp_path, flags, binding):
    out = tmp_path / "estimate.json"
    out.write_text('{"kept": true}')  # an earlier JSON output, which --json may replace
    result = run_cli("estimate", *flags, "--json", str(out))
    assert result.exit_code == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert f"GPUs by {binding}" in result.stderr
    assert "at most 1,000,000 GPUs" in result.stderr
    assert out.read_text() == '{"kept": true}'


def test_the_model_path_is_held_to_the_same_bound(run_cli):
    # llama-3.1-70b on A100: TP4 replicas; 10^12/day at 100x peak is 1.16e9 requests/s,
    # billions of GPUs at any replica's rate (was 3,338,623,976 GPUs with exit 0)
    result = run_cli(
        "estimate", "--requests-per-day", "1e12", "--peak-to-average", "100",
        "--model", "llama-3.1-70b", "--gpu", "a100-80gb-sxm", "--json", "-",
    )  # fmt: skip
    assert result.exit_code == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert "GPUs by throughput" in result.stderr


def test_the_bound_itself_still_plans(run_cli):
    # 10^6 GPUs by throughput at 2,000 tokens/s x 0.6 = 1.2e9 tokens/s at peak:
    # requests/day = 1.2e9 / 400 / 4 x 86,400 = 6.48e10
    result = run_cli("estimate", "--requests-per-day", "6.48e10", "--json", "-")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["gpus_by_throughput"] == pytest.approx(1e6)


@pytest.mark.parametrize("days", ["1e-300", "2.9"])
def test_an_slo_window_shorter_than_the_alert_windows_is_refused(run_cli, days):
    # the ticket alert looks back 72 h = 3 days; 1e-300 days read 0.0x burn and 0 min
    result = run_cli("estimate", "--window-days", days)
    assert result.exit_code == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert "--window-days: must be at least 3 days" in result.stderr


def test_a_three_day_window_plans(run_cli):
    result = run_cli("estimate", "--window-days", "3", "--json", "-")
    assert result.exit_code == 0, result.stderr
    # 0.1% x 3 days x 1,440 min = 4.32 min
    assert json.loads(result.stdout)["error_budget_minutes"] == pytest.approx(4.32)


def test_a_prefill_time_under_a_microsecond_is_refused(run_cli):
    # 1e-300 ms of service time: the ceiling's rate rho / S printed 300 digits, exit 0
    result = run_cli("headroom", "--prefill-ms", "1e-300", "--ttft-p99-ms", "500")
    assert result.exit_code == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert "--prefill-ms: must be at least 0.001 ms" in result.stderr


def test_a_microsecond_prefill_still_plans(run_cli):
    result = run_cli("headroom", "--prefill-ms", "0.001", "--ttft-p99-ms", "500", "--json", "-")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["prefill_s"] == pytest.approx(1e-6)


@pytest.mark.parametrize(
    ("key", "row"), [("mm1_utilizations", 0.5), ("incidents", {"burn_rate": 1, "hours": 1})]
)
def test_a_table_over_a_hundred_rows_is_refused(run_cli, tmp_path, key, row):
    # 200,000 utilisations printed 5 MB of M/M/1 table with exit 0
    path = tmp_path / "config.json"
    path.write_text(json.dumps({key: [row] * 101}))
    result = run_cli("estimate", "--config", str(path))
    assert result.exit_code == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert f"{key}: Tuple should have at most 100 items" in result.stderr
    assert "got [" not in result.stderr  # the 101 rows are not echoed back
    path.write_text(json.dumps({key: [row] * 100}))
    assert run_cli("estimate", "--config", str(path)).exit_code == 0
