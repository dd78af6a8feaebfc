"""`fleetplan estimate` and `fleetplan headroom` through the real entry point."""

import json
import math
from dataclasses import asdict

import pytest

from models.serving.headroom import derive_headroom

REQUESTS_PER_DAY = 2_000_000
SECONDS_PER_DAY = 86_400
PEAK_TO_AVERAGE = 4
LATENCY_S = 6
OUTPUT_TOKENS = 400
GPU_TOKENS_PER_S = 2000
TARGET_UTILIZATION = 0.6
SEQS_PER_GPU = 40
BYTES_PER_REQUEST = (1500 + 400) * 4
SLO_BUDGET = 1 - 0.999
WINDOW_DAYS = 30


def test_estimate_with_no_arguments_prints_every_seed_figure(run_cli):
    result = run_cli("estimate")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    avg_qps = REQUESTS_PER_DAY / SECONDS_PER_DAY
    peak_qps = avg_qps * PEAK_TO_AVERAGE
    in_flight = peak_qps * LATENCY_S
    output_tps = peak_qps * OUTPUT_TOKENS
    by_throughput = output_tps / (GPU_TOKENS_PER_S * TARGET_UTILIZATION)
    by_concurrency = in_flight / (SEQS_PER_GPU * TARGET_UTILIZATION)
    gb_per_day = REQUESTS_PER_DAY * BYTES_PER_REQUEST / 1e9
    budget_minutes = SLO_BUDGET * WINDOW_DAYS * 24 * 60
    budget_requests = SLO_BUDGET * REQUESTS_PER_DAY * WINDOW_DAYS
    expected = [
        f"{avg_qps:.1f}",  # 23.1
        f"{peak_qps:.1f}",  # 92.6
        f"{in_flight:.0f}",  # 556
        f"{output_tps:,.0f}",  # 37,037
        f"{by_throughput:.1f}",  # 30.9
        f"{by_concurrency:.1f}",  # 23.1
        f"ceil({by_throughput:.1f}) + 1",
        f"{math.ceil(by_throughput) + 1}",  # 32
        f"{gb_per_day:.1f} GB",  # 15.2
        f"{gb_per_day * 30 / 1000:.2f} TB",  # 0.46
        f"{budget_minutes:.1f} min",  # 43.2
        f"{budget_requests:,.0f}",  # 60,000
        f"{REQUESTS_PER_DAY * WINDOW_DAYS:,}",  # 60,000,000
    ]
    for figure in expected:
        assert figure in text, figure
    for multiplier in ("2.0 x S", "3.3 x S", "5.0 x S", "10.0 x S", "20.0 x S", "100.0 x S"):
        assert multiplier in text, multiplier
    burn_lines = [
        ("0.10%", "720 h", "1.0x", "100.0%"),
        ("1.44%", "1 h", "14.4x", "2.0%", "50.0 h"),
        ("5.00%", "0.33 h", "50.0x", "2.3%", "14.4 h"),
    ]
    lines = text.splitlines()
    for cells in burn_lines:
        assert any(all(cell in line for cell in cells) for line in lines), cells
    assert "per-GPU throughput: assumed" in text  # the throughput source


