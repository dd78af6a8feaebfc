"""Closed-loop benchmark clients (models.serving.closed_loop): C users that start together,
replayed iteration by iteration, checked against waves worked out by hand."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.serving.closed_loop import replay_closed_loop
from models.serving.latency import latency_at_concurrency_burst
from models.serving.replica import ReplicaConfig, ServingContext, TrafficMix
from models.serving.replica_layout import replica_step_model

TAU = 0.010
"""A constant iteration time, s: the hand cases count iterations."""


def constant(batch: int, prompt_tokens: float) -> float:
    return TAU


def test_one_wave_of_four_prompts_by_hand():
    """Budget T = 1000 tokens, P = 500, O = 3, four users, one request each.
    it 0: B = 0, budget 1000: u0, u1 prefilled            -> TTFT 1 tau each
    it 1: B = 2, budget 998: u2 prefilled, u3 gets 498    -> u2 TTFT 2 tau
    it 2: B = 3, budget 997: u3's last 2 tokens           -> u3 TTFT 3 tau; u0, u1 done
    it 3: u2 done;  it 4: u3 done (each O - 1 = 2 iterations after its first token).
    Mean TTFT = (1 + 1 + 2 + 3) / 4 tau = 1.75 tau; every TPOT = tau; 5 iterations;
    decode batch per iteration 0, 2, 3, 2, 1: mean 8 / 5 = 1.6."""
    run = replay_closed_loop(constant, 1000, 100, 4, 1, 500, 3)
    assert run.ttft_mean_s == pytest.approx((1 + 1 + 2 + 3) / 4 * TAU)
    assert run.ttft_p50_s == pytest.approx(1 * TAU)  # nearest rank 2 of [1, 1, 2, 3]
    assert run.ttft_p99_s == pytest.approx(3 * TAU)
    assert run.tpot_mean_s == pytest.approx(TAU)
    assert run.duration_s == pytest.approx(5 * TAU)
    assert run.throughput_requests_per_s == pytest.approx(4 / (5 * TAU))
    assert run.output_tokens_per_s == pytest.approx(4 * 3 / (5 * TAU))
    assert run.mean_decode_batch == pytest.approx((0 + 2 + 3 + 2 + 1) / 5)


def test_seats_hold_the_second_pair_back():
    """Two seats, four users, T = 1000, P = 500, O = 2: u0, u1 are prefilled at it 0 and
    finish at it 1; u2, u3 are seated at it 2 and prefilled there. TTFTs 1, 1, 3, 3 tau
    (u2 and u3 were sent at t = 0): mean 2 tau; 4 iterations."""
    run = replay_closed_loop(constant, 1000, 2, 4, 1, 500, 2)
    assert run.ttft_mean_s == pytest.approx((1 + 1 + 3 + 3) / 4 * TAU)
    assert run.duration_s == pytest.approx(4 * TAU)


def test_users_come_back_when_their_request_completes():
    """One user, two requests, P = 100 (one iteration), O = 2: request 1 prefilled at it 0,
    completes at it 1, request 2 sent then, prefilled at it 2, completes at it 3.
    Both TTFTs one tau; 4 iterations."""
    run = replay_closed_loop(constant, 1000, 8, 1, 2, 100, 2)
    assert run.requests == 2
    assert run.ttft_mean_s == pytest.approx(TAU)
    assert run.duration_s == pytest.approx(4 * TAU)


@settings(max_examples=40, deadline=None)
@given(
    users=st.integers(1, 40),
    requests=st.integers(1, 3),
    prompt=st.integers(1, 3000),
    output=st.integers(2, 40),
    budget=st.integers(64, 4096),
    seats=st.integers(1, 64),
)
def test_a_constant_step_gives_every_token_one_step(users, requests, prompt, output, budget, seats):
    """With t(B, q) = tau, a seated sequence emits one token per iteration: TPOT = tau
    exactly, and every gap between two tokens is one iteration (the median ITL is tau); a
    prompt needs at least ceil(P / T) iterations, so TTFT >= that many tau; and the
    tool's throughput is users x requests over the run."""
    run = replay_closed_loop(constant, budget, seats, users, requests, prompt, output)
    assert run.tpot_mean_s == pytest.approx(TAU)
    assert run.itl_p50_s == pytest.approx(TAU)
    assert run.ttft_p50_s >= math.ceil(prompt / budget) * TAU - 1e-12
    assert run.throughput_requests_per_s == pytest.approx(users * requests / run.duration_s)
    assert run.mean_decode_batch <= min(users, seats) + 1e-9


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="users"):
        replay_closed_loop(constant, 1000, 8, 0, 1, 10, 2)
    with pytest.raises(ValueError, match="seat"):
        replay_closed_loop(constant, 0, 8, 1, 1, 10, 2)
    with pytest.raises(ValueError, match="iterations"):
        replay_closed_loop(constant, 1000, 1, 1000, 1000, 10, 10_000)


