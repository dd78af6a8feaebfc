"""`efficiency.two_batch_overlap` overlaps an expert-parallel all-to-all on the layouts the
engine profile's engine runs it on (`models.physics.overlap.engine_runs_overlap`): vLLM's
DBO at attention DP and EP both above 1, SGLang's TBO at EP = TP x attention DP above 1,
TensorRT-LLM never. An instance whose policy grid holds no such layout (or no MoE model)
is told the switch has no effect, and the warning names the engine's condition."""

import pytest

from models.io.loading import load_instance, validate_instance
from models.schema.checks import input_warnings
from tests.paths import INSTANCES

SAID = "efficiency.two_batch_overlap: true has no effect: "


def _overlap_warning(path: str, engine: str | None = None, **policy) -> str | None:
    data = load_instance(INSTANCES / path).model_dump(mode="json", exclude_unset=True)
    data["efficiency"] = {**(data.get("efficiency") or {}), "two_batch_overlap": True}
    data["policy"].update(policy)
    if engine is not None:
        data["engine"] = engine
    said = [w for w in input_warnings(validate_instance(data, path)) if w.startswith(SAID)]
    return said[0] if said else None


def test_a_dense_instance_has_no_experts_to_overlap():
    said = _overlap_warning("region-loss-3.yaml", "sglang-0.5")  # Llama models only
    assert said is not None and "mixture of experts" in said


@pytest.mark.parametrize(
    ("engine", "policy", "condition"),
    [
        # vLLM's DBO at attention DP 1 (TP8 x EP8 and the like): DP must be above 1 too
        ("vllm-0.11", {"expert_parallel": [8], "attention_data_parallel": [1]},
         "attention DP and EP both above 1"),
        # SGLang's TBO on DeepEP: EP4 over TP8's 8 GPUs splits each expert by TP as well
        ("sglang-0.5", {"tensor_parallel": [8], "expert_parallel": [4],
                        "attention_data_parallel": [1]}, "equal to TP x attention DP"),
        # TensorRT-LLM (the default profile) has none, even at DEP8
        (None, {"tensor_parallel": [1], "expert_parallel": [8], "attention_data_parallel": [8]},
         "TensorRT-LLM has no two-batch overlap"),
        # EP 1 (attention DP over TP-split experts): no engine overlaps it
        ("sglang-0.5", {"expert_parallel": [1], "attention_data_parallel": [8]}, "EP above 1"),
    ],
    ids=["vllm-dp1", "sglang-ep-below-tp-x-dp", "trtllm", "ep1"],
)  # fmt: skip
def test_no_layout_the_engine_overlaps_is_warned_with_its_condition(engine, policy, condition):
    said = _overlap_warning("moe-ep.yaml", engine, **policy)
    assert said is not None and condition in said
    assert "trtllm-0.20" in said if engine is None else engine in said


@pytest.mark.parametrize(
    ("engine", "policy"),
    [
        ("vllm-0.11", {"tensor_parallel": [1], "expert_parallel": [8],
                       "attention_data_parallel": [8]}),  # DEP8: DP8 x EP8
        ("sglang-0.5", {"tensor_parallel": [8], "expert_parallel": [8],
                        "attention_data_parallel": [1]}),  # TP8 x EP8: EP = 8 x 1
        ("sglang-0.5", {}),  # moe-ep's own grid: TP [1, 2, 4, 8] x DP [1, 8] x EP [1, 8]
    ],
    ids=["vllm-dep8", "sglang-tp8-ep8", "sglang-moe-ep"],
)  # fmt: skip
def test_a_layout_the_engine_overlaps_is_not_warned_about(engine, policy):
    assert _overlap_warning("moe-ep.yaml", engine, **policy) is None
