"""The back-of-envelope estimate: the worked example's figures and other inputs by hand."""

import math

import pytest

import models.calculators.estimate
from models.calculators.estimate import (
    EstimateAssumptions,
    Incident,
    NoServingConfig,
    estimate,
    estimate_with_model,
    model_throughput,
    whole_gpus,
)
from models.physics.catalog import gpu, llm
from models.physics.precision import Precision
from models.serving.replica import LatencyTargets, Limit, ReplicaCapacity
from tests.synthetic import made_up_capacity

# The worked example's assumptions, named
REQUESTS_PER_DAY = 2_000_000
SECONDS_PER_DAY = 86_400
PEAK_TO_AVERAGE = 4
LATENCY_S = 6
INPUT_TOKENS, OUTPUT_TOKENS = 1500, 400
GPU_TOKENS_PER_S = 2000
TARGET_UTILIZATION = 0.6
SEQS_PER_GPU = 40
BYTES_PER_TOKEN = 4
SLO = 0.999
WINDOW_DAYS = 30


@pytest.fixture(scope="module")
def seed():
    return estimate(EstimateAssumptions())


def test_seed_load(seed):
    expected_avg = REQUESTS_PER_DAY / SECONDS_PER_DAY
    expected_peak = REQUESTS_PER_DAY / SECONDS_PER_DAY * PEAK_TO_AVERAGE
    expected_in_flight = expected_peak * LATENCY_S
    expected_output_tps = expected_peak * OUTPUT_TOKENS
    assert seed.avg_qps == pytest.approx(expected_avg)
    assert seed.peak_qps == pytest.approx(expected_peak)
    assert seed.in_flight == pytest.approx(expected_in_flight)
    assert seed.peak_output_tokens_per_s == pytest.approx(expected_output_tps)
    # as the example prints them
    assert f"{seed.avg_qps:.1f}" == "23.1"
    assert f"{seed.peak_qps:.1f}" == "92.6"
    assert f"{seed.in_flight:.0f}" == "556"
    assert f"{seed.peak_output_tokens_per_s:,.0f}" == "37,037"


def test_seed_gpus(seed):
    peak_qps = REQUESTS_PER_DAY / SECONDS_PER_DAY * PEAK_TO_AVERAGE
    expected_by_throughput = peak_qps * OUTPUT_TOKENS / (GPU_TOKENS_PER_S * TARGET_UTILIZATION)
    expected_by_concurrency = peak_qps * LATENCY_S / (SEQS_PER_GPU * TARGET_UTILIZATION)
    assert seed.gpus_by_throughput == pytest.approx(expected_by_throughput)
    assert seed.gpus_by_concurrency == pytest.approx(expected_by_concurrency)
    assert f"{seed.gpus_by_throughput:.1f}" == "30.9"
    assert f"{seed.gpus_by_concurrency:.1f}" == "23.1"
    assert seed.binding == "throughput"
    assert seed.gpus_needed == math.ceil(expected_by_throughput) == 31
    assert seed.gpus == math.ceil(expected_by_throughput) + 1 == 32
    assert seed.zone_layout is None
    assert seed.gpus_to_survive_zone_loss is None


def test_seed_logs(seed):
    expected_bytes_per_request = (INPUT_TOKENS + OUTPUT_TOKENS) * BYTES_PER_TOKEN
    expected_gb_per_day = REQUESTS_PER_DAY * expected_bytes_per_request / 1e9
    assert seed.log_gb_per_day == pytest.approx(expected_gb_per_day)
    assert seed.log_tb_per_30_days == pytest.approx(expected_gb_per_day * 30 / 1000)
    assert f"{seed.log_gb_per_day:.1f}" == "15.2"
    assert f"{seed.log_tb_per_30_days:.2f}" == "0.46"


