"""`fleetplan perf --speculative-tokens K --acceptance-rate A --draft-model NAME` (or
`--draft-cost-ratio R`): the speculation table and JSON, today's keys kept, bad input
refused with exit 2."""

import json

import pytest

from cli.exit_codes import ExitCode

BASE = [
    "perf",
    "--gpu",
    "h100-sxm",
    "--model",
    "llama-3.3-70b",
    "--precision",
    "fp8",
    "--tp",
    "8",
    "--input-tokens",
    "1000",
    "--output-tokens",
    "300",
]
SPEC = ["--speculative-tokens", "3", "--acceptance-rate", "0.7"]


def test_json_keeps_todays_keys_and_adds_the_speculation_table(run_cli):
    plain = run_cli(*BASE, "--json")
    spec = run_cli(*BASE, *SPEC, "--draft-model", "llama-3.1-8b", "--json")
    assert plain.exit_code == spec.exit_code == 0, spec.stderr
    plain_data, spec_data = json.loads(plain.stdout), json.loads(spec.stdout)
    assert set(plain_data) <= set(spec_data)
    assert "speculation" not in plain_data
    table = spec_data["speculation"]
    assert table["expected_tokens"] == pytest.approx((1 - 0.7**4) / 0.3)
    assert table["draft_model"] == "llama-3.1-8b"
    rows = table["table"]
    assert [row["batch"] for row in rows][:3] == [1, 2, 4]
    assert rows[0]["speedup"] > 1
    assert rows[0]["tpot_ms"] == pytest.approx(rows[0]["cycle_ms"] / table["expected_tokens"])
    crossover = table["crossover_batch"]
    assert crossover is not None
    assert all(row["speedup"] < 1 for row in rows if row["batch"] >= crossover)
    assert all(row["speedup"] >= 1 for row in rows if row["batch"] < crossover)
    assert spec_data["best_tpot_ms"] < plain_data["best_tpot_ms"]


def test_table_with_a_cost_ratio(run_cli):
    result = run_cli(*BASE, *SPEC, "--draft-cost-ratio", "0.05")
    assert result.exit_code == 0, result.stderr
    assert "speculative decoding: cost ratio 0.05, k = 3, a = 0.7" in result.stdout
    assert "speed-up" in result.stdout


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--speculative-tokens", "3", "--draft-model", "llama-3.1-8b"), "--acceptance-rate"),
        ((*SPEC,), "give one drafter"),
        ((*SPEC, "--draft-model", "llama-3.1-8b", "--draft-cost-ratio", "0.1"), "one drafter"),
        ((*SPEC, "--draft-model", "no-such-model"), "unknown model"),
        (
            ("--speculative-tokens", "0", "--acceptance-rate", "0.7", "--draft-cost-ratio", "0.1"),
            "at least 1",
        ),
        (
            ("--speculative-tokens", "3", "--acceptance-rate", "1.2", "--draft-cost-ratio", "0.1"),
            "at most 1",
        ),
        ((*SPEC, "--draft-cost-ratio", "0.1", "--rate", "2"), "plain decoding"),
        ((*SPEC, "--draft-cost-ratio", "0.1", "--role", "prefill"), "decodes nothing"),
    ],
)
def test_bad_speculation_flags_exit_2(run_cli, flags, message):
    result = run_cli(*BASE, *flags)
    assert result.exit_code == ExitCode.BAD_INPUT
    assert message in result.stderr


def test_a_crossover_past_the_kv_limit_is_bounded_by_it(run_cli):
    """Speculation that still pays at the largest batch the KV cache holds is reported as
    paying up to that batch (the replica's `max_batch`), not at a batch of 65,536 it
    cannot hold (issue 35): 70B fp8 on TP8 H100 with 30,000-token prompts holds 113."""
    args = [*BASE[:9], "--input-tokens", "30000", "--output-tokens", "300"]
    spec = [*SPEC[:2], "--acceptance-rate", "0.9", "--draft-cost-ratio", "0.02"]
    data = json.loads(run_cli(*args, *spec, "--json").stdout)
    max_batch = data["max_batch"]
    table = data["speculation"]
    assert table["crossover_batch"] is None
    assert table["crossover_searched_to_batch"] == max_batch < 65_536
    text = run_cli(*args, *spec).stdout
    assert "65,536" not in text
    assert f"still pays at every batch the KV cache holds (up to {max_batch:,}" in text
