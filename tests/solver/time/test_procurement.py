"""Plans a procurement team can buy: whole servers, power, simple pools, headroom, growth.

Hand cases use Llama 3.1 8B fp8 at TP 1 with fixed-length requests and targets loose
enough that the KV cache limits its replicas (`tests.synthetic.FLAT_SLO`: their pooling
ladder is empty, so a replica carries q(1) in a pool of any size: the program is then
plain arithmetic on q). Every plan passes the verifier.
"""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.io.loading import validate_instance
from models.operations.site import (
    SERVER_POWER_FACTOR,
    gpu_kw,
    gpus_bought,
    racks_per_gpu,
    stage_problem,
)
from models.schema.errors import InputError
from solver.candidates.table import build_candidates
from solver.plan.schema import Plan
from solver.solve import SolveSettings, simplicity_cost, solve
from solver.verify.fleet import verify
from tests.synthetic import FLAT_SLO, instance, workload

H100, H200 = "h100-sxm", "h200"
HOURS = 730
H100_TDP_KW = 0.700  # catalog tdp_w of H100 SXM and H200


def lone_rps(inst, gpu: str = H100) -> float:
    """q(1) of the only candidate on `gpu`, after checking that pooling adds nothing."""
    (candidate,) = [c for c in build_candidates(inst).of("chat") if c.gpu == gpu]
    assert candidate.ladder == ()  # KV-limited: q(n) = q(1) for every pool size
    return candidate.requests_per_s


def solved(inst) -> Plan:
    plan = solve(inst, SolveSettings.of(inst, mip_gap=0.0))
    check = verify(inst, plan)
    assert check.ok, check.violations
    return plan


def one_region(
    demand_rps: float, policy: dict, gpus=((H100, 2.0),), existing=None, top=None, **region
):
    """One region `east` offering `gpus` (128 each at the given $/GPU-hour), one chat
    workload; `region` keys (power_kw, pue, racks) go on the region."""
    return instance(
        {"east": {g: (128, price) for g, price in gpus}},
        [workload("chat", {"east": demand_rps}, model="llama-3.1-8b", **FLAT_SLO)],
        policy=policy,
        existing=existing,
        region_keys=region,
        top=top,
    )


def raw() -> dict:
    """The data of a one-region instance, to break one key of it."""
    data = {
        "name": "raw",
        "gpus": [{"name": H100}],
        "models": [{"name": "llama-3.1-8b"}],
        "regions": [{"name": "east", "supply": {H100: {"max_gpus": 64}}}],
        "workloads": [workload("chat", {"east": 10.0}, model="llama-3.1-8b", **FLAT_SLO)],
        "policy": {},
    }
    return data


# --- whole servers ------------------------------------------------------------------


def test_thirteen_gpus_of_need_buy_two_servers():
    q = lone_rps(one_region(10.0, {"buy_unit": "node"}))
    need = 12.5 * q  # 13 replicas of 1 GPU: ceil(12.5)
    plan = solved(one_region(need, {"buy_unit": "node"}))
    (use,) = plan.gpus
    assert use.used == 13
    assert use.purchased == 2 * 8  # ceil(13 / 8) servers of 8 GPUs
    assert [(s.region, s.gpu, s.count) for s in plan.servers] == [("east", H100, 2)]
    assert plan.cost_per_month == pytest.approx(2 * 8 * 2.0 * HOURS)
    by_gpu = solved(one_region(need, {"buy_unit": "gpu"}))
    assert by_gpu.gpus[0].purchased == 13 and by_gpu.servers == ()
    assert by_gpu.cost_per_month == pytest.approx(13 * 2.0 * HOURS)


def test_existing_fleet_counts_as_it_is():
    q = lone_rps(one_region(10.0, {"buy_unit": "node"}))
    plan = solved(one_region(12.5 * q, {"buy_unit": "node"}, existing={"east": {H100: 5}}))
    (use,) = plan.gpus
    assert (use.used, use.existing, use.purchased) == (13, 5, 8)  # ceil((13 - 5) / 8) = 1
    assert plan.servers[0].count == 1


def test_gpus_bought_rounds_the_need_beyond_the_fleet_to_servers():
    assert gpus_bought(13, 0, 8) == 16
    assert gpus_bought(13, 5, 8) == 8
    assert gpus_bought(4, 5, 8) == 0
    assert gpus_bought(13, 0, 1) == 13


def test_a_stage_divides_the_server_or_fills_whole_servers():
    assert stage_problem(tp=8, dp=1, gpus_per_node=8) is None
    assert stage_problem(tp=4, dp=2, gpus_per_node=8) is None
    assert stage_problem(tp=2, dp=8, gpus_per_node=8) is None  # 16 GPUs: 2 whole servers
    assert stage_problem(tp=1, dp=32, gpus_per_node=8) is None  # wide EP: 4 whole servers
    assert stage_problem(tp=4, dp=3, gpus_per_node=8) is not None  # 12: 1.5 servers
    assert stage_problem(tp=8, dp=2, gpus_per_node=72) is not None  # 72 / 16 not whole


