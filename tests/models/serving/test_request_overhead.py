"""The engine profile's request overhead o (`Efficiency.request_overhead_s`: HTTP,
tokenisation, scheduling before the engine) in every TTFT the planner states: a constant
each request pays once, outside the engine's queue, so every TTFT figure moves by o and
nothing else does; a target tighter than o is out of reach, and the reason says why."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.traffic import TokenDistribution
from models.serving.batch_model import BatchModel
from models.serving.capacity import replica_capacity
from models.serving.disaggregated import PairLayout, pair_at_concurrency
from models.serving.frontier import throughput_frontier
from models.serving.latency import latency_at_rate
from models.serving.prefill_model import prefill_lane
from models.serving.replica import (
    LatencyTargets,
    MixTokens,
    ReplicaConfig,
    Role,
    ServingContext,
    TrafficMix,
)
from models.serving.replica_layout import replica_step_model

GPU = catalog.gpu("b200")
LLM = catalog.llm("llama-3.3-70b")
FP8 = Precision.FP8
UNIFIED = ReplicaConfig(GPU, LLM, FP8, FP8, 1, 1)
PREFILL = ReplicaConfig(GPU, LLM, FP8, FP8, 1, 1, Role.PREFILL)
DECODE = ReplicaConfig(GPU, LLM, FP8, FP8, 1, 1, Role.DECODE)
BARE = efficiency_for(GPU, FP8, engine="trtllm-0.20")
OVERHEAD_S = 0.080
WITH = BARE.model_copy(update={"request_overhead_s": OVERHEAD_S})
MIX = TrafficMix.of_lengths(
    TokenDistribution(mean=1500, p99=6000), TokenDistribution(mean=400, p99=1200)
)
TARGETS = LatencyTargets(ttft_p99_s=0.8, tpot_p99_s=0.05)


def test_the_trtllm_profiles_carry_no_overhead():
    """The plans of the instance files (TensorRT-LLM profiles) stay as they were."""
    assert BARE.request_overhead_s == 0.0
    assert efficiency_for(GPU, FP8).request_overhead_s == 0.0


@pytest.mark.parametrize("batch", [1.0, 20.0, 60.0])
def test_a_unified_replicas_p99_ttft_is_the_one_without_plus_the_overhead(batch):
    """TTFT99(B) with o = TTFT99(B) without + o at the same batch, and the step and TPOT
    are untouched: o is paid before the engine, so the engine's batch is the same."""
    steps = replica_step_model(UNIFIED, BARE)
    tokens = MixTokens.of(MIX)
    bare = BatchModel(steps, tokens, Role.UNIFIED, 0.0, 0.0).point(batch)
    paid = BatchModel(steps, tokens, Role.UNIFIED, 0.0, 0.0, request_overhead_s=OVERHEAD_S).point(
        batch
    )
    assert paid.ttft_p99_s == pytest.approx(bare.ttft_p99_s + OVERHEAD_S, rel=1e-12)
    assert (paid.step_s, paid.rate, paid.tpot_p99_s) == (bare.step_s, bare.rate, bare.tpot_p99_s)


def test_a_decode_replica_does_not_pay_it_again():
    """A disaggregated request pays o once, at the prefill side: the decode replica's
    TTFT (its KV transfer) is the same with it."""
    steps = replica_step_model(DECODE, BARE)
    tokens = MixTokens.of(MIX)
    bare = BatchModel(steps, tokens, Role.DECODE, 0.01, 0.02).point(8.0)
    paid = BatchModel(steps, tokens, Role.DECODE, 0.01, 0.02, request_overhead_s=0.08).point(8.0)
    assert paid.ttft_p99_s == bare.ttft_p99_s == 0.02


def test_a_prefill_replicas_floor_and_ttft_move_by_the_overhead():
    """The prefill replica's best p99 TTFT (o + S(P99) + T(P99)) moves by o, and so does
    its p99 TTFT at any rate below saturation (same wait, residual, ride)."""
    bare = replica_capacity(PREFILL, MIX, LatencyTargets(ttft_p99_s=2.0), BARE)
    paid = replica_capacity(PREFILL, MIX, LatencyTargets(ttft_p99_s=2.0), WITH)
    assert paid.best_ttft_p99_s == pytest.approx(bare.best_ttft_p99_s + OVERHEAD_S, rel=1e-12)
    steps = replica_step_model(PREFILL, BARE)
    tokens = MixTokens.of(MIX)
    lane_bare = prefill_lane(PREFILL, tokens, BARE, steps)
    lane_paid = prefill_lane(PREFILL, tokens, WITH, steps)
    for share in (0.0, 0.5, 0.9):
        rate = share / lane_bare.service_s
        assert lane_paid.ttft_p99_s(rate) == pytest.approx(
            lane_bare.ttft_p99_s(rate) + OVERHEAD_S, rel=1e-12
        )


def test_a_unified_replicas_floor_moves_by_the_overhead():
    bare = replica_capacity(UNIFIED, MIX, TARGETS, BARE)
    paid = replica_capacity(UNIFIED, MIX, TARGETS, WITH)
    assert paid.best_ttft_p99_s == pytest.approx(bare.best_ttft_p99_s + OVERHEAD_S, rel=1e-12)


@pytest.mark.parametrize("config", [UNIFIED, PREFILL], ids=["unified", "prefill"])
def test_a_target_tighter_than_the_overhead_is_out_of_reach(config):
    """A 60 ms TTFT target against an 80 ms overhead: no layout meets it, and the reason
    names the overhead."""
    capacity = replica_capacity(config, MIX, LatencyTargets(ttft_p99_s=0.060), WITH)
    assert not capacity.meets_slo and capacity.requests_per_s == 0.0
    assert capacity.best_ttft_p99_s > OVERHEAD_S
    assert "80 ms of it is the engine profile's request overhead" in capacity.reason
    assert "request_overhead_s" in capacity.reason


