"""The schema fields the current MoE models need: checkpoint-fixed expert precision
(GPT-OSS's MXFP4), interleaved MoE layers, windowed attention."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.memory import (
    HIGH_PRECISION_BYTES_PER_ELEMENT,
    expert_bytes_per_element,
    linear_params,
    weight_bytes,
    weight_bytes_per_element,
    weight_bytes_per_gpu,
)
from models.physics.precision import Precision
from models.physics.step_time import step_model

NVFP4_BYTES = 0.5 + 1 / 16  # 4-bit element plus one FP8 scale per 16 elements


def test_gpt_oss_120b_weights_with_mxfp4_experts_by_hand():
    hidden, layers, experts, vocab = 2880, 36, 128, 201088
    expert_weights = layers * experts * 3 * hidden * 2880
    embeddings_and_norms = 2 * vocab * hidden + (2 * layers + 1) * hidden
    spec = llm_catalog()["gpt-oss-120b"]
    other_linear = spec.total_params() - expert_weights - embeddings_and_norms
    expected_bf16 = (
        other_linear * 2
        + expert_weights * NVFP4_BYTES
        + embeddings_and_norms * HIGH_PRECISION_BYTES_PER_ELEMENT
    )
    assert weight_bytes(spec, Precision.BF16) == pytest.approx(expected_bf16, rel=1e-12)
    # about 65 GB: the 120b fits one 80 GB GPU, as the model card says
    assert 60e9 < expected_bf16 < 70e9


def test_expert_precision_applies_only_where_it_is_smaller():
    spec = llm_catalog()["gpt-oss-20b"]
    assert expert_bytes_per_element(spec, Precision.BF16) == NVFP4_BYTES
    assert expert_bytes_per_element(spec, Precision.FP8) == NVFP4_BYTES
    assert expert_bytes_per_element(spec, Precision.FP4) == NVFP4_BYTES
    mixtral = llm_catalog()["mixtral-8x7b"]
    assert expert_bytes_per_element(mixtral, Precision.FP8) == 1.0


@pytest.mark.parametrize(
    "name",
    sorted(name for name, spec in llm_catalog().items() if spec.expert_weight_precision is None),
)
@pytest.mark.parametrize("precision", list(Precision))
def test_models_without_an_expert_precision_keep_the_old_weight_formula(name, precision):
    # linear_params x bytes(precision) + (embedding + LM head + norms) x 2, exactly as
    # before the expert-precision field existed
    spec = llm_catalog()[name]
    high = spec.total_params() - linear_params(spec)
    expected = linear_params(spec) * weight_bytes_per_element(precision) + high * 2.0
    assert weight_bytes(spec, precision) == expected


def test_per_gpu_weights_split_the_mxfp4_experts_by_tp():
    hidden, layers, vocab, tp = 2880, 36, 201088, 4
    spec = llm_catalog()["gpt-oss-120b"]
    expert_weights = layers * 128 * 3 * hidden * 2880
    norms = (2 * layers + 1) * hidden
    other_linear = linear_params(spec) - expert_weights
    # 8 KV heads split over TP 4, so every linear layer and both vocab matrices split by 4;
    # the norms are counted whole
    expected = (
        (other_linear * 2 + expert_weights * NVFP4_BYTES) / tp
        + 2 * vocab * hidden / tp * HIGH_PRECISION_BYTES_PER_ELEMENT
        + norms * HIGH_PRECISION_BYTES_PER_ELEMENT
    )
    assert weight_bytes_per_gpu(spec, Precision.BF16, tp=tp) == pytest.approx(expected, rel=1e-12)


def test_decode_reads_experts_at_their_stored_precision():
    spec, gpu = llm_catalog()["gpt-oss-120b"], gpu_catalog()["h100-sxm"]
    steps = step_model(
        gpu, spec, Precision.BF16, Precision.BF16, 2, 1, efficiency_for(gpu, Precision.BF16)
    )
    # one expert of one MoE layer per TP rank: 36 layers x 3 x 2880 x 2880 / 2 x NVFP4 bytes
    assert steps.expert_weight_bytes == pytest.approx(36 * 3 * 2880 * 2880 / 2 * NVFP4_BYTES)


def test_windowed_layers_hold_less_kv_at_long_context():
    spec = llm_catalog()["gpt-oss-120b"]
    # 18 full layers + 18 windowed layers x 128 / 8192
    assert spec.kv_layers_at_context(8192) == 18 + 18 * 128 / 8192
    assert spec.kv_layers_at_context(100) == 36
    assert llm_catalog()["llama-3.1-70b"].kv_layers_at_context(100_000) == 80


@given(
    short=st.floats(min_value=1, max_value=1e6),
    longer=st.floats(min_value=1, max_value=1e6),
    name=st.sampled_from(sorted(llm_catalog())),
)
def test_kv_layers_fall_with_context_between_full_and_all_layers(short, longer, name):
    spec = llm_catalog()[name]
    short, longer = sorted((short, longer))
    full_layers = spec.layers - spec.sliding_window_layers
    assert full_layers <= spec.kv_layers_at_context(longer) <= spec.kv_layers_at_context(short)
    assert spec.kv_layers_at_context(short) <= spec.layers


def test_schema_refuses_a_window_without_its_layers():
    fields = llm_catalog()["gpt-oss-20b"].model_dump() | {"sliding_window_layers": 0}
    with pytest.raises(ValueError, match="go together"):
        type(llm_catalog()["gpt-oss-20b"]).model_validate(fields)
