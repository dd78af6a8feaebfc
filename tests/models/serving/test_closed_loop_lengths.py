"""Length spread and the per-request overhead in the closed-loop replay
(models.serving.closed_loop): waves of users with different lengths worked out by hand,
the overhead counted once per request, and the zero-spread replay equal to the
fixed-length replay as it was before lengths could spread."""

import math
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.serving.closed_loop import (
    FIXED,
    LengthSpread,
    replay_closed_loop,
    replay_requests,
)

TAU = 0.010
"""A constant iteration time, s: the hand cases count iterations."""


def constant(batch: int, prompt_tokens: float) -> float:
    return TAU


def test_two_users_of_different_lengths_by_hand():
    """Budget T = 1000, two users, four requests in send order:
    k0 (u0) P = 1500, O = 2;  k1 (u1) P = 300, O = 4;  k2 P = 700, O = 2;  k3 P = 200, O = 2.
    it 0: B = 0: k0 takes 1000 (500 left); k1 waits behind it (first come, first served)
    it 1: B = 0: k0's last 500 and k1's 300 -> both first tokens at 2 tau (TTFT 2 tau each)
    it 2: B = 2: k0's 2nd token: k0 completes at 3 tau; u0 sends k2 at 3 tau
    it 3: B = 1 (k1): k2's 700 tokens -> first token at 4 tau, TTFT 1 tau
    it 4: B = 2: k1's 4th token (tokens at it 1, 2, 3, 4) and k2's 2nd: both complete at
          5 tau; u1 sends k3 (the next in line), u0 has none left to send
    it 5: B = 0: k3's 200 tokens -> first token at 6 tau, TTFT 1 tau
    it 6: k3 completes at 7 tau.
    u1's second request goes out 2 tau after u0's: the wave has come apart.
    Mean TTFT (2 + 2 + 1 + 1) / 4 = 1.5 tau; each TPOT tau; 7 iterations; output tokens
    2 + 4 + 2 + 2 = 10; decode batch per iteration 0, 0, 2, 1, 2, 0, 1: mean 6 / 7."""
    lengths = [(1500, 2), (300, 4), (700, 2), (200, 2)]
    run = replay_requests(constant, 1000, 8, 2, lengths)
    assert run.requests == 4
    assert run.ttft_mean_s == pytest.approx((2 + 2 + 1 + 1) / 4 * TAU)
    assert run.ttft_p99_s == pytest.approx(2 * TAU)
    assert run.tpot_mean_s == pytest.approx(TAU)
    assert run.duration_s == pytest.approx(7 * TAU)
    assert run.output_tokens_per_s == pytest.approx(10 / (7 * TAU))
    assert run.mean_decode_batch == pytest.approx((0 + 0 + 2 + 1 + 2 + 0 + 1) / 7)


def test_the_overhead_counts_once_per_request():
    """One user, two requests of P = 100 (one iteration), O = 2, overhead o = tau / 2:
    k0 sent at 0, reaches the engine at 0.5 tau (the engine idles), prefilled by 1.5 tau
    (TTFT 1.5 tau), completes at 2.5 tau; k1 sent then, reaches the engine at 3 tau, first
    token at 4 tau (TTFT 1.5 tau), completes at 5 tau. Each TTFT is one iteration plus o;
    the run is the 4 iterations without overhead plus o for each of its 2 requests; TPOT
    is untouched."""
    overhead = TAU / 2
    run = replay_closed_loop(constant, 1000, 8, 1, 2, 100, 2, request_overhead_s=overhead)
    bare = replay_closed_loop(constant, 1000, 8, 1, 2, 100, 2)
    assert run.ttft_mean_s == pytest.approx(TAU + overhead)
    assert run.ttft_mean_s == pytest.approx(bare.ttft_mean_s + overhead)
    assert run.duration_s == pytest.approx(4 * TAU + 2 * overhead)
    assert run.tpot_mean_s == pytest.approx(bare.tpot_mean_s)


def test_the_engine_runs_others_while_a_request_is_on_its_way():
    """Two users, seats for both, P = 100, O = 3, one request each, o = 5 tau: both reach the
    engine at 5 tau and run as without overhead, shifted: TTFT 1 tau + o each, the run
    3 iterations + o. The overhead is a delay in front of the engine, not engine time."""
    run = replay_closed_loop(constant, 1000, 8, 2, 1, 100, 3, request_overhead_s=5 * TAU)
    assert run.ttft_mean_s == pytest.approx(6 * TAU)
    assert run.duration_s == pytest.approx(8 * TAU)


