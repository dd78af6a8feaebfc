"""Whole servers in time (issue 32): with policy.buy_unit: node the hourly plan reserves and
rents whole servers of gpus_per_node, as the static plan buys them, and states its servers
and power like a static plan.

Hand cases use Llama 3.1 8B fp8 at TP 1 on H100 (8 GPUs a server) with the KV cache
stopping the batch (`tests.synthetic.FLAT_SLO`: n replicas carry n q(1) at every n), so an
hour at rate x needs ceil(x / q) GPUs. Every plan here has passed the hour-by-hour verifier
inside `solve`."""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from models.io.loading import validate_instance
from models.operations.time_demand import warm_grid
from models.operations.time_periods import aggregate_periods
from solver.candidates.table import build_candidates
from solver.errors import Infeasible
from solver.solve import SolveSettings, solve
from tests.solver.time.test_months import _data as months_data

ON_DEMAND, RESERVED = 2.0, 1.2
"""Reserved at 60% of on demand: a server busy more than 24 x 0.6 = 14.4 hours a day is
cheaper reserved."""
HOURS_PER_MONTH = 730.0
DAYS = HOURS_PER_MONTH / 24
SERVER_GPUS = 8
"""gpus_per_node of the H100 SXM (an HGX board)."""
PROFILE = [1.0] * 12 + [3.0] * 12
"""A trough at a third of the peak for UTC hours 0-11, the peak for hours 12-23. With no
start lag the warm day reads each hour at its highest point on the line between hour
centres: hours 0 and 11 touch the step at (1 + 3) / 2 = 2, so the day has three periods:
the trough (hours 1-10, 10 h) at P / 3, the shoulders (hours 0 and 11, 2 h) at 2P / 3 and
the peak (hours 12-23, 12 h) at P."""
TROUGH_H, SHOULDER_H, PEAK_H = 10, 2, 12


def _data(rates: dict[str, float], profile=PROFILE, reserved=("r1",)) -> dict:
    regions = []
    for region in rates:
        offer = {"max_gpus": 64, "price_per_gpu_hour": ON_DEMAND}
        if region in reserved:
            offer["reserved_price_per_gpu_hour"] = RESERVED
        regions.append({"name": region, "supply": {"h100-sxm": offer}})
    demand = {}
    for region, rate in rates.items():
        demand[region] = {"peak_requests_per_s": rate}
        if profile is not None:
            demand[region]["hourly_profile"] = list(profile)
    return {
        "name": "servers-in-time",
        "gpus": [{"name": "h100-sxm"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": regions,
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": demand,
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": {"ttft_p99_ms": 10000.0, "tpot_p99_ms": 200.0},
            }
        ],
        "policy": {
            "buy_unit": "node",
            "tensor_parallel": [1],
            "replica_start_s": 0.0,
            "scale_detection_s": 0.0,
            "hours_per_month": HOURS_PER_MONTH,
        },
    }


def _instance(rates, **kwargs):
    return validate_instance(_data(rates, **kwargs), "servers-in-time.yaml")


def _lone_rps() -> float:
    """q(1) of the only candidate, after checking that pooling adds nothing."""
    (candidate,) = build_candidates(_instance({"r1": 10.0})).of("chat")
    assert candidate.limit.value == "kv_memory"  # q(n) = q(1) for every pool size
    assert candidate.ladder == () and candidate.ceiling == candidate.requests_per_s
    return candidate.requests_per_s


def _gpus(plan, region):
    return [sum(p.gpus for p in hour.pools if p.region == region) for hour in plan.hours]


