"""An hourly plan's servers table counts each GPU type at its own busiest hour (its
`servers`, from each offer's most GPUs in any hour), so it says so, where it read
'Servers the busiest hour runs': procurement-3region's month 0 listed 6 H100 and 1 H200
servers in us-east (7 x 10.2 = 71.4 kW) as one hour's, beside a power table of 61.2 kW,
the busiest hour's (13:00: 45 H100, no H200; the H200 server runs at 12:00 and 22:00).

Hand case (that shape): us-east, 8-GPU servers of 700 W GPUs (10.2 kW each); 12:00 holds
29 H100 and 8 H200, 13:00 holds 45 H100."""

import pytest

from cli.render.plan_tables import BUSIEST_SERVERS, site_tables
from models.io.loading import validate_instance
from models.operations.site import gpus_bought
from solver.plan.records import RegionPower, ServerPurchase
from solver.plan.schema import Plan
from solver.plan.time_records import Hour, HourGpus
from solver.time.months import month_power

SERVER_KW = 10.2
INSTANCE = {
    "name": "two-peaks",
    "gpus": [{"name": "h100-sxm"}, {"name": "h200"}],
    "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
    "regions": [
        {
            "name": "us-east",
            "supply": {
                g: {"max_gpus": 64, "price_per_gpu_hour": 2.0, "reserved_price_per_gpu_hour": 1.2}
                for g in ("h100-sxm", "h200")
            },
        }
    ],
    "workloads": [
        {
            "name": "chat",
            "model": "llama-3.1-8b",
            "demand": {"us-east": {"peak_requests_per_s": 10}},
            "prompt_tokens": {"mean": 1000, "p99": 1000},
            "output_tokens": {"mean": 200, "p99": 200},
        }
    ],
}


def test_the_servers_table_of_types_peaking_apart_is_not_one_hours():
    instance = validate_instance(INSTANCE, "two-peaks.yaml")
    use = {12: {"h100-sxm": 29, "h200": 8}, 13: {"h100-sxm": 45}}
    hours = tuple(
        Hour(
            hour=h,
            period=h,
            gpus=tuple(HourGpus(region="us-east", gpu=g, used=n) for g, n in held.items()),
        )
        for h, held in use.items()
    )
    most = {g: max(held.get(g, 0) for held in use.values()) for g in ("h100-sxm", "h200")}
    servers = tuple(
        ServerPurchase(region="us-east", gpu=g, count=gpus_bought(n, 0, 8) // 8, gpus_per_server=8)
        for g, n in most.items()
    )
    assert [s.count for s in servers] == [6, 1]  # ceil(45 / 8), ceil(8 / 8)
    (power,) = month_power(instance, hours, (RegionPower(region="us-east", kw=0.0),))
    assert power.kw == pytest.approx(6 * SERVER_KW)  # 13:00: 48 H100 bought, 61.2 kW
    assert sum(s.count for s in servers) * SERVER_KW > power.kw  # 71.4: no one hour's
    plan = Plan(cost_per_month=1.0, hours=hours, servers=servers, power_kw=(power,))
    table, _ = site_tables(plan)
    assert table.title == BUSIEST_SERVERS
    assert "each GPU type's busiest hour" in table.title
    assert "types that peak at different hours are not held at once" in table.note


def test_an_hourly_plans_racks_are_its_busiest_hours_as_its_kw_are():
    """The power row's racks were the gpus table's (each type at its own peak: 48 + 8
    GPUs) beside kW of the busiest hour (48 GPUs); the rack_space row bounds each period
    as power does. 25 kW racks hold two 10.2 kW servers: a GPU takes 1 / 16 of a rack.
    12:00: (32 + 8) / 16 = 2.5 racks; 13:00: 48 / 16 = 3.0; the types' peaks 56 / 16 = 3.5."""
    from solver.verify.months import busiest_hour_racks

    data = {**INSTANCE, "regions": [{**INSTANCE["regions"][0], "racks": 4, "kw_per_rack": 25}]}
    instance = validate_instance(data, "two-peaks-racks.yaml")
    use = {12: {"h100-sxm": 29, "h200": 8}, 13: {"h100-sxm": 45}}
    hours = tuple(
        Hour(
            hour=h,
            period=h,
            gpus=tuple(HourGpus(region="us-east", gpu=g, used=n) for g, n in held.items()),
        )
        for h, held in use.items()
    )
    stated = RegionPower(region="us-east", kw=0.0, racks=(48 + 8) / 16, limit_racks=4)
    (power,) = month_power(instance, hours, (stated,))
    assert power.racks == pytest.approx(48 / 16)  # 13:00's 3.0, not the peaks' 3.5
    assert power.kw == pytest.approx(6 * SERVER_KW)  # the same hour's 61.2 kW
    assert busiest_hour_racks(instance, "us-east", hours) == pytest.approx(48 / 16)
