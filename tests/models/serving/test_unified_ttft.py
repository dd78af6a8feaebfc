"""The unified replica's p99 TTFT at saturation (`models.serving.batch_model`): the ride of the
prompts that queued behind a waiting prompt, by hand, in the assembled formula, and a
unified replica planned at 100% of its capacity meeting its SLO in simulation."""

import math

import numpy as np
import pytest

from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.traffic import TokenDistribution
from models.serving.batch_model import BatchModel, ride_s
from models.serving.capacity import replica_capacity
from models.serving.queueing import pooled_wait_p99_s
from models.serving.replica import LatencyTargets, MixTokens, ReplicaConfig, Role, TrafficMix
from models.serving.replica_layout import replica_step_model
from solver.simulate.engine import simulate_pool
from solver.simulate.traffic import arrival_times_s, token_lengths
from tests.plain_engine import plain_engine


def test_ride_is_the_work_that_queued_behind_while_it_waited():
    """rho 0.3 of a lane, waited 0.5 s: 0.3 x 0.5 = 0.15 s of other prompts' tokens, less
    than the room a 1,500-token prompt leaves in an 8,000-token lane iteration of 0.6 s:
    (8,000 - 1,500) x 0.6 / 8,000 = 0.4875 s."""
    utilisation, waited_s = 0.3, 0.5
    assert ride_s(utilisation, waited_s, 1500, 8000, 0.6) == pytest.approx(0.3 * 0.5)


def test_ride_is_capped_by_the_room_in_the_prompts_last_iteration():
    """A 7,800-token prompt leaves 200 tokens of an 8,000-token lane: 200 x 0.6 / 8,000 s.
    A 10,000-token prompt takes 2 iterations, leaving 2 x 8,000 - 10,000 = 6,000 tokens."""
    assert ride_s(0.9, 2.0, 7800, 8000, 0.6) == pytest.approx(200 * 0.6 / 8000)
    assert ride_s(0.9, 20.0, 10000, 8000, 0.6) == pytest.approx(6000 * 0.6 / 8000)
    assert ride_s(0.0, 2.0, 1500, 8000, 0.6) == 0.0


GPU = catalog.gpu("b200")
LLM = catalog.llm("llama-3.3-70b")
FP8 = Precision.FP8
CONFIG = ReplicaConfig(GPU, LLM, FP8, FP8, 1, 1)
EFFICIENCY = efficiency_for(GPU, FP8)
PROMPT = TokenDistribution(mean=1500, p99=6000)
OUTPUT = TokenDistribution(mean=400, p99=1200)
MIX = TrafficMix.of_lengths(PROMPT, OUTPUT)
TARGETS = LatencyTargets(ttft_p99_s=0.8, tpot_p99_s=0.05)


def test_unified_ttft_adds_the_ride_to_the_wait():
    """TTFT99 = residual + S(P) + sqrt((W99 + ride(rho, W99 + residual))^2
    + (S(P99) - S(P))^2), every part from the model's own pieces at B = 20; the p99
    prompt's tokens attend to its own P99 / 2 (no hits)."""
    steps = replica_step_model(CONFIG, EFFICIENCY)
    tokens = MixTokens.of(MIX)
    model = BatchModel(steps, tokens, Role.UNIFIED, 0.0, 0.0)
    batch = 20.0
    step_s = model.step_s(batch)
    rate = batch / (tokens.output * step_s)
    lane_tokens = steps.pp * steps.chunk_tokens - batch
    lane_s = steps.iteration_s(batch, tokens.context, lane_tokens, model.prefill_context)
    service_s = tokens.new_prompt * lane_s / lane_tokens
    wait_s = pooled_wait_p99_s(rate, service_s, tokens.prompt_scv)
    residual_s = model.residual_s(batch)
    room_s = (lane_tokens - tokens.new_prompt) * lane_s / lane_tokens
    ride = min(room_s, rate * service_s * (wait_s + residual_s))
    own_s = model.own_prefill_s(batch, tokens.new_prompt, lane_tokens)
    p99_context = tokens.prompt_p99 * tokens.hit + tokens.new_prompt_p99 / 2
    own_p99_s = model.own_prefill_s(batch, tokens.new_prompt_p99, lane_tokens, p99_context)
    expected_s = residual_s + own_s + math.hypot(wait_s + ride, own_p99_s - own_s)
    assert ride > 0
    assert model.ttft_p99_s(batch, step_s, rate) == pytest.approx(expected_s, rel=1e-12)


