"""The catalog entries of issue 34 (Kimi K2.5, MiniMax-M2.5, Qwen3.5-397B-A17B, GB300):
parameter counts by hand from the config shapes against the published figures, the GPU's
fields against its sources, and the hybrid model's linear-attention layers."""

import pytest

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import calibration_table, efficiency_source
from models.physics.llm import LlmSpec
from models.physics.memory import weight_bytes_per_gpu
from models.physics.precision import Precision


def _rel(computed: float, published_b: float) -> float:
    return abs(computed / 1e9 - published_b) / published_b


def test_kimi_k25_parameters_by_hand():
    hidden, layers, vocab, heads = 7168, 61, 163840, 64
    q_lora, kv_lora, nope, rope, v_dim = 1536, 512, 128, 64, 128
    q = hidden * q_lora + q_lora + q_lora * heads * (nope + rope)  # down, latent norm, up
    kv = hidden * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_dim)
    o = heads * v_dim * hidden
    attention = q + kv + o
    expert = 3 * hidden * 2048  # SwiGLU of moe_intermediate_size 2048
    router = hidden * 384
    moe_layers, dense_layers = layers - 1, 1  # first_k_dense_replace 1
    dense_mlp = 3 * hidden * 18432
    norms = (2 * layers + 1) * hidden
    embeddings = 2 * vocab * hidden  # untied input embedding and LM head
    total = (
        layers * attention
        + dense_layers * dense_mlp
        + moe_layers * ((384 + 1) * expert + router)  # 384 routed + 1 shared
        + norms
        + embeddings
    )
    active = total - moe_layers * (384 - 8) * expert  # top-8 routed + the shared one
    spec = llm_catalog()["kimi-k2.5"]
    assert (spec.total_params(), spec.active_params()) == (total, active)
    assert _rel(total, spec.published_params_b) < 0.02  # 1026.4B against 1.04T
    assert _rel(active, spec.published_active_params_b) < 0.001  # 32.861B against 32.86B


def test_minimax_m25_parameters_by_hand():
    hidden, layers, vocab = 3072, 62, 200064
    attention = 2 * hidden * (48 * 128) + 2 * hidden * (8 * 128)  # q, o; k, v
    expert = 3 * hidden * 1536
    router = hidden * 256
    norms = (2 * layers + 1) * hidden
    embeddings = 2 * vocab * hidden
    total = layers * (attention + 256 * expert + router) + norms + embeddings
    active = layers * (attention + 8 * expert + router) + norms + embeddings
    spec = llm_catalog()["minimax-m2.5"]
    assert (spec.total_params(), spec.active_params()) == (total, active)
    assert _rel(total, spec.published_params_b) < 0.02  # 228.7B against 230B
    # MiniMax's active figure leaves out both embedding matrices: 9.80B against 10B
    assert _rel(active - embeddings, spec.published_active_params_b) < 0.02


def test_qwen35_parameters_by_hand():
    hidden, layers, vocab = 4096, 60, 248320
    linear_layers, full_layers = 45, 15  # layer_types: every 4th layer full attention
    q_out, kv_out = 32 * 256, 2 * 256
    gated_attention = hidden * 2 * q_out + 2 * hidden * kv_out + q_out * hidden  # q + gate
    key_width, value_width, value_heads = 16 * 128, 64 * 128, 64
    conv_dim = 2 * key_width + value_width
    delta_net = (
        hidden * conv_dim  # in_proj_qkv
        + hidden * value_width  # in_proj_z
        + 2 * hidden * value_heads  # in_proj_a, in_proj_b
        + conv_dim * 4  # depthwise conv, kernel 4
        + 2 * value_heads  # A_log, dt_bias
        + 128  # gated RMSNorm over one value head
        + value_width * hidden  # out_proj
    )
    expert = 3 * hidden * 1024  # routed and shared experts alike
    router = hidden * 512
    norms = (2 * layers + 1) * hidden
    embeddings = 2 * vocab * hidden
    mixers = full_layers * gated_attention + linear_layers * delta_net
    total = mixers + layers * ((512 + 1) * expert + router) + norms + embeddings
    active = mixers + layers * ((10 + 1) * expert + router) + norms + embeddings
    spec = llm_catalog()["qwen3.5-397b-a17b"]
    assert (spec.full_attention_layers, spec.linear_attention_layers) == (15, 45)
    assert (spec.total_params(), spec.active_params()) == (total, active)
    assert _rel(total, spec.published_params_b) < 0.02  # 396.3B against 397B
    # '17B' (the A17B of the name) is rounded to whole billions: 17.35B lies within it
    assert abs(active / 1e9 - spec.published_active_params_b) <= 0.5


