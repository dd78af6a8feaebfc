"""Two-batch overlap where the engine runs it (`models.physics.overlap.engine_runs_overlap`,
`Efficiency.overlaps`): vLLM's DBO only at attention DP and EP both above 1 (its
docs/design/dbo.md; vllm/v1/worker/dp_utils.py splits nothing at DP 1), SGLang's TBO on
DeepEP, whose EP size is every GPU of the replica (ep = tp x dp), TensorRT-LLM never. A
layout its engine does not overlap is timed as the flag off: the same pass, to the bit."""

import pytest

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import Efficiency, efficiency_for, engine_family
from models.physics.overlap import engine_runs_overlap, overlap_token_floors
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


def _pass_pair(engine: str, tp: int, dp: int, ep: int, decode: tuple, prefill: tuple):
    """(overlap on, overlap off) of one decode pass and one prefill pass."""
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["qwen3-235b-a22b"]
    out = []
    for overlap in (True, False):
        efficiency = efficiency_for(gpu, Precision.FP8, engine=engine)
        efficiency = efficiency.model_copy(update={"two_batch_overlap": overlap})
        steps = step_model(gpu, llm, Precision.FP8, Precision.FP8, tp, 1, efficiency, ep=ep, dp=dp)
        out.append((steps.pass_s(*decode), steps.pass_s(*prefill)))
    return out


def test_vllm_splits_only_batches_past_its_dbo_thresholds():
    """vLLM's DEP8 splits a DP rank's batch only from 32 decode tokens (decode only) or 512
    tokens (with prompts): `--dbo-decode-token-threshold` 32, `--dbo-prefill-token-threshold`
    512 (vllm/config/parallel.py; ubatch_utils.check_ubatch_thresholds). Below them the pass
    is the flag off's to the bit; at them it is not (the split changes the timing)."""
    assert overlap_token_floors("vllm") == (32, 512)
    # 8 ranks: 31 x 8 = 248 decode tokens is 31 a rank (whole); 32 x 8 = 256 is 32 (split)
    small = _pass_pair("vllm-0.11", 1, 8, 8, (248, 248 * 2000), (0, 0, 511 * 8, 511 * 8 * 500.5))
    assert small[0] == small[1]
    large = _pass_pair("vllm-0.11", 1, 8, 8, (256, 256 * 2000), (0, 0, 512 * 8, 512 * 8 * 500.5))
    assert large[0][0] != large[1][0] and large[0][1] != large[1][1]


def test_one_sequence_a_rank_runs_whole_on_every_engine():
    """A decode pass of one sequence per rank has no two micro-batches to make: SGLang's
    DEP8 at 8 sequences (1 a rank) is the flag off's; at 16 (2 a rank) it splits."""
    assert overlap_token_floors("sglang") == (2, 0)
    prefill = (0, 0, 16384, 16384 * 1000.5)
    one = _pass_pair("sglang-0.5", 1, 8, 8, (8, 8 * 2000), prefill)
    assert one[0][0] == one[1][0]
    two = _pass_pair("sglang-0.5", 1, 8, 8, (16, 16 * 2000), prefill)
    assert two[0][0] != two[1][0]
