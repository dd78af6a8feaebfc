"""Attention data parallelism's slowest group (issue 34): whole prompts land on one
group, so the busiest group's share of an iteration's prompts is E[max multinomial] / k.
Hand arithmetic for the expected maximum, the share between integers, and the pass terms
of a DEP layout that carry it."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.moe import (
    MULTINOMIAL_EXACT_ITEMS,
    busiest_rank_share,
    expected_max_multinomial,
    expected_max_standard_normal,
    group_kv_imbalance,
    resident_context_cv,
)
from models.physics.precision import Precision
from models.physics.step_time import step_model

FP8 = Precision.FP8


def test_expected_max_multinomial_by_hand():
    # 2 prompts on 2 groups: (2,0) or (0,2) w.p. 2/4 -> max 2; (1,1) w.p. 2/4 -> max 1.
    assert expected_max_multinomial(2, 2) == pytest.approx(2 * 2 / 4 + 1 * 2 / 4)  # 1.5
    # 3 on 2: (3,0),(0,3) w.p. 2/8 -> 3; the 6 others -> 2.
    assert expected_max_multinomial(3, 2) == pytest.approx(3 * 2 / 8 + 2 * 6 / 8)  # 2.25
    # 3 on 3: all in one group 3/27 -> 3; a pair and a single 18/27 -> 2; one each 6/27 -> 1.
    assert expected_max_multinomial(3, 3) == pytest.approx((3 * 3 + 2 * 18 + 1 * 6) / 27)
    # one prompt is always alone; one group holds every prompt; none holds nothing.
    assert expected_max_multinomial(1, 8) == 1.0
    assert expected_max_multinomial(5, 1) == 5.0
    assert expected_max_multinomial(0, 8) == 0.0


def test_expected_max_of_standard_normals_by_hand():
    # E[max(Z1, Z2)] = 1 / sqrt(pi): the mean of |Z1 - Z2| / 2, |Z1 - Z2| ~ sqrt(2) |Z|.
    assert expected_max_standard_normal(2) == pytest.approx(1 / math.sqrt(math.pi), abs=1e-6)
    assert expected_max_standard_normal(1) == pytest.approx(0.0, abs=1e-6)


def test_normal_branch_meets_the_exact_one():
    """Past `MULTINOMIAL_EXACT_ITEMS` the normal maximum takes over within 2%."""
    exact = expected_max_multinomial(MULTINOMIAL_EXACT_ITEMS, 8)
    normal = expected_max_multinomial(MULTINOMIAL_EXACT_ITEMS + 1, 8)
    assert normal == pytest.approx(exact, rel=0.02)


def test_busiest_share_by_hand():
    # 2.5 prompts on 2 groups: E[max] halfway between 1.5 (k=2) and 2.25 (k=3) = 1.875,
    # a share of 1.875 / 2.5 = 0.75 (0.5 if spread evenly).
    assert busiest_rank_share(2.5, 2) == pytest.approx((1.5 + 0.5 * (2.25 - 1.5)) / 2.5)
    assert busiest_rank_share(0.4, 8) == 1.0  # part of one prompt: on one group
    assert busiest_rank_share(0.0, 8) == 1 / 8  # no prompt: nothing to spread
    assert busiest_rank_share(7.0, 1) == 1.0  # one group does it all


@given(st.floats(min_value=0.0, max_value=300.0), st.sampled_from([2, 4, 8, 16, 64]))
def test_busiest_share_lies_between_even_and_all(prompts, ranks):
    share = busiest_rank_share(prompts, ranks)
    assert 1 / ranks - 1e-12 <= share <= 1.0 + 1e-12


def test_dep_pass_carries_the_busiest_groups_prompts_by_hand():
    """Qwen3-235B-A22B DEP2 on H200, a pass with 2 prompts of 1,000 tokens: the busiest
    group prefills E[max] = 1.5 of them (share 0.75, not 0.5): its prefill attention is
    1.5x the even spread's, and its attention-side linear FLOPs are 0.75 x q x (prefill
    linear - 2 x routed); the routed experts (their own kernel) take every token's
    share: q x f x c x routed, f the busiest EP rank's load, c the grouped GEMM's cost."""
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["qwen3-235b-a22b"]
    efficiency = efficiency_for(gpu, FP8)
    even = step_model(gpu, llm, FP8, FP8, 1, 1, efficiency, ep=2, dp=2)
    whole = even.with_group_loads(1000.0)
    q, pairs = 2000.0, 2000.0 * 500
    assert whole.prefill_group_share(q) == pytest.approx(0.75)
    assert even.prefill_group_share(q) == 0.5
    even_parts, whole_parts = even.pass_parts(0, 0, q, pairs), whole.pass_parts(0, 0, q, pairs)
    assert whole_parts.prefill_attention_s == pytest.approx(
        even_parts.prefill_attention_s * 0.75 / 0.5
    )
    rate = whole.prefill_linear_flops_per_s
    routed = whole.routed_flops_per_token
    attention_side = whole.prefill_linear_flops_per_token - 2 * routed
    assert whole_parts.linear_compute_s == pytest.approx(q * 0.75 * attention_side / rate)
    assert even_parts.linear_compute_s == pytest.approx(q * 0.5 * attention_side / rate)
    f, c = whole.experts_layout.imbalance(q), whole.experts_layout.routed_cost(q)
    assert whole_parts.expert_compute_s == pytest.approx(q * f * c * routed / rate)
    assert even_parts.expert_compute_s == whole_parts.expert_compute_s
    # One attention group (TP) has nothing to balance: the model is unchanged.
    tp = step_model(gpu, llm, FP8, FP8, 8, 1, efficiency)
    assert tp.with_group_loads(1000.0, 0.5) is tp


def test_resident_context_spread_by_hand():
    # Fixed lengths, P = O = 1,000: the age is uniform on [0, 1000], sd 1000 / sqrt(12)
    # = 288.675, over a mean context of 1000 + 1000 / 2 = 1500.
    assert resident_context_cv(1000, 0.0, 1000, 0.0) == pytest.approx(1000 / math.sqrt(12) / 1500)
    # cv_p = cv_o = 1: Var = 1000^2 x 1 + 1000^2 x (2^3 / 3 - 2^2 / 4) = 1e6 x (1 + 5/3),
    # over a mean of 1000 + 1000 x 2 / 2 = 2000.
    assert resident_context_cv(1000, 1.0, 1000, 1.0) == pytest.approx(
        math.sqrt(1e6 * (1 + 5 / 3)) / 2000
    )
    assert resident_context_cv(0, 0.0, 0, 0.0) == 0.0


def test_group_kv_imbalance_by_hand():
    # 3,200 sequences on 8 groups (400 each), cv 0.19245: 1 + 1.4236 x 0.19245 / 20.
    cv = 1000 / math.sqrt(12) / 1500
    expected = 1 + expected_max_standard_normal(8) * cv / math.sqrt(3200 / 8)
    assert group_kv_imbalance(3200, 8, cv) == pytest.approx(expected)
    assert expected == pytest.approx(1.0137, abs=1e-4)
    assert group_kv_imbalance(3200, 1, cv) == 1.0  # one group: nothing to balance
    assert group_kv_imbalance(8, 8, 50.0) == 8.0  # capped: one group holds it all


def test_dep_decode_attention_carries_the_busiest_groups_kv_by_hand():
    """DEP2: 64 decode sequences (32 per group) with context spread cv 0.5: the busiest
    group's KV is 1 + E[max of 2 normals] x 0.5 / sqrt(32) = 1 + 0.5642 x 0.08839 of the
    mean, and its KV read is that x half the pass's KV bytes."""
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["qwen3-235b-a22b"]
    steps = step_model(gpu, llm, FP8, FP8, 1, 1, efficiency_for(gpu, FP8), ep=2, dp=2)
    spread = steps.with_group_loads(1000.0, 0.5)
    factor = 1 + (1 / math.sqrt(math.pi)) * 0.5 / math.sqrt(32)
    kv_tokens = 64 * 1500
    parts = spread.pass_parts(64, kv_tokens)
    assert parts.kv_read_s == pytest.approx(
        factor / 2 * kv_tokens * steps.kv_bytes_per_token / steps.hbm_bytes_per_s, rel=1e-6
    )
    assert parts.kv_read_s == pytest.approx(factor * steps.pass_parts(64, kv_tokens).kv_read_s)
