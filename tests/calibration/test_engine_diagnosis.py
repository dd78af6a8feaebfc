"""The engine diagnoses (calibration/engine_diagnosis.py): the depth form's arithmetic, the
term swap's identity and the prefill rate of a burst."""

import pytest

from calibration.engine_diagnosis import (
    SWAPPED,
    overhead_at_depth,
    prefill_rates,
    prompt_tokens_per_s,
    stall_splits,
    term_swaps,
)
from calibration.engines import EngineData, load_engine_data
from models.physics.catalog import gpu_catalog, llm_catalog


def test_the_overhead_at_depth_is_a_plus_b_times_layers() -> None:
    """gpt-oss-120b's 36 layers at a = 1 ms, b = 20 us a layer: 1 + 36 x 0.02 = 1.72 ms;
    b = 0 is the constant overhead at every depth."""
    assert overhead_at_depth(1e-3, 2e-5, 36) == pytest.approx(1.72e-3)
    assert overhead_at_depth(5e-3, 0.0, 36) == overhead_at_depth(5e-3, 0.0, 94) == 5e-3


def test_a_profile_swapping_its_own_factors_keeps_its_errors() -> None:
    """The donor's factors are the profile's own (vllm-0.10 on h100-sxm has no Hopper set:
    both resolve to trtllm-0.20's Hopper fit), so every swap replays the catalog: the same
    errors, figure by figure, for each factor of SWAPPED and for the whole set."""
    data, _ = load_engine_data()
    swaps = term_swaps(data, "vllm-0.10", "h100-sxm", "vllm-0.10")
    assert set(swaps) == {"catalog", "donor", *SWAPPED}
    assert swaps["catalog"]  # the rows are there
    for name, errors in swaps.items():
        assert errors == swaps["catalog"], name


def test_a_lone_user_has_no_stall_and_its_split_error_is_the_step() -> None:
    """MiniMax-M2.5 on 8 H100 (SGLang 0.5.9) at one user and at 16, which print a median ITL: a
    lone user has no prefill between two of its tokens, so its replayed stall (mean TPOT -
    median gap) is nil up to the context growing over the request (under 2% of the step);
    the split's error is the step's, against the 8.08 ms printed; under load the stall
    the replay adds is positive (prefill batches run alone, the decodes waiting)."""
    data, _ = load_engine_data()
    runs = [
        r
        for r in data.runs
        if r.run.model == "minimax-m2.5" and r.run.gpu == "h100-sxm" and r.run.concurrency <= 16
    ]
    splits = stall_splits(EngineData(runs, [], data.versions))
    assert sorted(s.run.run.concurrency for s in splits) == [1, 16]
    for split in splits:
        stall = split.predicted_tpot_ms - split.predicted_itl_ms
        assert split.predicted_stall_ms == pytest.approx(stall)
        if split.run.run.concurrency == 1:
            assert abs(stall) < 0.02 * split.predicted_itl_ms
            assert split.measured_itl_ms == 8.08
            assert split.itl_error_pct == pytest.approx((split.predicted_itl_ms / 8.08 - 1) * 100)
        else:
            assert stall > 0


def test_a_burst_run_s_prompt_rate_is_its_prompt_to_reply_ratio_times_its_output_rate() -> None:
    """vLLM 0.11 serving Qwen3-32B on one H100, 500 requests of 3,996/200 tokens at once:
    102.21 output tok/s over 976.29 s; 1,997,942 prompt tokens / 976.29 s = 2,046.5, the
    same as 3,995.884 / 199.58 x 102.21 (the means of the totals): the run's duration is
    N O / output/s."""
    assert prompt_tokens_per_s(1_997_942 / 500, 99_790 / 500, 102.21) == pytest.approx(
        1_997_942 / (99_790 / 102.21)
    )
    assert prompt_tokens_per_s(3996, 200, 102.21) == pytest.approx(3996 / 200 * 102.21)


def test_prefill_rates_read_the_prefill_bound_bursts_only() -> None:
    """The 2,000/100, 4,000/200 and 32,000/100 bursts (P >= 10 O and 1,000 tokens) are
    read; ShareGPT's (P ~ O), the 128/4 admission runs and every closed-loop run are not;
    each rate's error is its run's output tokens/s error, and its BF16 share is
    2 x active parameters x prompt tokens/s over the GPUs' peak."""
    data, _ = load_engine_data()
    rates = prefill_rates(data)
    assert rates
    for rate in rates:
        m = rate.run.run
        assert m.requests <= m.concurrency
        assert m.prompt_tokens >= max(10 * m.output_tokens, 1000)
        share = 2 * llm_catalog()[m.model].active_params() * rate.measured_tokens_per_s
        share /= m.tp * gpu_catalog()[m.gpu].dense_tflops.bf16 * 1e12
        assert rate.achieved_bf16_share == pytest.approx(share)
    prompts = {round(rate.run.run.prompt_tokens, -3) for rate in rates}
    assert prompts == {2000, 4000, 32000}
