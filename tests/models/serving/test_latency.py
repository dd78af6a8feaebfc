"""Latency at a load (`models.serving.latency`): the low-load limits against the step model, the
queue's growth below saturation against Pollaczek-Khinchine, saturation, Little's law,
and monotonicity in the load (hypothesis)."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cli.exit_codes import ExitCode
from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.serving.latency import latency_at_concurrency, latency_at_rate, saturation_rate
from models.serving.replica import ReplicaConfig, Role, ServingContext, TrafficMix

GPU = catalog.gpu("h100-sxm")
LLM = catalog.llm("llama-3.1-8b")
CONFIG = ReplicaConfig(GPU, LLM, Precision.BF16, Precision.BF16, 1, 1)
EFFICIENCY = efficiency_for(GPU, Precision.BF16)
STEPS = step_model(GPU, LLM, Precision.BF16, Precision.BF16, 1, 1, EFFICIENCY)
CHAT = TrafficMix.fixed(467, 256)
LONG_PROMPTS = TrafficMix.fixed(6000, 50)
CHAT_REPLICA = ServingContext(CONFIG, CHAT, EFFICIENCY)
LONG_PROMPT_REPLICA = ServingContext(CONFIG, LONG_PROMPTS, EFFICIENCY)


def test_low_rate_gives_the_batch_one_step_and_one_prefill():
    prompt_tokens, output_tokens = 467, 256
    load = latency_at_rate(CHAT_REPLICA, 0.01)
    mean_context = prompt_tokens + output_tokens / 2
    assert load.tpot_mean_s == pytest.approx(STEPS.decode_step_s(1, mean_context), rel=0.01)
    assert load.ttft_mean_s == pytest.approx(STEPS.prefill_s(prompt_tokens), rel=0.02)
    assert not load.saturated


def test_ttft_grows_below_saturation_as_pollaczek_khinchine_says():
    """Fixed 6000-token prompts (cs^2 = 0): mean TTFT = residual/2 + own prefill +
    rho S / (2 (1 - rho)), S the lane's service time at the load's batch."""
    prompt, output = 6000, 50
    edge = saturation_rate(LONG_PROMPT_REPLICA)
    waits = []
    for share in (0.5, 0.8, 0.9, 0.95):
        rate = share * edge
        load = latency_at_rate(LONG_PROMPT_REPLICA, rate)
        batch = load.batch
        context = prompt + output / 2
        riding = batch * prompt / output
        lane_tokens = STEPS.chunk_tokens - batch
        lane_full_s = STEPS.iteration_s(batch, context, lane_tokens, prompt / 2)
        service_s = prompt * lane_full_s / lane_tokens
        rho = rate * service_s
        wait_s = rho * service_s / (2 * (1 - rho))
        own_s = STEPS.iteration_s(batch, context, min(lane_tokens, riding + prompt), prompt / 2)
        own_s *= max(1.0, prompt / lane_tokens)
        # The iteration in progress, length-biased: K ~ Poisson(B / O) whole prompts join
        # an iteration; k of them fill k P / lane iterations at a full lane when they do
        # not fit it (fixed lengths: no spread term).
        mean_prompts = batch / output
        count = time_s = square_s = 0.0
        for k in range(40):
            weight = math.exp(-mean_prompts) * mean_prompts**k / math.factorial(k)
            iterations = max(1.0, k * prompt / lane_tokens)
            one_s = STEPS.iteration_s(batch, context, min(k * prompt, lane_tokens), prompt / 2)
            count += weight * iterations
            time_s += weight * iterations * one_s
            square_s += weight * iterations * one_s**2
        residual_s = square_s / time_s * (1 - math.exp(-batch)) / 2
        # rel 1e-5: the model leaves out the Poisson tail beyond 1e-5 of its mass
        assert load.ttft_mean_s == pytest.approx(residual_s + own_s + wait_s, rel=1e-5)
        waits.append(wait_s)
    assert waits == sorted(waits) and waits[-1] > 5 * waits[0]


def test_above_saturation_the_queue_is_unbounded():
    edge = saturation_rate(CHAT_REPLICA)
    load = latency_at_rate(CHAT_REPLICA, 1.01 * edge)
    assert load.saturated
    assert math.isinf(load.ttft_p99_s) and math.isinf(load.in_flight)
    assert load.saturation_requests_per_s == pytest.approx(edge)
    assert not latency_at_rate(CHAT_REPLICA, 0.99 * edge).saturated


def test_open_loop_in_flight_is_littles_law():
    rate = 10.0
    load = latency_at_rate(CHAT_REPLICA, rate)
    output_tokens = 256
    assert load.in_flight == pytest.approx(
        rate * (load.ttft_mean_s + output_tokens * load.tpot_mean_s)
    )
    assert load.batch == pytest.approx(rate * output_tokens * load.step_s, rel=1e-9)


def test_closed_loop_holds_every_user_and_saturates_at_the_ceiling():
    for users in (1, 50, 400):
        load = latency_at_concurrency(CHAT_REPLICA, users)
        assert load.in_flight == pytest.approx(users, rel=1e-6)
    ceiling = saturation_rate(CHAT_REPLICA)
    crowd = latency_at_concurrency(CHAT_REPLICA, 5000)
    assert crowd.saturated and crowd.throughput_requests_per_s == pytest.approx(ceiling)
    # the extra users queue: each waits (C - held) / X on top of the TTFT at the ceiling
    more = latency_at_concurrency(CHAT_REPLICA, 6000)
    assert more.ttft_mean_s - crowd.ttft_mean_s == pytest.approx(1000 / ceiling, rel=1e-6)


def test_a_non_unified_replica_is_refused():
    decode = ReplicaConfig(GPU, LLM, Precision.BF16, Precision.BF16, 1, 1, Role.DECODE)
    with pytest.raises(ValueError, match="unified"):
        latency_at_rate(ServingContext(decode, CHAT, EFFICIENCY), 1.0)


@settings(max_examples=25, deadline=None)
@given(
    low=st.floats(0.0, 0.97),
    high=st.floats(0.0, 0.97),
    prompt=st.sampled_from([200, 1500, 6000]),
)
def test_latency_rises_with_the_rate(low, high, prompt):
    low, high = sorted((low, high))
    mix = TrafficMix.of_lengths(*_lognormal(prompt, 200))
    edge = saturation_rate(ServingContext(CONFIG, mix, EFFICIENCY))
    a = latency_at_rate(ServingContext(CONFIG, mix, EFFICIENCY), low * edge)
    b = latency_at_rate(ServingContext(CONFIG, mix, EFFICIENCY), high * edge)
    for field in ("ttft_mean_s", "ttft_p50_s", "ttft_p99_s", "tpot_mean_s", "tpot_p99_s"):
        assert getattr(a, field) <= getattr(b, field) * (1 + 1e-9), field
    assert a.ttft_p50_s <= a.ttft_p99_s and a.tpot_mean_s <= a.tpot_p99_s


@settings(max_examples=25, deadline=None)
@given(low=st.floats(1, 3000), high=st.floats(1, 3000), pool=st.integers(1, 8))
def test_closed_loop_throughput_and_ttft_rise_with_users(low, high, pool):
    low, high = sorted((low, high))
    a = latency_at_concurrency(CHAT_REPLICA, low, pool)
    b = latency_at_concurrency(CHAT_REPLICA, high, pool)
    assert a.throughput_requests_per_s <= b.throughput_requests_per_s * (1 + 1e-9)
    assert a.ttft_mean_s <= b.ttft_mean_s * (1 + 1e-9)


@settings(max_examples=20, deadline=None)
@given(share=st.floats(0.05, 0.95), pool=st.integers(1, 16))
def test_a_larger_pool_never_waits_longer(share, pool):
    mix = TrafficMix.of_lengths(*_lognormal(1500, 400))
    rate = share * saturation_rate(ServingContext(CONFIG, mix, EFFICIENCY))
    small = latency_at_rate(ServingContext(CONFIG, mix, EFFICIENCY), rate, pool)
    large = latency_at_rate(ServingContext(CONFIG, mix, EFFICIENCY), rate, pool + 1)
    assert large.ttft_p99_s <= small.ttft_p99_s * (1 + 1e-9)
    assert large.ttft_mean_s <= small.ttft_mean_s * (1 + 1e-9)


def _lognormal(prompt: float, output: float):
    from models.schema.traffic import TokenDistribution

    return (
        TokenDistribution(mean=prompt, p99=4 * prompt),
        TokenDistribution(mean=output, p99=3 * output),
    )


PERF = ["perf", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-i", "467", "-o", "256", "--json"]


def test_perf_rate_adds_the_load_keys(run_cli):
    result = run_cli(*PERF, "--rate", "8")
    assert result.exit_code == ExitCode.OK, result.stderr
    data = json.loads(result.stdout)
    keys = {"ttft_mean_ms", "ttft_p50_ms", "ttft_p99_ms", "tpot_mean_ms", "tpot_p99_ms"}
    assert data.keys() >= keys | {"throughput_requests_per_s", "in_flight", "saturated"}
    assert data["saturated"] is False and data["throughput_requests_per_s"] == 8
    assert data.keys() >= {"requests_per_s", "limit", "max_batch"}  # existing keys kept


def test_perf_rate_past_saturation_says_so(run_cli):
    data = json.loads(run_cli(*PERF, "--rate", "1000").stdout)
    assert data["saturated"] is True and data["ttft_p99_ms"] is None


def test_perf_rate_and_concurrency_together_is_bad_input(run_cli):
    result = run_cli(*PERF, "--rate", "8", "--concurrency", "4")
    assert result.exit_code == ExitCode.BAD_INPUT
    assert "--rate/--concurrency" in result.stderr
