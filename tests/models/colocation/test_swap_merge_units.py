"""Swapping the coldest tail, merging workloads of one model, and the capacity unit with
routing weights across GPU generations."""

import itertools
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.colocation.merge import WorkloadLoad, merge_workloads
from models.colocation.swap import (
    cold_probabilities_lru,
    cold_probability_keep_alive,
    host_link_gb_s,
    swap_in_s,
    swap_verdict,
)
from models.physics import catalog
from models.physics.efficiency import Efficiency
from models.physics.memory import weight_bytes_per_gpu
from models.physics.precision import Precision
from models.serving.capacity import replica_capacity
from models.serving.capacity_unit import (
    PoolShare,
    capacity_units,
    define_capacity_unit,
    routing_by_gpu_count,
    routing_weights,
)
from models.serving.replica import LatencyTargets, ReplicaConfig, TrafficMix

EFF = Efficiency()
GPUS = catalog.gpu_catalog()
LLAMA_8B = catalog.llm_catalog()["llama-3.1-8b"]
MIX = TrafficMix.fixed(1000, 200)
SLO = LatencyTargets(ttft_p99_s=0.5, tpot_p99_s=0.050)


# --- swapping -------------------------------------------------------------------------


def test_swap_time_by_hand():
    weights = weight_bytes_per_gpu(LLAMA_8B, Precision.BF16, tp=1)
    # 8.03e9 parameters x 2 bytes over PCIe Gen5 x16 (63 GB/s) at 80%.
    seconds = swap_in_s(weights, host_link_gb_s(GPUS["h100-sxm"]))
    assert seconds == pytest.approx(8_030_261_248 * 2 / (63e9 * 0.8), rel=1e-12)
    assert seconds == pytest.approx(0.3187, abs=1e-4)
    # The A100's Gen4 link takes twice as long.
    assert swap_in_s(weights, host_link_gb_s(GPUS["a100-80gb-sxm"])) == pytest.approx(2 * seconds)


def test_cold_probability_by_hand():
    # One request per 100 s, kept 60 s: exp(-0.01 x 60) = 0.5488.
    assert cold_probability_keep_alive(0.01, 60) == pytest.approx(math.exp(-0.6))
    # Two equal models, one LRU slot: 2 (1 - exp(-lambda T)) = 1, so P(cold) = 1/2 each.
    assert cold_probabilities_lru([0.2, 0.2], 1) == pytest.approx([0.5, 0.5])
    # Fewer models than slots: never evicted.
    assert cold_probabilities_lru([0.2, 0.0, 5.0], 2) == [0.0, 0.0, 0.0]


@given(st.lists(st.floats(0.001, 10), min_size=3, max_size=8), st.integers(1, 2))
def test_lru_hotter_models_are_colder_less_often(rates, slots):
    cold = cold_probabilities_lru(rates, slots)
    by_rate = sorted(zip(rates, cold, strict=True))
    assert all(a[1] >= b[1] - 1e-12 for a, b in itertools.pairwise(by_rate))
    # Che: the expected number of resident models equals the slots.
    assert sum(1 - c for c in cold) == pytest.approx(slots, rel=1e-6)


def test_swapping_is_allowed_only_where_the_ttft_target_absorbs_it():
    swap_s = 8_030_261_248 * 2 / (63e9 * 0.8)
    tight = swap_verdict(0.2, 0.5, swap_s, cold_probability_keep_alive(0.01, 60))
    assert tight.ttft_p99_s == pytest.approx(0.2 + swap_s)
    assert not tight.allowed and "breaks the 500 ms target by 19 ms" in tight.reason
    loose = swap_verdict(0.2, 1.0, swap_s, 0.5)
    assert loose.allowed and loose.mean_added_ttft_s == pytest.approx(0.5 * swap_s)


# --- merging --------------------------------------------------------------------------


