"""Catalog arithmetic checked by hand: KV bytes per token and parameter counts."""

import pytest

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.precision import Precision

REQUIRED_GPUS = {
    "a100-80gb-sxm",
    "h100-sxm",
    "h200",
    "b200",
    "l40s",
    "mi300x",
    "gb200",
    "b300",
    "mi325x",
    "mi355x",
    "rtx-pro-6000",
    "gh200",
    "gb300",
}
REQUIRED_LLMS = {
    "llama-2-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "llama-3.3-70b",
    "mixtral-8x7b",
    "deepseek-v3",
    "qwen2.5-72b",
    "qwen3-32b",
    "qwen3-30b-a3b",
    "qwen3-235b-a22b",
    "llama-4-scout",
    "llama-4-maverick",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "deepseek-r1",
    "kimi-k2.5",
    "minimax-m2.5",
    "qwen3.5-397b-a17b",
}
ACTIVE_WITHOUT_INPUT_EMBEDDING = {"gpt-oss-20b", "gpt-oss-120b"}
"""OpenAI's active counts leave out the embedding lookup; fleetplan's include it."""
ACTIVE_WITHOUT_EMBEDDINGS = {"minimax-m2.5"}
"""MiniMax's active count (9.8B, 'around 10B') leaves out the embedding and the LM head."""
ACTIVE_ROUNDED_TO_WHOLE_BILLIONS = {"qwen3.5-397b-a17b"}
"""Published only as a whole number of billions (the A17B of the name): the count must
round to it (17.35B, 2.05% over 17)."""


def test_catalogs_hold_the_required_entries():
    assert set(gpu_catalog()) >= REQUIRED_GPUS
    assert set(llm_catalog()) >= REQUIRED_LLMS


def test_llama_31_70b_bf16_kv_bytes_per_token():
    # K and V x 80 layers x 8 KV heads x 128 head dim x 2 bytes (bf16)
    expected = 2 * 80 * 8 * 128 * 2
    assert expected == 327_680
    spec = llm_catalog()["llama-3.1-70b"]
    per_token = spec.layers * spec.kv_elements_per_token_per_layer()
    assert per_token * Precision.BF16.bytes_per_element == expected


def test_deepseek_v3_mla_kv_is_the_latent_plus_rope_key():
    # MLA caches the 512-wide latent plus the 64-wide decoupled RoPE key, per layer:
    # 61 layers x (512 + 64) elements x 1 byte (fp8)
    expected = 61 * (512 + 64) * 1
    spec = llm_catalog()["deepseek-v3"]
    per_token = spec.layers * spec.kv_elements_per_token_per_layer()
    assert per_token * Precision.FP8.bytes_per_element == expected


def test_llama_31_8b_parameter_count_by_hand():
    hidden, layers, inter, vocab = 4096, 32, 14336, 128256
    q_and_o = 2 * hidden * (32 * 128)  # 32 query heads of 128
    k_and_v = 2 * hidden * (8 * 128)  # 8 KV heads of 128
    mlp = 3 * hidden * inter  # SwiGLU gate, up, down
    norms = 2 * hidden
    embeddings = 2 * vocab * hidden  # input embedding and untied LM head
    expected = layers * (q_and_o + k_and_v + mlp + norms) + embeddings + hidden
    assert llm_catalog()["llama-3.1-8b"].total_params() == expected
    assert expected == pytest.approx(8.03e9, rel=0.001)


def test_mixtral_active_parameters_by_hand():
    hidden, layers, inter, vocab = 4096, 32, 14336, 32000
    attention = 2 * hidden * 4096 + 2 * hidden * 1024
    expert = 3 * hidden * inter
    router = hidden * 8
    norms = 2 * hidden
    embeddings = 2 * vocab * hidden
    total = layers * (attention + 8 * expert + router + norms) + embeddings + hidden
    active = layers * (attention + 2 * expert + router + norms) + embeddings + hidden
    spec = llm_catalog()["mixtral-8x7b"]
    assert spec.total_params() == total
    assert spec.active_params() == active


@pytest.mark.parametrize("name", sorted(REQUIRED_LLMS))
def test_parameter_counts_match_published_totals_within_two_percent(name):
    spec = llm_catalog()[name]
    active = spec.active_params()
    if name in ACTIVE_WITHOUT_INPUT_EMBEDDING:
        active -= spec.vocab_size * spec.hidden_size
    if name in ACTIVE_WITHOUT_EMBEDDINGS:
        active -= spec.embedding_params()
    assert spec.total_params() / 1e9 == pytest.approx(spec.published_params_b, rel=0.02)
    if name in ACTIVE_ROUNDED_TO_WHOLE_BILLIONS:
        assert round(active / 1e9) == spec.published_active_params_b
    else:
        assert active / 1e9 == pytest.approx(spec.published_active_params_b, rel=0.02)