def test_node_buying_keeps_stages_of_whole_servers():
    """DeepSeek-V3 on 8-GPU H200 servers: a TP2 x DP8 stage is 16 GPUs, two whole servers
    (attention DP groups across servers, as wide-EP deployments run), kept under node
    buying as under GPU buying. On SGLang's profile: TensorRT-LLM's attention DP (the
    default profile's engine) runs at TP 1 alone, so it would start TP2 x DP8 as TP1 x
    DP16 and the planner offers it none (models.physics.overlap.engine_layout_problem)."""
    base = {
        "name": "moe",
        "engine": "sglang-0.5",
        "gpus": [{"name": H200}],
        "models": [{"name": "deepseek-v3", "weight_precisions": ["fp8"]}],
        "regions": [{"name": "east", "supply": {H200: {"max_gpus": 256}}}],
        "workloads": [workload("chat", {"east": 5.0}, model="deepseek-v3", tpot_p99_ms=200)],
        "policy": {
            "tensor_parallel": [2, 8],
            "expert_parallel": [1, 16],
            "attention_data_parallel": [1, 8],
        },
    }
    from solver.candidates.layouts import configurations

    node = validate_instance(base, "moe")
    stages = {(c.tp, c.dp) for c in configurations(node, node.workloads[0])}
    assert (2, 8) in stages and (8, 1) in stages
    base["policy"]["buy_unit"] = "gpu"
    gpu = validate_instance(base, "moe")
    assert (2, 8) in {(c.tp, c.dp) for c in configurations(gpu, gpu.workloads[0])}


# --- power ----------------------------------------------------------------------------


def test_gpu_power_is_board_power_times_server_factor_times_pue():
    inst = one_region(10.0, {"pue": 1.25})
    assert pytest.approx(10.2 / (8 * 0.7)) == SERVER_POWER_FACTOR  # DGX H100
    assert gpu_kw(inst, "east", H100) == pytest.approx(H100_TDP_KW * 10.2 / 5.6 * 1.25)
    # a 40 kW rack holds 3 DGX-class servers of 10.2 kW: 24 GPUs
    assert racks_per_gpu(inst, H100, 40.0) == pytest.approx(1 / (8 * 3))


def test_binding_power_cap_has_the_dual_computed_by_hand():
    """Two GPU types in one region, 32 GPUs of power. H100 is cheaper per request/s,
    H200 carries more per GPU: with power binding the LP mixes them, and one more kW
    buys 1/k GPUs more, moved from H200 to H100 at constant capacity:

        d cost / d kW = (c_X q_Y - c_Y q_X) / (q_Y - q_X) / k
    """
    prices = ((H100, 2.0), (H200, 2.5))
    probe = one_region(10.0, {}, gpus=prices)
    q_x, q_y = lone_rps(probe, H100), lone_rps(probe, H200)
    pue = 1.25
    k = H100_TDP_KW * SERVER_POWER_FACTOR * pue  # kW per GPU, both types 700 W
    gpus_of_power = 32
    load = q_x * gpus_of_power + 0.5 * (q_y - q_x) * gpus_of_power  # between all-X and all-Y
    policy = {"buy_unit": "node", "pue": pue, "max_configs_per_pool": None}
    plan = solved(one_region(load, policy, gpus=prices, power_kw=gpus_of_power * k))
    c_x, c_y = 2.0 * HOURS, 2.5 * HOURS  # $/month per GPU
    assert c_x / q_x < c_y / q_y and q_y > q_x  # X cheaper per request, Y denser per kW
    expected = (c_x * q_y - c_y * q_x) / (q_y - q_x) / k
    (power,) = plan.power_kw
    assert power.kw == pytest.approx(gpus_of_power * k)
    assert power.shadow_price_per_kw == pytest.approx(expected, rel=1e-3)
    assert any(b.name == "power[east]" for b in plan.binding)


def test_power_cap_without_a_plan_is_infeasible_and_named():
    from solver.errors import Infeasible

    probe = one_region(10.0, {})
    q = lone_rps(probe)
    k = H100_TDP_KW * SERVER_POWER_FACTOR
    with pytest.raises(Infeasible) as caught:
        solve(one_region(20 * q, {"buy_unit": "node"}, power_kw=8 * k))
    assert "power[east]" in str(caught.value.diagnosis)