def test_seed_mm1_table(seed):
    printed = [f"{multiplier:.1f}" for _, multiplier in seed.mm1]
    assert printed == ["2.0", "3.3", "5.0", "10.0", "20.0", "100.0"]
    for rho, multiplier in seed.mm1:
        assert multiplier == pytest.approx(1 / (1 - rho))


def test_seed_error_budget(seed):
    budget = 1 - SLO
    assert seed.error_budget_minutes == pytest.approx(budget * WINDOW_DAYS * 24 * 60)
    assert f"{seed.error_budget_minutes:.1f}" == "43.2"
    assert seed.requests_in_window == REQUESTS_PER_DAY * WINDOW_DAYS
    assert seed.error_budget_requests == pytest.approx(budget * REQUESTS_PER_DAY * WINDOW_DAYS)
    assert f"{seed.error_budget_requests:,.0f}" == "60,000"


def test_seed_burn_lines(seed):
    budget = 1 - SLO
    window_h = WINDOW_DAYS * 24
    lines = [
        (
            f"{b.error_rate:.2%}",
            f"{b.duration_h:g}",
            f"{b.burn_rate:.1f}",
            f"{b.budget_consumed:.1%}",
        )
        for b in seed.burn
    ]
    assert lines == [
        ("0.10%", "720", "1.0", "100.0%"),
        ("1.44%", "1", "14.4", "2.0%"),
        ("5.00%", "0.33", "50.0", "2.3%"),
    ]
    assert seed.burn[1].budget_consumed == pytest.approx(0.0144 / budget * 1 / window_h)
    assert seed.burn[2].budget_consumed == pytest.approx(0.05 / budget * 0.33 / window_h)
    assert f"{seed.burn[1].hours_to_exhaustion:.1f}" == "50.0"
    assert f"{seed.burn[2].hours_to_exhaustion:.1f}" == "14.4"
    assert seed.burn[0].hours_to_exhaustion == pytest.approx(window_h)


def test_seed_json_names(seed):
    data = seed.to_json()
    for key in (
        "avg_qps",
        "peak_qps",
        "in_flight",
        "peak_output_tokens_per_s",
        "gpus_by_throughput",
        "gpus_by_concurrency",
        "gpus",
        "log_gb_per_day",
        "mm1",
        "error_budget_minutes",
        "error_budget_requests",
        "burn",
    ):
        assert key in data, key
    assert data["gpus"] == 32
    assert data["mm1"]["0.9"] == pytest.approx(10.0)
    assert data["error_budget_minutes"] == 43.2  # tidied float noise
    assert len(data["burn"]) == 3
    assert "gpus_to_survive_zone_loss" not in data


def test_concurrency_binds_with_few_sequences_per_gpu():
    # 10 sequences per GPU: 555.6 in flight / (10 x 0.6) = 92.6 GPUs > 30.9 by throughput
    result = estimate(EstimateAssumptions(seqs_per_gpu=10))
    peak_qps = REQUESTS_PER_DAY / SECONDS_PER_DAY * PEAK_TO_AVERAGE
    expected = peak_qps * LATENCY_S / (10 * TARGET_UTILIZATION)
    assert result.binding == "concurrency"
    assert result.gpus_by_concurrency == pytest.approx(expected)
    assert result.gpus == math.ceil(expected) + 1


def test_other_inputs_by_hand():
    # 10M a day, 3x peak, 500 out, 2,500 tok/s at 70%: 10e6/86,400 x 3 x 500 / (2,500 x 0.7)
    assumptions = EstimateAssumptions(
        requests_per_day=10_000_000,
        peak_to_average=3,
        output_tokens=500,
        gpu_tokens_per_s=2500,
        target_utilization=0.7,
        slo=0.99,
        window_days=28,
    )
    result = estimate(assumptions)
    expected_gpus = 10_000_000 / 86_400 * 3 * 500 / (2500 * 0.7)
    assert result.gpus_by_throughput == pytest.approx(expected_gpus)
    assert result.gpus == math.ceil(expected_gpus) + 1
    assert result.error_budget_minutes == pytest.approx(0.01 * 28 * 24 * 60)
    # burn incidents follow the SLO: 14.4x of a 1% budget is a 14.4% error rate
    assert result.burn[1].error_rate == pytest.approx(14.4 * 0.01)
    assert result.burn[0].duration_h == pytest.approx(28 * 24)


