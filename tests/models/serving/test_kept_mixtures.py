"""The iteration mixtures kept across every decode side (`kept_mixture`, `keep_mixture`):
the least recently used is dropped first, a side's mixture never answers for another's,
what is read back is what is computed afresh, and threads that share the table do not
break it."""

import threading

from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.physics.speculative import Speculation, SpeculativeSteps
from models.physics.step_time import step_model
from models.serving import iteration_mixture
from models.serving.batch_model import BatchModel
from models.serving.iteration_mixture import (
    IterationMixture,
    keep_mixture,
    kept_mixture,
    mixture_side,
)
from models.serving.replica import MixTokens, Role, TrafficMix

FP8 = Precision.FP8
H200 = gpu_catalog()["h200"]
CHAT = MixTokens.of(TrafficMix(800, 2400, 0.6, 200, 600, 0.6))


def _model(name: str, tp: int) -> BatchModel:
    steps = step_model(H200, llm_catalog()[name], FP8, FP8, tp, 1, efficiency_for(H200, FP8))
    return BatchModel(steps, CHAT, Role.UNIFIED, 0.0, 0.0)


def test_the_least_recently_used_mixture_is_dropped_first(monkeypatch):
    monkeypatch.setattr(iteration_mixture, "MIXTURES_KEPT", 3)
    iteration_mixture._MIXTURES.clear()
    model = _model("llama-3.1-8b", 1)
    for batch in (1.0, 2.0, 3.0):
        model.mixture(batch)
    model.mixture(1.0)  # read again: now the most recently used
    model.mixture(4.0)  # three kept already: 2.0, the least recently used, goes
    assert list(iteration_mixture._MIXTURES) == [
        (model._side, 3.0),
        (model._side, 1.0),
        (model._side, 4.0),
    ]


@settings(max_examples=10, deadline=None)
@given(shares=st.lists(st.sampled_from([0.05, 0.2, 0.5, 0.8]), min_size=1, max_size=8))
def test_what_is_read_back_is_what_is_computed_afresh_side_by_side(shares):
    """Two sides asked at the same batches in turn, with repeats: each reads its own."""
    small, large = _model("llama-3.1-8b", 1), _model("llama-3.3-70b", 4)
    assert small._side != large._side
    read = [(m.mixture(m.lane_batch_limit() * s), m, s) for s in shares for m in (small, large)]
    iteration_mixture._MIXTURES.clear()
    for mixture, model, share in read:
        assert mixture == model.mixture(model.lane_batch_limit() * share)


def test_a_speculation_cycle_gets_a_side_of_its_own():
    steps = _model("llama-3.1-8b", 1).steps
    cycle = SpeculativeSteps(steps, Speculation("eagle", 3, 0.7, draft_cost_ratio=0.1))
    assert mixture_side(steps, CHAT, True) == mixture_side(steps, CHAT, True)
    assert mixture_side(cycle, CHAT, True) != mixture_side(cycle, CHAT, True)


def test_threads_sharing_the_table_keep_it_whole(monkeypatch):
    monkeypatch.setattr(iteration_mixture, "MIXTURES_KEPT", 8)
    iteration_mixture._MIXTURES.clear()
    errors: list[BaseException] = []

    def work(side: int) -> None:
        try:
            for i in range(2000):
                batch = float(i % 13)
                mixture = IterationMixture(batch + side, 0.0, 0.0, 0.0)
                found = kept_mixture(side, batch)
                assert found is None or found == mixture  # never another side's
                keep_mixture(side, batch, mixture)
        except BaseException as error:  # handed to the test
            errors.append(error)

    threads = [threading.Thread(target=work, args=(side,)) for side in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(iteration_mixture._MIXTURES) <= 8