def test_uniform_draws_cover_the_range_and_keep_the_mean():
    """A uniform spread s = 1 about a mean of 1000 draws over [0, 2000] (at least 1 token);
    the R2 quantiles of 1,000 requests are evenly spread, so their mean is within 1% of
    1000 and each tenth of the range holds 100 +- 5 of them."""
    lengths = LengthSpread("uniform", 1.0, 1.0).draw(1000, 1000, 1000)
    prompts = [p for p, _ in lengths]
    outputs = [o for _, o in lengths]
    for values in (prompts, outputs):
        assert min(values) >= 1 and max(values) <= 2000
        assert sum(values) / len(values) == pytest.approx(1000, rel=0.01)
        for tenth in range(10):
            inside = sum(200 * tenth <= v < 200 * (tenth + 1) for v in values)
            assert abs(inside - 100) <= 5
    # the prompt and output quantiles are not correlated (the R2 pair, not one sequence)
    mean_p, mean_o = sum(prompts) / 1000, sum(outputs) / 1000
    covariance = sum((p - mean_p) * (o - mean_o) for p, o in lengths) / 1000
    assert abs(covariance) / (577**2) < 0.05  # 577 = 2000 / sqrt(12), the uniform's sd


def test_a_range_ratio_maps_to_the_half_width():
    """Lengths over [r L, L] have mean L (1 + r) / 2 and half-width L (1 - r) / 2: for
    r = 0.5 the half-width is (1 - 0.5) / (1 + 0.5) = 1/3 of the mean."""
    spread = LengthSpread.uniform_range(0.5)
    assert spread.prompt == pytest.approx(1 / 3) and spread.output == pytest.approx(1 / 3)
    lengths = spread.draw(600, 750, 750)  # L = 1000: draws over [500, 1000]
    assert min(p for p, _ in lengths) >= 500 and max(p for p, _ in lengths) <= 1000


def test_a_lognormal_spread_keeps_its_mean():
    """Lognormal lengths with cv 1 about a mean of 300: the R2 quantiles' mean is within
    5% of 300 (the heavy tail converges slowly) and the median near 300 / sqrt(2) = 212
    (the lognormal's median m / sqrt(1 + cv^2))."""
    prompts = sorted(p for p, _ in LengthSpread("lognormal", 1.0, 1.0).draw(2000, 300, 300))
    assert sum(prompts) / len(prompts) == pytest.approx(300, rel=0.05)
    assert prompts[1000] == pytest.approx(300 / math.sqrt(2), rel=0.02)


def test_bad_spreads_are_refused():
    with pytest.raises(ValueError, match="is not one of"):
        LengthSpread("zipf")
    with pytest.raises(ValueError, match="uniform prompt"):
        LengthSpread("uniform", 1.5, 0.0)
    with pytest.raises(ValueError, match="range ratio"):
        LengthSpread.uniform_range(1.2)


def _fixed_length_replay_as_before(iteration_s, budget_tokens, max_sequences, users,
                                   requests_per_user, prompt_tokens, output_tokens):  # fmt: skip
    """The replay as it was before lengths could spread (commit 0a39d95), less its
    argument checks: each user sends its own `requests_per_user` requests of (P, O)."""
    waiting = deque((user, 0.0) for user in range(users))
    prefilling: deque[list] = deque()
    finishing: dict[int, list] = {}
    left = dict.fromkeys(range(users), requests_per_user)
    decoding, now, batch_time, iteration = 0, 0.0, 0.0, 0
    ttfts, tpots = [], []
    while waiting or prefilling or decoding:
        while waiting and decoding + len(prefilling) < max_sequences:
            user, sent = waiting.popleft()
            prefilling.append([user, sent, prompt_tokens])
        budget = budget_tokens - decoding
        served, done = 0, []
        for entry in prefilling:
            if served >= budget:
                break
            take = min(entry[2], budget - served)
            entry[2] -= take
            served += take
            if entry[2] == 0:
                done.append(entry)
        step = iteration_s(decoding, float(served))
        now += step
        batch_time += decoding * step
        for _ in done:
            prefilling.popleft()
        completed = finishing.pop(iteration, [])
        decoding -= len(completed)
        for _user, _sent, first in completed:
            tpots.append((now - first) / (output_tokens - 1))
        for user, sent, _left in done:
            ttfts.append(now - sent)
            if output_tokens == 1:
                completed.append((user, sent, now))
            else:
                finishing.setdefault(iteration + output_tokens - 1, []).append((user, sent, now))
                decoding += 1
        for user, _, _ in completed:
            left[user] -= 1
            if left[user]:
                waiting.append((user, now))
        iteration += 1
    return now, batch_time / now, sorted(ttfts), sorted(tpots)


