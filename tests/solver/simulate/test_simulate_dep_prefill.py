"""The simulator prices a DEP replica's prefill as the planner does: the busiest attention
group prefills whole prompts (`models.serving.batch_model.group_loaded_steps`)."""

import pytest

from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.serving.batch_model import BatchModel
from models.serving.prefix_kv import pool_mix_tokens
from models.serving.replica import ReplicaConfig, Role, ServingContext, TrafficMix
from models.serving.replica_layout import replica_step_model
from solver.simulate.disaggregated import replica_engine

FP8 = Precision.FP8


def _dep8() -> ServingContext:
    gpu, llm = gpu_catalog()["h200"], llm_catalog()["qwen3-235b-a22b"]
    config = ReplicaConfig(gpu, llm, FP8, FP8, 1, 1, Role.UNIFIED, ep=8, dp=8)
    return ServingContext(config, TrafficMix.fixed(4000, 500), efficiency_for(gpu, FP8))


def test_simulator_steps_are_the_planners_busiest_group_steps():
    serving = _dep8()
    engine = replica_engine(serving)
    tokens = pool_mix_tokens(serving)
    planner = BatchModel(
        replica_step_model(serving.config, serving.efficiency), tokens, Role.UNIFIED, 0.0, 0.0
    ).steps
    # Whole prompts of 4,000 new tokens ride in the simulator's iterations too.
    assert engine.steps.prompt_tokens == planner.prompt_tokens == pytest.approx(4000.0)
    for batch, prompt in ((64, 0.0), (64, 4000.0), (256, 8000.0), (512, 16000.0)):
        assert engine.steps.iteration_s(batch, 1500, prompt, 2000) == pytest.approx(
            planner.iteration_s(batch, 1500, prompt, 2000)
        )
    # One prompt of 4,000 tokens on 8 groups sits on one group: the busiest group's
    # share is 1 (not 1/8), so the iteration is slower than the even spread's.
    even = replica_step_model(serving.config, serving.efficiency)
    assert engine.steps.prefill_group_share(4000.0) == 1.0
    assert even.prefill_group_share(4000.0) == 1 / 8
    assert engine.steps.iteration_s(64, 1500, 4000, 2000) > even.iteration_s(64, 1500, 4000, 2000)


def test_perf_at_a_load_prices_the_same_busiest_group():
    """`perf --concurrency` (the closed-loop replay and the latency at a load) times its
    iterations on the same busiest-group steps as the planner and the simulator."""
    from models.serving.latency import _Replica

    serving = _dep8()
    replica = _Replica(serving, 1)
    engine = replica_engine(serving)
    assert replica.steps.prompt_tokens == engine.steps.prompt_tokens == pytest.approx(4000.0)
    assert replica.steps.iteration_s(64, 1500, 4000, 2000) == pytest.approx(
        engine.steps.iteration_s(64, 1500, 4000, 2000)
    )
