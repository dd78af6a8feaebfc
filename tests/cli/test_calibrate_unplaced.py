"""`calibrate` on runs the replay cannot place (FP4 on an H100, which has no FP4 tensor
cores; TP 3 of a model with 8 KV heads) wrote a profile anyway: the base profile's factors
labelled as fitted on the runs, `median_abs_error_pct: .nan`, exit 0. It now refuses,
naming each run, and writes nothing."""

import pytest

HEADER = "model,gpu,precision,tp,isl,osl,concurrency,output_tok_s,ttft_mean_ms,tpot_mean_ms"


@pytest.mark.parametrize(
    ("row", "layout"),
    [
        ("llama-3.1-8b,h100-sxm,fp4,1,1000,200,8,3000,50,10", "h100-sxm fp4 tp1 pp1"),
        ("llama-3.1-8b,h100-sxm,bf16,3,1000,200,8,3000,50,10", "h100-sxm bf16 tp3 pp1"),
    ],
)
def test_runs_no_layout_can_replay_write_no_profile(run_cli, tmp_path, row, layout):
    runs = tmp_path / "runs.csv"
    runs.write_text(f"{HEADER}\n{row}\n")
    profile = tmp_path / "profile.yaml"
    result = run_cli("calibrate", runs, "-o", profile, "--no-leave-one-out")
    assert result.exit_code == 2, result.stderr
    assert f"{runs}:2: llama-3.1-8b on {layout}: the replay cannot run this layout" in (
        result.stderr
    )
    assert not profile.exists()
