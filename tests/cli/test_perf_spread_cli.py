"""`perf --concurrency C --arrivals burst` with the benchmark's length spread: the burst
replays the lengths as the tool drew them (`--random-range-ratio R` as vllm bench serve,
`--length-cv` for a dataset), fixed lengths by default; a spread without a burst to
spread is refused naming the flag."""

import json

import pytest

from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.serving.closed_loop import LengthSpread
from models.serving.latency import latency_at_concurrency_as_tools_run_it
from models.serving.replica import ReplicaConfig, ServingContext, TrafficMix

SHAPE = ("perf", "-g", "h100-sxm", "-m", "llama-3.1-8b", "-i", "1000", "-o", "200",
         "--concurrency", "16")  # fmt: skip


def _replay(spread: LengthSpread):
    gpu, llm = catalog.gpu("h100-sxm"), catalog.llm("llama-3.1-8b")
    config = ReplicaConfig(gpu, llm, Precision.BF16, Precision.BF16, 1, 1)
    serving = ServingContext(config, TrafficMix.fixed(1000, 200), efficiency_for(gpu, "bf16"))
    return latency_at_concurrency_as_tools_run_it(serving, 16, spread=spread)


@pytest.mark.parametrize(
    ("flags", "spread"),
    [
        ((), LengthSpread()),
        (("--random-range-ratio", "0.5"), LengthSpread("uniform", 0.5, 0.5)),
        (("--length-cv", "1"), LengthSpread("lognormal", 1.0, 1.0)),
    ],
    ids=["fixed", "uniform", "lognormal"],
)
def test_the_burst_replays_the_lengths_the_flags_describe(run_cli, flags, spread):
    """--random-range-ratio 0.5: lengths uniform over [500, 1,500] prompt and [100, 300]
    output tokens, the replay's `LengthSpread("uniform", 0.5, 0.5)`."""
    result = run_cli(*SHAPE, *flags, "--json", "-")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    expected = _replay(spread)
    assert data["ttft_mean_ms"] == pytest.approx(expected.ttft_mean_s * 1e3)
    assert data["tpot_mean_ms"] == pytest.approx(expected.tpot_mean_s * 1e3)


def test_a_spread_moves_the_burst():
    """Spread lengths de-synchronise the waves: the replay differs from the fixed one."""
    fixed, spread = _replay(LengthSpread()), _replay(LengthSpread("uniform", 0.5, 0.5))
    assert spread.ttft_mean_s != fixed.ttft_mean_s


@pytest.mark.parametrize(
    ("flags", "flag", "message"),
    [
        (("--random-range-ratio", "0.5", "--length-cv", "1"), "--length-cv", "not both"),
        (("--random-range-ratio", "0.5", "--arrivals", "steady"), "--random-range-ratio",
         "give it with --concurrency"),
        (("--random-range-ratio", "1"), "--random-range-ratio", "must be below 1"),
        (("--length-cv", "-1"), "--length-cv", "must be at least 0"),
    ],
)  # fmt: skip
def test_a_spread_without_a_burst_or_out_of_range_exits_2(run_cli, flags, flag, message):
    result = run_cli(*SHAPE, *flags)
    assert result.exit_code == 2, result.stderr
    assert flag in result.stderr and message in result.stderr


def test_a_spread_with_a_rate_exits_2(run_cli):
    shape = [a for a in SHAPE if a not in ("--concurrency", "16")]
    result = run_cli(*shape, "--rate", "2", "--length-cv", "1")
    assert result.exit_code == 2 and "--length-cv" in result.stderr
