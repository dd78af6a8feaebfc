"""explain without a pool that dominated others: the re-solve may use the candidates
pruning dropped because that pool dominated them (CandidateTable.without,
solver.analysis.without.program_without, PeriodsStep's programs without a pool).

Hand case: one region, Llama 3.1 8B on H100 at $2.0/GPU-hour, fp8 and bf16 weights, TP 1,
rented by the GPU, at targets where the KV cache stops the batch (FLAT_SLO: n replicas
carry n q). fp8 weights leave more memory to the KV cache, so q_fp8 >= q_bf16 and the
fp8 replica dominates the bf16 one, which pruning drops. The plan runs ceil(D / q_fp8)
fp8 replicas; without them it must run ceil(D / q_bf16) bf16 replicas (before: "no plan
without it", the bf16 candidate being gone from the table), so

    extra $/month = 2.0 x 730 x (ceil(D / q_bf16) - ceil(D / q_fp8)),

the difference of two fresh solves: bf16 alone, and fp8 with bf16.
"""

import math

import pytest

from models.io.loading import validate_instance
from models.physics.efficiency import efficiency_for
from models.physics.memory import kv_precision_for
from models.physics.precision import Precision
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.capacity import replica_capacity
from models.serving.replica import ReplicaConfig
from solver.analysis import explain as explain_module
from solver.analysis.explain import explain
from solver.candidates.table import build_candidates
from solver.solve import SolveSettings, solve
from tests.synthetic import FLAT_SLO, instance_data, workload

H100, PRICE, HOURS = "h100-sxm", 2.0, 730
DEMAND = 100.0


def _instance(precisions: list[str], hourly: bool = False):
    chat = workload("chat", {"east": DEMAND}, **FLAT_SLO)
    if hourly:  # a flat day: the hourly plan's explain
        chat["demand"]["east"]["hourly_profile"] = [1.0] * 24
    data = instance_data(
        {"east": {H100: (64, PRICE)}},
        [chat],
        models={"llama-3.1-8b": precisions},
        policy={"replica_start_s": 0.0, "scale_detection_s": 0.0} if hourly else None,
    )
    return validate_instance(data, "pruned.yaml")


def _q(inst, precision: Precision) -> float:
    """One lone unified TP-1 replica's capacity at the SLO, from the physics."""
    (w,) = inst.workloads
    kv = kv_precision_for(precision)  # the KV cache at the weights' precision, bf16 here
    config = ReplicaConfig(inst.gpu_specs[H100], inst.llm_specs[w.model], precision, kv, 1, 1)
    return replica_capacity(
        config,
        traffic_mix(w, False),
        latency_targets(w.slo),
        efficiency_for(H100, precision),
        1,
    ).requests_per_s


def _hand_extra(inst) -> float:
    q_fp8, q_bf16 = _q(inst, Precision.FP8), _q(inst, Precision.BF16)
    assert q_fp8 >= q_bf16  # fp8 dominates bf16: pruning drops bf16
    fp8, bf16 = math.ceil(DEMAND / q_fp8), math.ceil(DEMAND / q_bf16)
    assert bf16 > fp8  # so that doing without fp8 costs something
    return PRICE * HOURS * (bf16 - fp8)


def _cost(precisions: list[str], hourly: bool = False) -> float:
    inst = _instance(precisions, hourly)
    return solve(inst, SolveSettings.of(inst, mip_gap=0.0)).cost_per_month


def test_the_table_without_the_fp8_candidate_has_the_bf16_one_back():
    table = build_candidates(_instance(["fp8", "bf16"]))
    (fp8,) = table.of("chat")
    assert fp8.precision is Precision.FP8  # bf16 pruned: fp8 dominates it
    restored = table.without("chat", fp8.key)
    assert restored is not None
    assert {c.precision for c in restored.of("chat")} == {Precision.FP8, Precision.BF16}
    (bf16,) = [c for c in restored.of("chat") if c.precision is Precision.BF16]
    assert bf16.curve.points  # tabulated as a kept candidate is
    assert table.without("chat", bf16.key) is None  # bf16 dominated nothing


@pytest.fixture(autouse=True)
def _no_replays(monkeypatch):
    """The engine effects' replays (seconds) are not what these tests are about."""
    monkeypatch.setattr(explain_module, "_engine_effects", lambda *_: {})


def test_explain_without_the_dominating_pool_costs_what_two_solves_differ_by():
    inst = _instance(["fp8", "bf16"])
    explained = explain(inst, SolveSettings.of(inst, mip_gap=0.0))
    (alternative,) = explained.alternatives
    assert alternative.configuration == "h100-sxm fp8 tp1xpp1 unified"
    two_solves = _cost(["bf16"]) - _cost(["fp8", "bf16"])
    assert two_solves == pytest.approx(_hand_extra(inst), abs=0.01)
    assert alternative.extra_cost_per_month == pytest.approx(two_solves, abs=0.01)
    bf16 = math.ceil(DEMAND / _q(inst, Precision.BF16))
    assert alternative.replaced_by == (f"{bf16} x h100-sxm bf16 tp1xpp1 unified",)


def test_hourly_explain_without_the_dominating_pool_costs_what_two_solves_differ_by():
    inst = _instance(["fp8", "bf16"], hourly=True)
    explained = explain(inst, SolveSettings.of(inst, mip_gap=0.0))
    assert explained.plan.hours
    (alternative,) = explained.alternatives
    two_solves = _cost(["bf16"], hourly=True) - _cost(["fp8", "bf16"], hourly=True)
    assert two_solves == pytest.approx(_hand_extra(inst), abs=0.01)
    assert alternative.extra_cost_per_month == pytest.approx(two_solves, abs=0.01)
