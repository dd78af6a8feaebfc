"""vLLM's scheduler in the closed-loop replay (models.serving.closed_loop.preempting): KV slots on
demand, the newest running request recomputed when the cache is full, its blocks kept by the
prefix cache until an allocation evicts them; checked by hand and against the reserving
replay where the cache never fills."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.serving.closed_loop import replay_requests
from models.serving.closed_loop.preempting import replay_preempting
from models.serving.latency import latency_at_concurrency_burst
from models.serving.replica import ReplicaConfig, ServingContext, TrafficMix

TAU = 0.010
"""A constant iteration time, s: the hand cases count iterations."""


def constant(batch: int, prompt_tokens: float) -> float:
    return TAU


def test_three_prompts_on_demand_then_two_recomputed_by_hand():
    """KV cache of 10 tokens, three users of one request each, P = 3, O = 4, budget 100.
    Reserving P + O - 1 = 6 tokens a request seats one at a time (floor(10 / 7) = 1
    seat: 3 x (1 prefill + 3 decode) = 12 iterations). On demand:
    it 0: u0, u1, u2 prefilled (3 + 3 + 3 = 9 <= 10); first tokens, TTFT 1 tau each
    it 1: 3 decodes need 9 + 3 = 12 > 10: u2 (newest) preempted, its 3 tokens cached;
          u0, u1 decode (KV 8); the cache holds 8 + 3 > 10: 1 of u2's evicted (2 left)
    it 2: u0, u1 decode (KV 10); u2 readmitted needs its 2 cached + 2 new > room: waits;
          its 2 cached evicted (10 + 2 > 10)
    it 3: 2 decodes need 12 > 10: u1 preempted after 3 tokens (KV 3 + 2 = 5, cached);
          u0 decodes its 4th token and completes (TPOT (4 - 1) / 3 = 1 tau); KV 0
    it 4: u1 readmitted: 4 of its 5 cached tokens hit (at most 6 - 1), 2 computed;
          u2 recomputed in full (3 + its 1 token = 4); u1's 4th token: done at 5 tau
          (TPOT (5 - 1) / 3 = 4/3 tau); u2's 2nd token
    it 5, 6: u2 decodes its 3rd and 4th: done at 7 tau (TPOT (7 - 1) / 3 = 2 tau).
    Duration 7 tau, 12 tokens; mean TPOT (1 + 4/3 + 2) / 3 = 13/9 tau; decode batch per
    iteration 0, 2, 2, 1, 0, 1, 1: mean 1."""
    run = replay_preempting(constant, 100, 10, 10, 3, [(3, 4)] * 3)
    assert run.duration_s == pytest.approx(7 * TAU)
    assert run.ttft_mean_s == pytest.approx(1 * TAU)
    assert run.tpot_mean_s == pytest.approx((1 + 4 / 3 + 2) / 3 * TAU)
    assert run.tpot_p99_s == pytest.approx(2 * TAU)
    assert run.output_tokens_per_s == pytest.approx(3 * 4 / (7 * TAU))
    assert run.mean_decode_batch == pytest.approx((0 + 2 + 2 + 1 + 0 + 1 + 1) / 7)
    reserving = replay_requests(constant, 100, 1, 3, [(3, 4)] * 3)
    assert reserving.duration_s == pytest.approx(12 * TAU)
    assert reserving.ttft_mean_s == pytest.approx((1 + 5 + 9) / 3 * TAU)


def test_the_newest_sequence_is_the_one_recomputed_by_hand():
    """KV 10 tokens, budget 100, P = 3 for three users, O = 2, 2, 3 (u2 seated last).
    it 0: all three prefilled (9 tokens), TTFT 1 tau
    it 1: 3 decodes need 12 > 10: u2 preempted (3 tokens cached; 1 evicted when the
          others' tokens fill 8 + 3 > 10); u0 and u1 complete at 2 tau (TPOT 1 tau)
    it 2: u2 readmitted: 2 cached, 2 computed (its prompt and its 1 token: 4), its 2nd token
    it 3: its 3rd: done at 4 tau, TPOT (4 - 1) / 2 = 1.5 tau.
    Duration 4 tau, mean TPOT (1 + 1 + 1.5) / 3 (a replay that evicted the oldest, u0,
    ends at 3 tau)."""
    run = replay_preempting(constant, 100, 10, 10, 3, [(3, 2), (3, 2), (3, 3)])
    assert run.duration_s == pytest.approx(4 * TAU)
    assert run.tpot_mean_s == pytest.approx((1 + 1 + 1.5) / 3 * TAU)
    assert run.output_tokens_per_s == pytest.approx((2 + 2 + 3) / (4 * TAU))


def test_a_long_prompt_waits_on_its_cached_chunk_instead_of_thrashing():
    """KV 100 tokens, budget 40, two users of (P = 70, O = 10).
    it 0: u0's first 40 prompt tokens (KV 40)
    it 1: u0's last 30 (TTFT 2 tau); u1 admitted with the 10 the budget leaves (KV 80)
    it 2: u0 decodes (81); u1's next 39 need 120 > 100: u1 (newest) preempted, its 10
          tokens kept by the prefix cache (71 + 10 <= 100: none evicted)
    it 3 to 10: u1 would need its 10 cached + 39 new beside u0's 72 to 79: it waits
          (vLLM breaks at a waiting request it cannot allocate; no recompute)
    it 10: u0's 10th token (done at 11 tau); it 11, 12: u1's 60 uncached tokens (40, 20):
    TTFT 13 tau, done 9 iterations later at 22 tau. 140 prompt tokens computed, 2 x 70:
    the evicted chunk was not computed twice (a cache with no prefix kept would prefill
    u1's first chunk again at every other iteration while u0 decodes)."""
    calls: list[float] = []

    def counting(batch: int, prompt_tokens: float) -> float:
        calls.append(prompt_tokens)
        return TAU

    run = replay_preempting(counting, 40, 10, 100, 2, [(70, 10)] * 2)
    assert sum(calls) == 2 * 70
    assert run.ttft_mean_s == pytest.approx((2 + 13) / 2 * TAU)
    assert run.duration_s == pytest.approx(22 * TAU)


@settings(max_examples=40, deadline=None)
@given(
    users=st.integers(1, 12),
    seats=st.integers(1, 12),
    budget=st.integers(8, 400),
    prompt=st.integers(1, 300),
    output=st.integers(1, 30),
)
def test_a_cache_that_never_fills_replays_as_the_reserving_engine(
    users: int, seats: int, budget: int, prompt: int, output: int
):
    """With room for every request at once, admission on demand and admission by seats
    are the same rule (the sequence cap the only limit): the same run, figure by figure."""
    lengths = [(prompt, output)] * (2 * users)

    def step(batch: int, prompt_tokens: float) -> float:
        return 1e-3 + 1e-5 * batch + 1e-6 * prompt_tokens

    reserving = replay_requests(step, budget, seats, users, lengths)
    on_demand = replay_preempting(step, budget, seats, 1e12, users, lengths)
    assert on_demand == pytest.approx(reserving)


def test_a_request_past_the_cache_is_refused():
    with pytest.raises(ValueError, match="does not fit a KV cache of 50 tokens"):
        replay_preempting(constant, 100, 4, 50, 1, [(40, 12)])


def test_vllm_bursts_seat_more_than_the_reserved_footprint():
    """Qwen3-32B BF16 on one H100 under vLLM's settings, 300 requests of 217/201 tokens at
    once: the cache holds ~40,000 tokens, 96 whole requests reserved (P + O = 418) but
    ~186 prompts on demand, so the replay on demand decodes larger batches."""
    config = ReplicaConfig(
        gpu_catalog()["h100-sxm"],
        llm_catalog()["qwen3-32b"],
        Precision("bf16"),
        Precision("bf16"),
        1,
        1,
    )
    vllm = efficiency_for("h100-sxm", Precision("bf16"), engine="vllm-0.11")
    assert vllm.kv_preemption
    serving = ServingContext(config, TrafficMix.fixed(217, 201), vllm)
    reserving = ServingContext(
        config, serving.mix, vllm.model_copy(update={"kv_preemption": False})
    )
    on_demand_run = latency_at_concurrency_burst(serving, 300, 1)
    reserving_run = latency_at_concurrency_burst(reserving, 300, 1)
    assert on_demand_run.mean_decode_batch > reserving_run.mean_decode_batch
