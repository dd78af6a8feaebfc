"""The voice budget (`models.calculators.voice`): the LLM's targets from a time-to-first-audio
budget, the schema keys `slo.first_audio_ms` and `voice:`, and `fleetplan voice`."""

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cli.exit_codes import ExitCode
from models.calculators.voice import Voice, VoiceBudgetError, voice_budget
from models.io.loading import validate_instance
from models.schema import limits
from models.schema.instance import Workload
from models.schema.serving_inputs import latency_targets
from models.serving.replica import LatencyTargets
from tests import synthetic


def _lines(**overrides) -> Voice:
    fields = dict(
        network_rtt_ms=30,
        endpointing_ms=200,
        asr_ms=20,
        tts_first_audio_ms=0,
        first_clause_tokens=5,
    )
    return Voice(**{**fields, **overrides})


def test_300_ms_with_200_ms_endpointing_leaves_the_hand_computed_llm_targets():
    budget_ms, endpointing_ms, rtt_ms, asr_ms, tts_ms = 300.0, 200.0, 30.0, 20.0, 0.0
    clause_tokens, share = 5, 0.5
    llm_ms = budget_ms - endpointing_ms - rtt_ms - asr_ms - tts_ms  # 50 ms
    budget = voice_budget(budget_ms, _lines())
    assert budget.llm_ms == pytest.approx(llm_ms)
    assert budget.ttft_p99_ms == pytest.approx(share * llm_ms)  # 25 ms
    assert budget.tpot_p99_ms == pytest.approx((1 - share) * llm_ms / clause_tokens)  # 5 ms
    assert budget.largest_line.key == "endpointing_ms"


def test_a_stated_share_moves_the_split():
    budget = voice_budget(300.0, _lines(ttft_share=0.8))
    llm_ms = 300.0 - 250.0
    assert budget.ttft_p99_ms == pytest.approx(0.8 * llm_ms)
    assert budget.tpot_p99_ms == pytest.approx(0.2 * llm_ms / 5)


def test_fixed_lines_over_the_budget_name_every_line():
    with pytest.raises(VoiceBudgetError) as error:
        voice_budget(240.0, _lines())
    message = str(error.value)
    for key in ("network_rtt_ms", "endpointing_ms", "asr_ms", "tts_first_audio_ms"):
        assert f"voice.{key}" in message
    assert "250 ms" in message  # 30 + 200 + 20 + 0
    assert "leaving nothing for the LLM (10 ms short)" in message  # 250 - 240, never "-10 ms"


def test_a_budget_spent_exactly_leaves_nothing_and_is_refused():
    with pytest.raises(VoiceBudgetError):
        voice_budget(250.0, _lines())


@given(
    first_audio_ms=st.floats(1.0, 5000.0),
    stage_ms=st.lists(st.floats(0.0, 1000.0), min_size=4, max_size=4),
    clause_tokens=st.integers(1, int(limits.FIRST_CLAUSE_TOKENS.high)),
    share=st.floats(0.01, 0.99),
)
def test_lines_sum_to_the_budget_and_the_llm_meets_its_allowance(
    first_audio_ms, stage_ms, clause_tokens, share
):
    lines = Voice(
        network_rtt_ms=stage_ms[0],
        endpointing_ms=stage_ms[1],
        asr_ms=stage_ms[2],
        tts_first_audio_ms=stage_ms[3],
        first_clause_tokens=clause_tokens,
        ttft_share=share,
    )
    if sum(stage_ms) >= first_audio_ms:
        with pytest.raises(VoiceBudgetError):
            voice_budget(first_audio_ms, lines)
        return
    budget = voice_budget(first_audio_ms, lines)
    assert sum(line.ms for line in budget.lines) == pytest.approx(first_audio_ms)
    llm_s = budget.ttft_p99_ms + clause_tokens * budget.tpot_p99_ms
    assert llm_s == pytest.approx(budget.llm_ms)
    assert budget.ttft_p99_ms > 0 and budget.tpot_p99_ms > 0


def _voice_workload(**slo) -> dict:
    data = synthetic.workload("voice", {"east": 10.0})
    data["slo"] = {"first_audio_ms": 300.0, **slo}
    data["voice"] = _lines().model_dump()
    return data


def test_the_workload_sizes_from_the_derived_targets():
    workload = Workload.model_validate(_voice_workload())
    assert workload.slo.ttft_p99_ms == pytest.approx(25.0)
    assert workload.slo.tpot_p99_ms == pytest.approx(5.0)
    assert latency_targets(workload.slo) == LatencyTargets(0.025, 0.005)
    dumped = workload.model_dump(exclude_unset=True)
    assert dumped["slo"]["ttft_p99_ms"] == workload.slo.ttft_p99_ms  # written with its targets
    again = Workload.model_validate(dumped)
    assert again == workload


def test_an_explicit_target_that_disagrees_with_the_budget_is_refused():
    with pytest.raises(ValueError, match=r"slo\.ttft_p99_ms .* conflicts"):
        Workload.model_validate(_voice_workload(ttft_p99_ms=100.0))


def test_first_audio_needs_the_voice_block_and_the_block_needs_first_audio():
    data = _voice_workload()
    del data["voice"]
    with pytest.raises(ValueError, match="needs a voice: block"):
        Workload.model_validate(data)
    data = _voice_workload()
    data["slo"] = {"ttft_p99_ms": 100.0}
    with pytest.raises(ValueError, match=r"give slo\.first_audio_ms"):
        Workload.model_validate(data)


def test_an_instance_with_an_impossible_budget_names_the_field(tmp_path):
    data = _voice_workload()
    data["slo"]["first_audio_ms"] = 200.0
    with pytest.raises(Exception, match="endpointing_ms"):
        validate_instance(
            {
                "name": "v",
                "gpus": [{"name": "h100-sxm"}],
                "models": [{"name": "llama-3.1-8b"}],
                "regions": [{"name": "east", "supply": {"h100-sxm": {"max_gpus": 8}}}],
                "workloads": [data],
            }
        )


def test_voice_cli_prints_the_budget_as_json(run_cli):
    result = run_cli(
        "voice",
        "--first-audio-ms",
        "300",
        "--endpointing-ms",
        "200",
        "--network-rtt-ms",
        "30",
        "--asr-ms",
        "20",
        "--first-clause-tokens",
        "5",
        "--json",
    )
    assert result.exit_code == ExitCode.OK, result.stderr
    data = json.loads(result.stdout)
    assert data["ttft_p99_ms"] == pytest.approx(0.5 * 50)
    assert data["tpot_p99_ms"] == pytest.approx(0.5 * 50 / 5)
    assert [line["line"] for line in data["lines"]][:4] == [
        "network_rtt_ms",
        "endpointing_ms",
        "asr_ms",
        "tts_first_audio_ms",
    ]


def test_voice_cli_over_budget_is_bad_input(run_cli):
    result = run_cli("voice", "--first-audio-ms", "150", "--endpointing-ms", "200")
    assert result.exit_code == ExitCode.BAD_INPUT
    # The figures came from flags, so the message names the flags (it named the file's
    # voice.endpointing_ms) and says how far short: 0 + 200 + 0 + 0 = 200 ms > 150 ms.
    text = " ".join(result.stderr.split())
    assert (
        "--first-audio-ms is 150 ms but the fixed lines take --network-rtt-ms 0 + "
        "--endpointing-ms 200 + --asr-ms 0 + --tts-first-audio-ms 0 = 200 ms, leaving nothing "
        "for the LLM (50 ms short); raise --first-audio-ms above 200 ms or shorten the largest "
        "line (--endpointing-ms)"
    ) in text
