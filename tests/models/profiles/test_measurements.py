"""Reading one's own benchmark runs (models.profiles.measurements): the documented CSV and the
JSON of vllm bench serve, genai-perf/aiperf and trtllm-bench, and bad files named by line
and column."""

import json

import pytest

from models.physics.precision import Precision
from models.profiles.measurements import RunDefaults, read_measurements
from models.schema.errors import InputError
from tests.engine_results import GENAI_PERF, VLLM_BENCH_SERVE

HEADER = "model,gpu,precision,tp,isl,osl,concurrency,output_tok_s,ttft_mean_ms,tpot_mean_ms\n"
LLAMA = RunDefaults(model="llama-3.1-8b", gpu="h100-sxm", precision="bf16", tp=1)


def test_a_csv_line_is_one_run(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(HEADER + "llama-3.1-8b,h100-sxm,fp8,2,1000,200,16,1500.5,120,14.5\n")
    (run,) = read_measurements([path], RunDefaults())
    assert (run.model, run.gpu, run.precision, run.kv_precision) == (
        "llama-3.1-8b",
        "h100-sxm",
        Precision.FP8,
        Precision.FP8,  # the weight precision when kv_precision is absent
    )
    assert (run.tp, run.pp, run.prompt_tokens, run.output_tokens) == (2, 1, 1000, 200)
    assert run.concurrency == 16
    assert run.requests == 10 * 16  # num_requests absent: 10 x the concurrency
    assert (run.output_tokens_per_s, run.ttft_mean_ms, run.tpot_mean_ms) == (1500.5, 120, 14.5)
    assert run.source == f"{path}:2"


def test_every_bad_cell_is_named_by_line_and_column(tmp_path):
    path = tmp_path / "runs.csv"
    path.write_text(
        HEADER
        + "llama-3.1-8b,h100-sxm,bf16,1,1000,200,16,nan,120,14\n"
        + "no-such-model,h100-sxm,bf16,1,1000,200,16,1500,120,14\n"
        + "llama-3.1-8b,h100-sxm,bf16,1.5,1000,200,16,1500,120,14\n"
        + "llama-3.1-8b,h100-sxm,bf16,1,1000,200,16,,,\n"
        # float() reads 1_6 as 16 and Arabic-Indic digits as 1500; no benchmark tool writes
        # them (models.io.numbers), as fleet-import's CSV refuses them too
        + "llama-3.1-8b,h100-sxm,bf16,1,1000,200,1_6,1500,120,14\n"
        + "llama-3.1-8b,h100-sxm,bf16,1,1000,200,16,\u0661\u0665\u0660\u0660,120,14\n"
    )
    with pytest.raises(InputError) as raised:
        read_measurements([path], RunDefaults())
    text = str(raised.value)
    assert f"{path}:2: output_tok_s: 'nan' must be a finite number" in text
    assert f"{path}:3: model: 'no-such-model' is not in the catalog" in text
    assert f"{path}:4: tp: '1.5' must be a whole number" in text
    assert f"{path}:5: output_tok_s: no metric" in text
    assert f"{path}:6: concurrency: '1_6' is not a number" in text
    assert f"{path}:7: output_tok_s: '\u0661\u0665\u0660\u0660' is not a number" in text


def test_vllm_bench_serve_json(tmp_path):
    """Per request: 64,000 / 100 = 640 prompt tokens, 12,800 / 100 = 128 output tokens."""
    path = tmp_path / "vllm.json"
    path.write_text(
        json.dumps({"model_id": "meta-llama/Llama-3.1-8B-Instruct", **VLLM_BENCH_SERVE})
    )
    (run,) = read_measurements([path], LLAMA)
    assert run.model == "llama-3.1-8b"  # a Hugging Face id: the flag names the catalog model
    assert (run.prompt_tokens, run.output_tokens) == (640, 128)
    assert (run.concurrency, run.requests) == (32, 100)
    assert (run.output_tokens_per_s, run.ttft_mean_ms, run.tpot_mean_ms) == (2_100.0, 95.0, 13.0)


def test_genai_perf_json_honours_units(tmp_path):
    """TTFT given in ns: 85,000,000 ns = 85 ms; the concurrency read from input_config."""
    path = tmp_path / "profile_export_genai_perf.json"
    ns = {"unit": "ns", "avg": 85_000_000}
    path.write_text(json.dumps({**GENAI_PERF, "time_to_first_token": ns}))
    (run,) = read_measurements([path], LLAMA)
    assert run.ttft_mean_ms == pytest.approx(85.0)
    assert (run.tpot_mean_ms, run.output_tokens_per_s, run.concurrency) == (12.5, 900.0, 8)


def test_trtllm_bench_json_is_all_at_once_without_a_concurrency(tmp_path):
    path = tmp_path / "report.json"
    path.write_text(
        json.dumps(
            {
                "world_info": {"tp_size": 2, "pp_size": 1},
                "dataset": {"avg_isl": 128, "avg_osl": 128, "num_requests": 3000},
                "performance": {"system_output_throughput_tok_s": 9000.0},
            }
        )
    )
    flags = RunDefaults(model="llama-3.1-8b", gpu="h100-sxm", precision="bf16")
    (run,) = read_measurements([path], flags)
    assert (run.tp, run.concurrency, run.requests) == (2, 3000, 3000)  # the file's TP
    assert run.output_tokens_per_s == 9000.0 and run.ttft_mean_ms is None
    # a --tp the file contradicts was dropped without a word; it is refused, naming both
    with pytest.raises(InputError, match="tp: the file records 2, --tp says 1"):
        read_measurements([path], LLAMA)


TRTLLM_SECTIONS = (
    "performance", "world_info", "dataset", "request_info", "streaming_metrics", "engine"
)  # fmt: skip


@pytest.mark.parametrize("section", TRTLLM_SECTIONS)
def test_every_trtllm_bench_section_of_another_shape_is_named(tmp_path, section):
    """Each of the six sections trtllm-bench's report holds (the engine's model among
    them) read as absent when it is no mapping, and the flags filled its figures: each is
    refused by name, the other five left as a real report writes them."""
    report = {
        "world_info": {"tp_size": 1, "pp_size": 1},
        "dataset": {"avg_isl": 128, "avg_osl": 128, "num_requests": 64},
        "performance": {"system_output_throughput_tok_s": 9000.0},
        section: "map",
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    needle = f"{section}: 'map' is not a section of trtllm-bench's report"
    with pytest.raises(InputError, match=needle):
        read_measurements([path], LLAMA)


def test_a_json_result_needs_the_replica_it_ran_on(tmp_path):
    path = tmp_path / "vllm.json"
    path.write_text(json.dumps({"completed": 10, "output_throughput": 5.0, "max_concurrency": 1,
                                "total_input_tokens": 10, "total_output_tokens": 10}))  # fmt: skip
    with pytest.raises(InputError, match="gpu: missing"):
        read_measurements([path], RunDefaults(model="llama-3.1-8b", precision="bf16", tp=1))


def test_an_unknown_json_is_refused(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"hello": 1}))
    with pytest.raises(InputError, match="not a result of vllm bench serve"):
        read_measurements([path], LLAMA)