def test_two_regions_three_periods_reserve_and_rent_whole_servers_by_hand():
    q = _lone_rps()
    # r1 at P = 11.7 q: trough 3.9 q, shoulder 7.8 q, peak 11.7 q -> 4, 8, 12 GPUs;
    # r2 at P = 5.7 q: 1.9 q, 3.8 q, 5.7 q -> 2, 4, 6 GPUs. r2 has no reserved price.
    instance = _instance({"r1": 11.7 * q, "r2": 5.7 * q})
    periods = aggregate_periods(warm_grid(instance))
    assert [p.weight_hours for p in periods] == [SHOULDER_H, TROUGH_H, PEAK_H]
    plan = solve(instance)
    trough, shoulder, peak = 1, 0, 12  # an hour of each period
    assert [_gpus(plan, "r1")[h] for h in (trough, shoulder, peak)] == [4, 8, 12]
    assert [_gpus(plan, "r2")[h] for h in (trough, shoulder, peak)] == [2, 4, 6]
    # r1, committing c whole servers (GPU-hours a day on demand, in whole servers):
    #   c = 0:  10 x 8 + 2 x 8 + 12 x 16 = 288 GPU-h x 2.0          = 576.0 $/day
    #   c = 8:  24 x 8 x 1.2 = 230.4, + 12 x 8 GPU-h x 2.0 = 192.0  = 422.4 $/day
    #   c = 16: 24 x 16 x 1.2                                        = 460.8 $/day
    # so one server is reserved (per GPU, 4 would be: GPUs 5-8 run 14 h < 14.4 h).
    r1_per_day = 24 * 8 * RESERVED + 12 * 8 * ON_DEMAND
    assert r1_per_day < min(288 * ON_DEMAND, 24 * 16 * RESERVED)
    # r2 rents one server every hour: 24 x 8 GPU-h x 2.0 = 384 $/day.
    r2_per_day = 24 * 8 * ON_DEMAND
    (commitment,) = plan.committed
    assert (commitment.region, commitment.committed_gpus) == ("r1", SERVER_GPUS)
    assert commitment.committed_gpus % SERVER_GPUS == 0
    assert plan.cost_per_month == pytest.approx(DAYS * (r1_per_day + r2_per_day), abs=0.005)
    for hour in plan.hours:
        for row in hour.gpus:
            assert row.on_demand % SERVER_GPUS == 0
    (r1_peak,) = [row for row in plan.hours[peak].gpus if row.region == "r1"]
    assert (r1_peak.used, r1_peak.reserved, r1_peak.on_demand) == (12, 8, 8)
    # The busiest hour's GPUs beyond the (empty) existing fleet, in whole servers:
    # r1 12 -> 16 GPUs = 2 servers, r2 6 -> 8 GPUs = 1 server.
    servers = {(s.region, s.count, s.gpus_per_server) for s in plan.servers}
    assert servers == {("r1", 2, SERVER_GPUS), ("r2", 1, SERVER_GPUS)}
    # Power of the installed servers: kW per GPU = 0.700 kW TDP x 10.2 / (8 x 0.700)
    # server factor (DGX H100) x PUE 1.0 = 1.275 kW.
    kw_per_gpu = 0.700 * 10.2 / (8 * 0.700)
    power = {row.region: row.kw for row in plan.power_kw}
    assert power == pytest.approx({"r1": 16 * kw_per_gpu, "r2": 8 * kw_per_gpu})
    # Idle GPU-hours a day count every GPU paid and not running: r1's reserved server
    # half idle in the trough (8 - 4), its rented one at the peak (16 - 12); r2's rented
    # server in each period (8 - 2, 8 - 4, 8 - 6); pools' idle shares come on top.
    rented_idle = (
        TROUGH_H * (8 - 4)
        + PEAK_H * (16 - 12)
        + TROUGH_H * (8 - 2)
        + SHOULDER_H * (8 - 4)
        + PEAK_H * (8 - 6)
    )
    assert plan.idle_gpu_hours_per_day >= rented_idle - 1e-6