SEEDS = range(1, 7)
MINUTES = 20
WARMUP_S = 60.0
SAMPLING_TOLERANCE = 1.10
"""Simulated p99 may exceed the target by 10%: at one seed of 20 minutes the p99 TTFT
of this replica spreads +-15% between seeds (queue busy periods make the samples
correlated), so over 6 seeds (~14,000 measured requests) one standard error is ~6%."""


def test_a_unified_replica_planned_at_full_capacity_meets_its_slo_in_simulation():
    """One B200 serving Llama-3.3-70B fp8 (prompts 1,500 / p99 6,000, replies 400 /
    p99 1,200, SLO 800 ms TTFT / 50 ms TPOT) at exactly its planned capacity, Poisson
    arrivals, 6 seeds x 20 minutes pooled after a 1-minute warm-up: the simulated p99
    TTFT and TPOT are within the sampling tolerance of the targets. (Without the ride,
    the planned capacity was 2.65 requests/s, where the simulated p99 TTFT is ~980 ms.)"""
    capacity = replica_capacity(CONFIG, MIX, TARGETS, EFFICIENCY)
    engine = plain_engine(CONFIG, MIX, EFFICIENCY)
    ttft, tpot = [], []
    for seed in SEEDS:
        rng = np.random.default_rng(seed)
        arrivals = arrival_times_s(capacity.requests_per_s, MINUTES * 60.0, 1.0, rng)
        prompts = token_lengths(PROMPT, arrivals.size, rng)
        outputs = token_lengths(OUTPUT, arrivals.size, rng)
        trace = simulate_pool(engine, 1, arrivals, prompts, outputs)
        measured = trace.arrival_s >= WARMUP_S
        assert not np.isnan(trace.first_token_s[measured]).any()
        ttft.append(trace.ttft_s[measured])
        tpot.append(trace.tpot_s[measured[trace.output_tokens > 1]])
    ttft_all, tpot_all = np.concatenate(ttft), np.concatenate(tpot)
    assert ttft_all.size > 12_000
    assert np.quantile(ttft_all, 0.99) <= SAMPLING_TOLERANCE * TARGETS.ttft_p99_s
    assert np.quantile(tpot_all, 0.99) <= SAMPLING_TOLERANCE * TARGETS.tpot_p99_s


def test_prompt_tokens_attend_to_the_token_weighted_mean_context():
    """Lognormal prompts of mean 1,500 and p99 6,000 (cv_p^2 from the mix), no hits: a
    prompt of P tokens puts P tokens in at P / 2 each, so over tokens the mean context is
    E[P^2] / (2 E[P]) = 1,500 / 2 x (1 + cv_p^2), not 750."""
    tokens = MixTokens.of(MIX)
    model = BatchModel(replica_step_model(CONFIG, EFFICIENCY), tokens, Role.UNIFIED, 0.0, 0.0)
    assert tokens.prompt_scv > 0.5
    assert model.prefill_context == pytest.approx(1500 / 2 * (1 + tokens.prompt_scv))


def test_the_p99_prompt_prefills_at_its_own_context():
    """The p99 prompt's own prefill prices its tokens at P99 / 2 = 3,000 (mixed with the
    Q(B) others' at the mean), so it is slower than at the mix's mean context, and
    equal when the context given is the mean."""
    model = BatchModel(
        replica_step_model(CONFIG, EFFICIENCY), MixTokens.of(MIX), Role.UNIFIED, 0.0, 0.0
    )
    lane_tokens = model.lane_tokens(20.0)
    at_mean_s = model.own_prefill_s(20.0, 6000, lane_tokens)
    assert model.own_prefill_s(20.0, 6000, lane_tokens, 3000.0) > at_mean_s
    assert model.own_prefill_s(20.0, 6000, lane_tokens, model.prefill_context) == pytest.approx(
        at_mean_s, rel=1e-12
    )
