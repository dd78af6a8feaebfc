"""An engine profile fitted on benchmark runs (models.profiles.fit): a synthetic
data set made with known factors is fitted back to them."""

from dataclasses import replace

import pytest

from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.profiles.fit import fit_profile, predict, profile_document
from models.profiles.measurements import Measurement

TRUTH = {
    "prefill_flops_fraction": 0.45,
    "decode_flops_fraction": 0.35,
    "hbm_fraction": 0.62,
    "step_overhead_s": 0.004,
}
"""Factors unlike the catalog's Hopper set (0.54, 0.46, 0.75, 1.9 ms), so the fit must move."""


def synthetic_runs(shapes, request_overhead_s: float = 0.0) -> list[Measurement]:
    """Runs whose figures are the replay's under TRUTH (and a request overhead): the known
    answer."""
    truth = efficiency_for("h100-sxm", Precision.BF16).model_copy(
        update={**TRUTH, "request_overhead_s": request_overhead_s}
    )
    runs = []
    for isl, osl, users in shapes:
        run = Measurement(
            "synthetic", "llama-3.1-8b", "h100-sxm", Precision.BF16, Precision.BF16,
            1, 1, isl, osl, users, 3 * users, None, None, None,
        )  # fmt: skip
        figures = predict(run, truth, 3)
        runs.append(
            replace(
                run,
                output_tokens_per_s=figures["output_tokens_per_s"],
                ttft_mean_ms=figures["ttft_mean_ms"],
                tpot_mean_ms=figures["tpot_mean_ms"],
            )
        )
    return runs


def test_the_fit_finds_the_factors_the_runs_were_made_with():
    """Long prompts at C = 1 pin the prefill FLOP fraction (TTFT is compute-bound), short
    ones at C = 1 the HBM fraction and step overhead (a decode step at batch 1 streams the
    weights): those three come back within 3%. The decode FLOP fraction binds in none of
    these runs (decode stays memory-bound), so it is not asserted; the predicted figures
    match to 1% either way."""
    runs = synthetic_runs([(2000, 64, 1), (2000, 64, 8), (256, 256, 1), (256, 256, 32)])
    fit = fit_profile(runs, leave_one_out=False)
    for name in ("prefill_flops_fraction", "hbm_fraction", "step_overhead_s"):
        assert getattr(fit.efficiency, name) == pytest.approx(TRUTH[name], rel=0.03), name
    assert fit.median_abs_error_pct() < 1.0


def test_the_fit_recovers_a_known_request_overhead():
    """The same runs made with an 80 ms request overhead: the one-user runs' TTFT less
    their replayed prefill gives the 80 ms back (a lone user never queues, so each of
    its TTFTs is 80 ms + its prefill), and with it in place the factors come back as
    without it; the profile file carries it and says it was fitted on 2 one-user runs."""
    runs = synthetic_runs(
        [(2000, 64, 1), (2000, 64, 8), (256, 256, 1), (256, 256, 32)], request_overhead_s=0.080
    )
    fit = fit_profile(runs, leave_one_out=False)
    assert fit.efficiency.request_overhead_s == pytest.approx(0.080, rel=0.02)
    for name in ("prefill_flops_fraction", "hbm_fraction", "step_overhead_s"):
        assert getattr(fit.efficiency, name) == pytest.approx(TRUTH[name], rel=0.03), name
    assert fit.overhead_runs == 2
    document = profile_document(fit, "mine", "trtllm-0.20", ["runs.csv"], "2026-12-05")
    assert document["by_key"]["default"]["request_overhead_s"] == pytest.approx(0.080, rel=0.02)
    assert "request_overhead_s" in document["fit"]["fitted"]


def test_two_one_user_runs_of_two_prompt_lengths_tell_the_overhead_from_the_prefill():
    """TTFT_1 = o + S(2,000) and TTFT_2 = o + S(256): two equations, two unknowns (the
    prefill rate and o), so two lone users alone give the 80 ms back."""
    runs = synthetic_runs([(2000, 64, 1), (256, 256, 1)], request_overhead_s=0.080)
    fit = fit_profile(runs, leave_one_out=False)
    assert fit.efficiency.request_overhead_s == pytest.approx(0.080, rel=0.02)
    assert fit.efficiency.prefill_flops_fraction == pytest.approx(
        TRUTH["prefill_flops_fraction"], rel=0.03
    )