def test_a_row_shorter_than_the_header_is_named_with_the_columns_it_leaves_empty(tmp_path):
    """A row of 7 values under the header's 10 columns: csv fills the last three with
    None, and `v.strip()` raised AttributeError (calibrate: internal error, exit 70). The
    row's metrics would be read as absent, so it is refused naming what it lacks."""
    path = tmp_path / "runs.csv"
    path.write_text(HEADER + "llama-3.1-8b,h100-sxm,bf16,1,1000,200,16\n")
    with pytest.raises(InputError) as raised:
        read_measurements([path], RunDefaults())
    assert (
        f"{path}:2: fewer values than columns (none for output_tok_s, ttft_mean_ms, "
        "tpot_mean_ms)" in str(raised.value)
    )


@pytest.mark.parametrize(
    ("metric", "record", "needle"),
    [
        # a unit not among s, ms, us, ns: the TTFT was dropped and the fit went on without it
        ("time_to_first_token", {"unit": "min", "avg": 1.5},
         "time_to_first_token.unit: 'min' is not a time unit (s, sec, ms, us, µs, ns)"),
        # a mean that is not a number: dropped alike
        ("inter_token_latency", {"unit": "ms", "avg": "fast"},
         "inter_token_latency.avg: 'fast' is not a number"),
        # a record that is not a mapping: dropped alike
        ("time_to_first_token", "85 ms",
         "time_to_first_token: '85 ms' is not a record of a unit and an avg"),
        # a throughput per minute was read as per second: 60x the run's real rate
        ("output_token_throughput", {"unit": "tokens/min", "avg": 54000.0},
         "output_token_throughput.unit: 'tokens/min' is not tokens/sec"),
    ],
    ids=["time-unit-unknown", "mean-not-a-number", "record-not-a-mapping", "per-minute"],
)  # fmt: skip
def test_a_genai_perf_figure_it_cannot_read_is_named_not_dropped(tmp_path, metric, record, needle):
    path = tmp_path / "profile_export_genai_perf.json"
    path.write_text(json.dumps({**GENAI_PERF, metric: record}))
    with pytest.raises(InputError) as raised:
        read_measurements([path], LLAMA)
    assert needle in str(raised.value)