def test_incident_by_error_rate():
    result = estimate(EstimateAssumptions(incidents=(Incident(error_rate=0.05, hours=1 / 3),)))
    assert result.burn[0].burn_rate == pytest.approx(0.05 / 0.001)
    assert result.burn[0].budget_consumed == pytest.approx(50 * (1 / 3) / 720)


def test_zones_survive_one_loss():
    result = estimate(EstimateAssumptions(zones=3))
    assert result.zone_overprovision_factor == pytest.approx(3 / 2)
    assert result.gpus_to_survive_zone_loss == math.ceil(31 * 3 / 2)  # 47
    assert result.to_json()["gpus_to_survive_zone_loss"] == 47
    two = estimate(EstimateAssumptions(zones=2))
    assert two.gpus_to_survive_zone_loss == 31 * 2


def test_whole_gpus_forgives_float_noise():
    assert whole_gpus(24.000000000000004) == 24
    assert whole_gpus(24.01) == 25


# ---- per-GPU throughput from the performance model ------------------------------------


PREFILL_S = 0.2
"""The stand-in's prefill of a mean prompt."""
BATCH_PER_TP = 18.0
"""The stand-in's mean decoding batch per TP rank."""


def _capacity(config, tokens_per_s: float, fits: bool = True) -> ReplicaCapacity:
    return made_up_capacity(
        config,
        fits=fits,
        meets_slo=fits,
        requests_per_s=tokens_per_s / 400 if fits else 0.0,
        limit=Limit.HBM_BANDWIDTH if fits else Limit.KV_MEMORY,
        reason="" if fits else "weights do not fit",
        output_tokens_per_s=tokens_per_s,
        batch=BATCH_PER_TP * config.tp if fits else 0.0,
        prefill_s=PREFILL_S,
    )


@pytest.fixture
def fake_capacity(monkeypatch):
    """A stand-in performance model: TP1 does not fit; the replica's throughput grows
    sublinearly with TP, so TP2 is best per GPU (1,800 / 2 > 3,000 / 4 > 5,000 / 8)."""
    by_tp = {1: 0.0, 2: 1800.0, 4: 3000.0, 8: 5000.0}
    seen = []

    def replica_capacity(config, mix, targets, efficiency):
        seen.append((config.tp, mix, targets))
        return _capacity(config, by_tp[config.tp], fits=config.tp > 1)

    monkeypatch.setattr(models.calculators.estimate, "replica_capacity", replica_capacity)
    return seen


def test_model_throughput_picks_best_per_gpu(fake_capacity):
    targets = LatencyTargets(ttft_p99_s=0.8)
    throughput = model_throughput(
        llm("llama-3.1-70b"), gpu("h100-sxm"), 1500, 400, Precision.BF16, targets
    )
    assert throughput.best.config.tp == 2
    assert throughput.gpu_tokens_per_s == pytest.approx(1800 / 2)
    assert [tp for tp, _, _ in fake_capacity] == [1, 2, 4, 8]
    assert fake_capacity[0][1].prompt_mean_tokens == 1500
    assert fake_capacity[0][2] == targets
    assert "performance model" in throughput.source
    assert "p99 TTFT 800 ms" in throughput.source
    result = estimate_with_model(EstimateAssumptions(), throughput)
    peak_qps = REQUESTS_PER_DAY / SECONDS_PER_DAY * PEAK_TO_AVERAGE
    # at a latency target the capacity already holds the p99: no 60% ceiling on top
    assert result.assumptions.target_utilization == 1.0
    assert result.gpus_by_throughput == pytest.approx(peak_qps * OUTPUT_TOKENS / (900 * 1.0))
    assert result.throughput_source == throughput.source


