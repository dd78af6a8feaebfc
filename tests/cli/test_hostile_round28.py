"""Hostile input, round twenty-eight: valid-but-extreme instances and answers that must
agree, found by hand beside the input fuzz (tests/bench/fuzz_run.py at seeds 2801 and
2802). A p99 request past the model's context window was told to allow larger TP or
more memory, which no layout can give."""

import json

import pytest

from tests.cli.test_hostile_input import run_checked
from tests.engine_results import VLLM_BENCH_SERVE
from tests.paths import ONE_MODEL_ONE_REGION


def test_a_request_past_the_context_window_is_told_to_shorten_it(run_cli):
    """llama-3.1-8b reads 131,072 tokens; a p99 prompt of 1,000,000 and output of 1,000
    (the fixture's) is 1,001,000 > 131,072 on every layout: the remedy was 'allow larger
    TP or PP, a lower weight precision, or GPUs with more memory', none of which helps."""
    needles = (
        "a p99 request of 1,000,000 prompt + 1,000 output tokens exceeds the 131,072-token "
        "context window of llama-3.1-8b",
        "remedy: shorten workloads[chat].prompt_tokens.p99 or output_tokens.p99 so that "
        "their sum is at most 131,072",
    )
    prompt = "workloads[chat].prompt_tokens={mean: 1000000, p99: 1000000}"
    result = run_checked(run_cli, "solve", ONE_MODEL_ONE_REGION, "--set", prompt, code=3,
                         needles=needles)  # fmt: skip
    assert "larger TP" not in result.stderr


@pytest.mark.parametrize(
    ("key", "named"),
    [("mean_ttft_ms", "mean_ttft_ms (ttft_mean_ms): 1e-300 ms is"),
     ("mean_tpot_ms", "mean_tpot_ms (tpot_mean_ms): 1e-300 ms is")],
)  # fmt: skip
def test_a_bench_result_figure_past_physics_is_named_by_the_files_key(
    run_cli, tmp_path, key, named
):
    """A vllm bench serve result's TTFT of 1e-300 ms, far faster than the layout's fastest
    replay, was refused as 'ttft_mean_ms: 1e-300 ms is 1.52e+302x below the fastest ...',
    the CSV column, a key the JSON file does not hold (the input fuzz, seed 2801); the
    reader's own refusals name the file's key beside it (test_hostile_round23)."""
    path = tmp_path / "bench.json"
    path.write_text(json.dumps({**VLLM_BENCH_SERVE, key: 1e-300}))
    replica = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16", "--tp", "1")
    args = ("calibrate", path, *replica, "-o", tmp_path / "p.yaml", "--no-leave-one-out")
    run_checked(run_cli, *args, needles=(f"{path}: {named}",))
    assert not (tmp_path / "p.yaml").exists()


@pytest.mark.parametrize(
    ("fit", "got"),
    [("{median_abs_error_pct: .inf}", "median_abs_error_pct must be a finite number >= 0, got inf"),
     ("{median_abs_error_pct: .nan}", "median_abs_error_pct must be a finite number >= 0, got nan"),
     ("{rows: -3}", "rows must be a finite number >= 0, got -3"),
     ("{leave_one_out_median_abs_error_pct: -1.5}",
      "leave_one_out_median_abs_error_pct must be a finite number >= 0, got -1.5")],
    ids=["inf", "nan", "negative-rows", "negative-error"],
)  # fmt: skip
def test_a_profile_fit_figure_reports_quote_is_finite_and_not_negative(run_cli, tmp_path, fit, got):
    """A profile's `fit.median_abs_error_pct: .inf` was read (exit 0) and every report's
    header said 'median error inf%' (the input fuzz, seed 2802); NaN read 'nan%', a
    negative row count '-3 rows'."""
    from tests.cli.test_hostile_round23 import _PERF, _profile

    path = _profile(tmp_path, "mine", fit)
    run_checked(run_cli, *_PERF, "--engine", path, needles=(f"{path}: fit.{got}",))


def test_a_profile_fit_of_finite_figures_is_read(run_cli, tmp_path):
    """The bound admits what calibrate writes: 12 rows, 6.1% and 0% median errors."""
    from tests.cli.test_hostile_round23 import _PERF, _profile

    fit = "{rows: 12, median_abs_error_pct: 6.1, leave_one_out_median_abs_error_pct: 0}"
    result = run_checked(run_cli, *_PERF, "--engine", _profile(tmp_path, "mine", fit), code=0)
    assert "fitted on 12 rows; leave-one-out median error 0%" in result.stdout + result.stderr


@pytest.mark.parametrize("performance", [[9000.0], "fast"], ids=["list", "text"])
def test_a_trtllm_bench_performance_that_is_no_mapping_is_refused_naming_it(
    run_cli, tmp_path, performance
):
    """A trtllm-bench report whose `performance` is a list was 'not a result of vllm bench
    serve, genai-perf, aiperf or trtllm-bench', naming no field (the input fuzz, seeds 2801
    and 2802); its other sections of another shape are named (test_hostile_round23)."""
    path = tmp_path / "report.json"
    report = {
        "world_info": {"tp_size": 1, "pp_size": 1},
        "dataset": {"avg_isl": 128, "avg_osl": 128, "num_requests": 64},
        "performance": performance,
    }
    path.write_text(json.dumps(report))
    replica = ("--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16")
    args = ("calibrate", path, *replica, "-o", tmp_path / "p.yaml")
    needle = f"{path}: performance: {performance!r} is not a section of trtllm-bench's report"
    run_checked(run_cli, *args, needles=(needle,))


@pytest.mark.parametrize(
    ("path", "hint"),
    [("workloads.0.slo.ttft_p99_ms", "write its position in brackets, workloads[0]"),
     ("workloads.chat.slo.ttft_p99_ms", "select an element, workloads[chat] or workloads[0]")],
)  # fmt: skip
def test_a_list_stepped_into_by_a_dot_is_told_how_to_select(run_cli, path, hint):
    """`--set workloads.0.slo.ttft_p99_ms=1` was told 'select an element, workloads[0] or
    workloads[0]', the same choice twice; a name keeps its two ways."""
    needle = f"--set: {path}: workloads is a list, not a mapping: {hint}"
    run_checked(run_cli, "validate", ONE_MODEL_ONE_REGION, "--set", f"{path}=1", needles=(needle,))
