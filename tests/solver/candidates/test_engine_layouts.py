"""The planner offers each engine only the expert layouts that engine runs as laid out
(`models.physics.overlap.engine_layout_problem`): vLLM's experts are split over every GPU
of a stage or none (EP 1 or EP = TP x DP), TensorRT-LLM's attention DP runs the attention at TP 1,
SGLang runs every EP dividing TP x DP. A layout an engine would start as another (vLLM
given --enable-expert-parallel for TP8 x EP4 runs EP8) is no candidate on its profile; the
layouts it runs still are, and other engines keep theirs.

moe-ep's Qwen3-235B-A22B (128 routed experts, 64 attention heads) on H200 under a grid
held to the layouts named; `configurations` builds no physics, so each case is fast."""

from pathlib import Path

import pytest
import yaml

from models.physics.overlap import engine_layout_problem, unrunnable_values
from models.schema.instance import Instance
from solver.candidates.layouts import configurations

MOE_EP = Path(__file__).parents[3] / "instances" / "moe-ep.yaml"


def _layouts(engine: str, tp: list[int], dp: list[int], ep: list[int]) -> set[tuple]:
    """The (TP, DP, EP) of every candidate of moe-ep's workload on `engine`'s profile."""
    document = yaml.safe_load(MOE_EP.read_text())
    document["engine"] = engine
    document["policy"].update(tensor_parallel=tp, attention_data_parallel=dp, expert_parallel=ep)
    instance = Instance.model_validate(document)
    return {(c.tp, c.dp, c.ep) for c in configurations(instance, instance.workloads[0])}


def test_vllm_offers_ep_1_or_every_gpu_of_the_stage():
    """TP8 x EP4: vLLM's --enable-expert-parallel makes each of the 8 GPUs an expert rank
    (EP = 8 x 1 = 8), so EP4 is no candidate; EP1 and EP8 are. TP2 x DP8 x EP8 (16 GPUs,
    EP would be 2 x 8 = 16) is none either; TP1 x DP8 x EP8 (EP = 1 x 8) is."""
    layouts = _layouts("vllm-0.11", [1, 2, 8], [1, 8], [1, 4, 8])
    assert (8, 1, 4) not in layouts and (2, 8, 8) not in layouts
    assert {(8, 1, 1), (8, 1, 8), (1, 8, 8), (2, 8, 1)} <= layouts
    assert all(ep in (1, tp * dp) for tp, dp, ep in layouts)


def test_trtllm_offers_attention_dp_at_tp1_only():
    """TensorRT-LLM's attention DP runs the attention unsplit on every GPU: TP2 x DP4 (8
    GPUs, EP4 or EP1) would start as TP1 x DP8, so neither is a candidate; TP1 x DP4 x EP4
    and TP2 x DP1 x EP2 (moe_tp 1 x moe_ep 2 = tp_size 2) are."""
    layouts = _layouts("trtllm-0.20", [1, 2], [1, 4], [1, 2, 4])
    assert not {(2, 4, 4), (2, 4, 1), (2, 4, 2)} & layouts
    assert {(1, 4, 4), (1, 4, 1), (2, 1, 2), (2, 1, 1)} <= layouts
    assert all(dp == 1 or tp == 1 for tp, dp, _ in layouts)


def test_sglang_keeps_every_ep_dividing_the_stage():
    """SGLang's --ep-size splits the rest of its TP group over each expert (moe_tp =
    tp_size / ep_size): TP8 x EP4 (moe TP 2) and TP2 x DP4 x EP4 are both candidates, the
    layouts the other two engines are refused."""
    layouts = _layouts("sglang-0.5", [2, 8], [1, 4], [1, 4, 8])
    assert {(8, 1, 4), (2, 4, 4), (2, 4, 8), (8, 1, 8)} <= layouts


@pytest.mark.parametrize(
    ("engine", "layout", "runs_as"),
    [
        ("vllm", (8, 1, 4), "EP8"),
        ("vllm", (2, 4, 2), "EP8"),
        ("trtllm", (2, 4, 4), "TP1 x attention DP8"),
    ],
)
def test_the_refusal_says_what_the_engine_would_start(engine, layout, runs_as):
    problem = engine_layout_problem(engine, *layout)
    assert problem is not None and f"would run as {runs_as}" in problem


def test_unrunnable_values_are_the_grid_values_no_runnable_layout_uses():
    """vLLM, TP [8] x DP [1] x EP [1, 4, 8]: EP4 runs in no layout (8 % 4 == 0 places it,
    vLLM does not), EP8 runs at TP8. TensorRT-LLM, TP [2, 4] x DP [1, 4]: DP4 needs TP1,
    which the grid lacks. An EP the memory rule places nowhere (EP 16 over 8 GPUs) is not
    the engine's to report."""
    assert unrunnable_values("vllm", [8], [1], [1, 4, 8, 16]) == {
        "attention_data_parallel": [],
        "expert_parallel": [4],
    }
    assert unrunnable_values("trtllm", [2, 4], [1, 4], [1, 8]) == {
        "attention_data_parallel": [4],
        "expert_parallel": [8],
    }
    assert unrunnable_values("sglang", [2, 8], [1, 4], [1, 4, 8]) == {
        "attention_data_parallel": [],
        "expert_parallel": [],
    }
