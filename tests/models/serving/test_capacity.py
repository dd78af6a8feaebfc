"""Capacity at the SLO: Little's-law fixed point, limits, roles, and the contract the
solver relies on (pure, fast, never raises)."""

import math
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu, gpu_catalog, llm, llm_catalog
from models.physics.efficiency import Efficiency, efficiency_for
from models.physics.memory import kv_bytes_per_token
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.serving.batch_model import batch_p99
from models.serving.capacity import UNLIMITED_POOL, replica_capacity
from models.serving.frontier import operating_point, throughput_frontier
from models.serving.queueing import pooled_wait_p99_s, wait_quantile_s
from models.serving.replica import (
    LatencyTargets,
    Limit,
    ReplicaConfig,
    Role,
    ServingContext,
    TrafficMix,
)
from models.serving.replica_layout import kv_transfer_s

BF16, FP8, FP4 = Precision.BF16, Precision.FP8, Precision.FP4
EFF = Efficiency(
    prefill_flops_fraction=0.5,
    decode_flops_fraction=0.5,
    hbm_fraction=0.8,
    step_overhead_s=2e-3,
    allreduce_latency_s=20e-6,
)
OFFLINE = LatencyTargets()
CHAT = TrafficMix(
    prompt_mean_tokens=1500,
    prompt_p99_tokens=6000,
    prompt_cv=1.0,
    output_mean_tokens=400,
    output_p99_tokens=1500,
    output_cv=0.8,
)


def config(
    model="llama-3.3-70b", gpu_name="h100-sxm", precision=FP8, tp=4, pp=1, role=Role.UNIFIED
):
    kv = BF16 if precision is BF16 else FP8
    return ReplicaConfig(gpu(gpu_name), llm(model), precision, kv, tp, pp, role)


