"""The replica layout of a plan pool (models.schema.serving_inputs.pool_replica, which the
report's charts and the plan's capacity units read) is the pool's as the plan states it,
redundant experts included: a pool with EPLB copies holds their weights, so its memory
budget and capacity differ from the same layout without them, and the report, the plan's
capacity units and explain's routing must read the layout the planner and the verifier
read."""

import pytest

from models.physics.memory import default_kv_precision
from models.physics.precision import Precision
from models.schema.serving_inputs import pool_replica
from solver.settings import SolveSettings
from solver.solve import solve
from tests import synthetic


@pytest.fixture(scope="module")
def pool_and_instance():
    instance = synthetic.instance(
        {"us": {"h100-sxm": (64, 2.40)}}, [synthetic.workload("chat", {"us": 20.0})]
    )
    (pool,) = solve(instance, SolveSettings.of(instance, threads=1)).replicas
    return instance, pool


@pytest.mark.parametrize("redundant", [0, 32])
def test_the_layout_carries_the_pools_redundant_experts(pool_and_instance, redundant):
    instance, pool = pool_and_instance
    pool = pool.model_copy(update={"redundant_experts": redundant})
    assert pool_replica(instance, pool).redundant_experts == redundant


@pytest.mark.parametrize("precision", list(Precision))
def test_a_pool_without_its_kv_precision_keeps_the_default_rule(pool_and_instance, precision):
    """bf16 weights keep a bf16 cache, fp8 and fp4 weights an fp8 one."""
    instance, pool = pool_and_instance
    pool = pool.model_copy(update={"precision": precision, "kv_precision": None})
    expected = Precision.BF16 if precision is Precision.BF16 else Precision.FP8
    assert pool_replica(instance, pool).kv_precision == expected == default_kv_precision(precision)