def varying(batch: int, prompt_tokens: float) -> float:
    """An iteration time that depends on both arguments, so that any change of who runs
    when shows in the clock."""
    return 0.004 + 0.0003 * batch + 2e-6 * prompt_tokens


@settings(max_examples=60, deadline=None)
@given(
    users=st.integers(1, 24),
    requests=st.integers(1, 3),
    prompt=st.integers(1, 3000),
    output=st.integers(1, 30),
    budget=st.integers(64, 4096),
    seats=st.integers(1, 32),
    shape=st.sampled_from(["fixed", "uniform", "lognormal"]),
)
def test_zero_spread_is_the_fixed_length_replay(
    users, requests, prompt, output, budget, seats, shape
):
    """With a zero spread of any shape every request is (P, O), and the replay gives the
    fixed-length replay's clock, batch, TTFTs and TPOTs exactly."""
    spread = FIXED if shape == "fixed" else LengthSpread(shape, 0.0, 0.0)
    run = replay_closed_loop(varying, budget, seats, users, requests, prompt, output, spread)
    duration, batch, ttfts, tpots = _fixed_length_replay_as_before(
        varying, budget, seats, users, requests, prompt, output
    )
    assert run.duration_s == pytest.approx(duration, rel=1e-12)
    assert run.mean_decode_batch == pytest.approx(batch, rel=1e-12)
    assert run.ttft_mean_s == pytest.approx(sum(ttfts) / len(ttfts), rel=1e-12)
    assert run.ttft_p99_s == pytest.approx(ttfts[max(1, math.ceil(0.99 * len(ttfts))) - 1])
    if tpots:
        assert run.tpot_mean_s == pytest.approx(sum(tpots) / len(tpots), rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(
    users=st.integers(1, 16),
    requests=st.integers(1, 3),
    prompt=st.integers(2, 3000),
    output=st.integers(2, 30),
    spread=st.floats(0.0, 1.0),
)
def test_a_spread_keeps_every_request_and_token(users, requests, prompt, output, spread):
    """Whatever the spread, the replay completes users x requests requests, and its
    output tokens/s is the drawn output tokens over the run."""
    lengths = LengthSpread("uniform", spread, spread)
    run = replay_closed_loop(constant, 1024, 16, users, requests, prompt, output, lengths)
    drawn = lengths.draw(users * requests, prompt, output)
    assert run.requests == users * requests
    assert run.output_tokens_per_s == pytest.approx(sum(o for _, o in drawn) / run.duration_s)
    assert run.tpot_mean_s == pytest.approx(TAU) or all(o == 1 for _, o in drawn)


def test_a_profiles_request_overhead_reaches_the_burst_replay():
    """A lone user on the 8B H100 replica with a 1,000-token prompt: each TTFT is the one
    prefill iteration t(0, 1000) plus the profile's request overhead (80 ms), and TPOT is
    the decode iteration t(1, 0), as without it."""
    from models.physics import catalog
    from models.physics.efficiency import efficiency_for
    from models.physics.precision import Precision
    from models.serving.latency import latency_at_concurrency_burst
    from models.serving.replica import ReplicaConfig, ServingContext, TrafficMix
    from models.serving.replica_layout import replica_step_model

    gpu, llm = catalog.gpu("h100-sxm"), catalog.llm("llama-3.1-8b")
    config = ReplicaConfig(gpu, llm, Precision.BF16, Precision.BF16, 1, 1)
    efficiency = efficiency_for(gpu, Precision.BF16).model_copy(
        update={"request_overhead_s": 0.080}
    )
    run = latency_at_concurrency_burst(
        ServingContext(config, TrafficMix.fixed(1000, 100), efficiency), 1, requests_per_user=2
    )
    steps = replica_step_model(config, efficiency)
    context, prefill_context = 1000 + 100 / 2, 1000 / 2
    assert run.ttft_mean_s == pytest.approx(
        steps.iteration_s(0, context, 1000, prefill_context) + 0.080
    )
    assert run.tpot_mean_s == pytest.approx(steps.iteration_s(1, context, 0, prefill_context))
