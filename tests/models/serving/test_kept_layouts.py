"""The memory budgets and step models kept by the identity of their configuration and
efficiency (`models.serving.replica_layout._kept`): what is read back is what is worked out
afresh, an equal copy or another efficiency never reads another's, and the oldest is
dropped first."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.serving import replica_layout
from models.serving.replica import ReplicaConfig, Role
from models.serving.replica_layout import (
    _memory_budget,
    _step_model,
    replica_memory_budget,
    replica_step_model,
)

FP8 = Precision.FP8
H200 = gpu_catalog()["h200"]
EFFICIENCY = efficiency_for(H200, FP8)


def _config(model: str, tp: int, pp: int = 1) -> ReplicaConfig:
    return ReplicaConfig(H200, llm_catalog()[model], FP8, FP8, tp, pp, Role.UNIFIED)


@settings(max_examples=15, deadline=None)
@given(
    model=st.sampled_from(["llama-3.1-8b", "llama-3.3-70b", "mixtral-8x7b"]),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2]),
)
def test_what_is_read_back_is_what_is_worked_out_afresh(model, tp, pp):
    config = _config(model, tp, pp)
    steps = replica_step_model(config, EFFICIENCY)
    budget = replica_memory_budget(config, EFFICIENCY)
    assert steps == _step_model(config, EFFICIENCY)
    assert budget == _memory_budget(config, EFFICIENCY)
    assert replica_step_model(config, EFFICIENCY) is steps  # kept: asked again, not redone
    assert replica_memory_budget(config, EFFICIENCY) is budget


def test_another_efficiency_or_an_equal_copy_never_reads_anothers():
    config = _config("llama-3.3-70b", 4)
    slower = EFFICIENCY.model_copy(update={"hbm_fraction": EFFICIENCY.hbm_fraction / 2})
    steps = replica_step_model(config, EFFICIENCY)
    slow_steps = replica_step_model(config, slower)
    # half the HBM bandwidth: the weight read of a decode step takes twice as long
    assert slow_steps.hbm_bytes_per_s == steps.hbm_bytes_per_s / 2
    assert slow_steps == _step_model(config, slower)
    copy = replace(config)  # equal, another object: worked out for it
    assert replica_step_model(copy, EFFICIENCY) == steps
    assert replica_step_model(copy, EFFICIENCY) is not steps
    other = replace(config, tp=8)
    assert replica_step_model(other, EFFICIENCY) == _step_model(other, EFFICIENCY) != steps


def test_the_oldest_is_dropped_first(monkeypatch):
    monkeypatch.setattr(replica_layout, "LAYOUTS_KEPT", 2)
    replica_layout._LAYOUTS.clear()
    first, second, third = (_config("llama-3.1-8b", tp) for tp in (1, 2, 4))
    kept = replica_step_model(first, EFFICIENCY)
    replica_step_model(second, EFFICIENCY)
    replica_step_model(third, EFFICIENCY)  # two kept already: the first goes
    assert [entry[0] for entry in replica_layout._LAYOUTS.values()] == [second, third]
    assert replica_step_model(first, EFFICIENCY) is not kept  # worked out again
