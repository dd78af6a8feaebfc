"""TensorRT-LLM v1.0 dense throughput rows (calibration/data/trtllm_perf.csv): a release no
profile is fitted on, so every row is held out; the tables give the whole TP x PP group's
output tokens/s, read per GPU; GB200 and the RTX PRO 6000 are read on their catalog names."""

import pytest

from calibration.calibrate import PROFILES
from calibration.rows import FITTED_TRTLLM, load_rows


def test_only_the_fitted_releases_rows_can_be_fit_rows() -> None:
    """The reader's fitted releases are the profiles the fit runs, and every row of another
    release (v1.0) is held out."""
    assert set(FITTED_TRTLLM) == set(PROFILES)
    rows, _ = load_rows()
    v1 = [row for row in rows if row.engine == "trtllm-1.0"]
    assert len(v1) == 146  # 40 + 40 (RTX) Llama 3.3 70B, 40 + 6 (RTX) 405B, 20 Llama 3.1 8B
    assert all(row.held_out and row.kind == "offline" for row in v1)
    assert all(
        row.engine in FITTED_TRTLLM for row in rows if row.source == "trtllm" and not row.held_out
    )


def test_a_pipeline_rows_group_figure_is_read_per_gpu() -> None:
    """RTX 6000 Pro, Llama 3.3 70B FP4, '8 GPUs' TP1,PP8, 128/128: 11,881 tokens/s for the
    group, 11,881 / 8 = 1,485.125 per GPU; GB200 TP1 at 20000/2000: 755 per GPU."""
    rows, _ = load_rows()
    (rtx,) = [
        r
        for r in rows
        if r.engine == "trtllm-1.0"
        and r.gpu == "rtx-pro-6000"
        and r.pp == 8
        and r.model == "llama-3.3-70b"
        and r.mix.prompt_mean_tokens == 128
        and r.mix.output_mean_tokens == 128
    ]
    assert rtx.tps == (1,)
    assert rtx.measured == pytest.approx(11881 / 8, abs=0.01)  # the CSV keeps two decimals
    (gb200,) = [
        r
        for r in rows
        if r.engine == "trtllm-1.0"
        and r.gpu == "gb200"
        and r.model == "llama-3.3-70b"
        and r.mix.prompt_mean_tokens == 20000
    ]
    assert gb200.measured == pytest.approx(755.0)
