"""An MoE pass works its load imbalance out once (`StepModel._micro_batch_terms` hands it
to each `ExpertLayout` method that needs it): the same numbers, to the bit, as each
method working it out alone, on random layouts and token counts. Properties."""

from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model

FP8 = Precision.FP8
H200 = gpu_catalog()["h200"]
EFF = efficiency_for(H200, FP8)
LAYOUTS = st.sampled_from(
    [
        (name, tp, ep, dp)
        for name in ("qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v3")
        for tp, ep, dp in ((1, 1, 1), (2, 2, 1), (1, 2, 2), (1, 8, 8), (2, 8, 4), (8, 8, 1))
    ]
)


def _steps(name: str, tp: int, ep: int, dp: int):
    return step_model(H200, llm_catalog()[name], FP8, FP8, tp, 1, EFF, ep=ep, dp=dp)


@settings(max_examples=60, deadline=None)
@given(
    layout=LAYOUTS,
    tokens=st.floats(min_value=0.0, max_value=65536),
    prompt_share=st.floats(min_value=0.0, max_value=1.0),
)
def test_each_method_given_the_imbalance_returns_what_it_works_out_alone(
    layout, tokens, prompt_share
):
    experts = _steps(*layout).experts_layout
    prefill_tokens = tokens * prompt_share
    f = experts.imbalance(tokens)
    assert experts.rows(tokens, f) == experts.rows(tokens)
    assert experts.touched_per_rank(tokens, f) == experts.touched_per_rank(tokens)
    assert experts.tokens_per_expert(tokens, f) == experts.tokens_per_expert(tokens)
    assert experts.routed_cost(tokens, f) == experts.routed_cost(tokens)
    assert experts.alltoall_s(tokens, prefill_tokens, f) == experts.alltoall_s(
        tokens, prefill_tokens
    )


@settings(max_examples=60, deadline=None)
@given(
    layout=LAYOUTS,
    decode_tokens=st.floats(min_value=0.0, max_value=4096),
    prefill_tokens=st.floats(min_value=0.0, max_value=16384),
    context=st.floats(min_value=1.0, max_value=32768),
)
def test_a_pass_reads_and_moves_the_rows_each_method_times_at_its_tokens(
    layout, decode_tokens, prefill_tokens, context
):
    """With the pass whole (no two-batch overlap on these layouts), its expert read is
    (experts touched x one expert's bytes + rows x row bytes) / bandwidth and its
    kernels rows x kernel row bytes / bandwidth, all at T = decode + prompt tokens."""
    steps = _steps(*layout)
    assert not steps.two_batch_overlap
    experts = steps.experts_layout
    parts = steps.pass_parts(
        decode_tokens, decode_tokens * context, prefill_tokens, prefill_tokens * context / 2
    )
    tokens = decode_tokens + prefill_tokens
    read_bytes = (
        experts.touched_per_rank(tokens) * steps.expert_weight_bytes
        + experts.rows(tokens) * experts.row_bytes
    )
    assert parts.expert_read_s == read_bytes / steps.hbm_bytes_per_s
    kernel_bytes = experts.rows(tokens) * experts.kernel_row_bytes
    assert parts.expert_kernels_s == kernel_bytes / steps.hbm_bytes_per_s
