"""explain's routing by GPU count reads the load the plan carries: its scenario 'none'
load on the region's unified pools (demand_growth included) with the pools that serve
together (an hourly plan's busiest hour, the hour its scenarios show).

Before, it split the workload's peak request rate without demand_growth: a region at
97.5% of its capacity (150 requests/s, 100 x growth 1.5, on 4 H100 and H200 replicas)
read 77.6% and 62.1% on its two pools under routing by GPU count, an unloaded region.

By hand: a pool of capacity C_i gets w_g,i of the load L by GPU count (w_c,i = C_i / C
by capacity, C the region's capacity), so its utilisation is u_i = L w_g,i / C_i and
u_i x w_c,i / w_g,i = L / C, the region's utilisation in the plan's scenario 'none'.
"""

import pytest

from models.io.loading import validate_instance
from solver.analysis.capacity_report import gpu_count_routing
from solver.solve import solve
from tests.synthetic import instance, workload

GROWTH = 1.5


@pytest.fixture(scope="module")
def mixed():
    """H100 supply (2 GPUs) short of the load, so the region also runs H200."""
    inst = instance(
        {"east": {"h100-sxm": (2, 2.0), "h200": (64, 3.0)}},
        [workload("chat", {"east": 100.0})],
        top={"demand_growth": GROWTH},
    )
    return inst, solve(inst)


def test_each_pool_s_utilisation_by_gpu_count_agrees_with_the_plan_s_load(mixed):
    inst, plan = mixed
    none = next(s for s in plan.scenarios if s.name == "none")
    (row,) = [r for r in none.pools if r.region == "east"]
    assert row.load_requests_per_s == pytest.approx(100.0 * GROWTH)
    rows = gpu_count_routing(inst, plan)
    assert len(rows) == 2  # an H100 pool and an H200 pool
    for r in rows:
        assert r.utilisation * r.weight_by_capacity / r.weight_by_gpus == pytest.approx(
            row.load_requests_per_s / row.capacity_requests_per_s, rel=1e-6
        )


def _diurnal():
    """8B chat in two regions on a 1-to-4 day with reserved prices (planned by the hour):
    us-west runs two TP1 replicas at its peak and one TP2 replica at 15:00 UTC."""
    profile = [1] * 6 + [2, 3] + [4] * 9 + [3, 3, 2, 2, 2, 1, 1]
    offer = {"max_gpus": 256, "price_per_gpu_hour": 3.0, "reserved_price_per_gpu_hour": 1.8}
    data = {
        "name": "diurnal-routing",
        "gpus": [{"name": "h100-sxm"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["bf16"]}],
        "regions": [
            {"name": "us-east", "utc_offset_hours": -5, "supply": {"h100-sxm": offer}},
            {"name": "us-west", "utc_offset_hours": -8, "supply": {"h100-sxm": offer}},
        ],
        "links": [["us-east", "us-west", 62]],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {
                    "us-east": {"requests_per_day": 2_000_000, "hourly_profile": profile},
                    "us-west": {"requests_per_day": 1_000_000, "hourly_profile": profile},
                },
                "prompt_tokens": {"mean": 1000, "p99": 4000},
                "output_tokens": {"mean": 300, "p99": 1000},
                "slo": {
                    "ttft_p99_ms": 500,
                    "tpot_p99_ms": 30,
                    "availability": 0.999,
                    "max_failover_rtt_ms": 150,
                },
            }
        ],
        "policy": {"survive": "region", "tensor_parallel": [1, 2], "buy_unit": "gpu"},
        "solver": {"mip_gap": 0.0},
    }
    return validate_instance(data, "diurnal-routing.yaml")


def test_an_hourly_plan_s_rows_are_pools_of_the_hour_its_scenarios_show():
    inst = _diurnal()
    plan = solve(inst)
    hour = next(s.hour for s in plan.scenarios if s.name == "none")
    (shown,) = [h for h in plan.hours if h.hour == hour]
    running = {(p.region, p.label) for p in shown.pools}
    for row in gpu_count_routing(inst, plan):
        assert (row.region, row.configuration) in running