def test_a_lone_user_sees_one_prefill_iteration_and_the_decode_step():
    """One user, a 1,000-token prompt within the 8B H100 replica's budget: TTFT is one
    iteration with no decoding sequence and 1,000 prompt tokens, t(0, 1000); TPOT the
    decode iteration at batch 1, t(1, 0) (the replay's own step model, context P + O/2)."""
    gpu, llm = catalog.gpu("h100-sxm"), catalog.llm("llama-3.1-8b")
    config = ReplicaConfig(gpu, llm, Precision.BF16, Precision.BF16, 1, 1)
    efficiency = efficiency_for(gpu, Precision.BF16)
    mix = TrafficMix.fixed(1000, 100)
    run = latency_at_concurrency_burst(
        ServingContext(config, mix, efficiency), 1, requests_per_user=1
    )
    steps = replica_step_model(config, efficiency)
    context = 1000 + 100 / 2
    prefill_context = 1000 / 2
    assert run.ttft_mean_s == pytest.approx(steps.iteration_s(0, context, 1000, prefill_context))
    assert run.tpot_mean_s == pytest.approx(steps.iteration_s(1, context, 0, prefill_context))


def test_a_burst_waits_longer_than_staggered_arrivals():
    """64 users starting together queue behind each other's prefill: the burst's mean
    TTFT is above one prompt's, and rises with the users (more prompts ahead)."""
    gpu, llm = catalog.gpu("h100-sxm"), catalog.llm("llama-3.1-8b")
    config = ReplicaConfig(gpu, llm, Precision.BF16, Precision.BF16, 1, 1)
    efficiency = efficiency_for(gpu, Precision.BF16)
    mix = TrafficMix.fixed(2000, 200)
    lone = latency_at_concurrency_burst(ServingContext(config, mix, efficiency), 1)
    few = latency_at_concurrency_burst(ServingContext(config, mix, efficiency), 16)
    many = latency_at_concurrency_burst(ServingContext(config, mix, efficiency), 64)
    assert lone.ttft_mean_s < few.ttft_mean_s < many.ttft_mean_s


PERF_ONE = ("perf", "-m", "llama-3.1-8b", "--gpu", "h100-sxm", "--precision", "bf16",
            "-i", "1000", "-o", "100", "--json")  # fmt: skip


def test_perf_concurrency_replays_the_tools_burst_by_default(run_cli):
    """One user: every request runs alone, so each TTFT is one prefill iteration of the
    whole 1,000-token prompt with nothing decoding, t(0, 1000), and the JSON says
    `arrivals: burst`; --arrivals steady gives the staggered fixed point instead."""
    burst = json.loads(run_cli(*PERF_ONE, "--concurrency", "1").stdout)
    steady = json.loads(run_cli(*PERF_ONE, "--concurrency", "1", "--arrivals", "steady").stdout)
    gpu, llm = catalog.gpu("h100-sxm"), catalog.llm("llama-3.1-8b")
    config = ReplicaConfig(gpu, llm, Precision.BF16, Precision.BF16, 1, 1)
    steps = replica_step_model(config, efficiency_for(gpu, Precision.BF16))
    one_prefill_ms = steps.iteration_s(0, 1000 + 100 / 2, 1000, 1000 / 2) * 1e3
    assert burst["arrivals"] == "burst" and steady["arrivals"] == "steady"
    assert burst["ttft_mean_ms"] == pytest.approx(one_prefill_ms)
    assert burst["in_flight"] == 1
    assert steady["ttft_mean_ms"] != pytest.approx(one_prefill_ms)


def test_a_burst_replays_whole_users(run_cli):
    result = run_cli(*PERF_ONE, "--concurrency", "2.5")
    assert result.exit_code == 2 and "--arrivals steady" in result.stderr
    assert run_cli(*PERF_ONE, "--concurrency", "2.5", "--arrivals", "steady").exit_code == 0
