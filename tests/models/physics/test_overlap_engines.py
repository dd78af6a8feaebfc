"""Two-batch overlap where the engine runs it (`models.physics.overlap.engine_runs_overlap`,
`Efficiency.overlaps`): vLLM's DBO only at attention DP and EP both above 1 (its
docs/design/dbo.md; vllm/v1/worker/dp_utils.py splits nothing at DP 1), SGLang's TBO on
DeepEP, whose EP size is every GPU of the replica (ep = tp x dp), TensorRT-LLM never. A
layout its engine does not overlap is timed as the flag off: the same pass, to the bit."""

import pytest

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import Efficiency, efficiency_for, engine_family
from models.physics.overlap import engine_runs_overlap
from models.physics.precision import Precision
from models.physics.step_time import step_model

DECODE = (2048, 2048 * 2000)  # 2,048 sequences at 2,000 cached tokens
PREFILL = (0, 0, 16384, 16384 * 1000.5)  # 16,384 prompt tokens of 2,000-token prompts


@pytest.mark.parametrize(
    ("engine", "tp", "dp", "ep", "runs"),
    [
        ("vllm", 8, 1, 8, False),  # --data-parallel-size 1: DBO splits nothing
        ("vllm", 1, 8, 8, True),  # DEP8: --data-parallel-size 8 --enable-expert-parallel
        ("vllm", 1, 8, 1, False),  # no expert parallelism
        ("sglang", 8, 1, 8, True),  # DeepEP over TP8's 8 GPUs (attention TP since #6634)
        ("sglang", 1, 8, 8, True),  # DEP8: 8 = 1 x 8
        ("sglang", 8, 1, 4, False),  # DeepEP would make EP 8, not the planned 4
        ("sglang", 2, 4, 4, False),  # 4 < 2 x 4
        ("trtllm", 1, 8, 8, False),  # no switch at all
        (None, 8, 1, 4, True),  # no engine named: any EP above 1
        (None, 1, 8, 1, False),
    ],
)
def test_each_engine_overlaps_where_it_runs_the_split(engine, tp, dp, ep, runs):
    assert engine_runs_overlap(engine, tp, dp, ep) is runs


def test_a_profile_runs_as_its_engine():
    """sglang-0.5 falls back to trtllm-0.20's factors but runs as SGLang."""
    assert engine_family("vllm-0.11") == "vllm"
    assert engine_family("sglang-0.5") == "sglang"
    assert engine_family("trtllm-0.20") == "trtllm"
    h200 = gpu_catalog()["h200"]
    assert efficiency_for(h200, Precision.FP8, engine="sglang-0.5").overlap_engine == "sglang"
    assert Efficiency().overlap_engine is None


def _passes(engine: str, tp: int, dp: int, ep: int, overlap: bool):
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["qwen3-235b-a22b"]
    efficiency = efficiency_for(gpu, Precision.FP8, engine=engine)
    efficiency = efficiency.model_copy(update={"two_batch_overlap": overlap})
    steps = step_model(gpu, llm, Precision.FP8, Precision.FP8, tp, 1, efficiency, ep=ep, dp=dp)
    return steps.two_batch_overlap, steps.pass_s(*DECODE), steps.pass_s(*PREFILL)


@pytest.mark.parametrize(
    ("engine", "tp", "dp", "ep"),
    [("vllm-0.11", 8, 1, 8), ("sglang-0.5", 8, 1, 4), ("trtllm-0.20", 1, 8, 8)],
    ids=["vllm-dp1-ep8", "sglang-tp8-ep4", "trtllm-dep8"],
)
def test_a_layout_the_engine_does_not_overlap_is_timed_as_the_flag_off(engine, tp, dp, ep):
    overlapped, *on = _passes(engine, tp, dp, ep, True)
    assert not overlapped
    assert on == list(_passes(engine, tp, dp, ep, False)[1:])


@pytest.mark.parametrize(
    ("engine", "tp", "dp", "ep"),
    [("vllm-0.11", 1, 8, 8), ("sglang-0.5", 8, 1, 8), ("sglang-0.5", 1, 8, 8)],
    ids=["vllm-dp8-ep8", "sglang-tp8-ep8", "sglang-dep8"],
)
def test_a_layout_the_engine_overlaps_is_timed_as_two_micro_batches(engine, tp, dp, ep):
    """Overlapped, a 16K-token prefill pass runs faster than whole: its all-to-all hides
    under the other half's compute (SGLang's ablation: +27% to +35% at equal tokens)."""
    overlapped, _, prefill_on = _passes(engine, tp, dp, ep, True)
    assert overlapped
    assert prefill_on < _passes(engine, tp, dp, ep, False)[2]
