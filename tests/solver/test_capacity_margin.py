"""`policy.capacity_margin: auto` (issue 34): pools sized on the conservative side of the
model's measured error band. The planner and the verifier each read the band from the
instance; the plan's capacity per replica is the physics x 1 / (1 + p90)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.physics.efficiency import efficiency_for
from models.physics.error_bands import band_for
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.capacity import replica_capacity
from models.serving.pooling import planning_capacity
from models.serving.replica import ReplicaConfig
from solver.solve import solve
from solver.verify.fleet import verify
from tests.synthetic import FLAT_SLO, instance, with_policy, workload


def _fleet(demand: float):
    """8B chat at loose targets on H100s (own calibration rows) in east and GB200s
    (b200's borrowed factors) in west."""
    return instance(
        {"east": {"h100-sxm": (256, 2.4)}, "west": {"gb200": (256, 6.0)}},
        [workload("chat", {"east": demand, "west": demand / 2}, **FLAT_SLO)],
        models={"llama-3.1-8b": ["fp8"]},
    )


@pytest.mark.parametrize("demand", [20.0, 75.0])
def test_auto_never_lowers_cost_and_its_plan_verifies(demand: float) -> None:
    base = _fleet(demand)
    auto = with_policy(base, capacity_margin="auto")
    plain, margined = solve(base), solve(auto)
    assert margined.cost_per_month >= plain.cost_per_month
    assert verify(auto, margined).ok
    assert verify(base, margined).ok  # more capacity than the plain question needs


def test_the_plan_states_the_physics_times_the_derate() -> None:
    auto = with_policy(_fleet(75.0), capacity_margin="auto")
    plan = solve(auto)
    assert plan.replicas
    for pool in plan.replicas:
        if not pool.count:
            continue
        w = auto.workload(pool.workload)
        llm = auto.llm_specs[w.model]
        gpu = auto.gpu_specs[pool.gpu]
        config = ReplicaConfig(gpu, llm, pool.precision, pool.kv_precision, pool.tp, pool.pp)
        physics = replica_capacity(
            config,
            traffic_mix(w, False),
            latency_targets(w.slo),
            efficiency_for(gpu, pool.precision),
            pool.count,  # the pool's own size: a TTFT-limited replica gains from pooling
        )
        found = band_for(None, gpu, llm)
        # capacity x 1 / (1 + p90): the band's optimistic side (p90 > 0 on both GPUs)
        assert found.p90 > 0
        expected = planning_capacity(physics) / (1 + found.p90)
        assert pool.requests_per_s_per_replica == pytest.approx(expected, rel=1e-9)


def test_the_verifier_reads_the_margin_from_the_instance() -> None:
    # at 140 req/s the plain plan's H100 pool runs above 1 / (1 + p90) of its capacity
    # (at 75 the rounding to replicas leaves it under the derated capacity)
    base = _fleet(140.0)
    auto = with_policy(base, capacity_margin="auto")
    plain = solve(base)
    # the plan sized without the margin is short of capacity once the margin applies
    check = verify(auto, plain)
    assert not check.ok
    assert any(v.requirement.startswith("demand[") for v in check.violations)


def test_a_stated_band_other_than_the_calibrations_is_a_warning() -> None:
    base = _fleet(20.0)
    plan = solve(base)
    assert verify(base, plan).warnings == ()
    pool = plan.replicas[0]
    wrong = pool.capacity_band.model_copy(update={"p90": pool.capacity_band.p90 + 0.5})
    edited = plan.model_copy(
        update={"replicas": (pool.model_copy(update={"capacity_band": wrong}), *plan.replicas[1:])}
    )
    check = verify(base, edited)
    assert check.ok  # a description, not a requirement
    assert any("model error band" in w.message for w in check.warnings)


def test_an_hourly_plan_with_batch_soak_verifies_under_auto() -> None:
    """The batch soak's C_b is derated in the planner's soak options and recomputed with
    the same factor by the verifier (solver.verify.batch)."""
    from solver.verify.hours import verify_any
    from tests.solver.time.test_time_program import _instance

    base = _instance(batch_per_day=2_000_000)
    auto = with_policy(base, capacity_margin="auto")
    plain, margined = solve(base), solve(auto)
    assert any(hour.batch_soak for hour in margined.hours)
    assert margined.cost_per_month >= plain.cost_per_month
    assert verify_any(auto, margined).ok


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    demand=st.floats(min_value=1.0, max_value=200.0),
    gpus=st.sampled_from([("h100-sxm",), ("gb200",), ("h100-sxm", "mi300x"), ("b200", "h200")]),
    survive=st.sampled_from(["none", "region"]),
)
def test_auto_never_costs_less_than_none_and_verifies(demand, gpus, survive) -> None:
    supply = {g: (512, 2.0 + i) for i, g in enumerate(gpus)}
    base = instance(
        {"east": supply, "west": supply},
        [workload("chat", {"east": demand, "west": demand / 3})],
        links=[("east", "west", 40.0)],
        survive=survive,
    )
    auto = with_policy(base, capacity_margin="auto")
    plain, margined = solve(base), solve(auto)
    assert margined.cost_per_month >= plain.cost_per_month - 1e-6
    assert verify(auto, margined).ok
