"""The independent verifier on fleets written by hand: each requirement it checks, with
the expected numbers worked out from the physics in the test."""

import math

import pytest

from models.physics.efficiency import efficiency_for
from models.physics.precision import Precision
from models.schema.instance import Instance
from models.schema.serving_inputs import latency_targets, traffic_mix
from models.serving.capacity import replica_capacity
from models.serving.replica import ReplicaConfig, Role
from solver.plan.records import ReplicaPool
from solver.plan.schema import Plan
from solver.verify.fleet import verify
from tests.synthetic import FLAT_SLO, instance, long_prompt_workload, workload

H100 = "h100-sxm"
PRICE = 2.0
HOURS = 730
DEMAND = 100.0


def capacity_rps(
    inst: Instance,
    gpu: str = H100,
    precision: Precision = Precision.FP8,
    tp: int = 1,
    role: Role = Role.UNIFIED,
) -> float:
    """One replica's capacity at the workload's SLO, from the physics."""
    w = inst.workloads[0]
    config = ReplicaConfig(
        inst.gpu_specs[gpu], inst.llm_specs[w.model], precision, precision, tp, 1, role
    )
    result = replica_capacity(
        config,
        traffic_mix(w, False),
        latency_targets(w.slo),
        efficiency_for(gpu, precision, inst.efficiency),
    )
    assert result.fits and result.meets_slo
    return result.requests_per_s


def pool(region: str, count: int, role: Role = Role.UNIFIED, **kw) -> ReplicaPool:
    fields = {"workload": "chat", "gpu": H100, "precision": "fp8", "tp": 1, "pp": 1}
    fields.update(kw)
    return ReplicaPool(region=region, count=count, role=role, **fields)


def one_region(max_gpus: int = 64, survive: str = "none", zones: int = 1, **kw) -> Instance:
    return instance(
        {"east": {H100: (max_gpus, PRICE)}},
        [workload("chat", {"east": DEMAND}, **FLAT_SLO)],
        survive=survive,
        zones=zones,
        **kw,
    )


def two_regions(survive: str = "region") -> Instance:
    return instance(
        {"east": {H100: (64, PRICE)}, "west": {H100: (64, PRICE)}},
        [workload("chat", {"east": DEMAND, "west": DEMAND}, max_failover_rtt_ms=80, **FLAT_SLO)],
        links=[("east", "west", 50)],
        survive=survive,
    )


def test_just_enough_replicas_pass_and_the_cost_is_recomputed():
    inst = one_region()
    q = capacity_rps(inst)
    needed = math.ceil(DEMAND / q)
    result = verify(inst, Plan(replicas=(pool("east", needed),)))
    assert result.ok, result.violations
    assert result.total_gpus == needed
    assert result.cost_per_month == pytest.approx(needed * 1 * PRICE * HOURS)


def test_one_replica_short_is_named_with_its_numbers():
    inst = one_region()
    q = capacity_rps(inst)
    short = math.ceil(DEMAND / q) - 1
    result = verify(inst, Plan(replicas=(pool("east", short),)))
    assert not result.ok
    (violation,) = result.violations
    assert violation.requirement == "demand[none,chat,east]"
    missing = DEMAND - short * q
    assert violation.message.startswith(f"{missing:.2f} requests/s cannot be served")
    assert f"users of east {DEMAND:.2f} requests/s may be served only in east (capacity " in (
        violation.message
    )


def test_supply_and_stated_figures_are_checked():
    inst = one_region(max_gpus=2)
    needed = math.ceil(DEMAND / capacity_rps(inst))
    plan = Plan(replicas=(pool("east", needed),), cost_per_month=1.0, total_gpus=needed + 1)
    names = {v.requirement for v in verify(inst, plan).violations}
    assert names == {"gpu_supply[east,h100-sxm]", "cost", "total_gpus"}


def test_existing_fleet_is_already_paid_for():
    inst = one_region(existing={"east": {H100: 2}})
    needed = math.ceil(DEMAND / capacity_rps(inst))
    result = verify(inst, Plan(replicas=(pool("east", needed),)))
    assert result.ok
    assert result.cost_per_month == pytest.approx((needed - 2) * PRICE * HOURS)


def test_unknown_names_and_unservable_layouts_are_violations_not_crashes():
    inst = one_region(models={"llama-3.1-8b": ["fp8", "bf16"]})
    plan = Plan(
        replicas=(
            pool("east", 1, gpu="b200"),
            pool("mars", 1),
            pool("east", 1, precision="fp4"),
        )
    )
    messages = [v.message for v in verify(inst, plan).violations]
    assert any("unknown GPU 'b200'" in m for m in messages)
    assert any("unknown region 'mars'" in m for m in messages)
    assert any("fp4 is not among" in m for m in messages)


def test_a_config_that_does_not_fit_cannot_serve():
    inst = instance(
        {"east": {H100: (64, PRICE)}},
        [workload("chat", {"east": 1.0}, model="llama-3.1-70b")],
        models={"llama-3.1-70b": ["bf16"]},
    )
    plan = Plan(replicas=(pool("east", 4, precision="bf16"),))
    (violation,) = [v for v in verify(inst, plan).violations if "cannot serve" in v.message]
    # named as the program names the pool's variable: replicas[workload,key,region]
    assert violation.requirement.startswith("replicas[chat,h100-sxm.bf16.tp1pp1.")


