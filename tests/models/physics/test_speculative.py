"""Speculative decoding (`models.physics.speculative`): E by hand, the verify pass against a plain
step, the speed-up at batch 1 and the crossover batch derived by hand, the capacity model
with speculation, and the per-batch table."""

import math
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.physics import catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.speculative import (
    Speculation,
    SpeculativeSteps,
    batch_buckets,
    crossover_batch,
    expected_tokens,
    speculation_table,
    speculative_steps,
    tokens_variance,
    verify_iteration_s,
)
from models.physics.step_time import step_model
from models.serving.batch_model import BatchModel
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, MixTokens, ReplicaConfig, Role, TrafficMix
from models.serving.replica_layout import decode_steps, replica_step_model

H100 = catalog.gpu("h100-sxm")
LLAMA_70B = catalog.llm("llama-3.3-70b")
LLAMA_8B = catalog.llm("llama-3.1-8b")
FP8 = Precision.FP8
EFFICIENCY = efficiency_for("h100-sxm", FP8, None)
DRAFT_8B = Speculation("draft-8b", tokens=3, acceptance_rate=0.7, draft=LLAMA_8B)


def test_expected_tokens_by_hand_for_a_07_k3():
    # E = 1 + a + a^2 + a^3 = (1 - a^4) / (1 - a) = (1 - 0.2401) / 0.3
    a = 0.7
    by_sum = 1 + a + a * a + a * a * a
    assert by_sum == pytest.approx(2.533, abs=5e-4)
    assert expected_tokens(0.7, 3) == pytest.approx((1 - 0.2401) / 0.3, rel=1e-12)
    assert expected_tokens(0.7, 3) == pytest.approx(by_sum, rel=1e-12)


def test_tokens_variance_by_hand_for_a_07_k3():
    # E[X^2] = sum (2i + 1) a^i = 1 + 3 x 0.7 + 5 x 0.49 + 7 x 0.343 = 7.951
    second = 1 + 3 * 0.7 + 5 * 0.49 + 7 * 0.343
    e = 2.533  # 1 + 0.7 + 0.49 + 0.343, exactly
    assert tokens_variance(0.7, 3) == pytest.approx(second - e**2, rel=1e-9)


@given(a=st.floats(0.0, 1.0), k=st.integers(0, 16))
def test_expected_tokens_lies_between_one_and_k_plus_one(a, k):
    e = expected_tokens(a, k)
    assert 1.0 - 1e-12 <= e <= k + 1 + 1e-9
    assert e == pytest.approx(sum(a**i for i in range(k + 1)), rel=1e-9)
    assert expected_tokens(min(a + 0.05, 1.0), k) >= e - 1e-12  # more acceptance, more tokens
    assert expected_tokens(a, k + 1) >= e - 1e-12  # a longer draft never emits fewer


@pytest.mark.parametrize(("tp", "pp"), [(1, 1), (4, 1), (2, 2)])
@pytest.mark.parametrize("batch", [1.0, 7.0, 64.0])
def test_verify_of_no_draft_tokens_is_the_plain_iteration(tp, pp, batch):
    steps = step_model(H100, LLAMA_70B, FP8, FP8, tp, pp, EFFICIENCY)
    plain = steps.iteration_s(batch, 1500.0, 300.0, 600.0)
    assert verify_iteration_s(steps, batch, 1500.0, 0, 300.0, 600.0) == pytest.approx(
        plain, rel=1e-12
    )


def test_verify_pass_reads_kv_once_and_computes_k_plus_one_positions():
    """Three draft tokens at context c: linear FLOPs for 4 positions per sequence, KV read
    of c + 3 entries per sequence, attention over 4 (c + 1.5) pairs."""
    steps = step_model(H100, LLAMA_70B, FP8, FP8, 8, 1, EFFICIENCY)
    batch, context, k = 16.0, 2000.0, 3
    from models.physics.speculative import verify_parts

    parts = verify_parts(steps, batch, context, k)
    kv_read_s = batch * (context + k) * steps.kv_bytes_per_token / steps.hbm_bytes_per_s
    linear_s = batch * (k + 1) * steps.decode_linear_flops_per_token
    linear_s /= steps.decode_linear_flops_per_s
    attention_s = batch * (k + 1) * (context + k / 2) * steps.decode_attention_flops_per_pair
    attention_s /= steps.decode_attention_flops_per_s
    assert parts.kv_read_s == pytest.approx(kv_read_s, rel=1e-12)
    assert parts.linear_compute_s == pytest.approx(linear_s, rel=1e-12)
    assert parts.attention_compute_s == pytest.approx(attention_s, rel=1e-12)


