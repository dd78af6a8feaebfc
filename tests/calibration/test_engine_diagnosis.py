"""The engine diagnoses (calibration/engine_diagnosis.py): the depth form's arithmetic and
the term swap's identity."""

import pytest

from calibration.engine_diagnosis import SWAPPED, overhead_at_depth, stall_splits, term_swaps
from calibration.engines import EngineData, load_engine_data


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
