"""The MoE calibration tool (`calibration.moe`): its grid, its file, the trial constants
and a fit that recovers constants it was given."""

import dataclasses

import pytest
import yaml

from calibration.moe import (
    HALF_TOKENS_GRID,
    LATENCY_GRID_S,
    MoeFit,
    fit_moe_constants,
    latency_grid,
    render_moe_yaml,
)
from calibration.moe_rows import bench_settings, load_moe_rows, predict_moe
from calibration.rows import calibration_dir
from models.physics.catalog import gpu_catalog
from models.physics.catalog.moe_efficiency import (
    MoeEfficiency,
    moe_efficiency_for,
    trial_constants,
)
from models.physics.efficiency import lender_generation
from models.physics.precision import Precision


@pytest.fixture(scope="module")
def rows():
    return load_moe_rows(calibration_dir())[0]


def test_latency_grid_stops_at_100_us_with_nvlink(rows):
    pcie = [r for r in rows if r.gpu == "rtx-pro-6000"]
    nvlink = [r for r in rows if r.gpu == "h200"]
    assert latency_grid(pcie) == LATENCY_GRID_S and LATENCY_GRID_S[-1] == 400e-6
    assert latency_grid(nvlink) == (10e-6, 20e-6, 50e-6, 100e-6)


def test_hopper_rows_run_a_bf16_kv_cache(rows):
    by_gpu = {r.gpu: r for r in rows if r.kv is None}
    assert by_gpu["h200"].kv_precision is Precision.BF16
    assert by_gpu["b200"].kv_precision is Precision.FP8
    assert by_gpu["rtx-pro-6000"].kv_precision is Precision.FP8


def test_rows_that_set_their_run_keep_it_and_stay_held_out(rows):
    """The DeepSeek-R1 DEP8 rows of TensorRT-LLM's DeepSeek blog set their KV cache and
    per-rank caps: B200 FP4 with an FP8 cache at 896 sequences / 2,048 tokens, with a
    16-bit cache at 384 / 1,536; H200 FP8 at 128 / 1,151 with the checkpoint's 16-bit
    cache. They are never fitted on."""
    blog = {(r.gpu, r.run_caps): r for r in rows if r.run_caps is not None}
    assert set(blog) == {("b200", (896, 2048)), ("b200", (384, 1536)), ("h200", (128, 1151))}
    assert blog["b200", (896, 2048)].kv_precision is Precision.FP8
    assert blog["b200", (384, 1536)].kv_precision is Precision.BF16
    assert blog["h200", (128, 1151)].kv_precision is Precision.BF16
    for row in blog.values():
        assert row.held_out and row.family == "DEP" and (row.tp, row.dp, row.ep) == (1, 8, 8)
        assert bench_settings(row) == row.run_caps


def test_trial_constants_replace_the_file_inside_the_block():
    with trial_constants({"hopper": {"alltoall_latency_s": 3e-5, "gemm_half_tokens": 7.0}}):
        inside = moe_efficiency_for("h200")
    assert (inside.alltoall_latency_s, inside.gemm_half_tokens) == (3e-5, 7.0)
    assert moe_efficiency_for("h200") != inside  # the file again


def test_written_file_reads_back_as_the_fitted_constants():
    fits = [
        MoeFit("hopper", 1e-4, 64.0, 50, 19.0, 21, 21.5),
        MoeFit("rtx-pro-6000", 2e-4, 0.0, 53, 17.2, 35, 20.3),
    ]
    table = yaml.safe_load(render_moe_yaml(fits))["by_key"]
    assert MoeEfficiency(**table["hopper"]) == MoeEfficiency(
        alltoall_latency_s=1e-4, gemm_half_tokens=64.0
    )
    assert MoeEfficiency(**table["rtx-pro-6000"]).alltoall_latency_s == 2e-4
    assert MoeEfficiency(**table["default"]) == MoeEfficiency()
    assert table["ampere"] == {"dequant_gemm_rate": 0.6}  # sourced, not fitted: moe_sources.py
    assert fits[0].on_bound and not fits[1].on_bound  # 64 rows: the top of its grid
    assert HALF_TOKENS_GRID[-1] == 64.0


def test_fit_recovers_constants_it_was_given(rows):
    """Fit rows on H200 of Llama 4 Maverick DEP8 (the all-to-all) and prefill-heavy Llama
    4 Scout TP4 (the grouped GEMM), whose measurements are the model's own predictions at
    50 us and 32 rows: the fit lands on that grid point, error 0."""
    chosen = [r for r in rows if r.gpu == "h200" and r.dp == 8 and not r.held_out][:2]
    chosen += [
        r
        for r in rows
        if r.gpu == "h200"
        and r.model == "llama-4-scout"
        and not r.held_out
        and r.lengths in ("128/128", "5000/500")
    ]
    assert len(chosen) == 4
    truth = {"hopper": {"alltoall_latency_s": 50e-6, "gemm_half_tokens": 32.0}}
    with trial_constants(truth):
        synthetic = [dataclasses.replace(r, measured=predict_moe(r)) for r in chosen]
    (fit,) = fit_moe_constants(synthetic, dense_rows=lambda generation: [])
    assert (fit.alltoall_latency_s, fit.gemm_half_tokens) == (50e-6, 32.0)
    assert fit.fit_median_pct == pytest.approx(0.0, abs=1e-9)


def test_a_gpu_without_a_generation_borrows_its_lenders_moe_constants():
    """As its dense factors do (efficiency_like): gh200 names h200, h800 and the MI3xx
    h100-sxm, b300 and gb300 b200; each then reads its lender's generation's constants.
    A GPU of its own generation lends nothing; an entry of its own still wins (gb200
    borrows b200's generation, its own key sets both constants)."""
    assert lender_generation("h200") == ("hopper", None)
    assert lender_generation("gh200") == ("hopper", "h200")
    for gpu, lender in (("gh200", "h200"), ("h800", "h100-sxm"), ("mi300x", "h100-sxm"),
                        ("mi355x", "h100-sxm"), ("b300", "b200"), ("gb300", "b200")):  # fmt: skip
        assert moe_efficiency_for(gpu) == moe_efficiency_for(lender), gpu
    table = {"blackwell": {"gemm_half_tokens": 64.0}, "gb200": {"gemm_half_tokens": 0.0}}
    with trial_constants(table):
        assert moe_efficiency_for("gb200").gemm_half_tokens == 0.0
        assert moe_efficiency_for("b300").gemm_half_tokens == 64.0
    inline = gpu_catalog()["gh200"].model_copy(update={"name": "my-gh200"})
    assert moe_efficiency_for(inline) == moe_efficiency_for("h200")  # a spec's own lender
