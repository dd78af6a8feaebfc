"""`perf --prefill-workers P --decode-workers D --concurrency C`: a disaggregated pair in
the terminal and in --json, and bad input naming its flag (exit 2)."""

import json

import pytest

from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.serving.disaggregated import PairLayout, pair_at_concurrency
from models.serving.replica import ReplicaConfig, Role, ServingContext, TrafficMix

PAIR = ("perf", "-m", "llama-3.3-70b", "--gpu", "h100-sxm", "-p", "fp8", "-i", "4000",
        "-o", "300", "--tp", "4", "--prefill-workers", "3", "--decode-workers", "1",
        "--concurrency", "32")  # fmt: skip


def test_the_json_is_the_library_pair(run_cli):
    """The JSON's figures are `pair_at_concurrency`'s for the same layout, in ms and
    tokens/s: output tokens/s = X x O; total = X (P + O); per GPU over 3 x 4 + 1 x 4 = 16
    GPUs; TTFT = wait + prefill + transfer."""
    result = run_cli(*PAIR, "--json", "-")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    gpu, llm = catalog.gpu("h100-sxm"), catalog.llm("llama-3.3-70b")
    efficiency = efficiency_for(gpu, Precision.FP8)
    mix = TrafficMix.fixed(4000, 300)

    def side(role):
        config = ReplicaConfig(gpu, llm, Precision.FP8, Precision.FP8, 4, 1, role)
        return ServingContext(config, mix, efficiency)

    report = pair_at_concurrency(PairLayout(side(Role.PREFILL), side(Role.DECODE), 3, 1), 32)
    x = report.point.throughput_requests_per_s
    assert data["mode"] == "disaggregated" and data["arrivals"] == "burst"
    assert data["gpus"] == 16
    assert data["throughput_requests_per_s"] == pytest.approx(x)
    assert data["output_tokens_per_s"] == pytest.approx(x * 300)
    assert data["total_tokens_per_s"] == pytest.approx(x * 4300)
    assert data["total_tokens_per_s_per_gpu"] == pytest.approx(x * 4300 / 16)
    assert data["ttft_mean_ms"] == pytest.approx(
        data["prefill_wait_mean_ms"] + data["prefill_ms"] + data["kv_transfer_ms"]
    )
    assert data["tpot_mean_ms"] == pytest.approx(report.point.tpot_mean_s * 1e3)
    assert data["limit"] in ("prefill", "decode", "kv transfer")
    assert data["limit"] == min(data["caps_requests_per_s"], key=data["caps_requests_per_s"].get)
    assert data["kv_transfer_bytes_per_request"] == pytest.approx(4000 * 163_840)


def test_the_terminal_names_the_limiting_side_and_the_link(run_cli):
    result = run_cli(*PAIR)
    assert result.exit_code == 0, result.stderr
    assert "disaggregated pair: 16 GPUs" in result.stdout
    assert "(limits)" in result.stdout
    assert "scale-out NICs" in result.stdout
    given = run_cli(*PAIR, "--kv-link-gb-s", "25")
    assert "--kv-link-gb-s (given)" in given.stdout


def test_per_side_layouts(run_cli):
    """--decode-tp 8 gives the decode worker 8 GPUs: 3 x 4 + 8 = 20."""
    data = json.loads(run_cli(*PAIR, "--decode-tp", "8", "--json", "-").stdout)
    assert data["decode"]["tp"] == 8 and data["prefill"]["tp"] == 4
    assert data["gpus"] == 20
    steady = json.loads(run_cli(*PAIR, "--arrivals", "steady", "--json", "-").stdout)
    assert steady["arrivals"] == "steady"


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("--prefill-workers", "0"), "--prefill-workers"),
        (("--decode-workers", "0"), "--decode-workers"),
        (("--prefill-tp", "3"), "--prefill-tp"),  # 8 KV heads over 3 GPUs
        (("--decode-tp", "3"), "--decode-tp"),
        (("--role", "prefill"), "--role"),
        (("--pool-replicas", "2"), "--pool-replicas"),
        (("--sweep",), "--sweep"),
        (("--concurrency", "2.5"), "--concurrency"),
        (("-o", "1"), "--output-tokens"),
        (("--kv-link-gb-s", "0"), "--kv-link-gb-s"),
    ],
)
def test_bad_pairs_exit_2_naming_the_flag(run_cli, args, flag):
    result = run_cli(*PAIR, *args)
    assert result.exit_code == 2, result.stdout
    assert flag in result.stderr
    assert "Traceback" not in result.stderr


def test_a_pair_needs_both_counts_and_a_concurrency(run_cli):
    base = PAIR[: PAIR.index("--prefill-workers")]
    alone = run_cli(*base, "--prefill-workers", "2", "--concurrency", "8")
    assert alone.exit_code == 2 and "--decode-workers" in alone.stderr
    no_load = run_cli(*base, "--prefill-workers", "2", "--decode-workers", "1")
    assert no_load.exit_code == 2 and "--concurrency" in no_load.stderr
    stray = run_cli(*base, "--decode-tp", "8")
    assert stray.exit_code == 2 and "--decode-tp" in stray.stderr


def test_a_side_that_does_not_fit_exits_3(run_cli):
    """70B in bf16 on one H100 (141 GB of weights in 80 GB) does not fit the prefill side."""
    result = run_cli(*PAIR, "-p", "bf16", "--prefill-tp", "1")
    assert result.exit_code == 3
    assert "prefill side" in result.stderr