def _bare_8b_steps():
    """Llama 3.1 8B at TP1 on an H100 with the engine overhead, the KV reads and attention
    zeroed: a pass of T tokens is max(T x c, w), c the linear compute per token and w the
    weight read, so the crossover can be worked out by hand."""
    steps = step_model(H100, LLAMA_8B, FP8, FP8, 1, 1, EFFICIENCY)
    return replace(
        steps,
        overhead_s=0.0,
        allreduces_per_pass=0,
        kv_bytes_per_token=0.0,
        decode_attention_flops_per_pair=0.0,
    )


def test_speedup_and_crossover_by_hand():
    """Draft cost ratio R = 0.1, k = 3, a = 0.7 on the bare step max(T c, w) + B s, s the
    engine's per-sequence overhead (paid once per sequence by a plain step, by the verify
    iteration and, through R x the plain step less its fixed overhead, by each draft step):

    small B (B (k + 1) c < w): TPOT = (1 + k R) (w + B s) / E against plain w + B s,
    speed-up = E / (1 + k R) > 1;
    B c <= w <= B (k + 1) c: TPOT = (k R (w + B s) + B (k + 1) c + B s) / E against plain
    w + B s, slower once B ((k + 1) c - (E - 1 - k R) s) > w (E - k R): the crossover is
    the next whole batch."""
    steps = _bare_8b_steps()
    w = steps.dense_weight_bytes / steps.hbm_bytes_per_s
    c = steps.decode_linear_flops_per_token / steps.decode_linear_flops_per_s
    s = steps.sequence_overhead_s
    k, a, ratio = 3, 0.7, 0.1
    e = (1 - a ** (k + 1)) / (1 - a)
    spec = SpeculativeSteps(steps, Speculation("eagle", k, a, draft_cost_ratio=ratio))
    context = 1000.0  # attention and KV are zeroed: the context does not matter here

    speedup_at_1 = e / (1 + k * ratio)
    assert spec.speedup(1, context) == pytest.approx(speedup_at_1, rel=1e-9)
    assert spec.speedup(1, context) > 1

    threshold = w * (e - k * ratio) / ((k + 1) * c - (e - 1 - k * ratio) * s)
    assert w / ((k + 1) * c) <= threshold <= w / c  # inside the middle regime
    crossover = math.floor(threshold) + 1
    assert crossover_batch(spec, context, 100_000) == crossover
    assert spec.speedup(crossover - 1, context) >= 1
    assert spec.speedup(crossover, context) < 1
    assert spec.speedup(2 * crossover, context) < 1


def test_the_per_sequence_overhead_moves_the_crossover_as_derived():
    """The same bare step without the per-sequence overhead (s = 0) crosses over at the
    next whole batch past w (E - k R) / ((k + 1) c); a positive s, paid E - 1 - k R > 0
    times more per token by plain decoding than by speculation, never moves it earlier."""
    with_s = _bare_8b_steps()
    without_s = replace(with_s, sequence_overhead_s=0.0)
    w = with_s.dense_weight_bytes / with_s.hbm_bytes_per_s
    c = with_s.decode_linear_flops_per_token / with_s.decode_linear_flops_per_s
    k, a, ratio = 3, 0.7, 0.1
    e = (1 - a ** (k + 1)) / (1 - a)
    option = Speculation("eagle", k, a, draft_cost_ratio=ratio)
    bare = crossover_batch(SpeculativeSteps(without_s, option), 1000.0, 100_000)
    assert bare == math.floor(w * (e - k * ratio) / ((k + 1) * c)) + 1
    loaded = crossover_batch(SpeculativeSteps(with_s, option), 1000.0, 100_000)
    assert bare is not None and loaded is not None and loaded >= bare


def test_70b_with_an_8b_draft_on_h100_pays_at_batch_1_and_not_past_the_crossover():
    steps = step_model(H100, LLAMA_70B, FP8, FP8, 8, 1, EFFICIENCY)
    spec = speculative_steps(H100, steps, DRAFT_8B, FP8, FP8, EFFICIENCY)
    context = 1150.0
    assert spec.speedup(1, context) > 1
    crossover = crossover_batch(spec, context, 65_536)
    assert crossover is not None and crossover > 1
    assert spec.speedup(crossover - 1, context) >= 1 > spec.speedup(crossover, context)
    assert spec.speedup(4 * crossover, context) < 1


def test_longer_context_moves_the_crossover_to_larger_batches():
    """KV reads are not multiplied by the verify pass: the longer the context, the more
    of each step they take and the later the verify pass turns compute-bound."""
    steps = step_model(H100, LLAMA_70B, FP8, FP8, 8, 1, EFFICIENCY)
    spec = speculative_steps(H100, steps, DRAFT_8B, FP8, FP8, EFFICIENCY)
    short = crossover_batch(spec, 1_000.0, 65_536)
    long = crossover_batch(spec, 16_000.0, 65_536)
    assert short is not None and (long is None or long > short)


