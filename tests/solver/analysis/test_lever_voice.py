"""Levers on a voice workload (instances/voice-agent.yaml): its TTFT and TPOT targets
derive from the `first_audio_ms` budget, so "TTFT +20%" made them contradict the budget;
the lever failed validation and `explain --levers` ended with exit 2 on a valid file."""

import pytest

from models.io.loading import load_instance, validate_instance
from solver.analysis.lever_edits import SLO_LOOSENING, levers_for, looser_slo
from tests.paths import INSTANCES
from tests.synthetic import workload

VOICE = INSTANCES / "voice-agent.yaml"


def test_every_lever_of_the_voice_instance_applies_without_an_input_error():
    instance = load_instance(VOICE)
    for lever in levers_for(instance):
        lever.apply(instance)  # each is a valid instance or None (nothing to change)


@pytest.mark.parametrize("key", ["ttft_p99_ms", "tpot_p99_ms"])
def test_a_looser_slo_skips_the_voice_workload_and_loosens_the_others(key):
    instance = load_instance(VOICE)
    assert looser_slo(key)(instance) is None  # the only workload is voice-budgeted
    data = instance.model_dump(mode="json", exclude_unset=True)
    region = next(iter(instance.workloads[0].demand))
    data["workloads"].append(
        workload("chat", {region: 1.0}, model=instance.workloads[0].model, **{key: 500})
    )
    mixed = validate_instance(data, "mixed")
    looser = looser_slo(key)(mixed)
    voice, chat = looser.workloads
    assert getattr(voice.slo, key) == getattr(mixed.workloads[0].slo, key)
    assert getattr(chat.slo, key) == pytest.approx(500 * SLO_LOOSENING)  # 500 ms x 1.2