@pytest.mark.parametrize("multiple", [5.7, 11.7, 16.0])
def test_the_static_plan_is_the_one_period_hourly_plan_to_the_cent(multiple):
    """A flat day is one period of 24 hours; with no reserved price its on-demand servers
    cost hours_per_month x price x n x ceil(used / n), the static plan's purchase."""
    q = _lone_rps()
    rates = {"r1": multiple * q, "r2": 5.7 * q}
    static = solve(_instance(rates, profile=None, reserved=()))
    hourly = solve(_instance(rates, profile=[1.0] * 24, reserved=()))
    assert static.hours == () and len(hourly.hours) == 24
    flat = _instance(rates, profile=[1.0] * 24, reserved=())
    assert [p.weight_hours for p in aggregate_periods(warm_grid(flat))] == [24]
    assert hourly.cost_per_month == pytest.approx(static.cost_per_month, abs=0.005)
    # by hand: r1 needs ceil(multiple) GPUs, bought in servers of 8, r2 ceil(5.7) = 6 -> 8
    r1 = SERVER_GPUS * math.ceil(math.ceil(multiple) / SERVER_GPUS)
    expected = HOURS_PER_MONTH * ON_DEMAND * (r1 + SERVER_GPUS)
    assert static.cost_per_month == pytest.approx(expected, abs=0.005)
    assert {(s.region, s.count) for s in hourly.servers} == {
        (s.region, s.count) for s in static.servers
    }
    assert [p.region for p in hourly.power_kw] == [p.region for p in static.power_kw]
    assert [p.kw for p in hourly.power_kw] == pytest.approx([p.kw for p in static.power_kw])
    # one pipeline: the same idle share over the GPUs paid, the same rows binding, the
    # hourly ones in their one period (first UTC hour 0), the static ones in none
    assert hourly.idle_fraction == pytest.approx(static.idle_fraction, abs=1e-9)
    assert {b.period for b in hourly.binding} == {0}
    assert {b.period for b in static.binding} <= {None}
    assert {b.month for b in hourly.binding + static.binding} <= {None}


def test_a_horizon_orders_whole_servers_with_their_order_month_by_hand():
    """tests/solver/time/test_months.py's flat day in whole servers: rate 7.5 q growing
    10% a month over 4 months, orders taking 2 months."""
    q = _lone_rps()
    data = months_data(7.5 * q, 0.10, 2, 4)
    data["policy"]["buy_unit"] = "node"
    plan = solve(validate_instance(data, "months-in-servers.yaml"))
    # 7.5 x 1.1^m = 7.5, 8.25, 9.075, 9.98 -> 8, 9, 10, 10 GPUs every hour.
    assert [math.ceil(7.5 * 1.1**m) for m in range(4)] == [8, 9, 10, 10]
    # A server busy all day costs 8 x 24 x 1.2 = 230.4 $/day reserved < 384 on demand.
    # Month 0 reserves 1 server. Month 1 needs 9 GPUs but cannot add a reservation (the
    # earliest order, in month 0, serves in month 2): it rents a second server all day.
    # Month 2 reserves 2 servers (one ordered in month 0), month 3 keeps them.
    server_day = {"reserved": 8 * 24 * RESERVED, "on_demand": 8 * 24 * ON_DEMAND}
    per_day = [
        server_day["reserved"],
        server_day["reserved"] + server_day["on_demand"],
        2 * server_day["reserved"],
        2 * server_day["reserved"],
    ]
    assert [m.cost_per_month for m in plan.months] == pytest.approx(
        [DAYS * d for d in per_day], abs=0.005
    )
    assert [[o.committed_gpus for o in m.offers] for m in plan.months] == [[8], [8], [16], [16]]
    orders = [
        [(o.servers, o.gpus_per_server, o.order_month) for o in m.servers_ordered]
        for m in plan.months
    ]
    assert orders == [[(1, 8, -2)], [], [(1, 8, 0)], []]
    assert plan.horizon_cost == pytest.approx(DAYS * sum(per_day), abs=0.01)


def _with_batch(power_kw=None) -> dict:
    """r1's chat, and a nightly batch of another model (Llama 3.3 70B at TP 2, none of
    whose pools run interactive) that can only run on dedicated replicas."""
    q = _lone_rps()
    data = _data({"r1": 11.7 * q}, reserved=())
    data["models"].append({"name": "llama-3.3-70b", "weight_precisions": ["fp8"]})
    data["policy"]["tensor_parallel"] = [1, 2]
    data["workloads"].append(
        {
            "name": "nightly",
            "model": "llama-3.3-70b",
            "deadline_hours": 24,
            "demand": {"r1": {"requests_per_day": 200_000}},
            "prompt_tokens": {"mean": 1000, "p99": 1000},
            "output_tokens": {"mean": 200, "p99": 200},
        }
    )
    if power_kw is not None:
        data["regions"][0]["power_kw"] = power_kw
    return data