def test_the_best_draft_length_shrinks_as_the_batch_grows():
    steps = step_model(H100, LLAMA_70B, FP8, FP8, 8, 1, EFFICIENCY)
    spec = speculative_steps(H100, steps, DRAFT_8B, FP8, FP8, EFFICIENCY)
    rows = speculation_table(spec, 1000.0, batch_buckets(1024))
    ks = [row.best_tokens for row in rows]
    assert ks == sorted(ks, reverse=True)
    assert ks[0] >= 1 and ks[-1] == 0  # on at batch 1, off at 1024
    assert all(row.best_speedup >= max(row.speedup, 1.0) - 1e-12 for row in rows)


def test_batch_model_with_speculation_advances_e_tokens_per_cycle():
    """rate = B E / (O t(B)) and the mean TPOT is t / E (no prompts: a decode replica)."""
    config = ReplicaConfig(H100, LLAMA_70B, FP8, FP8, 8, 1, Role.DECODE, speculation=DRAFT_8B)
    steps = replica_step_model(config, EFFICIENCY)
    cycle = decode_steps(config, EFFICIENCY, steps)
    mix = MixTokens.of(TrafficMix.fixed(1000, 300))
    model = BatchModel(cycle, mix, Role.DECODE, 0.0, 0.0)
    batch = 32.0
    point = model.point(batch)
    e = expected_tokens(0.7, 3)
    assert point.step_s == pytest.approx(cycle.iteration_s(batch, mix.context), rel=1e-12)
    assert point.rate == pytest.approx(batch * e / (300 * point.step_s), rel=1e-12)
    assert point.tpot_p99_s >= point.step_s / e


MIX = TrafficMix.fixed(1000, 300)
CONTEXT = 1000 + 300 / 2  # the mean context of a decode step: prompt + half the output


def _capacity(tpot_ms: float | None, speculation: Speculation | None):
    config = ReplicaConfig(H100, LLAMA_70B, FP8, FP8, 8, 1, speculation=speculation)
    targets = LatencyTargets(ttft_p99_s=2.0, tpot_p99_s=None if tpot_ms is None else tpot_ms / 1e3)
    return replica_capacity(config, MIX, targets, EFFICIENCY)


def _batch_1_tpots_s() -> tuple[float, float]:
    """The fastest TPOT either way: plain decoding's batch-1 step, and speculation's
    batch-1 cycle over E (70B FP8 TP8 on H100 with the 8B draft, k = 3, a = 0.7)."""
    steps = step_model(H100, LLAMA_70B, FP8, FP8, 8, 1, EFFICIENCY)
    spec = speculative_steps(H100, steps, DRAFT_8B, FP8, FP8, EFFICIENCY)
    return steps.decode_step_s(1, CONTEXT), spec.iteration_s(1, CONTEXT) / expected_tokens(0.7, 3)


def test_speculation_reaches_a_tpot_plain_decoding_cannot():
    """A target halfway between the two batch-1 TPOTs: above speculation's floor, below
    the fastest plain step."""
    plain_floor_s, spec_floor_s = _batch_1_tpots_s()
    assert spec_floor_s < plain_floor_s  # the draft pays at batch 1
    target_ms = (plain_floor_s + spec_floor_s) / 2 * 1e3
    plain, spec = _capacity(target_ms, None), _capacity(target_ms, DRAFT_8B)
    assert plain.best_tpot_s == pytest.approx(plain_floor_s, rel=1e-12)
    assert spec.best_tpot_s == pytest.approx(spec_floor_s, rel=1e-12)
    assert not plain.meets_slo  # the best plain TPOT is above the target
    assert spec.meets_slo and spec.requests_per_s > 0


def test_speculation_carries_more_at_a_tight_tpot_and_less_offline():
    """Tight: 1.25 x the fastest plain step, so plain decoding runs at a small batch, where
    the verify pass is still weight-bound and speculation pays; offline both run at their
    largest batch, past the crossover, where it costs."""
    plain_floor_s, _ = _batch_1_tpots_s()
    tight_ms = 1.25 * plain_floor_s * 1e3
    assert _capacity(tight_ms, DRAFT_8B).requests_per_s > _capacity(tight_ms, None).requests_per_s
    assert _capacity(None, DRAFT_8B).requests_per_s < _capacity(None, None).requests_per_s


def test_a_draft_model_takes_its_weights_and_kv_off_the_budget():
    plain, spec = _capacity(None, None), _capacity(None, DRAFT_8B)
    assert spec.weight_bytes_per_gpu > plain.weight_bytes_per_gpu
    assert spec.kv_bytes_per_token > plain.kv_bytes_per_token
    assert spec.kv_capacity_tokens < plain.kv_capacity_tokens


def test_a_speculation_needs_exactly_one_drafter():
    with pytest.raises(ValueError, match="draft model or a cost ratio"):
        Speculation("both", 3, 0.7, draft=LLAMA_8B, draft_cost_ratio=0.1)
    with pytest.raises(ValueError, match="draft model or a cost ratio"):
        Speculation("none", 3, 0.7)
