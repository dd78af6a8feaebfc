"""A limit binds in whole units where its slack is less than one unit of what uses it:
the pricing LP keeps the plan's servers, so such a row has slack and no price, yet the
next server does not fit (solver.plan.binding). procurement-3region's us-east in month
11 held 81.6 of 88 kW, one more 8-GPU server draws 10.2 kW, and its power read $0/kW.

Hand case: Llama 3.1 8B fp8 TP1 on H100 (700 W), bought in 8-GPU servers, one server
per region (demand of 4 GPUs: tests.solver.time.test_months' q(1) is one GPU's rate).
A server draws 8 x 0.7 kW x 10.2 / 5.6 (server factor) x PUE 1.0 = 10.2 kW."""

from functools import cache

import pytest

from cli.render.plan_tables import plan_tables
from models.io.loading import validate_instance
from solver.program.lp import LinearProgram, Sense
from solver.readback.pricing import integer_links, whole_unit
from solver.solve import solve
from tests.solver.time.test_months import _data, _lone_rps

SERVER_KW = 8 * 0.7 * (10.2 / (8 * 0.7)) * 1.0  # 10.2 kW


@cache
def _plan():
    return solve(validate_instance(_instance_data(), "whole-units.yaml"))


def _instance_data() -> dict:
    data = _data(3.5 * _lone_rps(), 0.0, 0, 1)
    del data["policy"]["horizon_months"], data["policy"]["monthly_growth"]
    del data["policy"]["lead_time_months"]
    data["policy"]["buy_unit"] = "node"
    (r1,) = data["regions"]
    del r1["supply"]["h100-sxm"]["reserved_price_per_gpu_hour"]  # one price: $2/GPU-hour
    r1["power_kw"] = 15.0  # one server (10.2 kW) leaves 4.8: a second does not fit
    r2 = {**r1, "name": "r2", "power_kw": 25.0}  # leaves 14.8: a second server fits
    data["regions"] = [r1, r2]
    chat = data["workloads"][0]
    chat["demand"] = {r: {"peak_requests_per_s": 3.5 * _lone_rps()} for r in ("r1", "r2")}
    return data


def test_a_power_cap_that_leaves_less_than_a_server_binds_in_whole_units():
    plan = _plan()
    power = {p.region: p for p in plan.power_kw}
    assert power["r1"].kw == pytest.approx(SERVER_KW)  # ceil(4 / 8) = 1 server
    assert power["r1"].whole_unit_kw == pytest.approx(SERVER_KW)
    assert power["r1"].slack_kw == pytest.approx(15.0 - SERVER_KW)  # 4.8 kW
    assert power["r2"].whole_unit_kw == 0.0  # 25 - 10.2 = 14.8 > 10.2
    (row,) = [b for b in plan.binding if b.in_whole_units]
    assert row.name == "power[r1]" and row.shadow_price == 0.0
    assert row.slack == pytest.approx(15.0 - SERVER_KW)
    assert row.whole_unit == pytest.approx(SERVER_KW)
    assert row.whole_unit_of == "one 8-GPU h100-sxm server"
    assert plan.summary is not None and row in plan.summary.binding
    tables = {t.title: t for t in plan_tables(plan)}
    said = [r for r in tables["Binding constraints"].rows if r[0] == "power[r1]"]
    assert "in whole units: 4.80 kW left, less than one 8-GPU h100-sxm server" in said[0][2]
    assert any("binds in whole units" in r[1] for r in tables["Summary"].rows)
    (r1_power,) = [
        r
        for r in tables["Power by region (every GPU installed, existing and bought)"].rows
        if r[0] == "r1"
    ]
    assert r1_power[3].startswith("in whole units: 4.8 kW left")


def test_whole_unit_steps_by_hand():
    lp = LinearProgram("hand")
    for name in ("x", "y", "servers"):
        lp.add_variable(name, integer=True)
    lp.add_variable("purchased")
    lp.add_variable("load")
    lp.add_constraint("link", "whole_servers", {"purchased": 1, "servers": -8}, Sense.EQ, 0)
    gpus = lp.add_constraint("supply", "gpu_supply", {"x": 2, "y": 3}, Sense.LE, 10)
    kw = lp.add_constraint("power", "power", {"purchased": 1.275}, Sense.LE, 88)
    mixed = lp.add_constraint("mixed", "gpu_supply", {"x": 2, "load": 1}, Sense.LE, 10)
    links = integer_links(lp)
    assert links == {"purchased": (8.0, "servers")}
    # 2 x 3 + 3 x 1 = 9 of 10: 1 left, less than one x (2): binds in whole units
    assert whole_unit(lp, gpus, {"x": 3, "y": 1}, links) == (2.0, "one x")
    # 2 x 2 + 3 x 1 = 7 of 10: 3 left, one x (2) still fits
    assert whole_unit(lp, gpus, {"x": 2, "y": 1}, links) is None
    # 64 GPUs x 1.275 kW = 81.6 of 88: 6.4 kW left < one server's 8 x 1.275 = 10.2 kW
    step = whole_unit(lp, kw, {"purchased": 64, "servers": 8}, links)
    assert step is not None and step[0] == pytest.approx(10.2) and step[1] == "one servers"
    # a continuous column can take any part of the slack
    assert whole_unit(lp, mixed, {"x": 4, "load": 1.0}, links) is None