# --- simple pools ---------------------------------------------------------------------


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    demand=st.floats(min_value=20.0, max_value=400.0),
    h200_price=st.floats(min_value=2.0, max_value=3.5),
)
def test_one_configuration_per_pool_and_lifting_it_never_costs_more(demand, h200_price):
    inst = one_region(
        demand,
        {"buy_unit": "node", "max_configs_per_pool": 1},
        gpus=((H100, 2.4), (H200, h200_price)),
    )
    plan = solved(inst)
    phases: dict[tuple[str, str, str], int] = {}
    for pool in plan.replicas:
        key = (pool.workload, pool.region, str(pool.role))
        phases[key] = phases.get(key, 0) + 1
    assert max(phases.values()) == 1
    simple = simplicity_cost(inst, plan, SolveSettings.of(inst))  # what explain reports
    assert simple is not None and simple.max_configs_per_pool == 1
    assert simple.cost_per_month_unlimited <= plan.cost_per_month + 1e-6


# --- headroom and growth --------------------------------------------------------------


def test_max_utilization_raises_replicas_to_the_ceiling_of_load_over_headroom():
    q = lone_rps(one_region(10.0, {}))
    load = 7.3 * q
    full = solved(one_region(load, {}))
    assert full.replicas[0].count == math.ceil(load / q)  # 8
    headroom = solved(one_region(load, {"max_utilization": 0.8}))
    assert headroom.replicas[0].count == math.ceil(load / (0.8 * q))  # ceil(9.125) = 10
    assert headroom.max_utilization == 0.8
    assert max(p.utilisation for s in headroom.scenarios for p in s.pools) <= 0.8 + 1e-9


def test_demand_growth_plans_as_the_grown_demand():
    q = lone_rps(one_region(10.0, {}))
    grown = solved(one_region(4.2 * q, {"demand_growth": 1.5}))
    assert grown.replicas[0].count == math.ceil(4.2 * 1.5)  # 7
    assert grown.demand_growth == 1.5
    at_top = solved(one_region(4.2 * q, {}, top={"demand_growth": 1.5}))
    assert at_top.cost_per_month == grown.cost_per_month


# --- the verifier judges requirements, not digits ---------------------------------------


def test_a_conservative_stated_capacity_passes_and_an_inflated_one_fails():
    inst = one_region(100.0, {})
    plan = solved(inst)
    pool = plan.replicas[0]
    rate = pool.requests_per_s_per_replica

    def stating(value: float) -> Plan:
        entry = pool.model_copy(update={"requests_per_s_per_replica": value})
        return plan.model_copy(update={"replicas": (entry,)})

    assert verify(inst, stating(rate * 0.98)).ok  # e.g. efficiency re-tuned upwards since
    # 2% above the physics (efficiency re-tuned downwards since): the router still sends
    # each replica utilisation x stated < the physics, so the requirements hold (a warning)
    utilisation = plan.scenarios[0].pools[0].utilisation
    assert utilisation * rate * 1.02 < rate
    drifted = verify(inst, stating(rate * 1.02))
    assert drifted.ok
    assert "the physics gives" in drifted.warnings[0].message
    # Stated so high that the routing it implies (utilisation x stated) is 10% beyond
    # what a replica carries at the SLO: that breaks a requirement.
    inflated = verify(inst, stating(rate * 1.1 / utilisation))
    assert not inflated.ok
    assert f"the plan's routing loads it with {rate * 1.1:.4g}" in inflated.violations[0].message


def test_a_plan_beyond_the_power_cap_fails_the_verifier():
    inst = one_region(100.0, {"buy_unit": "node"})
    plan = solved(inst)
    k = H100_TDP_KW * SERVER_POWER_FACTOR
    capped = one_region(100.0, {"buy_unit": "node"}, power_kw=k)
    check = verify(capped, plan)
    # the cap is exceeded, and the plan's power row states no cap where the instance has
    # one (solver.verify.site.stated_power)
    assert sorted(v.requirement for v in check.violations) == [
        "power[east]",
        "power_kw[0].limit_kw",
    ]


# --- bounded keys -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "key", "value"),
    [
        ("region", "power_kw", float("nan")),
        ("region", "power_kw", float("inf")),
        ("region", "pue", 0.9),
        ("region", "pue", float("nan")),
        ("policy", "max_utilization", 0.0),
        ("policy", "max_utilization", 1.5),
        ("policy", "max_utilization", float("nan")),
        ("policy", "max_configs_per_pool", 0),
        ("policy", "demand_growth", float("inf")),
        ("policy", "demand_growth", 0.0),
        ("policy", "server_power_factor", float("nan")),
        ("top", "demand_growth", float("nan")),
        ("policy", "buy_unit", "rack"),
    ],
)
def test_hostile_values_of_the_new_keys_are_refused(where, key, value):
    data = raw()
    target = {"region": data["regions"][0], "policy": data["policy"], "top": data}[where]
    target[key] = value
    with pytest.raises(InputError) as caught:
        validate_instance(data, "hostile")
    assert key in str(caught.value)


def test_racks_need_their_power_per_rack():
    data = raw()
    data["regions"][0]["racks"] = 4
    with pytest.raises(InputError) as caught:
        validate_instance(data, "racks")
    assert "kw_per_rack" in str(caught.value)