def test_offline_batch_is_as_large_as_memory_allows():
    capacity = replica_capacity(config(tp=2), TrafficMix.fixed(1000, 2000), OFFLINE, EFF)
    assert capacity.fits and capacity.meets_slo
    assert capacity.limit is Limit.KV_MEMORY
    footprint = 1000 + 2000
    assert capacity.batch == pytest.approx(capacity.kv_capacity_tokens / footprint)
    assert capacity.max_batch == int(capacity.kv_capacity_tokens // footprint)


def test_littles_law_fixed_point():
    capacity = replica_capacity(config(), CHAT, LatencyTargets(0.8, 0.05), EFF)
    # concurrency = rate x duration, and the duration (O steps) depends on the batch
    assert capacity.batch == pytest.approx(
        capacity.requests_per_s * CHAT.output_mean_tokens * capacity.decode_step_s, rel=1e-9
    )
    assert capacity.output_tokens_per_s == pytest.approx(
        capacity.requests_per_s * CHAT.output_mean_tokens
    )
    assert capacity.output_tokens_per_s_per_gpu == pytest.approx(capacity.output_tokens_per_s / 4)


def test_operating_point_solves_the_fixed_point_for_a_rate():
    cfg = config()
    point = operating_point(ServingContext(cfg, CHAT, EFF), 2.0)
    assert point is not None
    assert point.requests_per_s == pytest.approx(2.0, rel=1e-6)
    assert point.batch == pytest.approx(
        2.0 * CHAT.output_mean_tokens * point.decode_step_s, rel=1e-6
    )
    assert operating_point(ServingContext(cfg, CHAT, EFF), 1e6) is None


def test_targets_bind_and_are_met_at_the_operating_point():
    targets = LatencyTargets(ttft_p99_s=0.8, tpot_p99_s=0.05)
    capacity = replica_capacity(config(), CHAT, targets, EFF)
    assert capacity.meets_slo and capacity.requests_per_s > 0
    assert capacity.limit in (Limit.TPOT, Limit.TTFT_QUEUEING, Limit.INTERCONNECT)
    assert capacity.tpot_p99_s <= 0.05 * (1 + 1e-9)
    assert capacity.ttft_p99_s <= 0.8 * (1 + 1e-9)
    assert capacity.best_tpot_s <= capacity.tpot_p99_s
    assert capacity.best_ttft_p99_s <= capacity.ttft_p99_s


def test_tpot_limit_names_tpot():
    capacity = replica_capacity(config(), CHAT, LatencyTargets(tpot_p99_s=0.03), EFF)
    assert capacity.limit in (Limit.TPOT, Limit.INTERCONNECT)
    assert capacity.tpot_p99_s == pytest.approx(0.03, rel=1e-6)


def test_ttft_limit_names_ttft_queueing():
    capacity = replica_capacity(config(), CHAT, LatencyTargets(ttft_p99_s=1.0), EFF)
    assert capacity.limit is Limit.TTFT_QUEUEING
    assert capacity.ttft_p99_s == pytest.approx(1.0, rel=1e-6)
    assert "TTFT" in capacity.reason


def test_prompt_length_spread_lowers_capacity_at_a_ttft_target():
    targets = LatencyTargets(ttft_p99_s=1.5)
    fixed = TrafficMix(1500, 1500, 0.0, 400, 400, 0.0)
    spread = TrafficMix(1500, 1500, 1.5, 400, 400, 0.0)
    assert (
        replica_capacity(config(), spread, targets, EFF).requests_per_s
        < replica_capacity(config(), fixed, targets, EFF).requests_per_s
    )


def test_prefix_cache_hits_cut_prefill_but_not_kv_memory():
    cold = replica_capacity(config(), TrafficMix.fixed(8000, 200), OFFLINE, EFF)
    warm_mix = TrafficMix(8000, 8000, 0.0, 200, 200, 0.0, prefix_cache_hit_rate=0.75)
    warm = replica_capacity(config(), warm_mix, OFFLINE, EFF)
    assert warm.prefill_s < cold.prefill_s / 2
    assert warm.max_batch == cold.max_batch
    assert warm.kv_capacity_tokens == cold.kv_capacity_tokens
    assert warm.requests_per_s > cold.requests_per_s


def test_unreachable_slo_reports_the_best_the_config_can_do():
    capacity = replica_capacity(
        config(), CHAT, LatencyTargets(ttft_p99_s=0.8, tpot_p99_s=1e-3), EFF
    )
    assert capacity.fits and not capacity.meets_slo
    assert capacity.requests_per_s == 0.0
    assert "TPOT" in capacity.reason and "1 ms" in capacity.reason
    assert 1e-3 < capacity.best_tpot_s < math.inf
    long_prompts = TrafficMix(32768, 32768, 0.0, 200, 200, 0.0)
    slow = replica_capacity(config(), long_prompts, LatencyTargets(ttft_p99_s=0.3), EFF)
    assert not slow.meets_slo and slow.best_ttft_p99_s > 0.3
    assert f"{slow.best_ttft_p99_s * 1e3:.0f} ms" in slow.reason


def test_does_not_fit_says_needed_available_and_what_to_change():
    capacity = replica_capacity(
        config("llama-3.1-405b", precision=BF16, tp=1),
        CHAT,
        OFFLINE,
        efficiency_for("h100-sxm", BF16),
    )
    assert not capacity.fits and capacity.requests_per_s == 0.0
    assert capacity.limit is Limit.KV_MEMORY
    assert "does not fit" in capacity.reason
    assert "GiB of weights" in capacity.reason and "but has 80.0 GiB" in capacity.reason
    assert "Use TP>=" in capacity.reason
    # 405B at bf16 is 810 GB of weights, far past 80 GiB: the overrun is said as a positive
    # amount (it read "the weights alone leave -679.x GiB for the KV cache")
    assert "alone fill it, " in capacity.reason and "GiB more than it has" in capacity.reason
    assert "leave -" not in capacity.reason and " -" not in capacity.reason.split("; ")[-1]


def test_largest_context_that_fits_is_reported():
    # 70B fp8 on one H100: the weights fit, a 100K-token request does not
    mix = TrafficMix.fixed(100_000, 1000)
    capacity = replica_capacity(config(tp=1), mix, OFFLINE, EFF)
    assert not capacity.fits
    assert "largest context that fits is" in capacity.reason


def test_impossible_layouts_return_fits_false_instead_of_raising():
    tp3 = replica_capacity(config(tp=3), CHAT, OFFLINE, EFF)
    assert not tp3.fits and "does not divide" in tp3.reason
    fp4_h100 = replica_capacity(config(precision=FP4), CHAT, OFFLINE, EFF)
    assert not fp4_h100.fits and "fp4" in fp4_h100.reason
    too_long = replica_capacity(config("llama-2-70b"), TrafficMix.fixed(4000, 1000), OFFLINE, EFF)
    assert not too_long.fits and "context window" in too_long.reason


def test_prefill_role_leaves_room_for_the_kv_transfer():
    cfg = config(role=Role.PREFILL)
    capacity = replica_capacity(cfg, CHAT, LatencyTargets(ttft_p99_s=1.0), EFF)
    assert capacity.meets_slo and capacity.requests_per_s > 0
    assert capacity.kv_transfer_bytes_per_request == pytest.approx(
        CHAT.prompt_mean_tokens * kv_bytes_per_token(cfg.llm, FP8)
    )
    # KV bytes / (4 GPUs x 400 Gbit/s x scaleout fraction)
    transfer = CHAT.prompt_p99_tokens * 2 * 8 * 128 * 80 / (4 * 400e9 / 8 * EFF.scaleout_fraction)
    assert kv_transfer_s(cfg, CHAT.prompt_p99_tokens, EFF) == pytest.approx(transfer)
    assert capacity.best_ttft_p99_s > transfer
    offline = replica_capacity(cfg, CHAT, OFFLINE, EFF)
    assert offline.limit is Limit.COMPUTE
    assert offline.requests_per_s > capacity.requests_per_s


def test_decode_role_counts_generations_at_tpot_and_kv_memory():
    cfg = config(role=Role.DECODE)
    capacity = replica_capacity(cfg, CHAT, LatencyTargets(tpot_p99_s=0.05), EFF)
    assert capacity.meets_slo and capacity.requests_per_s > 0
    assert capacity.limit in (Limit.TPOT, Limit.KV_MEMORY, Limit.INTERCONNECT)
    unified = replica_capacity(config(), CHAT, LatencyTargets(tpot_p99_s=0.05), EFF)
    assert capacity.requests_per_s > unified.requests_per_s  # no prefill stealing its steps


def test_chunked_prefill_steals_decode_time():
    cfg = config()
    short = replica_capacity(cfg, TrafficMix.fixed(100, 400), LatencyTargets(tpot_p99_s=0.05), EFF)
    long = replica_capacity(cfg, TrafficMix.fixed(4000, 400), LatencyTargets(tpot_p99_s=0.05), EFF)
    assert long.requests_per_s < short.requests_per_s


def test_frontier_trades_user_speed_for_gpu_throughput():
    points = throughput_frontier(ServingContext(config(), CHAT, EFF), LatencyTargets(0.8, 0.05))
    assert len(points) >= 5
    for a, b in pairwise(points):
        assert b.tokens_per_s_per_user <= a.tokens_per_s_per_user
        assert b.output_tokens_per_s_per_gpu >= a.output_tokens_per_s_per_gpu
    assert points[0].meets_slo and not points[-1].meets_slo
    assert throughput_frontier(ServingContext(config(tp=3), CHAT, EFF), OFFLINE) == []


def test_batch_p99_is_poisson():
    assert batch_p99(100) == pytest.approx(100 + 2.326347874 * 10)


def test_deterministic():
    configs = [
        config(model, gpu_name, precision, tp)
        for model in ("llama-3.3-70b", "llama-3.1-8b", "mixtral-8x7b")
        for gpu_name in ("h100-sxm", "h200", "b200")
        for precision in (BF16, FP8)
        for tp in (1, 2, 4, 8)
    ]
    targets = LatencyTargets(0.8, 0.05)
    first = [replica_capacity(c, CHAT, targets, EFF) for c in configs]
    assert first == [replica_capacity(c, CHAT, targets, EFF) for c in configs]


@pytest.mark.parametrize("model", sorted(llm_catalog()))
@pytest.mark.parametrize("gpu_name", sorted(gpu_catalog()))
def test_every_model_on_every_gpu_gives_sane_numbers_or_a_reason(model, gpu_name):
    eff = efficiency_for(gpu_name, BF16)
    for precision in (FP4, FP8, BF16):
        for tp in (1, 2, 4, 8):
            capacity = replica_capacity(config(model, gpu_name, precision, tp), CHAT, OFFLINE, eff)
            assert capacity.reason
            if capacity.fits:
                assert capacity.requests_per_s > 0
                assert 0 < capacity.decode_step_s < 10
                assert 0 < capacity.prefill_s < 100
                assert capacity.kv_capacity_tokens > 0 and capacity.max_batch >= 1
                # Offline, so no latency limit; the batch is the smallest cap, and KV
                # memory is named exactly when that batch fills the KV cache:
                # batch x (prompt + output tokens) = KV capacity.
                assert capacity.limit not in (Limit.TTFT_QUEUEING, Limit.TPOT)
                footprint_tokens = CHAT.prompt_mean_tokens + CHAT.output_mean_tokens
                fills_kv = capacity.batch * footprint_tokens == pytest.approx(
                    capacity.kv_capacity_tokens, rel=1e-9
                )
                assert (capacity.limit is Limit.KV_MEMORY) == fills_kv


@settings(max_examples=30, deadline=None)
@given(
    tpot_ms=st.floats(min_value=10, max_value=200),
    extra_ms=st.floats(min_value=0, max_value=200),
    tp=st.sampled_from([2, 4, 8]),
    prompt=st.floats(min_value=100, max_value=8000),
)
def test_a_higher_tpot_target_never_lowers_capacity(tpot_ms, extra_ms, tp, prompt):
    mix = TrafficMix(prompt, prompt * 3, 0.8, 300, 900, 0.8)
    cfg = config(tp=tp)
    low = replica_capacity(cfg, mix, LatencyTargets(1.0, tpot_ms / 1e3), EFF)
    high = replica_capacity(cfg, mix, LatencyTargets(1.0, (tpot_ms + extra_ms) / 1e3), EFF)
    assert high.requests_per_s >= low.requests_per_s * (1 - 1e-9)


@settings(max_examples=30, deadline=None)
@given(
    prompt=st.floats(min_value=10, max_value=30000),
    extra=st.floats(min_value=0, max_value=30000),
    output=st.floats(min_value=10, max_value=4000),
)
def test_a_longer_context_never_raises_the_max_batch(prompt, extra, output):
    cfg = config(tp=4)
    shorter = replica_capacity(cfg, TrafficMix.fixed(prompt, output), OFFLINE, EFF)
    longer = replica_capacity(cfg, TrafficMix.fixed(prompt + extra, output), OFFLINE, EFF)
    assert longer.max_batch <= shorter.max_batch


# --- pools: replicas behind one router share one prompt queue (M/G/c) -----------------


def test_a_pool_of_one_is_the_single_fcfs_server_exactly():
    targets = LatencyTargets(0.8, 0.05)
    for role in (Role.UNIFIED, Role.PREFILL, Role.DECODE):
        cfg = config(role=role)
        assert replica_capacity(cfg, CHAT, targets, EFF, pool_replicas=1) == replica_capacity(
            cfg, CHAT, targets, EFF
        )
    assert pooled_wait_p99_s(2.0, 0.3, 0.5, 1) == wait_quantile_s(2.0, 0.3, 0.5, 1, 0.99)


def test_a_pool_of_two_prefill_replicas_waits_as_erlang_c_says():
    """Fixed 8K prompts on 70B fp8 TP4 H100 prefill replicas, p99 TTFT 1 s. Fixed lengths
    make the TTFT the unloaded prefill and KV transfer, plus the iteration in progress
    (rho x P / r: busy a share rho of the time, an iteration of one prompt), the p99
    wait and the tokens riding in the prompt's iteration (min(room / r, rho x waited),
    room = C - P = 8,192 - 8,000 tokens), so at capacity these fill the budget exactly.
    With service S = P / r, per-lane utilisation rho and squared CV 0, the wait is
    P(wait) x exponential with mean S / (2 c (1 - rho)):
        c = 1: P(wait) = rho                      (M/G/1)
        c = 2: P(wait) = 2 rho^2 / (1 + rho)      (Erlang C for two servers)
    """
    cfg = config(role=Role.PREFILL)
    mix = TrafficMix.fixed(8000, 200)
    target_s = 1.0
    steps = step_model(cfg.gpu, cfg.llm, FP8, FP8, 4, 1, EFF)
    token_rate = steps.prefill_tokens_per_s(8000)
    service_s = 8000 / token_rate  # the lane's time per prompt
    room_s = (steps.chunk_tokens - 8000) / token_rate
    unloaded_s = steps.prefill_s(8000) + kv_transfer_s(cfg, 8000, EFF)
    budget_s = target_s - unloaded_s
    tail = 0.01

    def p99_wait_s(rho: float, servers: int) -> float:
        p_wait = rho if servers == 1 else 2 * rho**2 / (1 + rho)
        return service_s / (2 * servers * (1 - rho)) * math.log(p_wait / tail)

    def queued_s(rho: float, servers: int) -> float:
        residual_s = rho * service_s
        wait_s = p99_wait_s(rho, servers)
        return residual_s + wait_s + min(room_s, rho * (wait_s + residual_s))

    lone = replica_capacity(cfg, mix, LatencyTargets(ttft_p99_s=target_s), EFF, 1)
    pair = replica_capacity(cfg, mix, LatencyTargets(ttft_p99_s=target_s), EFF, 2)
    for capacity, servers in ((lone, 1), (pair, 2)):
        rho = capacity.requests_per_s * service_s
        assert capacity.limit is Limit.TTFT_QUEUEING
        assert capacity.best_ttft_p99_s == pytest.approx(unloaded_s)
        assert queued_s(rho, servers) == pytest.approx(budget_s, rel=1e-6)
        assert capacity.ttft_p99_s == pytest.approx(target_s, rel=1e-6)
    # The budget (~0.59 s) is under 1.5 prefills: a pair carries several times what a
    # lone replica does per replica.
    assert pair.requests_per_s > 2.5 * lone.requests_per_s
    assert "in a pool of 2 behind one queue" in pair.reason


def test_ten_replicas_behind_one_queue_carry_32k_prompts_far_above_one():
    """The long-prompt-32k case: 32K prompts on Llama 3.3 70B fp8, TP8 H200, p99 TTFT 2 s.
    The prefill takes ~1.2 s of the 2 s: a lone replica may run its prefill lane ~3.5%
    of the time; ten replicas behind one queue run it above half. Larger pools lift it
    further, until in an unlimited pool (no wait) the TPOT edge stops the batch, with the
    TTFT to spare."""
    cfg = config(gpu_name="h200", tp=8)
    mix = TrafficMix(32000, 32768, 0.0102, 500, 1500, 0.574)
    targets = LatencyTargets(2.0, 0.06)
    eff = efficiency_for("h200", FP8)
    lone = replica_capacity(cfg, mix, targets, eff)
    ten = replica_capacity(cfg, mix, targets, eff, pool_replicas=10)
    prefill_s = lone.prefill_s
    assert 1.0 < prefill_s < 1.4
    assert lone.limit is Limit.TTFT_QUEUEING and lone.requests_per_s * prefill_s < 0.05
    assert ten.requests_per_s * prefill_s > 0.5
    forty = replica_capacity(cfg, mix, targets, eff, pool_replicas=40)
    unlimited = replica_capacity(cfg, mix, targets, eff, UNLIMITED_POOL)
    assert ten.requests_per_s < forty.requests_per_s < unlimited.requests_per_s
    assert unlimited.limit in (Limit.TPOT, Limit.INTERCONNECT)
    assert unlimited.ttft_p99_s < targets.ttft_p99_s
    assert unlimited.tpot_p99_s == pytest.approx(targets.tpot_p99_s, rel=1e-9)
    # Decode-side numbers stay per replica: the same KV cache and the same best TPOT.
    assert (ten.kv_capacity_tokens, ten.best_tpot_s) == (lone.kv_capacity_tokens, lone.best_tpot_s)


def test_pool_replicas_must_be_a_whole_number_of_at_least_one():
    for bad in (0, -1, 2.5):
        with pytest.raises(ValueError, match="pool_replicas"):
            replica_capacity(config(), CHAT, LatencyTargets(1.0), EFF, pool_replicas=bad)


@settings(max_examples=25, deadline=None)
@given(
    prompt=st.floats(min_value=500, max_value=24000),
    ttft_s=st.floats(min_value=0.5, max_value=4.0),
    role=st.sampled_from([Role.UNIFIED, Role.PREFILL]),
    tp=st.sampled_from([4, 8]),
    pool=st.integers(min_value=1, max_value=40),
    more=st.integers(min_value=1, max_value=200),
)
def test_capacity_per_replica_never_falls_as_the_pool_grows(prompt, ttft_s, role, tp, pool, more):
    cfg = config(tp=tp, role=role)
    mix = TrafficMix(prompt, prompt * 2, 0.5, 300, 900, 0.8)
    targets = LatencyTargets(ttft_s, 0.06)
    smaller = replica_capacity(cfg, mix, targets, EFF, pool).requests_per_s
    larger = replica_capacity(cfg, mix, targets, EFF, pool + more).requests_per_s
    ceiling = replica_capacity(cfg, mix, targets, EFF, UNLIMITED_POOL).requests_per_s
    assert smaller <= larger * (1 + 1e-9)
    assert larger <= ceiling * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(
    rho=st.floats(min_value=0.01, max_value=0.99),
    service_s=st.floats(min_value=0.01, max_value=5.0),
    scv=st.floats(min_value=0.0, max_value=4.0),
    servers=st.integers(min_value=1, max_value=300),
    more=st.integers(min_value=1, max_value=300),
)
def test_the_pooled_wait_never_rises_with_the_pool_at_a_fixed_utilisation(
    rho, service_s, scv, servers, more
):
    rate = rho / service_s  # per replica
    fewer = pooled_wait_p99_s(rate, service_s, scv, servers)
    pooled = pooled_wait_p99_s(rate, service_s, scv, servers + more)
    assert pooled <= fewer * (1 + 1e-9) + 1e-12
    assert pooled_wait_p99_s(rate, service_s, scv, UNLIMITED_POOL) == 0.0