def test_qwen35_linear_state_is_entered_as_a_1060_token_window():
    # per Gated DeltaNet layer and sequence: recurrent state 64 heads x 128 x 128 plus the
    # conv state (2 x 2048 + 8192) x (4 - 1); one full-attention token: 2 x 2 KV heads x 256
    state = 64 * 128 * 128 + (2 * 2048 + 8192) * (4 - 1)
    spec = llm_catalog()["qwen3.5-397b-a17b"]
    assert state // spec.kv_elements_per_token_per_layer() == spec.sliding_window_tokens == 1060
    assert spec.sliding_window_layers == spec.linear_attention_layers
    # the window-aware count at 8192 tokens: 15 full layers + 45 x 1060 / 8192
    assert spec.kv_layers_at_context(8192) == pytest.approx(15 + 45 * 1060 / 8192)


def test_a_model_without_linear_layers_counts_as_before():
    base = dict(
        name="toy", layers=4, hidden_size=64, intermediate_size=128, attention_heads=4,
        kv_heads=2, head_dim=16, vocab_size=100, max_context_tokens=1024,
        published_params_b=1.0, published_active_params_b=1.0,
    )  # fmt: skip
    plain = LlmSpec(**base)
    assert plain.linear_attention_params_per_layer() == 0
    assert plain.attention_params_total() == 4 * plain.attention_params_per_layer()
    gated = LlmSpec(**base, attention_output_gate=True)
    # the gate adds hidden x heads x head_dim to q in every layer
    assert gated.total_params() - plain.total_params() == 4 * 64 * (4 * 16)


def test_linear_attention_layers_need_their_shapes():
    with pytest.raises(ValueError, match="linear_key_heads"):
        LlmSpec(
            name="toy", layers=4, hidden_size=64, intermediate_size=128, attention_heads=4,
            kv_heads=2, head_dim=16, vocab_size=100, max_context_tokens=1024,
            linear_attention_layers=3, published_params_b=1.0, published_active_params_b=1.0,
        )  # fmt: skip


def test_hybrid_weights_per_gpu_split_the_linear_layers_by_tp():
    spec = llm_catalog()["qwen3.5-397b-a17b"]
    vocab_matrices = 2 * spec.vocab_size * spec.hidden_size  # kept at 2 bytes, like norms
    linear = spec.total_params() - vocab_matrices - spec.norm_params()  # 1 byte at fp8
    high_bytes = 2 * spec.norm_params()
    at_1 = weight_bytes_per_gpu(spec, Precision.FP8, tp=1)
    assert at_1 == pytest.approx(linear * 1 + 2 * vocab_matrices + high_bytes, rel=1e-12)
    # at TP 8 every weight splits 8 ways except the k/v projections of the 15 full-attention
    # layers: 2 KV heads over 8 GPUs, so each GPU keeps one whole head (half of them)
    kv = 15 * 2 * spec.hidden_size * (2 * 256)
    linear_per_gpu = (linear - kv) / 8 + kv / 2
    at_8 = weight_bytes_per_gpu(spec, Precision.FP8, tp=8)
    assert at_8 == pytest.approx(linear_per_gpu + 2 * vocab_matrices / 8 + high_bytes, rel=1e-9)


def test_gb300_fields_as_sourced():
    gb300 = gpu_catalog()["gb300"]
    # nvidia-smi 284208 MiB, in GiB
    assert gb300.hbm_gib == pytest.approx(284208 / 1024, abs=0.05)
    assert gb300.hbm_tb_s == 8.0
    # dense rates: the NVL72 rack's 180 / 360 / 1080 PFLOPS over 72 GPUs
    rack_pflops = {"bf16": 180, "fp8": 360, "fp4": 1080}
    for precision, pflops in rack_pflops.items():
        assert gb300.dense_tflops.for_precision(Precision(precision)) == pflops * 1000 / 72
    assert gb300.scaleup_gb_s == 1800 / 2  # NVLink 5, 1.8 TB/s both directions
    assert gb300.gpus_per_node == 72  # one NVL72 domain
    assert gb300.scaleout_gbit_s == 800  # ConnectX-8 XDR per GPU
    assert gb300.tdp_w == 1400
    assert gb300.price_per_gpu_hour == pytest.approx(4.54 * 1.25, abs=0.005)


def test_gb300_borrows_the_b200_fit_and_says_so():
    assert "gb300" not in calibration_table().get("generation_of", {})
    assert gpu_catalog()["gb300"].efficiency_like == "b200"
    assert efficiency_source("gb300").borrowed
