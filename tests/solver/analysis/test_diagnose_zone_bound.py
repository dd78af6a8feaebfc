"""The pre-solve flow check bounds a region that loses a zone by the zone spread: with N
zones, what its full supply carries over N / (N - 1) (`zone_loss_overprovision_factor`)."""

from types import SimpleNamespace

import pytest

from models.operations.scenarios import Scenario, ScenarioKind
from solver.analysis.diagnose import _flow_shortfall


@pytest.mark.parametrize(
    ("zones", "left"),
    [
        (3, "80.0"),  # 120 req/s at full supply / (3 / 2) = 80
        (2, "60.0"),  # 120 / (2 / 1) = 60
        (4, "90.0"),  # 120 / (4 / 3) = 90
    ],
)
def test_a_zone_loss_leaves_the_full_supply_over_the_zone_spread(zones, left):
    sets = SimpleNamespace(zones={"east": zones})
    lose_a_zone = Scenario("lose=east/zone", ScenarioKind.ZONE, "east")
    (problem,) = _flow_shortfall(
        sets,
        lose_a_zone,
        "chat",
        origins={"east": 100.0},
        reach={"east": [("east", 0.0)]},
        full={"east": 120.0},
    )
    assert f"at most {left} can be served" in str(problem)
    assert f"east {left}" in str(problem)


def test_a_zone_loss_that_leaves_enough_is_no_problem():
    # 3 zones: 160 / (3 / 2) = 106.7 >= 100 requests/s.
    sets = SimpleNamespace(zones={"east": 3})
    lose_a_zone = Scenario("lose=east/zone", ScenarioKind.ZONE, "east")
    assert (
        _flow_shortfall(
            sets, lose_a_zone, "chat", {"east": 100.0}, {"east": [("east", 0.0)]}, {"east": 160.0}
        )
        == []
    )