def test_estimate_json_carries_the_documented_names(run_cli):
    result = run_cli("estimate", "--json", "--zones", "3")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    peak_qps = REQUESTS_PER_DAY / SECONDS_PER_DAY * PEAK_TO_AVERAGE
    assert data["avg_qps"] == pytest.approx(REQUESTS_PER_DAY / SECONDS_PER_DAY)
    assert data["peak_qps"] == pytest.approx(peak_qps)
    assert data["in_flight"] == pytest.approx(peak_qps * LATENCY_S)
    assert data["peak_output_tokens_per_s"] == pytest.approx(peak_qps * OUTPUT_TOKENS)
    assert data["gpus_by_throughput"] == pytest.approx(
        peak_qps * OUTPUT_TOKENS / (GPU_TOKENS_PER_S * TARGET_UTILIZATION)
    )
    assert data["gpus_by_concurrency"] == pytest.approx(
        peak_qps * LATENCY_S / (SEQS_PER_GPU * TARGET_UTILIZATION)
    )
    assert data["gpus"] == 32
    assert data["log_gb_per_day"] == pytest.approx(REQUESTS_PER_DAY * BYTES_PER_REQUEST / 1e9)
    assert data["mm1"] == pytest.approx(
        {"0.5": 2.0, "0.7": 1 / 0.3, "0.8": 5.0, "0.9": 10.0, "0.95": 20.0, "0.99": 100.0}
    )
    assert data["error_budget_minutes"] == pytest.approx(SLO_BUDGET * WINDOW_DAYS * 24 * 60)
    assert data["error_budget_requests"] == pytest.approx(
        SLO_BUDGET * REQUESTS_PER_DAY * WINDOW_DAYS
    )
    assert [round(item["burn_rate"], 1) for item in data["burn"]] == [1.0, 14.4, 50.0]
    assert data["gpus_to_survive_zone_loss"] == math.ceil(31 * 3 / 2)
    assert data["throughput_source"].startswith("assumed")


def test_estimate_flags_change_the_figures(run_cli):
    result = run_cli(
        "estimate", "--json", "--requests-per-day", "1000000", "--gpu-tokens-per-s", "1000"
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    expected = 1_000_000 / SECONDS_PER_DAY * PEAK_TO_AVERAGE * OUTPUT_TOKENS / (1000 * 0.6)
    assert data["gpus_by_throughput"] == pytest.approx(expected)
    assert data["gpus"] == math.ceil(expected) + 1


def test_estimate_config_file_with_dashes_and_flag_override(run_cli, tmp_path):
    path = tmp_path / "assumptions.yaml"
    path.write_text("requests-per-day: 1000000\nwindow_days: 28\nslo: 0.99\n")
    result = run_cli("estimate", "--json", "--config", path, "--slo", "0.995")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["avg_qps"] == pytest.approx(1_000_000 / SECONDS_PER_DAY)
    assert data["error_budget_minutes"] == pytest.approx(0.005 * 28 * 24 * 60)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--slo", "1.5"), "--slo"),
        (("--target-utilization", "0"), "--target-utilization"),
        (("--zones", "1"), "--zones: must be at least 2 zones, got 1"),  # as every bound reads
        (("--requests-per-day", "lots"), "--requests-per-day"),
        (("--model", "llama-3.1-70b"), "--gpu"),
        (("--model", "no-such-llm", "--gpu", "h100-sxm"), "--model"),
        (("--model", "llama-3.1-70b", "--gpu", "no-such-gpu"), "--gpu"),
        (("--ttft-p99-ms", "800"), "--ttft-p99-ms"),
        (("--config", "/no/such/file.yaml"), "no such file"),
    ],
)
def test_estimate_bad_input_exits_2_naming_it(run_cli, args, named):
    result = run_cli("estimate", *args)
    assert result.exit_code == 2
    assert named in result.stderr
    assert "Traceback" not in result.stderr


def test_estimate_help_writes_defaults_as_people_do(run_cli):
    """2,000,000 requests a day, not 2e+06; 1,500 tokens with the separator."""
    text = " ".join(run_cli("estimate", "-h").stdout.split())
    assert "(default 2,000,000)" in text and "(default 1,500)" in text
    assert "e+0" not in text


def test_estimate_bad_config_key_exits_2_with_line(run_cli, tmp_path):
    path = tmp_path / "assumptions.yaml"
    path.write_text("slo: 0.999\npeak-to-avg: 3\n")
    result = run_cli("estimate", "--config", path)
    assert result.exit_code == 2
    assert f"{path}:2" in result.stderr
    assert "peak-to-avg" in result.stderr
    assert "peak_to_average" in result.stderr


def test_estimate_broken_yaml_exits_2(run_cli, tmp_path):
    path = tmp_path / "assumptions.yaml"
    path.write_text("slo: [0.999\n")
    result = run_cli("estimate", "--config", path)
    assert result.exit_code == 2
    assert "YAML" in result.stderr