def test_merging_two_tenants_of_one_model_by_hand():
    chat = WorkloadLoad("chat", "m", TrafficMix.fixed(1000, 200), LatencyTargets(0.5, 0.08), 3.0)
    api = WorkloadLoad("api", "m", TrafficMix.fixed(3000, 200), LatencyTargets(2.0, 0.04), 1.0)
    pool = merge_workloads([chat, api])
    # Weights 3/4, 1/4: mean 0.75 x 1000 + 0.25 x 3000 = 1500; second moment
    # 0.75 x 1e6 + 0.25 x 9e6 = 3e6, so cv^2 = 3e6 / 1500^2 - 1 = 1/3. A quarter of the
    # prompts are 3000 tokens: the p99 is 3000.
    assert pool.mix.prompt_mean_tokens == pytest.approx(1500)
    assert pool.mix.prompt_cv == pytest.approx(math.sqrt(1 / 3))
    assert pool.mix.prompt_p99_tokens == pytest.approx(3000, rel=1e-9)
    assert pool.mix.output_mean_tokens == pytest.approx(200) and pool.mix.output_cv == 0
    assert pool.targets == LatencyTargets(0.5, 0.04)
    assert (pool.strictest_ttft, pool.strictest_tpot) == ("chat", "api")
    assert pool.requests_per_s == 4.0
    with pytest.raises(ValueError, match="one model"):
        merge_workloads([chat, WorkloadLoad("x", "other", chat.mix, chat.targets, 1.0)])


def test_a_rare_long_tenant_moves_the_mixture_p99_less_than_its_own():
    common = WorkloadLoad("a", "m", TrafficMix.fixed(1000, 200), LatencyTargets(), 995.0)
    rare = WorkloadLoad("b", "m", TrafficMix.fixed(8000, 200), LatencyTargets(), 5.0)
    # 0.5% of prompts are 8000 tokens, less than the 1% tail: the mixture's p99 is 1000,
    # below its mean 0.995 x 1000 + 0.005 x 8000 = 1035, and a mix's p99 is never taken
    # below its mean: 1035, far from the rare tenant's 8000.
    mix = merge_workloads([common, rare]).mix
    assert mix.prompt_mean_tokens == pytest.approx(0.995 * 1000 + 0.005 * 8000)
    assert mix.prompt_p99_tokens == pytest.approx(mix.prompt_mean_tokens)


# --- capacity unit and routing --------------------------------------------------------


def _config(gpu: str) -> ReplicaConfig:
    return ReplicaConfig(GPUS[gpu], LLAMA_8B, Precision.BF16, Precision.BF16, 1, 1)


def test_capacity_unit_and_routing_weights_by_hand():
    unit = define_capacity_unit("8b-chat", _config("h100-sxm"), MIX, SLO, EFF)
    h100 = replica_capacity(_config("h100-sxm"), MIX, SLO, EFF).requests_per_s
    a100 = replica_capacity(_config("a100-80gb-sxm"), MIX, SLO, EFF).requests_per_s
    assert unit.reference_requests_per_s == h100
    assert capacity_units(_config("a100-80gb-sxm"), unit, EFF) == a100 < h100
    pools = [
        PoolShare("h100", _config("h100-sxm"), 2, h100),
        PoolShare("a100", _config("a100-80gb-sxm"), 2, a100),
    ]
    weights = routing_weights(pools)
    assert weights["h100"] == pytest.approx(2 * h100 / (2 * h100 + 2 * a100))
    assert sum(weights.values()) == pytest.approx(1)


def test_routing_by_gpu_count_breaks_the_slower_pools_p99():
    h100 = replica_capacity(_config("h100-sxm"), MIX, SLO, EFF).requests_per_s
    a100 = replica_capacity(_config("a100-80gb-sxm"), MIX, SLO, EFF).requests_per_s
    pools = [
        PoolShare("h100", _config("h100-sxm"), 2, h100),
        PoolShare("a100", _config("a100-80gb-sxm"), 2, a100),
    ]
    traffic = 0.9 * (2 * h100 + 2 * a100)  # 90% of what the pools carry at the SLO
    result = {
        p.name: p
        for p in routing_by_gpu_count(pools, traffic, MIX, SLO, {"h100": EFF, "a100": EFF})
    }
    slow, fast = result["a100"], result["h100"]
    # Half the traffic each: the A100s get 0.45 x (2 h + 2 a) / 2 per replica.
    assert slow.weight_by_gpus == 0.5
    assert slow.requests_per_s_per_replica == pytest.approx(0.45 * (h100 + a100))
    assert slow.utilisation > 1 and slow.breaks_slo
    assert slow.tpot_excess_s > 0 or math.isinf(slow.ttft_excess_s)
    assert not fast.breaks_slo