def test_dedicated_batch_gpus_count_in_every_period_s_servers_and_power():
    from solver.time.periods import build_time_program

    instance = validate_instance(_with_batch(), "batch-servers.yaml")
    program = build_time_program(instance, build_candidates(instance))
    (work,) = program.batch
    assert work.dedicated
    for part in program.periods:
        row = program.lp.constraints[f"purchase[r1,h100-sxm]@t{part.first_hour:02d}"]
        for option in work.dedicated:
            assert row.coefficients[option.column] == -float(option.candidate.gpus)
    # Power for the busiest hour's servers, chat and batch, fits; one server less does
    # not (H100 is the only GPU on offer), where it fitted while batch drew no power.
    plan = solve(instance)
    kw_per_gpu = 0.700 * 10.2 / (8 * 0.700)
    (use,) = plan.gpus
    batch_gpus = sum(p.gpus for p in plan.hours[0].pools if p.workload == "nightly")
    assert batch_gpus and use.purchased - SERVER_GPUS < use.used
    capped = solve(validate_instance(_with_batch(use.purchased * kw_per_gpu), "cap.yaml"))
    (power,) = capped.power_kw
    assert power.kw == pytest.approx(power.limit_kw)
    short = _with_batch((use.purchased - SERVER_GPUS) * kw_per_gpu)
    with pytest.raises(Infeasible):
        solve(validate_instance(short, "short.yaml"))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    r1=st.floats(min_value=20.0, max_value=600.0),
    r2=st.floats(min_value=20.0, max_value=600.0),
    h200_price=st.floats(min_value=2.4, max_value=4.0),
    survive=st.sampled_from(["none", "region"]),
    buy_unit=st.sampled_from(["node", "gpu"]),
)
def test_a_flat_hourly_profile_leaves_the_cost_unchanged(r1, r2, h200_price, survive, buy_unit):
    """Property (issue 32): the static plan is the one-period case of the hourly program,
    for any rates, GPU prices, failure policy and buy unit (both solved to optimality)."""

    def plan(profile: bool):
        demand = {
            r: {"peak_requests_per_s": x, **({"hourly_profile": [1.0] * 24} if profile else {})}
            for r, x in {"r1": r1, "r2": r2}.items()
        }
        supply = {"h100-sxm": 2.4, "h200": h200_price}
        data = {
            "name": "flat-day",
            "gpus": [{"name": g} for g in supply],
            "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
            "regions": [
                {
                    "name": r,
                    "supply": {
                        g: {"max_gpus": 64, "price_per_gpu_hour": p} for g, p in supply.items()
                    },
                }
                for r in demand
            ],
            "links": [["r1", "r2", 20]],
            "workloads": [
                {
                    "name": "chat",
                    "model": "llama-3.1-8b",
                    "demand": demand,
                    "prompt_tokens": {"mean": 1000, "p99": 2000},
                    "output_tokens": {"mean": 200, "p99": 400},
                    "slo": {"ttft_p99_ms": 1000, "tpot_p99_ms": 50, "max_failover_rtt_ms": 50},
                }
            ],
            "policy": {
                "survive": survive,
                "buy_unit": buy_unit,
                "tensor_parallel": [1, 2],
                "replica_start_s": 240,
                "scale_detection_s": 60,
            },
        }
        instance = validate_instance(data, "flat-day.yaml")
        return solve(instance, SolveSettings.of(instance, mip_gap=0.0))

    static, hourly = plan(False), plan(True)
    assert static.hours == () and len(hourly.hours) == 24
    assert hourly.cost_per_month == pytest.approx(static.cost_per_month, abs=0.005)
