"""Prompts of one length (`BatchModel._fixed_mixture`): k of them make an iteration of
t(min(k P, L)), max(1, k P / L) times. Every count past the lane L times the same full
lane, so the step model is asked each load once; the mixture is, to the bit, the one
that prices each count on its own. Properties on random layouts, lengths and batches."""

from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.step_time import step_model
from models.serving.batch_model import BatchModel
from models.serving.iteration_mixture import IterationMixture, poisson_points
from models.serving.replica import MixTokens, Role, TrafficMix

FP8 = Precision.FP8
H200 = gpu_catalog()["h200"]


class _AskedLoads:
    """A step model that records the prompt loads each `iterations_s` call asks for."""

    def __init__(self, steps):
        self.steps = steps
        self.asked: list[list[float]] = []

    def iterations_s(self, batch, context_tokens, prefill_loads, prefill_context_tokens):
        self.asked.append(list(prefill_loads))
        return self.steps.iterations_s(batch, context_tokens, prefill_loads, prefill_context_tokens)


@settings(max_examples=25, deadline=None)
@given(
    layout=st.sampled_from(
        [("llama-3.1-8b", 1, 1, 1), ("qwen3-30b-a3b", 1, 2, 2), ("qwen3-30b-a3b", 1, 8, 8)]
    ),
    prompt=st.floats(min_value=64, max_value=8192),
    output=st.floats(min_value=16, max_value=2048),
    batch_share=st.floats(min_value=0.01, max_value=0.99),
)
def test_each_count_is_priced_as_alone_and_each_load_asked_once(
    layout, prompt, output, batch_share
):
    name, tp, ep, dp = layout
    steps = step_model(
        H200, llm_catalog()[name], FP8, FP8, tp, 1, efficiency_for(H200, FP8), ep=ep, dp=dp
    )
    mix = MixTokens.of(TrafficMix.fixed(prompt, output))
    model = BatchModel(steps, mix, Role.UNIFIED, 0.0, 0.0)
    batch = model.lane_batch_limit() * batch_share
    points = poisson_points(model.prompts_per_iteration(batch))
    lane = model.lane_tokens(batch)
    asked = _AskedLoads(model.steps)
    timed, model.steps = model.steps, asked
    mixture = model._fixed_mixture(batch, points, lane)

    loads = asked.asked[0]
    assert len(asked.asked) == 1 and len(set(loads)) == len(loads)
    iterations = time_s = square_s = mixed = 0.0
    for k, weight in points:  # each count on its own: t_0, or t(min(kP, L)) x max(1, kP / L)
        tokens = k * mix.new_prompt
        one_s = timed.iteration_s(batch, mix.context, min(tokens, lane), model.prefill_context)
        count = max(1.0, tokens / lane) if tokens > 0 else 1.0
        iterations += weight * count
        time_s += weight * count * one_s
        square_s += weight * count * one_s**2
        mixed += weight * count if tokens > 0 else 0.0
    decode_s = timed.iteration_s(batch, mix.context, 0.0, model.prefill_context)
    assert mixture == IterationMixture(
        time_s / iterations, square_s / iterations, mixed / iterations, decode_s
    )
