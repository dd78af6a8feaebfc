"""The `power +1 server` lever (solver.analysis.lever_edits.more_power): what a power cap
that binds in whole units costs, which the binding report leaves unpriced.

Hand case (tests.solver.test_whole_units): two regions offering H100 (700 W) in 8-GPU
servers, server factor 10.2 / 5.6, PUE 1.0: one server draws 8 x 0.7 x 10.2 / 5.6 =
10.2 kW; r1 capped at 15 kW, r2 at 25 kW."""

import pytest

from models.io.loading import validate_instance
from solver.analysis.lever_edits import levers_for, more_power
from tests.solver.test_whole_units import SERVER_KW, _instance_data


def _instance(**caps):
    data = _instance_data()
    for region in data["regions"]:
        if region["name"] in caps:
            region["power_kw"] = caps[region["name"]]
            if caps[region["name"]] is None:
                del region["power_kw"]
    return validate_instance(data, "power-lever.yaml")


def test_each_cap_rises_by_one_server_of_its_region():
    raised = more_power(_instance())
    caps = {r.name: r.power_kw for r in raised.regions}
    assert caps["r1"] == pytest.approx(15.0 + SERVER_KW)  # 25.2 kW: a second server fits
    assert caps["r2"] == pytest.approx(25.0 + SERVER_KW)  # 35.2 kW


def test_a_region_without_a_cap_keeps_none():
    raised = more_power(_instance(r2=None))
    caps = {r.name: r.power_kw for r in raised.regions}
    assert caps == {"r1": pytest.approx(15.0 + SERVER_KW), "r2": None}


def test_the_lever_applies_only_where_some_region_sets_a_cap():
    with_caps = [lever.name for lever in levers_for(_instance())]
    assert "power +1 server" in with_caps
    uncapped = _instance(r1=None, r2=None)
    assert more_power(uncapped) is None
    assert "power +1 server" not in [lever.name for lever in levers_for(uncapped)]


def test_the_pue_scales_the_server_it_adds():
    data = _instance_data()
    data["policy"]["pue"] = 1.5  # facility kW = IT kW x 1.5: 10.2 x 1.5 = 15.3 kW
    raised = more_power(validate_instance(data, "pue.yaml"))
    assert {r.name: r.power_kw for r in raised.regions} == {
        "r1": pytest.approx(15.0 + 1.5 * SERVER_KW),
        "r2": pytest.approx(25.0 + 1.5 * SERVER_KW),
    }
