"""explain on hourly plans (issue 32): binding rows, utilisation, limits and each chosen
pool's alternative, the periods program re-solved without it in every period
(solver.time.alternatives).

Hand case: two regions (east, west, no link: each region's users are served at home),
one workload of an 8B model KV-bound on H100 ($2.0/GPU-hour) and H200 ($2.6), one GPU a
replica, rented by the GPU (buy_unit gpu), so n replicas carry n q (q_X = H100's, q_Y =
H200's, q_Y > q_X, and H100 is cheaper per request/s: 2.0 / q_X < 2.6 / q_Y). The day:
UTC hours 12-23 at the peak, 1-10 at half of it, and the two shoulders 0 and 11 (with
no start lag) at the mean of the two, 0.75: three periods. Loads at the peak, in H100
replicas: east 7.5, west 2.5. At every load the plan runs H100 alone (ceil(L / q_X)
replicas, checked cheaper than any mix of k >= 1 H200 below), and without H100 in a
region that region runs ceil(L / q_Y) H200 in each hour (its users cannot leave it),
so, with D = hours_per_month / 24 days a month:

    extra $/month = D x sum over the 24 hours of (2.6 ceil(L_h / q_Y) - 2.0 ceil(L_h / q_X))

east: peak 12 x (2.6 x 7 - 2.0 x 8) + trough 10 x (2.6 x 4 - 2.0 x 4) + shoulders
2 x (2.6 x 5 - 2.0 x 6) = 26.4 + 24 + 2 = 52.4 $/day.
"""

import json
import math

import pytest

from models.io.loading import validate_instance
from solver.analysis import explain as explain_module
from solver.analysis.explain import HOURLY_ALTERNATIVE_METHOD, explain
from solver.solve import SolveSettings
from tests.paths import INSTANCES
from tests.solver.time.test_hour_prices import _lone_rps

PRICES = {"h100-sxm": 2.0, "h200": 2.6}
HOURS_PER_MONTH = 730.0
DAYS = HOURS_PER_MONTH / 24
PEAK_IN_H100 = {"east": 7.5, "west": 2.5}
PROFILE = [0.5] * 12 + [1.0] * 12
LEVEL_BY_HOUR = [0.75] + [0.5] * 10 + [0.75] + [1.0] * 12
"""The warm rate of each UTC hour, as a share of the peak (the module text)."""


@pytest.fixture(autouse=True)
def _no_replays(monkeypatch):
    """The engine effects' replays are most of an hourly explain (3.3 s of the hand-cost
    test's 3.9 s) and no test here reads them (test_time_levers' hourly `explain` runs them)."""
    monkeypatch.setattr(explain_module, "_engine_effects", lambda *_: {})


def _instance():
    q_x = _lone_rps("h100-sxm")
    regions = [
        {
            "name": name,
            "supply": {g: {"max_gpus": 128, "price_per_gpu_hour": p} for g, p in PRICES.items()},
        }
        for name in PEAK_IN_H100
    ]
    demand = {
        name: {"peak_requests_per_s": peak * q_x, "hourly_profile": PROFILE}
        for name, peak in PEAK_IN_H100.items()
    }
    data = {
        "name": "hourly-explain",
        "gpus": [{"name": g} for g in PRICES],
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
            "buy_unit": "gpu",
            "max_configs_per_pool": None,
            "tensor_parallel": [1],
            "replica_start_s": 0.0,
            "scale_detection_s": 0.0,
            "hours_per_month": HOURS_PER_MONTH,
        },
    }
    return validate_instance(data, "hourly-explain.yaml")


def _replicas(load_in_h100: float, gpu: str) -> int:
    return math.ceil(load_in_h100 * _lone_rps("h100-sxm") / _lone_rps(gpu) - 1e-9)


def _mix_cost(load_in_h100: float, h200: int) -> float:
    """$/hour of k H200 and the H100 that carry the rest of the load."""
    rest = max(load_in_h100 - h200 * _lone_rps("h200") / _lone_rps("h100-sxm"), 0.0)
    return PRICES["h200"] * h200 + PRICES["h100-sxm"] * math.ceil(rest - 1e-9)


def test_without_h100_each_region_runs_h200_every_period_at_the_hand_cost():
    q_x, q_y = _lone_rps("h100-sxm"), _lone_rps("h200")
    assert PRICES["h100-sxm"] / q_x < PRICES["h200"] / q_y and q_y > q_x
    loads = {r: [peak * level for level in LEVEL_BY_HOUR] for r, peak in PEAK_IN_H100.items()}
    for load in {x for day in loads.values() for x in day}:  # H100 alone is the cheapest
        alone = _mix_cost(load, 0)
        assert all(alone < _mix_cost(load, k) for k in range(1, _replicas(load, "h200") + 1))
    instance = _instance()
    explained = explain(instance, SolveSettings.of(instance, mip_gap=0.0))
    plan = explained.plan
    assert plan.hours and explained.status == "optimal"
    assert explained.alternative_method == HOURLY_ALTERNATIVE_METHOD
    for hour in plan.hours:
        assert {(p.region, p.gpu, p.count) for p in hour.pools} == {
            (r, "h100-sxm", _replicas(day[hour.hour], "h100-sxm")) for r, day in loads.items()
        }
    by_region = {a.region: a for a in explained.alternatives}
    assert set(by_region) == set(PEAK_IN_H100)
    for region, day in loads.items():
        extra_per_day = sum(
            PRICES["h200"] * _replicas(load, "h200")
            - PRICES["h100-sxm"] * _replicas(load, "h100-sxm")
            for load in day
        )
        alternative = by_region[region]
        assert alternative.extra_cost_per_month == pytest.approx(DAYS * extra_per_day, abs=0.01)
        assert alternative.replaced_by == (
            f"{_replicas(PEAK_IN_H100[region], 'h200')} x h200 fp8 tp1xpp1 unified (at peak)",
        )
    assert by_region["east"].extra_cost_per_month == pytest.approx(DAYS * 52.4, abs=0.01)
    assert {n.workload for n in explained.limits} == {"chat"} and len(explained.limits) == 2
    assert explained.utilisation and explained.families


def test_explain_json_on_the_diurnal_instance_has_alternatives(run_cli, tmp_path):
    """The diurnal instance (two regions, a region loss, reserved, on-demand and spot
    prices, a batch soaking the trough) at TP 4 and 8: each chosen pool's alternative
    re-solves the periods program as at its TP 2, 4 and 8, on fewer pools (12 s of CPU
    at the three, under 2 s at the two). Each alternative has a plan: the other layout,
    or the other GPU type."""
    out = tmp_path / "explain.json"
    layouts = "policy.tensor_parallel=[4, 8]"
    diurnal = INSTANCES / "diurnal-chat-batch.yaml"
    result = run_cli("explain", diurnal, "--set", layouts, "--json", out)
    assert result.exit_code == 0, result.stderr
    assert "Without each chosen pool" in result.stdout and "UTC hour" in result.stdout
    report = json.loads(out.read_text())
    assert report["plan"]["hours"] and report["status"] == "optimal"
    chosen = {(p["workload"], p["region"]) for p in report["plan"]["replicas"]}
    assert report["alternatives"] and all(
        (a["workload"], a["region"]) in chosen for a in report["alternatives"]
    )
    for a in report["alternatives"]:  # re-solved to within 1%: never much below the plan
        assert a["cost_without_per_month"] >= report["cost_per_month"] * (1 - 0.01)
    assert report["binding"] and report["limits"] and report["utilisation"]
