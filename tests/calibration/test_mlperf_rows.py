"""MLPerf Inference v5.0 and v5.1 rows (calibration/data/mlperf.csv): read as the v4.x rows
are, on the GPUs they name, held out and in no error band, each measuring the system's
output tokens/s over its accelerators."""

import pytest

from calibration.bands import profile_for
from calibration.rows import load_rows


def _rows(round_: str, submitter: str, scenario: str, benchmark: str) -> list:
    rows, _ = load_rows()
    return [
        row
        for row in rows
        if row.label.startswith(f"mlperf {round_} {submitter} {benchmark} {scenario} ")
    ]


def test_the_mi325x_rows_are_read_per_gpu_and_held_out() -> None:
    """AMD's v5.0 8x MI325X Offline run printed 33,928.1 tokens/s: 33,928.1 / 8 =
    4,241.01 per GPU (the CSV keeps two decimals); every GPU count up to the node's 8 may
    serve it."""
    (row,) = _rows("v5.0", "AMD", "Offline", "llama2-70b-99.9")
    assert row.gpu == "mi325x"
    assert row.measured == pytest.approx(33928.1 / 8, abs=0.01)
    assert row.tps == (1, 2, 4, 8)
    assert row.held_out and row.kind == "offline"


def test_the_gb200_nvl4_rows_stay_within_their_four_gpu_node() -> None:
    """Azure's ND GB200 v6 is a 4-GPU NVL4 node: Server 46,016.49 tokens/s / 4 =
    11,504.12 per GPU, at the round's 2 s TTFT and 200 ms TPOT limits, layouts of at most
    4 GPUs."""
    (row,) = _rows("v5.1", "Azure", "Server", "llama2-70b-99")
    assert row.gpu == "gb200"
    assert row.measured == pytest.approx(46016.49 / 4, abs=0.01)
    assert row.tps == (1, 2, 4)
    assert (row.targets.ttft_p99_s, row.targets.tpot_p99_s) == (2.0, 0.2)
    assert row.held_out and row.kind == "server"


def test_no_mlperf_row_is_fitted_or_joins_a_band() -> None:
    """Every MLPerf row, old rounds and new, is held out, and no engine profile stands for
    an MLPerf submission: the rows are reported, never fitted, and move no error band."""
    rows, _ = load_rows()
    mlperf = [row for row in rows if row.source == "mlperf"]
    rounds = {row.engine for row in mlperf}
    assert {"mlperf-tensorrt-v5.0", "mlperf-tensorrt-v5.1"} <= rounds
    assert all(row.held_out for row in mlperf)
    assert all(profile_for(engine) is None for engine in rounds)


def test_the_mixtral_token_mix_is_the_datasets_own() -> None:
    """The mixtral-8x7b workload is read off the 15,000 per-sample token lengths of the
    MLPerf set (calibration/data/mlperf_mixtral_lengths.csv), not assumed: prompt mean
    6,410,905 / 15,000 = 427.4, cv = std / mean = 0.77, p99 1,561; the reference outputs'
    p99 582 and cv 0.78 (their mean, 2,172,643 / 15,000 = 144.8, agrees with the 145-146
    tokens per sample the rows report)."""
    import csv

    import numpy as np

    from calibration.rows import MLPERF_WORKLOADS, calibration_dir

    with (calibration_dir() / "mlperf_mixtral_lengths.csv").open(encoding="utf-8") as handle:
        lengths = np.array([[int(v) for v in r.values()] for r in csv.DictReader(handle)])
    prompts, outputs = lengths[:, 0], lengths[:, 1]
    assert len(lengths) == 15_000 and prompts.sum() == 6_410_905 and outputs.sum() == 2_172_643
    mix = MLPERF_WORKLOADS["mixtral-8x7b"].mix
    assert mix.prompt_mean_tokens == pytest.approx(prompts.mean(), abs=0.05)
    assert mix.prompt_cv == pytest.approx(prompts.std() / prompts.mean(), abs=0.005)
    assert mix.prompt_p99_tokens == pytest.approx(np.percentile(prompts, 99), abs=0.5)
    assert mix.output_cv == pytest.approx(outputs.std() / outputs.mean(), abs=0.005)
    assert mix.output_p99_tokens == pytest.approx(np.percentile(outputs, 99), abs=0.5)
    assert abs(mix.output_mean_tokens - outputs.mean()) < 1.5