def test_a_month_whose_cap_binds_in_whole_units_says_so():
    """procurement-3region's month 11 by hand: 8 servers x 10.2 kW = 81.6 of 88 kW, 6.4
    kW left, less than a ninth server's 10.2 kW; month 0 has room (61.2 of 88)."""
    from cli.render.summary_tables import summary_table
    from cli.render.time_tables import month_power_table
    from solver.plan.binding import Binding
    from solver.plan.records import RegionPower
    from solver.plan.schema import Plan
    from solver.plan.summary import buyer_summary
    from solver.plan.time_records import Month

    room = RegionPower(region="us-east", kw=6 * 10.2, limit_kw=88.0, shadow_price_per_kw=0.0)
    full = room.model_copy(update={"kw": 8 * 10.2, "whole_unit_kw": 10.2, "slack_kw": 88 - 81.6})
    row = Binding(
        name="power[us-east]",
        family="power",
        slack=88 - 81.6,
        shadow_price=0.0,
        unit="$/month per kW",
        month=1,
        whole_unit=10.2,
        whole_unit_of="one 8-GPU h100-sxm server",
    )
    months = tuple(
        Month(
            month=m,
            growth_factor=1.0,
            cost_per_month=1.0,
            status="optimal",
            mip_gap=0.0,
            power_kw=(p,),
            binding=b,
        )
        for m, p, b in ((0, room, ()), (1, full, (row,)))
    )
    plan = Plan(cost_per_month=1.0, months=months, horizon_cost=2.0)
    table = month_power_table(plan)
    assert table is not None
    assert table.rows[0][1] == "61.2 of 88.0"
    assert table.rows[1][1] == (
        "81.6 of 88.0 (in whole units: 6.4 kW left, less than one more server (10.2 kW); "
        "not priced)"
    )
    plan = plan.model_copy(update={"summary": buyer_summary(plan)})
    said = dict(summary_table(plan).rows)["what binds"]
    assert said == (
        "power[us-east]: binds in whole units from month 1: 6.40 kW left, less than one "
        "8-GPU h100-sxm server (10.20 kW); not priced"
    )


def test_the_verifier_recomputes_the_whole_unit_figures():
    """r1's 4.8 kW left of one 10.2 kW server, restated as not binding, is refused."""
    from solver.verify.fleet import verify

    plan = _plan()
    inst = validate_instance(_instance_data(), "whole-units.yaml")
    ours = {"power_kw[0].whole_unit_kw", "power_kw[0].slack_kw"}
    assert verify(inst, plan).ok
    rows = tuple(
        p.model_copy(update={"whole_unit_kw": 0.0, "slack_kw": 0.0}) for p in plan.power_kw
    )
    found = verify(inst, plan.model_copy(update={"power_kw": rows})).violations
    assert {v.requirement for v in found} >= ours


def _racked(profile: list[float] | None) -> dict:
    """r1 and r2, each owning 4 H100 (half a server) in racks fed 25 kW: two 10.2 kW
    servers a rack, so a GPU takes 1 / (8 x 2) = 0.0625 racks and a server 0.5. Each
    region's demand needs 7 GPUs: the 4 it owns and one 8-GPU server bought."""
    data = _instance_data()
    for region, racks in zip(data["regions"], (1, 2), strict=True):
        del region["power_kw"]
        region.update(racks=racks, kw_per_rack=25.0, existing={"h100-sxm": 4})
    data["workloads"][0]["demand"] = {
        r: {"peak_requests_per_s": 6.5 * _lone_rps()}
        | ({} if profile is None else {"hourly_profile": profile})
        for r in ("r1", "r2")
    }
    return data


@pytest.mark.parametrize("profile", [None, [1.0] * 24], ids=["peak hour", "hourly"])
def test_a_rack_limit_that_leaves_less_than_a_server_binds_in_whole_units(profile):
    """r1: (4 + 8) x 0.0625 = 0.75 of its 1 rack, 0.25 left, less than one more server's
    0.5: it binds in whole units. r2: 0.75 of 2, 1.25 left, room for two more. Before, a
    rack row was left out of the whole-unit rule (its kW twin, power, has its own) and
    not read by that one either: the binding report never named a rack limit so."""
    plan = solve(validate_instance(_racked(profile), "racks.yaml"))
    assert {p.region: p.racks for p in plan.power_kw} == pytest.approx({"r1": 0.75, "r2": 0.75})
    (row,) = [b for b in plan.binding if b.in_whole_units]
    assert row.name == "rack_space[r1]" and row.shadow_price == 0.0
    assert row.slack == pytest.approx(1 - 12 * 0.0625)  # 0.25 racks
    assert row.whole_unit == pytest.approx(8 * 0.0625)  # 0.5 racks
    assert row.whole_unit_of == "one 8-GPU h100-sxm server"
    tables = {t.title: t for t in plan_tables(plan)}
    said = [r for r in tables["Binding constraints"].rows if r[0] == "rack_space[r1]"]
    assert said[0][2] == (
        "in whole units: 0.25 rack left, less than one 8-GPU h100-sxm server (0.50 rack); "
        "not priced"
    )
