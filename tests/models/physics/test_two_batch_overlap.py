"""Two-batch overlap (models.physics.overlap): the two schedules by hand, their bounds, and
the step model's pass with the flag on and off."""

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.overlap import (
    OVERLAPPED_NORMAL_COMM_STRETCH,
    on_shared_sms,
    overlap_compute_share,
    overlapped_pass_s,
)
from models.physics.precision import Precision
from models.physics.step_time import step_model

SECONDS = st.floats(min_value=0.0, max_value=10.0, allow_nan=False)
SHARE = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def test_decode_hides_the_alltoall_behind_the_other_attention_only() -> None:
    """Decode: 2 x (e + max(a, m)). a = 3, e = 1, m = 5: 2 x (1 + 5) = 12 (the all-to-all
    shows 2 x (5 - 3) = 4 past the 2 x (3 + 1) = 8 of compute); a = 6: 2 x (1 + 6) = 14,
    all hidden."""
    assert overlapped_pass_s(3.0, 1.0, 5.0, 1 / 3, prefill=False) == pytest.approx(12.0)
    assert overlapped_pass_s(6.0, 1.0, 5.0, 1 / 3, prefill=False) == pytest.approx(14.0)


def test_prefill_pairs_each_collective_with_the_other_micro_batchs_stage() -> None:
    """Prefill: a = 3, e = 4, m = 6 with the FP8 dispatch's 1/3 of the bytes (d = 2, c = 4):
    max(3, 2) + max(4, 2) + max(4, 4) + max(3, 4) = 3 + 4 + 4 + 4 = 15, against 2 x (3 + 4)
    = 14 of compute and 2 x (3 + 4 + 6) = 26 unoverlapped."""
    assert overlapped_pass_s(3.0, 4.0, 6.0, 1 / 3, prefill=True) == pytest.approx(15.0)


@given(SECONDS, SECONDS, SECONDS, SHARE, st.booleans())
def test_an_overlapped_pass_lies_between_its_roofs_and_no_overlap(a, e, m, share, prefill):
    """Never below both micro-batches' compute 2 (a + e) nor their all-to-alls 2 m on one
    link, never above running them one after the other, 2 (a + e + m)."""
    pass_s = overlapped_pass_s(a, e, m, share, prefill)
    assert pass_s >= max(2 * (a + e), 2 * m) - 1e-9
    assert pass_s <= 2 * (a + e + m) + 1e-9


def _deepseek_ep72():
    gpu, llm = gpu_catalog()["h100-sxm"], llm_catalog()["deepseek-v3"]
    efficiency = efficiency_for(gpu, Precision.FP8, engine="sglang-0.5")
    return step_model(
        gpu, llm, Precision.FP8, Precision.BF16, 1, 1, efficiency, ep=72, dp=72, redundant=32
    )


def test_the_flag_comes_from_the_efficiency_and_is_off_by_default() -> None:
    steps = _deepseek_ep72()
    assert steps.two_batch_overlap is False
    gpu, llm = gpu_catalog()["h100-sxm"], llm_catalog()["deepseek-v3"]
    on = efficiency_for(gpu, Precision.FP8, engine="sglang-0.5").model_copy(
        update={"two_batch_overlap": True}
    )
    assert step_model(gpu, llm, Precision.FP8, Precision.BF16, 1, 1, on, ep=72, dp=72,
                      redundant=32).two_batch_overlap  # fmt: skip
    assert steps.dispatch_share == pytest.approx(1 / (1 + 2))  # FP8 dispatch, BF16 combine


def test_decode_overlap_loses_at_small_batches_and_wins_at_large_ones() -> None:
    """SGLang's ablation (lm-sys blog 2025-05-05): two-batch overlap in decode loses below
    64 to 128 tokens a GPU (-27% at 32) and wins 25.5% at 256: halves read the weights
    twice and pay the collectives' latency twice, which only a large batch's all-to-all
    outweighs."""
    steps = _deepseek_ep72()
    overlapped = replace(steps, two_batch_overlap=True)
    for per_gpu, wins in ((32, False), (256, True)):
        sequences = 72 * per_gpu
        off = steps.pass_s(sequences, sequences * 2000)
        on = overlapped.pass_s(sequences, sequences * 2000)
        assert (on < off) is wins


def test_a_layout_without_an_alltoall_runs_as_one_batch() -> None:
    """Mixtral at TP2 (ep = dp = 1) has no all-to-all: the flag changes nothing."""
    gpu, llm = gpu_catalog()["h100-sxm"], llm_catalog()["mixtral-8x7b"]
    efficiency = efficiency_for(gpu, Precision.FP8)
    steps = step_model(gpu, llm, Precision.FP8, Precision.FP8, 2, 1, efficiency)
    overlapped = replace(steps, two_batch_overlap=True)
    assert overlapped.pass_s(64, 64 * 1000, 512, 512 * 256) == steps.pass_s(
        64, 64 * 1000, 512, 512 * 256
    )


