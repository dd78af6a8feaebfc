"""Every builder of a plan pool's replica configuration reads the same layout.

The simulator (solver.simulate.replay), the verifier's pools and batch checks
(solver.verify.pools, solver.verify.batch), the report's charts and the capacity units
(models.schema.serving_inputs.pool_replica) and, for the layouts they can name, perf's
flags (cli.perf_request), estimate's TP sweep (models.calculators.estimate) and a shared
group's member (models.colocation.shared_layout) each turn one plan pool into the
`ReplicaConfig` the physics times. Each kind of pool below states its configuration by hand;
every builder must give it field by field, the KV precision by the one rule:
the pool's own, else its model entry's `kv_precision`, else the weights' (bf16 keeps bf16,
fp8 and fp4 take fp8; models.physics.memory.default_kv_precision).
"""

import dataclasses

import pytest

from cli.perf_request import PerfRequest
from models.calculators.estimate import NoServingConfig, model_throughput
from models.colocation.shared_layout import SharedLayout
from models.io.loading import validate_instance
from models.physics.precision import Precision
from models.schema.serving_inputs import pool_replica
from models.serving.replica import ReplicaConfig, Role
from solver.candidates.layouts import configurations
from solver.plan.records import ReplicaPool
from solver.simulate.replay import _config as replay_config
from solver.verify.batch import batch_replica
from solver.verify.pools import pool_physics
from tests import synthetic

BF16, FP8 = Precision.BF16, Precision.FP8
EAGLE = {"name": "eagle", "draft_cost_ratio": 0.05, "tokens": 3, "acceptance_rate": 0.7}


@pytest.fixture(scope="module")
def instance():
    """Llama 3.1 8B (bf16 or fp8), Llama 3.1 70B whose entry pins an fp8 KV cache under
    bf16 weights, and Qwen3-235B-A22B (128 routed experts) on H100 and H200, with an
    EAGLE option."""
    data = synthetic.instance_data(
        {"us": {"h100-sxm": (64, 2.40), "h200": (64, 3.10)}},
        [
            synthetic.workload("chat8", {"us": 1.0}),
            synthetic.workload("chat70", {"us": 1.0}, model="llama-3.1-70b"),
            synthetic.workload("moe", {"us": 1.0}, model="qwen3-235b-a22b"),
        ],
        models={"llama-3.1-8b": ["bf16", "fp8"], "llama-3.1-70b": ["bf16"],
                "qwen3-235b-a22b": ["fp8"]},
        tensor_parallel=[1, 2, 4],
        policy={"speculative": [EAGLE], "expert_parallel": [1, 8],
                "attention_data_parallel": [1, 8], "redundant_experts": [0, 8]},
    )  # fmt: skip
    data["models"][1]["kv_precision"] = "fp8"
    return validate_instance(data, data["name"])


def _pool(workload: str, gpu: str, precision: Precision, kv: Precision | None, **layout):
    return ReplicaPool(
        workload=workload, region="us", gpu=gpu, precision=precision, kv_precision=kv,
        count=1, **layout,
    )  # fmt: skip


# (pool, the model it serves, its configuration as the pool states it, worked by hand)
CASES = {
    "dense bf16, kv defaulted (bf16 keeps bf16)": (
        _pool("chat8", "h100-sxm", BF16, None, tp=1, pp=1),
        "llama-3.1-8b",
        dict(gpu="h100-sxm", weight_precision=BF16, kv_precision=BF16, tp=1, pp=1),
    ),
    "dense bf16, kv fp8 stated by the pool": (
        _pool("chat8", "h100-sxm", BF16, FP8, tp=2, pp=1),
        "llama-3.1-8b",
        dict(gpu="h100-sxm", weight_precision=BF16, kv_precision=FP8, tp=2, pp=1),
    ),
    "dense fp8, kv defaulted (fp8 takes fp8)": (
        _pool("chat8", "h100-sxm", FP8, None, tp=1, pp=1),
        "llama-3.1-8b",
        dict(gpu="h100-sxm", weight_precision=FP8, kv_precision=FP8, tp=1, pp=1),
    ),
    "dense bf16, kv fp8 pinned by the model entry": (
        _pool("chat70", "h100-sxm", BF16, None, tp=4, pp=1),
        "llama-3.1-70b",
        dict(gpu="h100-sxm", weight_precision=BF16, kv_precision=FP8, tp=4, pp=1),
    ),
    "moe DEP8 with 8 redundant experts": (  # (128 + 8) / 8 = 17 experts per rank
        _pool("moe", "h200", FP8, FP8, tp=1, pp=1, dp=8, ep=8, redundant_experts=8),
        "qwen3-235b-a22b",
        dict(gpu="h200", weight_precision=FP8, kv_precision=FP8, tp=1, pp=1, dp=8, ep=8)
        | dict(redundant_experts=8),
    ),
    "dense fp8 decoding with eagle": (
        _pool("chat8", "h100-sxm", FP8, FP8, tp=1, pp=1, speculative="eagle"),
        "llama-3.1-8b",
        dict(gpu="h100-sxm", weight_precision=FP8, kv_precision=FP8, tp=1, pp=1)
        | dict(speculation="eagle"),
    ),
}


