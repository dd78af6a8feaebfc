"""Catalog arithmetic checked by hand: KV bytes per token and parameter counts."""

import pytest

from models.catalog import gpu_catalog, llm_catalog
from models.precision import Precision

REQUIRED_GPUS = {"a100-80gb-sxm", "h100-sxm", "h200", "b200", "l40s", "mi300x"}
REQUIRED_LLMS = {
    "llama-2-70b",
    "llama-3.1-8b",
    "llama-3.1-70b",
    "llama-3.1-405b",
    "llama-3.3-70b",
    "mixtral-8x7b",
    "deepseek-v3",
    "qwen2.5-72b",
}


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
    assert spec.total_params() / 1e9 == pytest.approx(spec.published_params_b, rel=0.02)
    assert spec.active_params() / 1e9 == pytest.approx(spec.published_active_params_b, rel=0.02)


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
    dense_bf16 = {"a100-80gb-sxm": 312, "h100-sxm": 989, "h200": 989, "b200": 2250}
    for name, tflops in dense_bf16.items():
        assert gpu_catalog()[name].dense_tflops.bf16 == tflops


def test_fp4_only_where_the_hardware_has_it():
    supports = {name: spec.supports(Precision.FP4) for name, spec in gpu_catalog().items()}
    assert supports["b200"]
    assert not supports["h100-sxm"]
    assert not supports["a100-80gb-sxm"]