def test_model_estimate_takes_duration_and_sequences_from_the_operating_point(fake_capacity):
    """TP2 wins: 1,800 output tok/s per replica of 400-token replies is 4.5 requests/s at
    a mean batch of 36 with a 0.2 s prefill. Little's law on the replica: a request spends
    0.2 + 36 / 4.5 = 8.2 s (not the assumed 6 s), and 4.5 x 8.2 / 2 GPUs = 18.45 requests
    sit on each GPU (not the assumed 40); so both GPU counts are peak_qps x 2 / 4.5."""
    targets = LatencyTargets(ttft_p99_s=0.8)
    throughput = model_throughput(
        llm("llama-3.1-70b"), gpu("h100-sxm"), 1500, 400, Precision.BF16, targets
    )
    requests_per_s, batch, gpus = 1800 / 400, 2 * BATCH_PER_TP, 2
    duration_s = PREFILL_S + batch / requests_per_s
    assert duration_s == pytest.approx(8.2)
    result = estimate_with_model(EstimateAssumptions(), throughput)
    peak_qps = REQUESTS_PER_DAY / SECONDS_PER_DAY * PEAK_TO_AVERAGE
    assert result.assumptions.latency_s == pytest.approx(duration_s)
    assert result.assumptions.seqs_per_gpu == pytest.approx(requests_per_s * 8.2 / gpus)
    assert result.in_flight == pytest.approx(peak_qps * 8.2)
    assert result.gpus_by_concurrency == pytest.approx(peak_qps * gpus / requests_per_s)
    assert result.gpus_by_throughput == pytest.approx(peak_qps * gpus / requests_per_s)
    # N+1 in whole TP2 replicas: ceil(92.59 x 2 / 4.5 / 2) = 21 replicas = 42 GPUs, and
    # one spare replica of 2 GPUs (not one GPU, which serves nothing): 44
    replicas = math.ceil(peak_qps / requests_per_s)
    assert replicas == 21
    assert result.gpus_per_replica == gpus
    assert result.gpus_needed == replicas * gpus
    assert result.gpus == (replicas + 1) * gpus


def test_model_estimate_at_maximum_throughput_keeps_the_utilisation(fake_capacity):
    """No latency target: the capacity is the maximum throughput, so the planned 60%
    utilisation still applies."""
    throughput = model_throughput(llm("llama-3.1-70b"), gpu("h100-sxm"), 1500, 400)
    result = estimate_with_model(EstimateAssumptions(), throughput)
    peak_qps = REQUESTS_PER_DAY / SECONDS_PER_DAY * PEAK_TO_AVERAGE
    assert result.assumptions.target_utilization == TARGET_UTILIZATION
    assert result.gpus_by_throughput == pytest.approx(
        peak_qps * OUTPUT_TOKENS / (900 * TARGET_UTILIZATION)
    )


def test_model_throughput_none_fits(monkeypatch):
    monkeypatch.setattr(
        models.calculators.estimate,
        "replica_capacity",
        lambda config, mix, targets, efficiency: _capacity(config, 0.0, fits=False),
    )
    with pytest.raises(NoServingConfig, match="weights do not fit"):
        model_throughput(llm("llama-3.1-405b"), gpu("l40s"), 1500, 400)


def test_model_throughput_with_the_performance_model():
    # the real model: the winner is the best per GPU among the layouts that serve
    throughput = model_throughput(llm("llama-3.1-8b"), gpu("h100-sxm"), 1500, 400)
    usable = [c for c in throughput.candidates if c.fits and c.meets_slo]
    assert throughput.best in usable
    assert throughput.gpu_tokens_per_s == max(c.output_tokens_per_s_per_gpu for c in usable)
    assert [c.config.tp for c in throughput.candidates] == [1, 2, 4, 8]
    assert "no latency target" in throughput.source