def test_estimate_with_the_performance_model(run_cli):
    result = run_cli(
        "estimate", "--json", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--ttft-p99-ms", "800"
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["throughput_source"].startswith("performance model: h100-sxm bf16 tp")
    assert "p99 TTFT 800 ms" in data["throughput_source"]
    per_gpu = data["assumptions"]["gpu_tokens_per_s"]
    assert per_gpu > 0
    peak_qps = REQUESTS_PER_DAY / SECONDS_PER_DAY * PEAK_TO_AVERAGE
    # at a latency target no utilisation ceiling goes on top of the p99 capacity
    assert data["assumptions"]["target_utilization"] == 1.0
    assert data["gpus_by_throughput"] == pytest.approx(peak_qps * OUTPUT_TOKENS / per_gpu)
    # the duration and the sequences per GPU come from the operating point, so the
    # concurrency count agrees with the throughput count
    assert data["assumptions"]["latency_s"] != 6.0
    assert data["gpus_by_concurrency"] == pytest.approx(data["gpus_by_throughput"], rel=1e-6)
    plain = run_cli("estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm")
    assert plain.exit_code == 0, plain.stderr
    assert "per-GPU throughput: performance model" in plain.stdout


def test_estimate_model_that_fits_nowhere_is_infeasible(run_cli):
    result = run_cli("estimate", "--model", "llama-3.1-405b", "--gpu", "l40s")
    assert result.exit_code == 3
    assert "does not fit" in result.stderr


def test_estimate_model_and_assumed_throughput_conflict(run_cli):
    result = run_cli(
        "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--gpu-tokens-per-s", "900"
    )
    assert result.exit_code == 2
    assert "--gpu-tokens-per-s" in result.stderr


def _markdown_rows(text: str, title: str) -> list[list[str]]:
    """The cells of the pipe table under `## title`, header row first (no separator)."""
    lines = text.splitlines()
    start = lines.index(f"## {title}") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        if not line.startswith("|---"):
            rows.append([cell.strip() for cell in line.strip("|").split(" | ")])
    return rows


def test_estimate_markdown_prints_pipe_tables(run_cli):
    result = run_cli("estimate", "--markdown")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert text.startswith("# fleetplan estimate")
    avg_qps = REQUESTS_PER_DAY / SECONDS_PER_DAY  # 23.1
    peak_qps = avg_qps * PEAK_TO_AVERAGE  # 92.6
    load = _markdown_rows(text, "Load")
    assert load[0] == ["figure", "formula", "value"]
    assert ["peak QPS", f"{avg_qps:.1f} x {PEAK_TO_AVERAGE}", f"{peak_qps:.1f}"] in load
    by_throughput = peak_qps * OUTPUT_TOKENS / (GPU_TOKENS_PER_S * TARGET_UTILIZATION)
    gpus = _markdown_rows(text, "GPUs")
    assert gpus[-1][-1] == str(math.ceil(by_throughput) + 1)  # N+1: 32
    for title in ("Assumptions", "Logs (raw request and response text)"):
        assert len(_markdown_rows(text, title)) > 1, title
    assert "┃" not in text  # no terminal box drawing


def test_estimate_json_keys_are_unchanged(run_cli):
    result = run_cli("estimate", "--zones", "3", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(data) == {
        "assumptions",
        "throughput_source",
        "avg_qps",
        "peak_qps",
        "in_flight",
        "peak_output_tokens_per_s",
        "gpus_by_throughput",
        "gpus_by_concurrency",
        "binding",
        "gpus_needed",
        "gpus",
        "gpus_per_replica",  # added (issue 35): the N+1 spare is one replica of these
        "bytes_per_request",
        "log_gb_per_day",
        "log_tb_per_30_days",
        "mm1",
        "error_budget_fraction",
        "error_budget_minutes",
        "requests_in_window",
        "error_budget_requests",
        "burn",
        "alerts",
        "zones",
        "zone_overprovision_factor",
        "gpus_to_survive_zone_loss",
        "gpus_per_zone",
    }


@pytest.mark.parametrize(
    "command", [("estimate",), ("headroom", "--prefill-ms", "50", "--ttft-p99-ms", "800")]
)
def test_json_and_markdown_together_exit_2(run_cli, command):
    result = run_cli(*command, "--json", "--markdown")
    assert result.exit_code == 2
    assert "--markdown" in result.stderr


# ---- headroom -------------------------------------------------------------------------


def test_headroom_prints_its_derivation(run_cli):
    result = run_cli("headroom", "--prefill-ms", "50", "--ttft-p99-ms", "800")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    for step in ("1. Service time", "2. Its variability", "3. The wait's budget", "5. The ceiling"):
        assert step in text
    assert "sqrt(W99^2 + (S99 - S)^2)" in text
    assert "Erlang C" in text
    assert "Approximation" in text
    derivation = derive_headroom(0.05, 0.8)
    assert f"{derivation.wait_budget_s * 1e3:,.1f} ms" in text
    for row in derivation.by_cv:  # the spread table, about 70% at cv 1 to 50% at cv 1.5
        assert f"{row.utilization:.1%}" in text
    assert f"rho = {derivation.utilization:.1%}" in text


def test_headroom_json_and_spread(run_cli):
    result = run_cli(
        "headroom", "--prefill-ms", "50", "--ttft-p99-ms", "800", "--prompt-cv", "1.5", "--json"
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["service_scv"] == pytest.approx(1.5**2)
    service_p99_s = data["service_p99_s"]
    assert data["wait_budget_s"] == pytest.approx(
        math.sqrt((0.8 - 0.05) ** 2 - (service_p99_s - 0.05) ** 2)
    )
    ceilings = [row["utilization"] for row in data["by_cv"]]
    assert ceilings == sorted(ceilings, reverse=True)
    assert data["feasible"] is True


def test_headroom_pool_raises_the_ceiling(run_cli):
    result = run_cli("headroom", "--prefill-ms", "50", "--ttft-p99-ms", "800", "--servers", "4")
    assert result.exit_code == 0, result.stderr
    assert "4 servers behind one queue" in result.stdout


def test_headroom_target_below_prefill_is_infeasible(run_cli):
    result = run_cli("headroom", "--prefill-ms", "900", "--ttft-p99-ms", "800")
    assert result.exit_code == 3
    assert "infeasible" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("--prefill-ms", "0", "--ttft-p99-ms", "800"),
        ("--prefill-ms", "50", "--ttft-p99-ms", "-1"),
        ("--prefill-ms", "50", "--ttft-p99-ms", "800", "--servers", "0"),
        ("--prefill-ms", "50", "--ttft-p99-ms", "800", "--prompt-cv", "-1"),
        (
            "--ttft-p99-ms",
            "800",
        ),
    ],
)
def test_headroom_bad_input_exits_2(run_cli, args):
    result = run_cli("headroom", *args)
    assert result.exit_code == 2
    assert "Traceback" not in result.stderr


def test_headroom_markdown_prints_pipe_tables(run_cli):
    result = run_cli("headroom", "--prefill-ms", "50", "--ttft-p99-ms", "800", "--markdown")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    assert text.startswith("# fleetplan headroom")
    derivation = derive_headroom(0.05, 0.8)
    spread = _markdown_rows(text, "Prompt-length spread lowers the ceiling (one server)")
    assert spread[0] == ["prompt cv", "cs^2", "prefill p99", "ceiling", "requests/s"]
    assert [row[3] for row in spread[1:]] == [f"{row.utilization:.1%}" for row in derivation.by_cv]
    pools = _markdown_rows(text, "Pooling raises it (cv 1): c servers behind one queue")
    assert [row[0].removesuffix(" <") for row in pools[1:]] == [
        str(row.servers) for row in derivation.by_servers
    ]
    assert "Approximation" in text


def test_headroom_json_keys_are_unchanged(run_cli):
    result = run_cli("headroom", "--prefill-ms", "50", "--ttft-p99-ms", "800", "--json")
    assert result.exit_code == 0, result.stderr
    derivation = derive_headroom(0.05, 0.8)
    assert set(json.loads(result.stdout)) == {*asdict(derivation), "feasible"}
