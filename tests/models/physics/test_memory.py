"""Memory model: weights, KV cache, TP/PP shares, the budget; hand arithmetic as named
factors."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu, llm
from models.physics.efficiency import Efficiency
from models.physics.llm import LlmSpec
from models.physics.memory import (
    GIB,
    activation_bytes_per_gpu,
    check_layout,
    default_kv_precision,
    kv_bytes_per_token,
    kv_bytes_per_token_per_gpu,
    kv_bytes_per_token_per_replica,
    layout_problem,
    memory_budget,
    weight_bytes,
    weight_bytes_per_gpu,
)
from models.physics.precision import Precision

BF16, FP8, FP4 = Precision.BF16, Precision.FP8, Precision.FP4
EFF = Efficiency(memory_reserve_fraction=0.05, prefill_chunk_tokens=8192)


def llama_70b_params() -> dict[str, int]:
    """Llama 3.3 70B counted by hand from its config.json."""
    layers, hidden, intermediate = 80, 8192, 28672
    heads, kv_heads, head_dim, vocab = 64, 8, 128, 128256
    attention = hidden * heads * head_dim * 2 + hidden * kv_heads * head_dim * 2  # q,o + k,v
    mlp = 3 * hidden * intermediate  # gate, up, down
    return {
        "linear": layers * (attention + mlp),
        "embedding": 2 * vocab * hidden,  # input embedding + LM head, untied
        "norms": (2 * layers + 1) * hidden,
    }


def test_weight_bytes_bf16_is_two_bytes_per_parameter():
    p = llama_70b_params()
    expected = (p["linear"] + p["embedding"] + p["norms"]) * 2
    assert weight_bytes(llm("llama-3.3-70b"), BF16) == expected


def test_weight_bytes_fp8_keeps_embeddings_and_norms_in_bf16():
    p = llama_70b_params()
    expected = p["linear"] * 1 + (p["embedding"] + p["norms"]) * 2
    assert weight_bytes(llm("llama-3.3-70b"), FP8) == expected


def test_weight_bytes_fp4_adds_one_fp8_scale_per_16_weights():
    p = llama_70b_params()
    expected = p["linear"] * (0.5 + 1 / 16) + (p["embedding"] + p["norms"]) * 2
    assert weight_bytes(llm("llama-3.3-70b"), FP4) == pytest.approx(expected)


def test_fp4_only_on_gpus_with_fp4_tensor_cores():
    model = llm("llama-3.3-70b")
    assert "no fp4 tensor cores" in layout_problem(gpu("h100-sxm"), model, FP4, FP8, 4, 1)
    assert layout_problem(gpu("b200"), model, FP4, FP8, 4, 1) is None
    assert "no fp8" in layout_problem(gpu("a100-80gb-sxm"), model, FP8, FP8, 4, 1)


def test_kv_bytes_per_token_gqa():
    # K and V x 8 KV heads x 128 head_dim x 80 layers x 2 bytes
    expected = 2 * 8 * 128 * 80 * 2
    assert kv_bytes_per_token(llm("llama-3.3-70b"), BF16) == expected
    assert kv_bytes_per_token(llm("llama-3.3-70b"), FP8) == expected / 2


def test_kv_bytes_per_token_mla_is_the_latent_plus_rope_key():
    # (kv_lora_rank 512 + qk_rope_head_dim 64) x 61 layers x 1 byte (fp8)
    expected = (512 + 64) * 61 * 1
    assert kv_bytes_per_token(llm("deepseek-v3"), FP8) == expected


def test_mla_cache_is_replicated_on_every_tp_rank():
    model = llm("deepseek-v3")
    per_gpu = (512 + 64) * 61 * 1
    assert kv_bytes_per_token_per_gpu(model, FP8, tp=8) == per_gpu
    assert kv_bytes_per_token_per_replica(model, FP8, tp=8) == 8 * per_gpu


def test_kv_heads_split_by_tp_then_replicate():
    model = llm("llama-3.1-8b")  # 32 heads, 8 KV heads, 32 layers
    # TP=4: 2 KV heads per GPU, no replication
    assert kv_bytes_per_token_per_gpu(model, BF16, tp=4) == 2 * 2 * 128 * 32 * 2
    assert kv_bytes_per_token_per_replica(model, BF16, tp=4) == 2 * 8 * 128 * 32 * 2
    # TP=16 > 8 KV heads: one head per GPU, each stored twice across the replica
    assert kv_bytes_per_token_per_gpu(model, BF16, tp=16) == 2 * 1 * 128 * 32 * 2
    assert kv_bytes_per_token_per_replica(model, BF16, tp=16) == 16 * (2 * 1 * 128 * 32 * 2)


def test_tp_must_divide_attention_heads():
    model = llm("llama-3.3-70b")
    assert "does not divide the 64 attention heads" in layout_problem(
        gpu("h100-sxm"), model, BF16, BF16, 3, 1
    )
    with pytest.raises(ValueError, match="does not divide"):
        check_layout(model, tp=3)
    with pytest.raises(ValueError, match="does not divide"):
        weight_bytes_per_gpu(model, BF16, tp=6)


def test_tp_share_of_weights():
    p = llama_70b_params()
    tp = 4
    # every linear layer and the vocabulary split 4 ways (8 KV heads: no K/V replication)
    expected = p["linear"] / tp * 2 + p["embedding"] / tp * 2 + p["norms"] * 2
    assert weight_bytes_per_gpu(llm("llama-3.3-70b"), BF16, tp=tp) == pytest.approx(expected)


def test_pp_share_of_weights_is_half_the_layers_plus_one_vocab_matrix():
    p = llama_70b_params()
    layers, vocab, hidden = 80, 128256, 8192
    per_layer = p["linear"] / layers
    # heaviest stage: ceil(80 / 2) = 40 layers + one vocab matrix (embedding or LM head)
    expected = 40 * per_layer * 1 + (vocab * hidden + p["norms"]) * 2
    got = weight_bytes_per_gpu(llm("llama-3.3-70b"), FP8, tp=1, pp=2)
    assert got == pytest.approx(expected)


def test_activation_bytes():
    # 8192 tokens x (4 x hidden + 2 x intermediate / tp) x 2 bytes
    expected = 8192 * (4 * 8192 + 2 * 28672 / 2) * 2
    assert activation_bytes_per_gpu(llm("llama-3.3-70b"), tp=2, tokens_per_pass=8192) == expected


def test_budget_and_resident_tokens():
    h100, model = gpu("h100-sxm"), llm("llama-3.3-70b")
    budget = memory_budget(h100, model, FP8, FP8, 2, 1, EFF)
    hbm = 80 * GIB
    room = (
        hbm
        - weight_bytes_per_gpu(model, FP8, 2)
        - activation_bytes_per_gpu(model, 2, 8192)
        - hbm * 0.05
    )
    per_token_per_gpu = 2 * (8 / 2) * 128 * 80 * 1
    assert budget.kv_room_bytes_per_gpu == pytest.approx(room)
    assert budget.kv_capacity_tokens == pytest.approx(room / per_token_per_gpu)
    assert budget.max_sequences(2000) == int(room / per_token_per_gpu // 2000)


def test_default_kv_precision_never_below_fp8():
    assert default_kv_precision(BF16) is BF16
    assert default_kv_precision(FP8) is FP8
    assert default_kv_precision(FP4) is FP8


def dense_1t() -> LlmSpec:
    """A ~1 TB (at FP8) dense GQA model, Llama-shaped, for the sizing test."""
    return LlmSpec(
        name="dense-1t",
        layers=128,
        hidden_size=24576,
        intermediate_size=81920,
        attention_heads=192,
        kv_heads=8,
        head_dim=128,
        vocab_size=128256,
        max_context_tokens=131072,
        published_params_b=940,
        published_active_params_b=940,
    )


def test_one_tb_fp8_model_fits_one_b200_node_not_two_h100_nodes_with_kv_room():
    model = dense_1t()
    assert 0.9e12 < weight_bytes(model, FP8) < 1.0e12
    # The working set the replica must hold: 192 requests of 8K tokens in flight.
    working_set_tokens = 192 * 8192
    b200_node = memory_budget(gpu("b200"), model, FP8, FP8, tp=8, pp=1, efficiency=EFF)
    two_h100_nodes = memory_budget(gpu("h100-sxm"), model, FP8, FP8, tp=8, pp=2, efficiency=EFF)
    four_h100_nodes = memory_budget(gpu("h100-sxm"), model, FP8, FP8, tp=8, pp=4, efficiency=EFF)
    assert b200_node.kv_capacity_tokens >= working_set_tokens
    assert two_h100_nodes.kv_room_bytes_per_gpu > 0  # the weights alone do fit...
    assert two_h100_nodes.kv_capacity_tokens < working_set_tokens  # ...the KV room does not
    assert four_h100_nodes.kv_capacity_tokens >= working_set_tokens


@settings(max_examples=40, deadline=None)
@given(
    tokens=st.floats(min_value=1, max_value=100_000),
    extra=st.floats(min_value=0, max_value=100_000),
    tp=st.sampled_from([1, 2, 4, 8]),
)
def test_longer_context_never_raises_the_max_batch(tokens, extra, tp):
    budget = memory_budget(gpu("h200"), llm("llama-3.1-70b"), FP8, FP8, tp, 1, EFF)
    assert budget.max_sequences(tokens + extra) <= budget.max_sequences(tokens)