def test_one_prompt_length_at_one_user_cannot_tell_the_overhead_from_the_prefill():
    """Lone users with one prompt length only: both the overhead and the prefill add to
    each TTFT alike, so the overhead stays the base profile's (0 for TensorRT-LLM) and is
    not listed as fitted."""
    runs = synthetic_runs([(2000, 64, 1), (2000, 256, 1)], request_overhead_s=0.080)
    fit = fit_profile(runs, leave_one_out=False, steps=40)
    assert fit.efficiency.request_overhead_s == 0.0 and fit.overhead_runs == 0
    document = profile_document(fit, "mine", "trtllm-0.20", ["runs.csv"], "2026-12-05")
    assert "request_overhead_s" not in document["fit"]["fitted"]


def test_leave_one_out_predicts_each_run_from_the_others():
    runs = synthetic_runs([(2000, 64, 1), (256, 256, 1), (256, 256, 16)])
    fit = fit_profile(runs, leave_one_out=True, steps=60)
    assert all(run_fit.left_out for run_fit in fit.runs)
    assert fit.median_abs_error_pct(left_out=True) < 5.0
    document = profile_document(fit, "mine", "trtllm-0.20", ["runs.csv"], "2026-12-05")
    assert document["kind"] == "fleetplan-engine-profile"
    assert document["fit"]["rows"] == 3
    assert set(document["by_key"]["default"]) >= set(TRUTH)


def test_runs_of_one_shape_are_replayed_once_per_loss(monkeypatch):
    """200 repeats of one shape (each its own figures) replayed 200 times at every step
    of the fit: 2 minutes for what one replay answers. Five runs of two shapes (3 of
    one, 2 of the other) replay twice; the loss is the same as replaying each."""
    import models.profiles.fit as fit

    (first,) = synthetic_runs([(256, 256, 8)])
    (second,) = synthetic_runs([(2000, 64, 1)])
    runs = [
        replace(first, output_tokens_per_s=first.output_tokens_per_s * f) for f in (1, 1.1, 0.9)
    ]
    runs += [replace(second, ttft_mean_ms=second.ttft_mean_ms * f) for f in (1, 1.2)]
    base = efficiency_for("h100-sxm", Precision.BF16)
    replays = []
    real = fit.predict
    monkeypatch.setattr(fit, "predict", lambda run, *a: replays.append(run) or real(run, *a))
    once = fit.loss(runs, base, 3)
    assert len(replays) == 2
    each = [real(run, base, 3) for run in runs]  # the same figures as a replay per run
    assert each[0] == each[1] == each[2] and each[3] == each[4]
    assert once > 0


def test_leave_one_out_past_its_bound_is_refused_before_any_fit(run_cli, tmp_path):
    """calibrate on 50 runs fitted 51 times with nothing printed but 'fitting 50 runs':
    hours on distinct shapes. Past MAX_LEAVE_ONE_OUT_RUNS (30) runs it is refused at
    once, naming the flag; --no-leave-one-out fits them."""
    from models.profiles.fit import MAX_LEAVE_ONE_OUT_RUNS, fit_profile

    (run,) = synthetic_runs([(256, 256, 8)])
    runs = [replace(run, requests=24 + i) for i in range(MAX_LEAVE_ONE_OUT_RUNS + 1)]
    with pytest.raises(ValueError, match="31 runs would fit 32 times"):
        fit_profile(runs, leave_one_out=True)
    header = "model,gpu,precision,tp,isl,osl,concurrency,num_requests,output_tok_s\n"
    lines = [f"llama-3.1-8b,h100-sxm,bf16,1,256,256,8,{24 + i},{run.output_tokens_per_s:.3f}"
             for i in range(MAX_LEAVE_ONE_OUT_RUNS + 1)]  # fmt: skip
    path = tmp_path / "runs.csv"
    path.write_text(header + "\n".join(lines) + "\n")
    result = run_cli("calibrate", path, "-o", tmp_path / "p.yaml")
    assert result.exit_code == 2 and "--leave-one-out: leave-one-out refits once per run" in (
        result.stderr
    )
    assert "--no-leave-one-out" in result.stderr and not (tmp_path / "p.yaml").exists()
