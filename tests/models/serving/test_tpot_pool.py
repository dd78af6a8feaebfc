"""The p99 TPOT's pool-dependent terms (`models.serving.batch_model.BatchModel.tpot_p99_s`):
the batch a reply lives through, whose Poisson spread over the replicas of a pool narrows
as 1 / sqrt(n), and a reply's life in a pool (`models.serving.tail.reply_life`, "Pools"; its
own tests in test_reply_life.py). Hand arithmetic where the formula is closed, properties
where it is not; the simulator checks lie in tests/models/serving/test_pool_slo.py."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.io.loading import load_instance
from models.physics.catalog import gpu, llm
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.instance import Instance
from models.schema.traffic import TokenDistribution
from models.serving.batch_model import FEEDBACK_GAIN_CAP, Z_P99, BatchModel
from models.serving.capacity import UNLIMITED_POOL, pooling_can_lift, replica_capacity
from models.serving.iteration_mixture import PREFILL_SHARE_CAP, IterationMixture
from models.serving.replica import LatencyTargets, Limit, MixTokens, ReplicaConfig, Role, TrafficMix
from models.serving.replica_layout import replica_step_model
from solver.candidates.table import build_candidates
from solver.solve import solve
from tests.paths import INSTANCES
from tests.synthetic import with_policy

FP8 = Precision.FP8


def _lengths(prompt: int, prompt_p99: int, output: int, output_p99: int) -> TrafficMix:
    return TrafficMix.of_lengths(
        TokenDistribution(mean=prompt, p99=prompt_p99),
        TokenDistribution(mean=output, p99=output_p99),
    )


CHAT = _lengths(1500, 6000, 400, 1200)
LONG_PROMPT = _lengths(4000, 16000, 300, 1000)
"""Llama 3.1 8B's long-prompt case of tests/models/serving/test_pool_slo.py."""


def _config(role: Role = Role.UNIFIED) -> ReplicaConfig:
    """Llama 3.1 8B fp8 on one H100."""
    return ReplicaConfig(gpu("h100-sxm"), llm("llama-3.1-8b"), FP8, FP8, 1, 1, role)


def _model(pool: float, mix=CHAT, role: Role = Role.UNIFIED) -> BatchModel:
    config = _config(role)
    steps = replica_step_model(config, efficiency_for(config.gpu, FP8))
    return BatchModel(steps, MixTokens.of(mix), role, 0.0, 0.0, pool)


def test_the_prefill_share_is_capped():
    """A mixture all but all prefill (t_0 / t = 1e-6) is taken at rho = 0.9, not
    1 - 1e-6: beyond it the token budget, not the busy period, stops the batch."""
    mixture = IterationMixture(1.0, 1.0, 1.0, 1e-6)
    assert mixture.prefill_share == PREFILL_SHARE_CAP


@pytest.mark.parametrize("mix", [CHAT, LONG_PROMPT])
def test_the_batch_spread_narrows_as_one_over_the_root_of_the_pool(mix):
    """B_hi - B = 2.326 sqrt(B / n) / (1 - g), g the same at the same B: a pool of 4 has
    half a lone replica's excess, a pool of 16 a quarter, an unlimited pool none."""
    batch = 30.0
    lone = _model(1, mix).batch_high(batch) - batch
    assert lone > Z_P99 * math.sqrt(batch)  # the feedback amplifies the Poisson spread
    assert lone <= Z_P99 * math.sqrt(batch) / (1 - FEEDBACK_GAIN_CAP)
    assert _model(4, mix).batch_high(batch) - batch == pytest.approx(lone / 2, rel=1e-12)
    assert _model(16, mix).batch_high(batch) - batch == pytest.approx(lone / 4, rel=1e-12)
    assert _model(UNLIMITED_POOL, mix).batch_high(batch) == batch


@given(st.floats(1.0, 60.0), st.sampled_from([1, 2, 3, 8, 64]))
@settings(max_examples=40, deadline=None)
def test_a_larger_pool_never_raises_the_p99_tpot(batch, pool):
    """At the same mean batch both pool-dependent terms only shrink as n grows (so the
    capacity per replica never falls), and every pool stays above the mean iteration."""
    tpots = [_model(n, LONG_PROMPT).tpot_p99_s(batch) for n in (pool, 2 * pool, UNLIMITED_POOL)]
    assert tpots[0] >= tpots[1] >= tpots[2] >= _model(1, LONG_PROMPT).step_s(batch)


def test_a_tpot_limited_replica_is_lifted_by_its_pool_and_credited_at_one():
    """Llama 3.1 8B on 4,000-token prompts at a 30 ms p99 TPOT and a loose TTFT is
    TPOT-limited: q(1) < q(8) < q(inf) in the physics, and the program credits q(1), a
    lower bound at every pool size (no ladder)."""
    config = _config()
    efficiency = efficiency_for(config.gpu, FP8)
    targets = LatencyTargets(ttft_p99_s=5.0, tpot_p99_s=0.030)
    lone, eight, unlimited = (
        replica_capacity(config, LONG_PROMPT, targets, efficiency, n)
        for n in (1, 8, UNLIMITED_POOL)
    )
    assert lone.limit is Limit.TPOT and not pooling_can_lift(lone)
    assert lone.requests_per_s < eight.requests_per_s < unlimited.requests_per_s


def _tpot_pooling_instance(credit: bool) -> Instance:
    plain = load_instance(INSTANCES / "tpot-pooling.yaml")
    return with_policy(plain, credit_tpot_pooling=credit)


def test_credit_tpot_pooling_buys_what_the_ladder_carries_by_hand():
    """instances/tpot-pooling.yaml: 120 requests/s on one TPOT-limited candidate.
    Without the credit n replicas carry n q(1): ceil(120 / q(1)) GPUs. With it a pool of
    n carries n q(P), P the largest ladder step at or below n: the fewest n with
    n q(P(n)) >= 120. Both plans pass the verifier (solve runs it)."""
    flat, credited = (_tpot_pooling_instance(c) for c in (False, True))
    (lone,) = build_candidates(flat).of("chat")
    (pooled,) = build_candidates(credited).of("chat")
    assert lone.ladder == () and pooled.ladder
    q1 = lone.requests_per_s
    assert pooled.requests_per_s == pytest.approx(q1, rel=1e-12)  # the same lone replica

    def carried(n: int) -> float:
        steps = [s.requests_per_s for s in pooled.ladder if s.replicas <= n]
        return n * (steps[-1] if steps else q1)

    by_hand = min(n for n in range(1, 64) if carried(n) >= 120.0)
    assert by_hand < math.ceil(120.0 / q1)
    for instance, expected in ((flat, math.ceil(120.0 / q1)), (credited, by_hand)):
        (pool,) = solve(instance).replicas
        assert pool.count == expected
