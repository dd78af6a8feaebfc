"""The engine diagnoses (calibration/engine_diagnosis.py): the depth form's arithmetic and
the term swap's identity."""

import pytest

from calibration.engine_diagnosis import SWAPPED, overhead_at_depth, term_swaps
from calibration.engines import load_engine_data


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