def _expected(instance, model: str, fields: dict) -> ReplicaConfig:
    spec = fields.get("speculation")
    return ReplicaConfig(
        **{
            **fields,
            "gpu": instance.gpu_specs[fields["gpu"]],
            "llm": instance.llm_specs[model],
            "role": Role.UNIFIED,
            "speculation": None if spec is None else instance.speculations[spec],
        }
    )


def _replay(instance, pool, model):
    return replay_config(instance, pool)[0]


def _verifier_pools(instance, pool, model):
    (recomputed,) = pool_physics(instance, (pool,), {})
    return recomputed.config


def _verifier_batch(instance, pool, model):
    return batch_replica(instance, pool.workload, pool).config  # the pool's own workload


def _report_and_units(instance, pool, model):
    return pool_replica(instance, pool)


PLAN_BUILDERS = {
    "simulate": _replay,
    "verify.pools": _verifier_pools,
    "verify.batch": _verifier_batch,
    "report and capacity units": _report_and_units,
}


def _differing(built: ReplicaConfig, expected: ReplicaConfig) -> dict:
    return {
        f.name: (getattr(built, f.name), getattr(expected, f.name))
        for f in dataclasses.fields(ReplicaConfig)
        if getattr(built, f.name) != getattr(expected, f.name)
    }


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("builder", list(PLAN_BUILDERS))
def test_every_builder_reads_the_pools_configuration(instance, builder, case):
    pool, model, fields = CASES[case]
    built = PLAN_BUILDERS[builder](instance, pool, model)
    assert _differing(built, _expected(instance, model, fields)) == {}


FLAG_CASES = [c for c in CASES if "pinned" not in c and "eagle" not in c]
"""The layouts perf's flags name alike (perf has no model entry and names no option)."""


@pytest.mark.parametrize("case", FLAG_CASES)
def test_perfs_flags_read_the_same_configuration(instance, case):
    pool, model, fields = CASES[case]
    request = PerfRequest(
        gpu=pool.gpu, input_tokens=1000, output_tokens=200, precision=pool.precision,
        kv_precision=pool.kv_precision, tp=pool.tp, pp=pool.pp, ep=pool.ep, dp=pool.dp,
        redundant_experts=pool.redundant_experts, model=model,
    )  # fmt: skip
    assert _differing(request.replica_config(), _expected(instance, model, fields)) == {}


@pytest.mark.parametrize("case", [c for c in FLAG_CASES if "defaulted" in c])
def test_estimates_sweep_reads_the_same_configuration(instance, case):
    """estimate lays out TP x 1 unified replicas with the default KV rule."""
    pool, model, fields = CASES[case]
    gpu, llm = instance.gpu_specs[pool.gpu], instance.llm_specs[model]
    try:
        found = model_throughput(llm, gpu, 1000, 200, pool.precision, tp_choices=(pool.tp,))
        (capacity,) = found.candidates
    except NoServingConfig as error:  # it carries the candidates too
        (capacity,) = error.candidates
    assert _differing(capacity.config, _expected(instance, model, fields)) == {}


@pytest.mark.parametrize("case", [c for c in FLAG_CASES if "moe" not in c])
def test_a_shared_groups_member_reads_the_same_configuration(instance, case):
    """A group's layout carries its KV precision resolved; its members run TP x PP."""
    pool, model, fields = CASES[case]
    expected = _expected(instance, model, fields)
    layout = SharedLayout(
        instance.gpu_specs[pool.gpu], pool.precision, expected.kv_precision, pool.tp, pool.pp
    )
    assert _differing(layout.config(instance.llm_specs[model]), expected) == {}


@pytest.mark.parametrize("case", [c for c in CASES if "stated by the pool" not in c])
def test_the_planner_enumerates_the_same_configuration(instance, case):
    """The planner's candidates (solver.candidates.layouts) state the layouts a pool
    leaves to the KV rule: each pool's configuration is one of its workload's."""
    pool, model, fields = CASES[case]
    assert _expected(instance, model, fields) in configurations(
        instance, instance.workload(pool.workload)
    )
