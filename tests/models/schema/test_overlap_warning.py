"""`efficiency.two_batch_overlap` overlaps an expert-parallel all-to-all: an instance whose
layouts have none (a dense model, or EP at 1, attention DP or not: the engines overlap on
EP only) is told the switch has no effect; one with EP above 1 on an MoE model is not."""

from models.io.loading import load_instance, validate_instance
from models.schema.checks import input_warnings
from tests.paths import INSTANCES

SAID = "efficiency.two_batch_overlap: true has no effect: no layout has an experts' all-to-all"


def _with_overlap(path: str, **policy):
    data = load_instance(INSTANCES / path).model_dump(mode="json", exclude_unset=True)
    data["efficiency"] = {**(data.get("efficiency") or {}), "two_batch_overlap": True}
    data["policy"].update(policy)
    return validate_instance(data, path)


def test_overlap_without_an_alltoall_is_warned_about():
    dense = input_warnings(_with_overlap("region-loss-3.yaml"))  # Llama models only
    assert any(w.startswith(SAID) for w in dense)
    plain = _with_overlap("moe-ep.yaml", expert_parallel=[1], attention_data_parallel=[1])
    assert any(w.startswith(SAID) for w in input_warnings(plain))
    dp_only = _with_overlap("moe-ep.yaml", expert_parallel=[1], attention_data_parallel=[8])
    assert any(w.startswith(SAID) for w in input_warnings(dp_only))


def test_overlap_on_an_expert_parallel_moe_instance_is_not():
    assert not any(w.startswith(SAID) for w in input_warnings(_with_overlap("moe-ep.yaml")))