def test_region_loss_needs_each_region_to_carry_both():
    inst = two_regions()
    q = capacity_rps(inst)
    each = math.ceil(2 * DEMAND / q)  # own users plus the lost region's
    assert verify(inst, Plan(replicas=(pool("east", each), pool("west", each)))).ok
    result = verify(inst, Plan(replicas=(pool("east", each - 1), pool("west", each))))
    # When west is lost, both regions' users can only go to east, which is one short:
    # each origin's demand row is named (the program's rows), the message says the group.
    assert [v.requirement for v in result.violations] == [
        "demand[lose=west,chat,east]",
        "demand[lose=west,chat,west]",
    ]
    missing = 2 * DEMAND - (each - 1) * q
    for violation in result.violations:
        assert violation.message.startswith(f"{missing:.2f} requests/s cannot be served")
        assert f"may be served only in east (capacity {(each - 1) * q:.2f})" in violation.message


def test_failover_beyond_the_rtt_limit_does_not_count():
    inst = instance(
        {"east": {H100: (64, PRICE)}, "west": {H100: (64, PRICE)}},
        [workload("chat", {"east": DEMAND, "west": DEMAND}, max_failover_rtt_ms=40)],
        links=[("east", "west", 50)],
        survive="region",
    )
    q = capacity_rps(inst)
    plenty = math.ceil(4 * DEMAND / q)
    result = verify(inst, Plan(replicas=(pool("east", plenty), pool("west", plenty))))
    assert {v.requirement for v in result.violations} == {
        "demand[lose=east,chat,east]",
        "demand[lose=west,chat,west]",
    }
    assert all(v.message.endswith("may be served nowhere within reach") for v in result.violations)


def test_zone_loss_keeps_n_minus_ceil_n_over_zones():
    inst = one_region(survive="zone", zones=2)
    needed = math.ceil(DEMAND / capacity_rps(inst))
    # n - ceil(n / 2) >= needed  <=>  n >= 2 x needed
    assert verify(inst, Plan(replicas=(pool("east", 2 * needed),))).ok
    result = verify(inst, Plan(replicas=(pool("east", 2 * needed - 1),)))
    assert [v.requirement for v in result.violations] == ["demand[lose=east/zone,chat,east]"]


def test_replica_loss_needs_one_spare():
    inst = one_region(survive="replica")
    needed = math.ceil(DEMAND / capacity_rps(inst))
    assert verify(inst, Plan(replicas=(pool("east", needed + 1),))).ok
    plan = Plan(replicas=(pool("east", needed),))
    result = verify(inst, plan)
    # named as the program's row: replica_spare[workload,region,phase,lost candidate]
    key = plan.replicas[0].key
    assert key == "h100-sxm.fp8.tp1pp1.unified"
    assert [v.requirement for v in result.violations] == [f"replica_spare[chat,east,unified,{key}]"]


def test_disaggregated_pools_pair_by_precision():
    inst = one_region(disaggregation=True, models={"llama-3.1-8b": ["fp8", "bf16"]})
    q_prefill = capacity_rps(inst, tp=2, role=Role.PREFILL)
    q_decode = capacity_rps(inst, tp=2, role=Role.DECODE)
    prefills, decodes = math.ceil(DEMAND / q_prefill), math.ceil(DEMAND / q_decode)
    paired = (
        pool("east", prefills, role=Role.PREFILL, tp=2),
        pool("east", decodes, role=Role.DECODE, tp=2),
    )
    assert verify(inst, Plan(replicas=paired)).ok
    # The same decode pool in bf16 pairs with nothing: the fp8 prefill pool serves no one.
    q_decode_bf16 = capacity_rps(inst, tp=2, role=Role.DECODE, precision=Precision.BF16)
    mismatched = (
        paired[0],
        pool("east", math.ceil(DEMAND / q_decode_bf16), role=Role.DECODE, tp=2, precision="bf16"),
    )
    result = verify(inst, Plan(replicas=mismatched))
    assert [v.requirement for v in result.violations] == ["demand[none,chat,east]"]


def test_a_fleet_file_needs_only_its_replicas():
    plan = Plan.model_validate(
        {
            "replicas": [
                {
                    "workload": "chat",
                    "region": "east",
                    "gpu": H100,
                    "precision": "fp8",
                    "tp": 1,
                    "pp": 1,
                    "count": 3,
                }
            ]
        }
    )
    assert plan.cost_per_month is None and plan.replicas[0].role is Role.UNIFIED
    inst = one_region()
    assert verify(inst, plan).ok == (3 * capacity_rps(inst) >= DEMAND)


# --- pools are judged at their real size ------------------------------------------------

H200 = "h200"