def test_the_llama2_prompt_mix_is_the_datasets_own():
    """The llama2-70b prompts are read off the 24,576 per-sample token lengths of the
    MLPerf set (calibration/data/mlperf_llama2_lengths.csv): mean 5,463,976 / 24,576 =
    222.3, cv 0.77, p99 791 (every prompt under the 1,024-token cut). Its outputs are the
    GPT-4 reference answers (mean 5,379,553 / 24,576 = 218.9), shorter than the 294 tokens
    a sample the rows' model generates, which the mix keeps."""
    import csv

    import numpy as np

    from calibration.rows import MLPERF_WORKLOADS, calibration_dir

    with (calibration_dir() / "mlperf_llama2_lengths.csv").open(encoding="utf-8") as handle:
        lengths = np.array([[int(v) for v in r.values()] for r in csv.DictReader(handle)])
    prompts, references = lengths[:, 0], lengths[:, 1]
    assert len(lengths) == 24_576 and prompts.sum() == 5_463_976 and prompts.max() < 1024
    assert references.sum() == 5_379_553
    mix = MLPERF_WORKLOADS["llama2-70b"].mix
    assert mix.prompt_mean_tokens == pytest.approx(prompts.mean(), abs=0.05)
    assert mix.prompt_cv == pytest.approx(prompts.std() / prompts.mean(), abs=0.005)
    assert mix.prompt_p99_tokens == pytest.approx(np.percentile(prompts, 99), abs=0.5)
    assert mix.output_mean_tokens > references.mean()


def test_a_vllm_submission_is_read_under_the_vllm_profile_of_its_version() -> None:
    """An MLPerf submission is predicted under the catalog's profile of the engine that ran
    it (`mlperf_profile`): the newest vLLM profile not newer than its vLLM, else the oldest.
    The catalog's vLLM profiles are 0.9, 0.10 and 0.11, so vLLM 0.4.3 and 0.6.5 (older than
    all) read as vllm-0.9, 0.9.0.2 as vllm-0.9, 0.10.2 as vllm-0.10, 0.16.0 as vllm-0.11;
    TensorRT names no profile (the default predicts it)."""
    from calibration.rows import mlperf_profile

    assert mlperf_profile("vLLM 0.4.3+rocm614, PyTorch 2.3.0, ROCm 6.1.0") == "vllm-0.9"
    assert mlperf_profile("vLLM 0.6.5.dev964+mlperf50, Pytorch 2.7.0a0") == "vllm-0.9"
    assert mlperf_profile("vLLM 0.9.0.2.dev108+g71faa1880, ROCm 6.4.1") == "vllm-0.9"
    assert mlperf_profile("vLLM 0.10.2") == "vllm-0.10"
    assert mlperf_profile("vLLM 0.16.0") == "vllm-0.11"
    assert mlperf_profile("TensorRT 10.11, CUDA 12.9") == ""


def test_amds_vllm_rows_take_the_vllm_factors_and_nvidias_the_default() -> None:
    """AMD's v5.1 8x MI300X Offline run (vLLM 0.9.0.2) printed 27,803.9 tokens/s: 27,803.9
    / 8 = 3,475.49 per GPU, predicted with vllm-0.9's MI300X factors (the profile fitted on
    AMD's own vLLM throughput pages), not TensorRT-LLM's borrowed ones; NVIDIA's v5.1 8x
    B200 Offline run (TensorRT 10.11) printed 101,527 tokens/s: 12,690.88 per GPU, on the
    default profile."""
    from calibration.calibrate import catalog_efficiency
    from models.physics.efficiency import efficiency_for

    (amd,) = [r for r in _rows("v5.1", "AMD", "Offline", "llama2-70b-99") if r.gpu == "mi300x"]
    assert amd.measured == pytest.approx(27803.9 / 8, abs=0.01)
    assert (amd.engine, amd.profile) == ("mlperf-vllm-v5.1", "vllm-0.9")
    vllm = efficiency_for("mi300x", amd.weight_precision, engine="vllm-0.9")
    assert catalog_efficiency(amd) == vllm
    assert vllm != efficiency_for("mi300x", amd.weight_precision)
    (nvidia,) = _rows("v5.1", "NVIDIA", "Offline", "llama2-70b-99")
    assert nvidia.measured == pytest.approx(101527 / 8, abs=0.01)
    assert (nvidia.engine, nvidia.profile) == ("mlperf-tensorrt-v5.1", "")
    assert catalog_efficiency(nvidia) == efficiency_for("b200", nvidia.weight_precision)
