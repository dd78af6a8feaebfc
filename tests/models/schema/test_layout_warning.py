"""A policy grid value the engine profile's engine runs in no layout of the grid is never
planned (`models.physics.overlap.engine_layout_problem`: vLLM's EP is 1 or TP x DP,
TensorRT-LLM's attention DP needs TP 1), and the instance is told so naming the engine's
rule; a value the engine runs somewhere in the grid is not warned about. And the overlap's
'no effect' check counts only layouts the engine runs: vLLM's DBO wants DP and EP above 1,
but TP2 x DP2 x EP2 is not a layout vLLM runs (its EP would be 2 x 2 = 4)."""

import pytest

from models.io.loading import load_instance, validate_instance
from models.schema.checks import input_warnings
from tests.paths import INSTANCES


def _warnings(engine: str, overlap: bool = False, **policy) -> list[str]:
    data = load_instance(INSTANCES / "moe-ep.yaml").model_dump(mode="json", exclude_unset=True)
    data["engine"] = engine
    data["policy"].update(policy)
    if overlap:
        data["efficiency"] = {"two_batch_overlap": True}
    return input_warnings(validate_instance(data, "moe-ep.yaml"))


@pytest.mark.parametrize(
    ("engine", "policy", "said"),
    [
        # TP8 x DP1: EP4 divides 8 GPUs, but vLLM's experts go over all 8 or none
        ("vllm-0.11", {"tensor_parallel": [8], "expert_parallel": [1, 4],
                       "attention_data_parallel": [1]}, "policy.expert_parallel: [4]"),
        # TP [2, 4]: no TP 1 for TensorRT-LLM's attention DP4
        ("trtllm-0.20", {"tensor_parallel": [2, 4], "expert_parallel": [1, 2],
                         "attention_data_parallel": [1, 4]},
         "policy.attention_data_parallel: [4]"),
    ],
    ids=["vllm-ep4", "trtllm-dp4"],
)  # fmt: skip
def test_a_value_the_engine_runs_nowhere_is_warned_with_its_rule(engine, policy, said):
    (warning,) = [w for w in _warnings(engine, **policy) if w.startswith(said)]
    assert "has no effect" in warning and engine in warning


@pytest.mark.parametrize(
    ("engine", "policy"),
    [
        # moe-ep's own grid: EP8 runs at TP8 x DP1 and TP1 x DP8 on every engine
        ("vllm-0.11", {}),
        ("trtllm-0.20", {}),
        # SGLang runs TP8 x EP4 (each expert over 2 GPUs)
        ("sglang-0.5", {"tensor_parallel": [8], "expert_parallel": [1, 4],
                        "attention_data_parallel": [1]}),
    ],
)  # fmt: skip
def test_a_grid_whose_values_each_run_somewhere_is_not_warned(engine, policy):
    said = [w for w in _warnings(engine, **policy) if "runs it in no layout" in w]
    assert said == []


def test_the_overlap_check_counts_only_layouts_the_engine_runs():
    """vLLM, TP [2] x DP [2] x EP [2]: DP and EP are above 1 (DBO's condition), but EP2 over
    2 x 2 = 4 GPUs is no vLLM layout, so the overlap changes no planned layout."""
    overlap = [
        w
        for w in _warnings(
            "vllm-0.11", True, tensor_parallel=[2], attention_data_parallel=[2], expert_parallel=[2]
        )
        if w.startswith("efficiency.two_batch_overlap")
    ]
    assert len(overlap) == 1 and "vllm-0.11" in overlap[0]