def long_prompts(demand: float, survive: str = "none", zones: int = 1) -> Instance:
    """32K-token prompts on Llama 3.3 70B, p99 TTFT 2 s: the prefill takes ~1.2 s of
    the target on eight H200s, so a lone replica carries 0.03 requests/s and a pool of
    replicas behind one router far more per replica."""
    return instance(
        {"east": {H200: (256, 3.0)}},
        [long_prompt_workload("chat", demand)],
        models={"llama-3.3-70b": ["fp8"]},
        tensor_parallel=[8],
        survive=survive,
        zones=zones,
    )


def pooled_rps(inst: Instance, replicas: int) -> float:
    """Capacity per replica of a TP8 H200 replica in a pool of `replicas`, from the physics."""
    w = inst.workloads[0]
    config = ReplicaConfig(
        inst.gpu_specs[H200], inst.llm_specs[w.model], Precision.FP8, Precision.FP8, 8, 1
    )
    return replica_capacity(
        config,
        traffic_mix(w, False),
        latency_targets(w.slo),
        efficiency_for(H200, Precision.FP8, inst.efficiency),
        pool_replicas=replicas,
    ).requests_per_s


def tp8(region: str, count: int, **kw) -> ReplicaPool:
    return pool(region, count, gpu=H200, tp=8, **kw)


def test_a_pool_is_judged_by_the_queueing_of_its_real_size():
    inst = long_prompts(demand=1.0)
    alone, pair, four = (pooled_rps(inst, n) for n in (1, 2, 4))
    assert 4 * alone < 1.0 <= 4 * four  # four lone servers would not do; a pool of four does
    assert verify(inst, Plan(replicas=(tp8("east", 4),))).ok
    # Two plan entries of one configuration in one region are one pool of four.
    assert verify(inst, Plan(replicas=(tp8("east", 2), tp8("east", 2)))).ok
    # A pool of two waits like a pool of two, whatever a planner assumed.
    (violation,) = verify(inst, Plan(replicas=(tp8("east", 2),))).violations
    assert violation.requirement == "demand[none,chat,east]"
    assert f"only in east (capacity {2 * pair:.2f})" in violation.message


def test_a_stated_capacity_may_be_conservative_but_never_above_the_pool_physics():
    inst = long_prompts(demand=1.0)
    # The lone figure understates a pool of four: conservative, so requirements hold.
    lone_figure = tp8("east", 4, requests_per_s_per_replica=pooled_rps(inst, 1))
    assert pooled_rps(inst, 1) < pooled_rps(inst, 4)
    assert verify(inst, Plan(replicas=(lone_figure,))).ok
    stated = tp8("east", 4, requests_per_s_per_replica=pooled_rps(inst, 4))
    assert verify(inst, Plan(replicas=(stated,))).ok
    # A pool of two stating the figure of a pool of four claims more than it has: a
    # warning, since the requirements are judged on the physics, and 2 q(2) still
    # carries 0.1 requests/s (a hand-written fleet states no routing to overload it).
    inst = long_prompts(demand=0.1)
    claimed = tp8("east", 2, requests_per_s_per_replica=pooled_rps(inst, 4))
    result = verify(inst, Plan(replicas=(claimed,)))
    assert result.ok and not result.violations
    (warning,) = result.warnings
    assert warning.message.startswith(
        f"states {pooled_rps(inst, 4):.4g} requests/s per replica; the physics gives "
        f"{pooled_rps(inst, 2):.4g} in a pool of 2 behind one router"
    )


def test_zone_survivors_are_a_smaller_pool():
    inst = long_prompts(demand=2.5, survive="zone", zones=2)
    # Eight replicas carry 8 q(8) >= 2.5 at full strength; their fullest zone lost, the
    # four left wait like a pool of four: 4 q(4) < 2.5.
    assert 8 * pooled_rps(inst, 8) >= 2.5 > 4 * pooled_rps(inst, 4)
    (violation,) = verify(inst, Plan(replicas=(tp8("east", 8),))).violations
    assert violation.requirement == "demand[lose=east/zone,chat,east]"
    assert f"(capacity {4 * pooled_rps(inst, 4):.2f})" in violation.message
    # 14 replicas keep 7 in a zone loss: 7 q(7) >= 2.5 (12 would keep 6: 6 q(6) < 2.5).
    assert 7 * pooled_rps(inst, 7) >= 2.5 > 6 * pooled_rps(inst, 6)
    assert verify(inst, Plan(replicas=(tp8("east", 14),))).ok
    assert not verify(inst, Plan(replicas=(tp8("east", 12),))).ok


def test_losing_a_replica_shrinks_its_pool():
    inst = long_prompts(demand=1.0, survive="replica")
    assert 4 * pooled_rps(inst, 4) >= 1.0 > 3 * pooled_rps(inst, 3)
    assert verify(inst, Plan(replicas=(tp8("east", 5),))).ok
    (violation,) = verify(inst, Plan(replicas=(tp8("east", 4),))).violations
    assert violation.requirement == "replica_spare[chat,east,unified,h200.fp8.tp8pp1.unified]"
    assert violation.message.endswith(f"it carries {3 * pooled_rps(inst, 3):.2f}")