def test_attention_dp_over_tp_experts_runs_as_one_batch() -> None:
    """DeepSeek-V3 at TP1 with attention DP8 and EP1 has dispatch and combine collectives
    (the experts span the 8 attention groups) but no experts' all-to-all an engine
    overlaps (vLLM's DBO needs expert parallelism, SGLang's TBO DeepEP): the flag changes
    nothing, where as two half micro-batches each reading the weights again it made the
    pass slower (dbo14: a DP8 plan of 13 replicas against 11 without the flag)."""
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["deepseek-v3"]
    efficiency = efficiency_for(gpu, Precision.FP8, engine="sglang-0.5")
    steps = step_model(gpu, llm, Precision.FP8, Precision.BF16, 1, 1, efficiency, ep=1, dp=8)
    overlapped = replace(steps, two_batch_overlap=True)
    for shape in ((64, 64 * 1000, 0, 0), (0, 0, 4096, 4096 * 2048)):
        assert overlapped.pass_s(*shape) == steps.pass_s(*shape)


def test_the_parts_of_an_overlapped_pass_sum_to_it() -> None:
    """The report's terms: the two halves' compute plus the all-to-all that shows past it."""
    overlapped = replace(_deepseek_ep72(), two_batch_overlap=True)
    sequences = 72 * 256
    parts = overlapped.pass_parts(sequences, sequences * 2000)
    assert parts.total_s == pytest.approx(overlapped.pass_s(sequences, sequences * 2000))
    assert parts.comm_s > 0


def test_prefill_compute_keeps_the_sms_deepeps_kernels_leave() -> None:
    """DeepEP's normal kernels hold 20 SMs: an H100's 132 leave 112, 112 / 132 = 0.848 of
    the compute rate; a GPU whose SM count is not stated keeps all of it."""
    assert overlap_compute_share(132) == pytest.approx(112 / 132)
    assert overlap_compute_share(None) == 1.0
    assert gpu_catalog()["h100-sxm"].sm_count == 132
    assert _deepseek_ep72().overlap_compute_share == pytest.approx(112 / 132)


def test_fewer_sms_slow_the_compute_terms_only() -> None:
    """PassParts order: linear compute, weight read, attention compute, KV read, prefill
    attention, communication, expert compute, expert read, expert kernels. At half the SMs
    the four compute terms double (1 -> 2, 3 -> 6, 5 -> 10, 7 -> 14), the rest stay."""
    terms = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0)
    assert on_shared_sms(terms, 0.5) == (2.0, 2.0, 6.0, 4.0, 10.0, 6.0, 14.0, 8.0, 9.0)


def test_the_sm_share_slows_an_overlapped_prefill_and_not_a_decode() -> None:
    """At the all-to-all's own speed (stretch 1): stretched, this pass's collectives outlast
    every stage they pair with and hide the slower compute."""
    overlapped = replace(_deepseek_ep72(), two_batch_overlap=True, overlap_comm_stretch=1.0)
    all_sms = replace(overlapped, overlap_compute_share=1.0)
    tokens = 32 * 16384.0
    pairs = tokens * 1000.5
    assert overlapped.pass_s(0.0, 0.0, tokens, pairs) > all_sms.pass_s(0.0, 0.0, tokens, pairs)
    sequences = 72 * 256
    decode = (sequences, sequences * 2000)
    assert overlapped.pass_s(*decode) == all_sms.pass_s(*decode)


def test_an_overlapped_prefills_alltoall_runs_slower_than_alone_and_a_decodes_does_not() -> None:
    """The blog: prefill's communication under overlap is slower than its unit test, decode's
    kernels avoid the contention. A stretch of 1 is the all-to-all at its own speed; the
    step model's is OVERLAPPED_NORMAL_COMM_STRETCH, above 1."""
    overlapped = replace(_deepseek_ep72(), two_batch_overlap=True)
    assert overlapped.overlap_comm_stretch == OVERLAPPED_NORMAL_COMM_STRETCH > 1.0
    alone = replace(overlapped, overlap_comm_stretch=1.0)
    tokens = 32 * 16384.0
    pairs = tokens * 1000.5
    assert overlapped.pass_s(0.0, 0.0, tokens, pairs) > alone.pass_s(0.0, 0.0, tokens, pairs)
    sequences = 72 * 256
    decode = (sequences, sequences * 2000)
    assert overlapped.pass_s(*decode) == alone.pass_s(*decode)
    without = replace(overlapped, two_batch_overlap=False)
    assert without.pass_s(0.0, 0.0, tokens, pairs) == replace(
        alone, two_batch_overlap=False
    ).pass_s(0.0, 0.0, tokens, pairs)  # the stretch is the overlap's, not the kernels'
