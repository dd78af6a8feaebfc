"""KV tiers, shared prefixes and prefix routing: hand arithmetic and properties."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu, llm
from models.physics.efficiency import Efficiency
from models.physics.kv_tiers import KvTier, TierName, replica_tiers, ssd_wear, ssd_write_bytes_per_s
from models.physics.memory import kv_bytes_per_token_per_replica, memory_budget
from models.physics.precision import Precision
from models.serving.capacity import replica_capacity
from models.serving.prefix_routing import (
    affinity_hit_pool,
    affinity_hits,
    imbalance,
    random_hits,
    spill_threshold_s,
)
from models.serving.replica import LatencyTargets, ReplicaConfig, Role, TrafficMix
from models.serving.replica_layout import replica_step_model

FP8 = Precision.FP8
EFF = Efficiency(prefill_flops_fraction=0.5, decode_flops_fraction=0.5, hbm_fraction=0.8)
FP8_PEAK_FLOPS = 1978e12  # H100 SXM dense FP8
ACHIEVED_FLOPS = FP8_PEAK_FLOPS * 0.5
PCIE_BYTES_PER_S = 64e9
NODE_NVME_BYTES_PER_S = 25e9
GPUS_PER_NODE = 8
TIERED_H100 = gpu("h100-sxm").model_copy(
    update={
        "host_memory_gib_per_gpu": 256.0,
        "nvme_tb_per_node": 30.72,
        "nvme_gb_s_per_node": 25.0,
        "nvme_dwpd": 1.0,
    }
)


def _tiers(model: str, tp: int, prefix_tokens: float) -> dict[TierName, KvTier]:
    config = ReplicaConfig(TIERED_H100, llm(model), FP8, FP8, tp, 1)
    steps = replica_step_model(config, EFF)
    replica_bytes = kv_bytes_per_token_per_replica(config.llm, FP8, tp)
    tiers = replica_tiers(TIERED_H100, tp, steps, 1e6, replica_bytes, prefix_tokens)
    return {tier.tier: tier for tier in tiers}


def test_tier_value_per_token_70b_dram_and_ssd_both_positive():
    # Llama 3.3 70B, TP8, FP8 weights and KV, a 2,000-token prefix (mean context 1,000).
    body_params, attention_flops_per_pair = 68_452_360_192, 2 * 64 * (128 + 128) * 80
    recompute_s = (2 * body_params / 8 + attention_flops_per_pair / 8 * 1000) / ACHIEVED_FLOPS
    kv_bytes_per_gpu = 2 * (8 // 8) * 128 * 80 * 1  # K and V, one KV head per rank, 1 byte
    dram_fetch_s = kv_bytes_per_gpu / PCIE_BYTES_PER_S  # 0.32 us
    ssd_fetch_s = kv_bytes_per_gpu / (NODE_NVME_BYTES_PER_S / GPUS_PER_NODE)  # 6.55 us
    tiers = _tiers("llama-3.3-70b", 8, 2000)
    assert tiers[TierName.DRAM].recompute_s_per_token == pytest.approx(recompute_s, rel=1e-9)
    assert recompute_s == pytest.approx(17.64e-6, rel=1e-3)
    assert tiers[TierName.DRAM].fetch_s_per_token == pytest.approx(dram_fetch_s, rel=1e-12)
    assert tiers[TierName.SSD].fetch_s_per_token == pytest.approx(ssd_fetch_s, rel=1e-12)
    assert tiers[TierName.DRAM].value_s_per_token == pytest.approx(recompute_s - dram_fetch_s)
    assert tiers[TierName.SSD].value_s_per_token == pytest.approx(recompute_s - ssd_fetch_s)
    assert tiers[TierName.DRAM].used and tiers[TierName.SSD].used


def test_tier_value_per_token_8b_ssd_sign_flip():
    # Llama 3.1 8B on one H100: 14.6 us of prefill per token, but 64 KiB of KV per token
    # at 25 GB/s / 8 GPUs = 3.125 GB/s is 21.0 us: fetching from SSD is slower than
    # recomputing, value 14.6 - 21.0 = -6.3 us per token, so the SSD tier must not exist.
    body_params, attention_flops_per_pair = 6_979_588_096, 2 * 32 * (128 + 128) * 32
    recompute_s = (2 * body_params + attention_flops_per_pair * 1000) / ACHIEVED_FLOPS
    kv_bytes_per_gpu = 2 * 8 * 128 * 32 * 1
    ssd_fetch_s = kv_bytes_per_gpu / (NODE_NVME_BYTES_PER_S / GPUS_PER_NODE)
    dram_fetch_s = kv_bytes_per_gpu / PCIE_BYTES_PER_S
    tiers = _tiers("llama-3.1-8b", 1, 2000)
    assert tiers[TierName.SSD].recompute_s_per_token == pytest.approx(recompute_s, rel=1e-9)
    assert recompute_s == pytest.approx(14.64e-6, rel=1e-3)
    assert ssd_fetch_s == pytest.approx(20.97e-6, rel=1e-3)
    assert tiers[TierName.SSD].value_s_per_token == pytest.approx(recompute_s - ssd_fetch_s)
    assert tiers[TierName.SSD].value_s_per_token < 0 and not tiers[TierName.SSD].used
    assert tiers[TierName.DRAM].value_s_per_token == pytest.approx(recompute_s - dram_fetch_s)
    assert tiers[TierName.DRAM].used


def test_ssd_lifetime_from_write_rate_and_dwpd():
    # A whole node (8 GPUs) of 30.72 TB at 1 DWPD over 5 years; 70B FP8 KV is
    # 2 x 8 x 128 x 80 = 163,840 B per token; 2 req/s x 3,000 new tokens written through.
    write_bytes_per_s = 2 * 3000 * 163_840
    rated_bytes = 1 * 30.72e12 * 365 * 5
    lifetime_days = rated_bytes / (write_bytes_per_s * 86_400)
    assert ssd_write_bytes_per_s(2, 3000, 163_840) == write_bytes_per_s
    wear = ssd_wear(TIERED_H100, 8, write_bytes_per_s)
    assert wear.lifetime_days == pytest.approx(lifetime_days, rel=1e-12)
    assert lifetime_days == pytest.approx(660.6, rel=1e-3)
    assert wear.wears_out  # 661 days < the 1,825-day warranty
    assert not ssd_wear(TIERED_H100, 8, write_bytes_per_s / 10).wears_out


def _decode(prefix: bool) -> tuple[float, float, float]:
    config = ReplicaConfig(gpu("h100-sxm"), llm("llama-3.3-70b"), FP8, FP8, 4, 1, Role.DECODE)
    mix = TrafficMix(4000, 4000, 0.0, 500, 500, 0.0)
    if prefix:
        mix = TrafficMix(4000, 4000, 0.0, 500, 500, 0.0, 0.0, (2000.0,), (1.0,))
    cap = replica_capacity(config, mix, LatencyTargets(), EFF)
    budget = memory_budget(config.gpu, config.llm, FP8, FP8, 4, 1, EFF)
    return cap.batch, cap.requests_per_s, budget.kv_capacity_tokens


def test_shared_system_prompt_is_charged_once_per_replica():
    # Offline decode replica: the batch is what the KV budget holds.
    # Per sequence (today's charge): B = C / (P + O) = C / 4,500.
    # Shared 2K prompt on every request: B = (C - 2,000) / (P + O - 2,000) = (C - 2,000) / 2,500.
    batch_before, rate_before, kv_tokens = _decode(prefix=False)
    batch_after, rate_after, _ = _decode(prefix=True)
    assert batch_before == pytest.approx(kv_tokens / (4000 + 500), rel=1e-9)
    assert batch_after == pytest.approx((kv_tokens - 2000) / (4000 + 500 - 2000), rel=1e-9)
    assert batch_after / batch_before == pytest.approx(1.8, rel=1e-2)
    assert rate_after > rate_before


def test_spill_threshold_is_the_prefill_a_hit_saves():
    # 8B, one H100, a 4,000-token prompt (one chunk) with a 3,000-token cached prefix:
    # the hit saves 3,000 tokens of linear FLOPs and the attention pairs of the prefix,
    # P^2/2 - ((P - t) t + (P - t)^2 / 2) = 8e6 - (3e6 + 0.5e6) = 4.5e6 pairs.
    config = ReplicaConfig(gpu("h100-sxm"), llm("llama-3.1-8b"), FP8, FP8, 1, 1)
    steps = replica_step_model(config, EFF)
    body_params, attention_flops_per_pair = 6_979_588_096, 2 * 32 * (128 + 128) * 32
    saved_pairs = 4000**2 / 2 - (1000 * 3000 + 1000**2 / 2)
    saved_s = (2 * body_params * 3000 + attention_flops_per_pair * saved_pairs) / ACHIEVED_FLOPS
    assert spill_threshold_s(steps, 4000, 3000) == pytest.approx(saved_s, rel=1e-9)
    assert saved_s * 1e3 == pytest.approx(44.7, rel=1e-2)


def test_imbalance_of_rigid_customers_and_of_a_prefix_everyone_shares():
    # 11 customers of 9% each on 10 replicas: one replica gets two, 18% vs the mean 10%.
    assert imbalance((0.09,) * 11, 10) == pytest.approx(1.8)
    # A prefix on every request is homed on all n replicas: balanced.
    assert imbalance((1.0,), 10) == pytest.approx(1.0)
    # Small customers with most traffic free to go anywhere: the free load fills the gaps.
    assert imbalance((0.01,) * 30, 10) == pytest.approx(1.0)


prefix_sets = st.lists(
    st.tuples(st.floats(100, 50_000), st.floats(0.001, 0.2)), min_size=1, max_size=30
)


def _hbm_tier(capacity_tokens: float) -> tuple[KvTier, ...]:
    return (KvTier(TierName.HBM, capacity_tokens, 0.0, 1e-5),)


@settings(max_examples=200, deadline=None)
@given(prefix_sets, st.floats(1e3, 2e6), st.integers(1, 64))
def test_affinity_never_lowers_the_hit_rate(prefixes, hbm_tokens, replicas):
    tokens = tuple(t for t, _ in prefixes)
    shares = tuple(s for _, s in prefixes)
    prompt = sum(t * s for t, s in prefixes) + 1000
    tiers = _hbm_tier(hbm_tokens)
    rand = random_hits(tokens, shares, prompt, tiers).hit_rate
    assert affinity_hits(tokens, shares, prompt, tiers, replicas).hit_rate >= rand - 1e-12
    assert affinity_hit_pool(tokens, shares, prompt, tiers).hit_rate >= rand - 1e-12


@settings(max_examples=100, deadline=None)
@given(prefix_sets, st.floats(1e3, 2e6), st.floats(1e3, 1e7))
def test_adding_a_tier_never_lowers_the_hit_rate(prefixes, hbm_tokens, dram_tokens):
    tokens = tuple(t for t, _ in prefixes)
    shares = tuple(s for _, s in prefixes)
    prompt = sum(t * s for t, s in prefixes) + 1000
    hbm = _hbm_tier(hbm_tokens)
    tiered = (*hbm, KvTier(TierName.DRAM, dram_tokens, 1e-6, 1e-5))
    assert (
        random_hits(tokens, shares, prompt, tiered).hit_rate
        >= random_hits(tokens, shares, prompt, hbm).hit_rate - 1e-12
    )


@settings(max_examples=30, deadline=None)
@given(st.floats(0.0, 0.9), st.floats(0.0, 0.09))
def test_a_higher_hit_rate_never_lowers_capacity(hit, more):
    config = ReplicaConfig(gpu("h100-sxm"), llm("llama-3.1-8b"), FP8, FP8, 1, 1)
    targets = LatencyTargets(ttft_p99_s=1.0, tpot_p99_s=0.05)

    def rate(h: float) -> float:
        mix = TrafficMix(6000, 8000, 0.3, 300, 900, 0.5, h)
        return replica_capacity(config, mix, targets, EFF).requests_per_s

    assert rate(hit + more) >= rate(hit) * (1 - 1e-9)


def test_without_prefixes_the_capacity_is_unchanged():
    config = ReplicaConfig(gpu("h100-sxm"), llm("llama-3.1-8b"), FP8, FP8, 1, 1)
    mix = TrafficMix(2000, 6000, 0.5, 300, 900, 0.5, 0.2)
    cap = replica_capacity(config, mix, LatencyTargets(1.0, 0.05), EFF)
    budget = memory_budget(config.gpu, config.llm, FP8, FP8, 1, 1, EFF)
    assert cap.max_batch == budget.max_sequences(2000 + 300)
    assert math.isfinite(cap.requests_per_s) and cap.requests_per_s > 0
