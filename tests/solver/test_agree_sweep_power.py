"""A sweep checks each plan of months at every point with that point's power terms: a
month's kW in its busiest hour (PUE, server power factor) and the region's cap are
consequences of the point, and the verifier judges whether the fleet fits the cap.

Before, the sweep kept the power each month states at its own point, and the verifier
held the plan to it: an 8B chat on a 1-to-4 day over 3 months in a region of power_kw
30, swept over pue 1.1 / 1.3 (or power_kw 30 / 40), chose the same $5,840 fleet at both
points and read no robust choice, each plan failing the other on
'months[0].power_kw[0].kw: east: states 2.805 kW; its busiest hour draws 3.315'.

Hand case (tests.solver.time.test_months): Llama 3.1 8B fp8 TP1 on H100 (700 W),
KV-limited, a flat day of 10.5 q growing 10% a month over 3 months: 11, 12, 13 GPUs,
bought by the GPU. Month m draws its GPUs x 0.7 kW x 10.2 / 5.6 (server factor) x PUE."""

from functools import cache

import pytest

from models.io.loading import validate_instance
from solver.plan.schema import Plan
from solver.studies.sweep import check_plans, solve_point
from solver.time.reprice import at_prices
from tests.solver.time.test_months import _data, _lone_rps

GPUS = [11, 12, 13]
SERVER_FACTOR = 10.2 / (8 * 0.7)
"""models.operations.site.SERVER_POWER_FACTOR: a DGX H100's 10.2 kW over its 8 x 700 W."""


@cache
def _instance(pue: float, cap: float):
    data = _data(10.5 * _lone_rps(), 0.10, 0, 3)
    data["regions"][0].update(pue=pue, power_kw=cap)
    return validate_instance(data, f"pue{pue}-cap{cap}.yaml")


def test_a_plan_of_months_serves_points_of_other_power_terms():
    points = {0: _instance(1.1, 30.0), 1: _instance(1.3, 40.0)}
    records = {i: solve_point(inst) for i, inst in points.items()}
    for check in check_plans(records, points):
        assert check.serves == (0, 1), check.failure
    plan = Plan.model_validate({k: records[0][k] for k in ("hours", "committed", "months")})
    restated = at_prices(points[1], plan)
    for month, gpus in zip(restated.months, GPUS, strict=True):
        (row,) = month.power_kw
        assert row.kw == pytest.approx(gpus * 0.7 * SERVER_FACTOR * 1.3)  # was x 1.1
        assert row.limit_kw == 40.0 and row.shadow_price_per_kw is not None


def test_a_cap_below_the_busiest_month_still_fails_the_point():
    # month 2's 13 GPUs draw 13 x 0.7 x 10.2 / 5.6 x 1.0 = 16.6 kW, over a 15 kW cap
    records = {0: solve_point(_instance(1.0, 30.0))}
    (check,) = check_plans(records, {0: _instance(1.0, 30.0), 1: _instance(1.0, 15.0)})
    assert check.serves == (0,) and check.fails == (1,)