def test_the_same_capacity_as_the_target_less_the_overhead():
    """TTFT99 = o + f(load), so the edge of TTFT99 <= T is the edge of f <= T - o: the
    capacity with o at target T is the one without it at T - o (to the search's
    precision)."""
    for config in (UNIFIED, PREFILL):
        paid = replica_capacity(config, MIX, TARGETS, WITH)
        less = LatencyTargets(ttft_p99_s=0.8 - OVERHEAD_S, tpot_p99_s=0.05)
        bare = replica_capacity(config, MIX, less, BARE)
        assert paid.requests_per_s == pytest.approx(bare.requests_per_s, rel=1e-9)
        assert paid.limit is bare.limit


@settings(max_examples=25, deadline=None)
@given(
    overhead_s=st.floats(0.0, 0.5),
    ttft_s=st.floats(0.3, 3.0),
    prompt=st.sampled_from([500, 1500, 4000]),
    role=st.sampled_from([Role.UNIFIED, Role.PREFILL]),
    pool=st.sampled_from([1, 4]),
)
def test_an_overhead_never_raises_a_capacity(overhead_s, ttft_s, prompt, role, pool):
    config = UNIFIED if role is Role.UNIFIED else PREFILL
    mix = TrafficMix.of_lengths(
        TokenDistribution(mean=prompt, p99=3 * prompt), TokenDistribution(mean=300, p99=900)
    )
    targets = LatencyTargets(ttft_p99_s=ttft_s, tpot_p99_s=0.06)
    paid = BARE.model_copy(update={"request_overhead_s": overhead_s})
    with_it = replica_capacity(config, mix, targets, paid, pool)
    without = replica_capacity(config, mix, targets, BARE, pool)
    assert with_it.requests_per_s <= without.requests_per_s * (1 + 1e-9)
    assert with_it.best_ttft_p99_s == pytest.approx(without.best_ttft_p99_s + overhead_s)


def test_perfs_latency_at_a_rate_moves_every_ttft_by_the_overhead():
    """At a fixed rate the batch is the same, so the mean, p50 and p99 TTFT each move by
    o and the TPOT not at all."""
    bare = latency_at_rate(ServingContext(UNIFIED, MIX, BARE), 2.0)
    paid = latency_at_rate(ServingContext(UNIFIED, MIX, WITH), 2.0)
    assert paid.batch == bare.batch
    for name in ("ttft_mean_s", "ttft_p50_s", "ttft_p99_s"):
        assert getattr(paid, name) == pytest.approx(getattr(bare, name) + OVERHEAD_S, rel=1e-12)
    assert (paid.tpot_mean_s, paid.tpot_p99_s) == (bare.tpot_mean_s, bare.tpot_p99_s)


def test_the_frontier_moves_by_the_overhead():
    bare = throughput_frontier(ServingContext(UNIFIED, MIX, BARE), TARGETS, batches=[4.0, 32.0])
    paid = throughput_frontier(ServingContext(UNIFIED, MIX, WITH), TARGETS, batches=[4.0, 32.0])
    for b, p in zip(bare, paid, strict=True):
        assert p.ttft_p99_s == pytest.approx(b.ttft_p99_s + OVERHEAD_S, rel=1e-12)


def _pair(efficiency, users: int, arrivals: str):
    fixed = TrafficMix.fixed(2000, 200)
    layout = PairLayout(
        ServingContext(PREFILL, fixed, efficiency), ServingContext(DECODE, fixed, efficiency), 1, 1
    )
    return pair_at_concurrency(layout, users, arrivals, requests_per_user=3)


def test_a_lone_user_of_a_pair_waits_the_overhead_once():
    """One user of a 1 + 1 pair never queues in the burst replay: each TTFT is
    o + the lone prompt's prefill + K / W. In the steady model its TTFT is the one
    without o plus o, less the M/G/1 wait its own longer loop (a lower rate X) saves."""
    burst = _pair(WITH, 1, "burst")
    lone_s = OVERHEAD_S + burst.prefill_s + burst.kv_transfer_s
    assert burst.point.ttft_mean_s == pytest.approx(lone_s, rel=1e-12)
    assert burst.point.prefill_wait_mean_s == pytest.approx(0.0, abs=1e-12)
    bare, paid = _pair(BARE, 1, "steady").point, _pair(WITH, 1, "steady").point
    assert paid.throughput_requests_per_s < bare.throughput_requests_per_s
    assert paid.prefill_wait_mean_s <= bare.prefill_wait_mean_s
    assert paid.ttft_mean_s == pytest.approx(
        bare.ttft_mean_s + OVERHEAD_S - (bare.prefill_wait_mean_s - paid.prefill_wait_mean_s),
        rel=1e-9,
    )


def test_a_pairs_burst_spends_the_overhead_outside_the_engine():
    """With 8 users the overhead stretches each user's loop by o but queues nothing: the
    TTFT with o is at most the one without plus o, and the TPOT no worse."""
    bare, paid = _pair(BARE, 8, "burst").point, _pair(WITH, 8, "burst").point
    assert paid.ttft_mean_s <= bare.ttft_mean_s + OVERHEAD_S + 1e-9
    assert paid.ttft_mean_s >= OVERHEAD_S
    assert paid.tpot_mean_s <= bare.tpot_mean_s + 1e-12
    assert math.isfinite(paid.throughput_requests_per_s)
