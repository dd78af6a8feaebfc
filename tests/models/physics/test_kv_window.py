"""Windowed KV (Llama 4 chunked attention, GPT-OSS sliding window): the KV one sequence
holds and the KV a decode step reads, by hand, and the invariants (never above the full
cache; equal to it within the window)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.memory import (
    chunked_read_share,
    kv_bytes_per_sequence,
    kv_bytes_per_token,
    memory_budget,
    windowed_kv_share,
)
from models.physics.precision import Precision
from models.physics.step_time import step_model

WINDOWED = sorted(name for name, spec in llm_catalog().items() if spec.sliding_window_layers)


def test_maverick_sequence_at_16k_by_hand() -> None:
    # Llama 4 Maverick: 48 layers, 8 KV heads of 128; every 4th layer (12) global, the
    # other 36 chunked over 8192 tokens. BF16 KV: 2 (K and V) x 8 x 128 x 2 bytes = 4096
    # bytes per token per layer.
    maverick = llm_catalog()["llama-4-maverick"]
    per_token_layer = 2 * 8 * 128 * 2
    chunked = per_token_layer * (12 * 16384 + 36 * 8192)  # 4096 x 491,520
    assert chunked == 2_013_265_920
    assert kv_bytes_per_sequence(maverick, Precision.BF16, 16384) == chunked
    full = per_token_layer * 48 * 16384  # every layer over the whole context
    assert kv_bytes_per_token(maverick, Precision.BF16) * 16384 == full == 3_221_225_472
    # share 1 - 36/48 + 36/48 x 8192/16384 = 0.25 + 0.375 = 0.625
    assert windowed_kv_share(16384, 8192, 36 / 48) == 0.625 == chunked / full


def test_budget_at_context_holds_more_windowed_sequences() -> None:
    # The same HBM holds 1 / 0.625 = 1.6 x the 16k-token Maverick sequences.
    gpu, maverick = gpu_catalog()["b200"], llm_catalog()["llama-4-maverick"]
    efficiency = efficiency_for("b200", Precision.FP4)
    budget = memory_budget(gpu, maverick, Precision.FP4, Precision.FP8, 8, 1, efficiency)
    at_16k = budget.at_context(16384)
    assert at_16k.kv_bytes_per_token_per_gpu == budget.kv_bytes_per_token_per_gpu * 0.625
    assert at_16k.kv_capacity_tokens == pytest.approx(budget.kv_capacity_tokens / 0.625)
    assert budget.at_context(8192) is budget  # within the chunk: the full cache
    assert at_16k.at_context(16384) is at_16k  # applied once


def test_decode_kv_reads_follow_the_chunks() -> None:
    # A decode step of 64 Maverick sequences at a mean context of 16k: contexts spread
    # over [0, 32768] = 4 whole chunks, a chunked layer reads 4 x 8192^2 / 2 / 32768 =
    # 4096 tokens on average, so 1/4 + 3/4 x 4096 / 16384 = 0.4375 of the full KV (it
    # holds 0.625 of it); at 4k ([0, 8192], one chunk) all of it.
    gpu, maverick = gpu_catalog()["h200"], llm_catalog()["llama-4-maverick"]
    efficiency = efficiency_for("h200", Precision.FP8)
    steps = step_model(gpu, maverick, Precision.FP8, Precision.FP8, 8, 1, efficiency)
    per_token = steps.kv_bytes_per_token / steps.hbm_bytes_per_s
    assert steps.pass_parts(64, 64 * 16384).kv_read_s == pytest.approx(
        0.4375 * 64 * 16384 * per_token
    )
    assert steps.pass_parts(64, 64 * 4096).kv_read_s == pytest.approx(64 * 4096 * per_token)


@given(name=st.sampled_from(WINDOWED), context=st.floats(1, 2_000_000))
def test_windowed_kv_never_exceeds_full(name: str, context: float) -> None:
    spec = llm_catalog()[name]
    full = kv_bytes_per_token(spec, Precision.BF16) * context
    windowed = kv_bytes_per_sequence(spec, Precision.BF16, context)
    assert windowed <= full * (1 + 1e-12)
    if context <= spec.sliding_window_tokens:
        assert windowed == full
    assert windowed == pytest.approx(full * spec.kv_layers_at_context(context) / spec.layers)


@given(
    context=st.floats(1, 1e7),
    window=st.floats(0, 1e6),
    share=st.floats(0, 1),
)
def test_share_between_full_layers_and_one(context: float, window: float, share: float) -> None:
    value = windowed_kv_share(context, window, share)
    assert 1 - share - 1e-12 <= value <= 1.0


@pytest.mark.parametrize("name", WINDOWED)
def test_iterations_at_loads_price_the_window_like_one_iteration(name: str) -> None:
    # The capacity search's many-loads path applies the window exactly as iteration_s.
    spec = llm_catalog()[name]
    gpu = gpu_catalog()["h200"]
    efficiency = efficiency_for("h200", Precision.FP8)
    steps = step_model(gpu, spec, Precision.FP8, Precision.FP8, 8, 1, efficiency)
    loads = [0.0, 512.0, 4096.0]
    at_loads = steps.iterations_s(96, 20_000, loads, 12_000)
    one_by_one = [steps.iteration_s(96, 20_000, load, 12_000) for load in loads]
    assert at_loads == pytest.approx(one_by_one, rel=1e-12)


def test_chunked_reads_by_hand() -> None:
    # Mean span 12,288 with chunks of 8192: positions spread over [0, 24,576] = 3 whole
    # chunks, each attending 8192 / 2 on average: E = 3 x 8192^2 / 2 / 24,576 = 4096, so
    # with 3/4 of the layers chunked the share is 1/4 + 3/4 x 4096 / 12,288 = 0.5.
    assert chunked_read_share(12_288, 8192, 0.75) == pytest.approx(0.5)
    assert chunked_read_share(4096, 8192, 0.75) == 1.0  # [0, 8192] is one chunk


@given(span=st.floats(1, 1e7), chunk=st.floats(1, 1e6), share=st.floats(0, 1))
def test_a_chunk_reads_no_more_than_a_window(span: float, chunk: float, share: float) -> None:
    chunked = chunked_read_share(span, chunk, share)
    assert 1 - share - 1e-9 <= chunked <= windowed_kv_share(span, chunk, share) + 1e-12
