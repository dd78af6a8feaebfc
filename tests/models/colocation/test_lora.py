"""Multi-LoRA: adapter memory, expected distinct adapters, the per-step cost, and the
capacity of a base replica serving many adapters."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.colocation.lora import (
    ATTENTION_ONLY,
    AdapterLoad,
    adapter_bytes,
    adapter_bytes_per_gpu,
    expected_distinct_adapters,
    lora_step_model,
    multi_lora_capacity,
)
from models.physics import catalog
from models.physics.efficiency import Efficiency
from models.physics.precision import Precision
from models.physics.step_time import StepModel, step_model
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, ReplicaConfig, TrafficMix

EFF = Efficiency()
H100 = catalog.gpu_catalog()["h100-sxm"]
LLAMA_8B = catalog.llm_catalog()["llama-3.1-8b"]
CONFIG = ReplicaConfig(H100, LLAMA_8B, Precision.BF16, Precision.BF16, tp=1, pp=1)
MIX = TrafficMix.fixed(1000, 200)
SLO = LatencyTargets(ttft_p99_s=0.5, tpot_p99_s=0.050)
h, q, kv, mlp = 4096, 32 * 128, 8 * 128, 14336  # hidden, q out, k/v out, MLP width


def test_adapter_bytes_by_hand():
    # Every linear layer: q (h+q), k and v (h+kv each), o (q+h), gate and up (h+I each),
    # down (I+h); rank 16, 32 layers, bf16.
    per_layer = (h + q) + 2 * (h + kv) + (q + h) + 2 * (h + mlp) + (mlp + h)
    assert per_layer == 7 * h + 2 * q + 2 * kv + 3 * mlp
    assert adapter_bytes(LLAMA_8B, 16) == 16 * per_layer * 32 * 2 == 80 * 2**20
    assert adapter_bytes(LLAMA_8B, 16, ATTENTION_ONLY) == 16 * (4 * h + 2 * q + 2 * kv) * 32 * 2


def test_adapter_bytes_per_gpu_split_like_their_base_matrices():
    # TP=2: column-parallel (q, k, v, gate, up) keep A whole and split B; row-parallel
    # (o, down) split A and keep B whole.
    column = (h + q / 2) + 2 * (h + kv / 2) + 2 * (h + mlp / 2)
    row = (q / 2 + h) + (mlp / 2 + h)
    assert adapter_bytes_per_gpu(LLAMA_8B, 16, tp=2) == 16 * (column + row) * 32 * 2
    assert adapter_bytes_per_gpu(LLAMA_8B, 16, tp=1) == adapter_bytes(LLAMA_8B, 16)


def test_expected_distinct_adapters_by_hand():
    # Shares 1/2, 1/4, 1/4 at batch 2: (1 - 1/4) + 2 x (1 - 9/16) = 1.625.
    assert expected_distinct_adapters([0.5, 0.25, 0.25], 2) == pytest.approx(1.625)
    assert expected_distinct_adapters([0.5, 0.25, 0.25], 0) == 0
    with pytest.raises(ValueError, match="sum to at most 1"):
        expected_distinct_adapters([0.7, 0.7], 2)


def test_lora_step_cost_by_hand():
    adapters = [AdapterLoad(f"a{k}", 16, 1.0) for k in range(4)]
    steps = lora_step_model(CONFIG, adapters, EFF)
    # Batch 4 over 4 equal adapters: E[D] = 4 (1 - (3/4)^4); each read 80 MiB at
    # 3.35 TB/s x 0.75; 4 tokens x 2 FLOPs x 41,943,040 LoRA params at 989 TFLOPS x 0.45.
    distinct = 4 * (1 - 0.75**4)
    reads_s = distinct * 80 * 2**20 / (3.35e12 * 0.75)
    flops_s = 4 * 2 * (80 * 2**20 / 2) / (989e12 * 0.45)
    assert steps.lora_s(4, 4) == pytest.approx(reads_s + flops_s, rel=1e-12)
    assert steps.iteration_s(4, 1100) > steps.lora_s(4, 4)


@given(st.integers(min_value=1, max_value=40))
def test_more_distinct_adapters_never_speed_a_step(n):
    few = lora_step_model(CONFIG, [AdapterLoad(f"a{k}", 16, 1.0) for k in range(n)], EFF)
    more = lora_step_model(CONFIG, [AdapterLoad(f"a{k}", 16, 1.0) for k in range(n + 1)], EFF)
    assert more.iteration_s(32, 1100, 160, 500) >= few.iteration_s(32, 1100, 160, 500)


def test_a_base_replica_serving_adapters_carries_less_than_the_base_alone():
    base = replica_capacity(CONFIG, MIX, SLO, EFF).requests_per_s
    few = multi_lora_capacity(CONFIG, [AdapterLoad("a", 16, 1.0)], MIX, SLO, EFF)
    many = multi_lora_capacity(
        CONFIG, [AdapterLoad(f"a{k}", 64, 1.0) for k in range(50)], MIX, SLO, EFF
    )
    assert 0 < many.capacity.requests_per_s < few.capacity.requests_per_s <= base
    assert many.adapter_bytes_per_gpu == 50 * adapter_bytes(LLAMA_8B, 64)
    assert many.capacity.weight_bytes_per_gpu == pytest.approx(
        replica_capacity(CONFIG, MIX, SLO, EFF).weight_bytes_per_gpu + many.adapter_bytes_per_gpu
    )
    assert sum(many.adapter_requests_per_s) == pytest.approx(many.capacity.requests_per_s)
    assert 1 < many.expected_distinct_adapters <= 50


def test_too_many_adapters_do_not_fit_and_say_so():
    result = multi_lora_capacity(
        CONFIG, [AdapterLoad(f"a{k}", 256, 1.0) for k in range(200)], MIX, SLO, EFF
    )
    assert not result.capacity.fits
    assert "200 adapters" in result.capacity.reason and "fewer adapters" in result.capacity.reason


def test_the_iteration_mixture_pays_the_adapters_in_every_loaded_iteration():
    """`StepModel.iterations_s` (the mixture's batch-at-a-time timing) goes through a
    subclass's own `iteration_s`, so a LoRA replica's mixture pays `lora_s` at every
    load: the same times one by one, each above the base model's by lora_s(B, B + Q)."""
    adapters = [AdapterLoad(f"a{k}", 64, 1.0) for k in range(50)]
    steps = lora_step_model(CONFIG, adapters, EFF)
    loads = [0.0, 800.0, 1600.0]
    times = steps.iterations_s(32, 1100, loads, 500)
    assert times == [steps.iteration_s(32, 1100, load, 500) for load in loads]
    plain = step_model(H100, LLAMA_8B, Precision.BF16, Precision.BF16, 1, 1, EFF)
    base = StepModel.iterations_s(plain, 32, 1100, loads, 500)
    for load, seconds, base_s in zip(loads, times, base, strict=True):
        assert seconds == pytest.approx(base_s + steps.lora_s(32, 32 + load), rel=1e-12)