def test_a_genai_perf_figure_in_seconds_per_second_units_reads_as_written(tmp_path):
    """The units genai-perf and aiperf write are still read: TTFT 0.085 s = 85 ms, a
    throughput in 'tokens/sec' (genai-perf) or 'tokens/s' as written."""
    path = tmp_path / "profile_export_genai_perf.json"
    figures = {"time_to_first_token": {"unit": "s", "avg": 0.085},
               "output_token_throughput": {"unit": "tokens/s", "avg": 900.0}}  # fmt: skip
    path.write_text(json.dumps({**GENAI_PERF, **figures}))
    (run,) = read_measurements([path], LLAMA)
    assert run.ttft_mean_ms == pytest.approx(85.0)  # 0.085 s x 1,000 ms/s
    assert run.output_tokens_per_s == 900.0


def test_a_csv_run_of_more_users_than_requests_is_refused(tmp_path):
    """32 users and 10 requests: at most 10 were ever in flight, but the fit replayed 32
    users starting together (one request each: max(1, ceil(10 / 32)))."""
    path = tmp_path / "runs.csv"
    path.write_text(
        "model,gpu,precision,tp,isl,osl,concurrency,num_requests,output_tok_s\n"
        "llama-3.1-8b,h100-sxm,bf16,1,1000,200,32,10,1500\n"
    )
    with pytest.raises(InputError) as raised:
        read_measurements([path], RunDefaults())
    assert (
        f"{path}:2: concurrency: 32 users is more than the run's 10 requests (num_requests)"
        in str(raised.value)
    )


def test_vllm_max_concurrency_above_the_prompts_is_the_prompts(tmp_path):
    """vllm bench serve --max-concurrency 1000 --num-prompts 100: the flag caps the
    requests in flight, so at most the 100 prompts ever were: the run's concurrency is
    min(1000, 100) = 100 (it was read as 1,000 users)."""
    path = tmp_path / "vllm.json"
    result = {"completed": 100, "max_concurrency": 1000, "output_throughput": 900.0,
              "total_input_tokens": 100_000, "total_output_tokens": 20_000}  # fmt: skip
    path.write_text(json.dumps(result))
    (run,) = read_measurements([path], LLAMA)
    assert (run.concurrency, run.requests) == (100, 100)


@pytest.mark.parametrize(
    ("header", "column", "hint"),
    [
        # a unit in the header: the run's TTFT was skipped and the fit used the others
        (HEADER.replace("ttft_mean_ms", "ttft_mean (ms)"), "ttft_mean (ms)", "'ttft_mean_ms'"),
        (HEADER.replace("output_tok_s", "output_tok_s [tok/s]"), "output_tok_s [tok/s]",
         "'output_tok_s'"),
        (HEADER.replace("tp,", "TP,"), "TP", "'tp'"),  # case: 'tp: missing' named the wrong thing
        (HEADER.rstrip("\n") + ",pp_size\n", "pp_size", "tp, pp, kv"),  # pp 4 read as 1
        (HEADER.replace(",", ";"), HEADER.replace(",", ";").strip(), "separated by commas"),
    ],
)  # fmt: skip
def test_a_column_the_reader_does_not_know_is_refused_not_skipped(tmp_path, header, column, hint):
    """A CSV column of another name was skipped without a word: its values were dropped
    (a TTFT under 'ttft_mean (ms)' was never fitted, a pipeline of 4 under 'pp_size'
    replayed as 1). Now line 1 names the column and the spelling meant."""
    path = tmp_path / "runs.csv"
    values = "llama-3.1-8b,h100-sxm,fp8,2,1000,200,16,1500.5,120,14.5"
    extra = ",4" if "pp_size" in header else ""
    path.write_text(header + (values.replace(",", ";") if ";" in header else values) + extra + "\n")
    with pytest.raises(InputError) as raised:
        read_measurements([path], RunDefaults())
    (issue,) = raised.value.issues
    assert (issue.line, issue.path) == (1, column)
    assert "is not a column of a measurements CSV" in issue.message and hint in issue.message
