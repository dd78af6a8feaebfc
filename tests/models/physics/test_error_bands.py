"""Measured error bands (models.physics.error_bands, calibration.bands): the percentiles by
hand on a tiny synthetic set, the widest-band rule for borrowed and unmeasured regimes,
and the capacity derate."""

import pytest

from calibration.bands import SignedError, bands, summarise
from models.physics import catalog, error_bands
from models.physics.error_bands import Band, band, band_for, capacity_derate, family_of


def test_band_of_five_signed_errors_by_hand() -> None:
    # Sorted errors -0.10, 0.00, 0.10, 0.20, 0.30 at ranks 0..4; numpy's linear rule puts
    # the q-th percentile at rank q/100 x (5 - 1):
    #   p10 at rank 0.4: -0.10 + 0.4 x (0.00 - -0.10) = -0.06
    #   p50 at rank 2:    0.10
    #   p90 at rank 3.6:  0.20 + 0.6 x (0.30 - 0.20) = 0.26
    stats = summarise([0.30, -0.10, 0.10, 0.00, 0.20])
    assert stats.p10 == pytest.approx(-0.10 + 0.4 * 0.10)
    assert stats.median == pytest.approx(0.10)
    assert stats.p90 == pytest.approx(0.20 + 0.6 * 0.10)
    assert stats.rows == 5


def test_bands_group_by_engine_family_regime() -> None:
    errors = [
        SignedError("a", "e1", "dense", "max_throughput", 0.1),
        SignedError("b", "e1", "dense", "max_throughput", -0.1),
        SignedError("c", "e1", "moe-tp", "max_throughput", 0.5),
    ]
    table = bands(errors)
    assert table["e1"]["dense"]["max_throughput"].rows == 2
    # two rows: the median is their mean, 0.0
    assert table["e1"]["dense"]["max_throughput"].median == pytest.approx(0.0)
    assert table["e1"]["moe-tp"]["max_throughput"].p90 == pytest.approx(0.5)


def _fake_table(monkeypatch) -> None:
    monkeypatch.setattr(
        error_bands,
        "_table",
        lambda: {
            "engines": {
                "e1": {
                    "dense": {
                        "max_throughput": {"p10": -0.08, "median": 0.02, "p90": 0.12, "rows": 33},
                        "latency_under_load": {"p10": -0.3, "median": 0, "p90": 0.05, "rows": 6},
                    },
                    "moe-tp": {
                        "max_throughput": {"p10": -0.2, "median": 0.1, "p90": 0.6, "rows": 9}
                    },
                }
            }
        },
    )


def test_measured_band_is_its_own(monkeypatch) -> None:
    _fake_table(monkeypatch)
    found = band("e1", "dense", "max_throughput")
    assert (found.p10, found.p90, found.rows, found.flag) == (-0.08, 0.12, 33, "")
    assert found.describe() == "-8% / +12% (dense, max throughput, 33 rows)"


def test_borrowed_and_unmeasured_get_the_widest_band_and_a_flag(monkeypatch) -> None:
    _fake_table(monkeypatch)
    # a dense model on a borrowed GPU: the widest dense throughput band (its only one,
    # -0.08..+0.12), flagged; not moe-tp's wider 0.6 - -0.2 = 0.8
    borrowed = band("e1", "dense", "borrowed")
    assert (borrowed.p10, borrowed.p90, borrowed.flag) == (-0.08, 0.12, "borrowed")
    assert "BORROWED" in borrowed.describe() and borrowed.uncertain
    # moe-tp borrowed: its own family's band
    assert band("e1", "moe-tp", "borrowed").p90 == 0.6
    # moe-dep has no band of its own: the widest of the profile, moe-tp's (0.8 > 0.20)
    unmeasured = band("e1", "moe-dep", "max_throughput")
    assert (unmeasured.p90, unmeasured.flag) == (0.6, "unmeasured")
    assert band("e1", "moe-dep", "latency_under_load").p10 == -0.3  # the only latency band
    assert band("no-such-engine", "dense", "max_throughput") is None


def test_capacity_derate_is_one_over_one_plus_the_optimistic_error(monkeypatch) -> None:
    _fake_table(monkeypatch)
    assert capacity_derate(band("e1", "dense", "max_throughput")) == pytest.approx(1 / 1.12)
    # latency: the optimistic side is p10 < 0 (latency promised too low): 1 / (1 + 0.3)
    assert capacity_derate(band("e1", "dense", "latency_under_load")) == pytest.approx(1 / 1.3)
    pessimistic = Band("e1", "dense", "max_throughput", -0.3, -0.2, -0.1, 4)
    assert capacity_derate(pessimistic) == 1.0
    assert capacity_derate(None) == 1.0


def test_families() -> None:
    dense, moe = catalog.llm("llama-3.1-8b"), catalog.llm("qwen3-30b-a3b")
    assert family_of(dense) == "dense"
    assert family_of(moe) == "moe-tp"
    assert family_of(moe, ep=8) == "moe-ep"
    assert family_of(moe, ep=8, dp=8) == "moe-dep"


def test_a_borrowed_gpu_reads_the_borrowed_regime() -> None:
    # gb200 borrows b200's factors (efficiency_like), h100-sxm has rows of its own
    llm = catalog.llm("llama-3.1-8b")
    own = band_for(None, "h100-sxm", llm)
    borrowed = band_for(None, "gb200", llm)
    assert own is not None and own.regime == "max_throughput" and not own.uncertain
    assert borrowed is not None and borrowed.regime == "borrowed" and borrowed.uncertain


def test_the_shipped_file_holds_every_profile_it_names() -> None:
    from models.physics.efficiency import engine_profiles

    for engine in error_bands._table().get("engines", {}):
        assert engine in engine_profiles()


def test_a_row_of_another_engine_version_joins_the_newest_profile_of_its_engine(
    monkeypatch,
) -> None:
    from calibration import bands as tool

    profiles = {"trtllm-0.9": {}, "trtllm-0.20": {}, "trtllm-0.17": {}, "vllm-0.12": {}}
    monkeypatch.setattr(tool, "engine_profiles", lambda: profiles)
    assert tool.profile_for("trtllm-0.17") == "trtllm-0.17"  # its own profile
    # (0, 20) > (0, 17) > (0, 9): versions compare as numbers, not text
    assert tool.profile_for("triton-trtllm-0.14") == "trtllm-0.20"
    assert tool.profile_for("trtllm-post-v1.0") == "trtllm-0.20"
    assert tool.profile_for("vllm-0.19") == "vllm-0.12"
    assert tool.profile_for("mlperf-tensorrt-v4.1") is None


def test_a_generation_the_profile_has_no_factors_of_reads_borrowed() -> None:
    from models.physics.error_bands import borrowed_for

    # trtllm-0.20 was fitted on B200, H100 and H200 rows; A100 runs on its fallback
    # trtllm-0.17's Ampere fit, whose own rows include A100
    assert not borrowed_for("h100-sxm", "trtllm-0.20")
    assert borrowed_for("a100-80gb-sxm", "trtllm-0.20")
    assert not borrowed_for("a100-80gb-sxm", "trtllm-0.17")
    assert borrowed_for("gb200", "trtllm-0.20")  # efficiency_like: b200


def test_a_layout_string_gives_expert_and_data_parallel_sizes() -> None:
    from calibration.bands import _ep_dp

    assert _ep_dp("tp8") == (1, 1)
    assert _ep_dp("tp1dp8ep8") == (8, 8)
    assert _ep_dp("tp2ep4") == (4, 1)
