"""Shadow prices of hourly plans (issue 32): the periods program priced as an LP with the
plan's discrete choices fixed (solver.time.readback.prices), its binding rows carrying their period,
and the power cap's price summed over the periods.

Hand case: as tests/solver/time/test_procurement.py's power dual, one region offering H100
($2.0) and H200 ($2.5), both 700 W, with the KV cache stopping the batch (n replicas carry
n q(1)) and 32 GPUs of power. H100 is cheaper per request/s, H200 carries more per GPU:
where power binds the LP mixes them, and one more kW buys 1/k GPUs more, moved from H200
to H100 at constant capacity, every hour the period stands for:

    d cost / d kW = (w_p / 24) x (c_X q_Y - c_Y q_X) / (q_Y - q_X) / k

c the $/month of a GPU rented all day, w_p the period's hours a day."""

import pytest

from models.io.loading import validate_instance
from models.operations.site import SERVER_POWER_FACTOR
from solver.candidates.table import build_candidates
from solver.program.row_names import parse_name
from solver.solve import SolveSettings, solve

H100, H200 = "h100-sxm", "h200"
PRICES = {H100: 2.0, H200: 2.5}
HOURS_PER_MONTH = 730.0
PUE = 1.25
KW_PER_GPU = 0.700 * SERVER_POWER_FACTOR * PUE
"""k: 700 W board power x 10.2 / 5.6 (DGX H100) x PUE 1.25, both types."""
GPUS_OF_POWER = 32


def _instance(load_rps: float, profile: list[float], power_kw: float | None = None, **policy):
    region = {
        "name": "east",
        "pue": PUE,
        "supply": {g: {"max_gpus": 128, "price_per_gpu_hour": p} for g, p in PRICES.items()},
    }
    if power_kw is not None:
        region["power_kw"] = power_kw
    data = {
        "name": "hour-prices",
        "gpus": [{"name": H100}, {"name": H200}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [region],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {"east": {"peak_requests_per_s": load_rps, "hourly_profile": profile}},
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": {"ttft_p99_ms": 10000.0, "tpot_p99_ms": 200.0},
            }
        ],
        "policy": {
            "buy_unit": "node",
            "max_configs_per_pool": None,
            "tensor_parallel": [1],
            "replica_start_s": 0.0,
            "scale_detection_s": 0.0,
            "hours_per_month": HOURS_PER_MONTH,
            **policy,
        },
    }
    return validate_instance(data, "hour-prices.yaml")


def _lone_rps(gpu: str) -> float:
    table = build_candidates(_instance(10.0, [1.0] * 24))
    (candidate,) = [c for c in table.of("chat") if c.gpu == gpu]
    assert candidate.ladder == ()  # KV-limited: q(n) = q(1) for every pool size
    return candidate.requests_per_s


def _solved(instance):
    return solve(instance, SolveSettings.of(instance, mip_gap=0.0))  # hour-verified inside


def _power_dual_by_hand(weight_hours: float) -> float:
    q_x, q_y = _lone_rps(H100), _lone_rps(H200)
    c_x, c_y = PRICES[H100] * HOURS_PER_MONTH, PRICES[H200] * HOURS_PER_MONTH
    assert c_x / q_x < c_y / q_y and q_y > q_x  # X cheaper per request, Y denser per kW
    return weight_hours / 24 * (c_x * q_y - c_y * q_x) / (q_y - q_x) / KW_PER_GPU


def _load() -> float:
    """Half-way between 32 H100 and 32 H200 of capacity."""
    q_x, q_y = _lone_rps(H100), _lone_rps(H200)
    return q_x * GPUS_OF_POWER + 0.5 * (q_y - q_x) * GPUS_OF_POWER


def test_a_flat_day_prices_power_as_the_static_plan_does():
    plan = _solved(_instance(_load(), [1.0] * 24, power_kw=GPUS_OF_POWER * KW_PER_GPU))
    (power,) = plan.power_kw
    assert power.kw == pytest.approx(GPUS_OF_POWER * KW_PER_GPU)
    assert power.shadow_price_per_kw == pytest.approx(_power_dual_by_hand(24), rel=1e-3)
    (row,) = [b for b in plan.binding if b.family == "power"]
    assert row.name == "power[east]@t00" and row.unit == "$/month per kW"
    assert (row.period, row.month) == (0, None)  # typed: the period's first UTC hour
    assert "LP with the plan's discrete choices fixed" in plan.shadow_price_note


def test_power_binding_at_the_peak_only_is_priced_for_the_peak_hours():
    """Hours 12-23 at the load, 1-10 at a quarter of it, 0 and 11 (the shoulders, with no
    start lag) at 0.625 of it: only the peak needs more than 32 H100, so only its 12 hours
    are priced."""
    q_x = _lone_rps(H100)
    load = _load()
    assert 0.625 * load < GPUS_OF_POWER * q_x - 1  # the shoulder fits on H100 alone
    profile = [0.25] * 12 + [1.0] * 12
    plan = _solved(_instance(load, profile, power_kw=GPUS_OF_POWER * KW_PER_GPU))
    (power,) = plan.power_kw
    assert power.shadow_price_per_kw == pytest.approx(_power_dual_by_hand(12), rel=1e-3)
    priced = {b.name for b in plan.binding if b.family == "power" and b.shadow_price}
    assert priced == {"power[east]@t12"}
    assert {b.period for b in plan.binding if b.family == "power" and b.shadow_price} == {12}


def test_without_a_power_cap_a_gpu_in_a_period_costs_its_on_demand_hours():
    """gpu_cover[r,g]@p (committed + on_demand - used >= -existing): one GPU fewer owned in
    period p is one more rented on demand for its w_p hours a day, days x w_p x price."""
    plan = _solved(_instance(_load(), [0.25] * 12 + [1.0] * 12))
    (power,) = plan.power_kw
    assert power.limit_kw is None and power.shadow_price_per_kw is None
    weights = {0: 2, 1: 10, 12: 12}  # shoulders (hours 0, 11), trough (1-10), peak (12-23)
    covers = [b for b in plan.binding if b.family == "gpu_cover"]
    assert covers
    for b in covers:
        index = parse_name(b.name)  # the typed index, its period read from the name
        assert index.period == b.period and index.region == "east"
        by_hand = HOURS_PER_MONTH / 24 * weights[b.period] * PRICES[index.gpu]
        assert b.shadow_price == pytest.approx(by_hand, rel=1e-9)