@pytest.mark.parametrize("name", sorted(REQUIRED_GPUS))
def test_every_gpu_number_cites_a_source(name):
    spec = gpu_catalog()[name]
    cited = set(spec.sources)
    numbers = {
        "hbm_gib",
        "hbm_tb_s",
        "dense_tflops",
        "scaleup_gb_s",
        "gpus_per_node",
        "scaleout_gbit_s",
        "tdp_w",
        "price_per_gpu_hour",
        "replica_start_s",
    }
    assert numbers <= cited, f"{name} lacks sources for {numbers - cited}"


@pytest.mark.parametrize("name", sorted(REQUIRED_LLMS))
def test_every_llm_cites_its_config_and_published_size(name):
    assert {"architecture", "published_params_b"} <= set(llm_catalog()[name].sources)


def test_dense_not_sparse_flops():
    # Dense BF16 peaks from the spec sheets: the 'with sparsity' figures are twice these.
    dense_bf16 = {
        "a100-80gb-sxm": 312,
        "h100-sxm": 989,
        "h200": 989,
        "b200": 2250,
        "gb200": 2500,
        "b300": 2250,  # Blackwell Ultra: 4.5 PFLOPS BF16 with sparsity, halved
        "gh200": 990,  # GH200 datasheet: '1,979 teraFLOPS* | 990 teraFLOPS' (* sparsity)
        "gb300": 2500,  # GB300 NVL72: 180 PFLOPS BF16 dense / 72 GPUs
    }
    for name, tflops in dense_bf16.items():
        assert gpu_catalog()[name].dense_tflops.bf16 == tflops
    # MI355X: 20.1 PFLOPS FP4 with sparsity, halved; FP8 and BF16 at 1/2 and 1/4 of FP4
    mi355x = gpu_catalog()["mi355x"].dense_tflops
    assert mi355x.fp4 == pytest.approx(20_100 / 2, rel=0.01)
    assert (mi355x.fp8, mi355x.bf16) == pytest.approx((mi355x.fp4 / 2, mi355x.fp4 / 4), rel=1e-4)


def test_fp4_only_where_the_hardware_has_it():
    supports = {name: spec.supports(Precision.FP4) for name, spec in gpu_catalog().items()}
    assert supports["b200"] and supports["b300"] and supports["gb200"] and supports["gb300"]
    assert supports["rtx-pro-6000"] and supports["mi355x"]
    assert not supports["h100-sxm"] and not supports["gh200"]
    assert not supports["a100-80gb-sxm"]
    assert not supports["mi300x"] and not supports["mi325x"]


def test_llama_4_maverick_interleaves_moe_and_dense_layers_by_hand():
    hidden, layers, vocab = 5120, 48, 202048
    attention = 2 * hidden * (40 * 128) + 2 * hidden * (8 * 128)  # q, o; k, v
    expert = 3 * hidden * 8192  # one routed or shared SwiGLU expert
    moe_mlp = (128 + 1) * expert + hidden * 128  # 128 routed + 1 shared + router
    dense_mlp = 3 * hidden * 16384  # intermediate_size_mlp
    moe_layers = layers // 2  # interleave_moe_layer_step 2
    norms = 2 * hidden * layers + hidden
    embeddings = 2 * vocab * hidden
    total = (
        layers * attention
        + moe_layers * moe_mlp
        + (layers - moe_layers) * dense_mlp
        + norms
        + embeddings
    )
    active_moe_mlp = (1 + 1) * expert + hidden * 128  # top-1 routed + shared
    active = total - moe_layers * moe_mlp + moe_layers * active_moe_mlp
    spec = llm_catalog()["llama-4-maverick"]
    assert (spec.moe_layers, spec.dense_mlp_layers) == (24, 24)
    assert spec.total_params() == total
    assert spec.active_params() == active


def test_qwen3_30b_a3b_has_no_shared_expert_by_hand():
    hidden, layers, vocab = 2048, 48, 151936
    attention = 2 * hidden * (32 * 128) + 2 * hidden * (4 * 128)
    expert = 3 * hidden * 768
    router = hidden * 128
    active_per_layer = attention + 8 * expert + router + 2 * hidden
    active = layers * active_per_layer + 2 * vocab * hidden + hidden
    assert llm_catalog()["qwen3-30b-a3b"].active_params() == active


def test_deepseek_r1_has_deepseek_v3_shapes():
    r1, v3 = llm_catalog()["deepseek-r1"], llm_catalog()["deepseek-v3"]
    shapes = {"name", "display_name", "sources"}
    assert r1.model_dump(exclude=shapes) == v3.model_dump(exclude=shapes)
