"""A sweep checks each plan of months at every point with that point's growth: a month's
growth factor is the point's demand, as a static or hourly plan's loads are, so a plan of
faster growth serves slower growth (its months carry more than the slower months ask).

Before, the sweep kept the growth factor each month states at its own point, and the
verifier held the plan to it: an 8B chat on a 1-to-4 day swept over monthly_growth
0.1 / 0.15 on a 3-month horizon read no robust choice, the 0.15 plan failing 0.1 on
'month[1].growth_factor: states 1.15; the largest (1 + g)^m of the workloads is 1.1'.

Hand case (tests.solver.time.test_months): Llama 3.1 8B fp8 TP1, KV-limited (q a GPU), a
flat day of 10.5 q over 3 months: at 10% a month 10.5, 11.55, 12.705 q need 11, 12, 13
GPUs; at 20%, 10.5, 12.6, 15.12 q need 11, 13, 16. The 20% plan carries the 10% months;
the 10% plan's 12 GPUs in month 1 do not carry 12.6 q."""

from functools import cache

import pytest

from models.io.loading import validate_instance
from solver.plan.schema import Plan
from solver.studies.sweep import check_plans, solve_point
from solver.time.reprice import at_prices
from tests.solver.time.test_months import _data, _lone_rps


@cache
def _instance(growth: float):
    return validate_instance(_data(10.5 * _lone_rps(), growth, 0, 3), f"g{growth}.yaml")


def test_a_plan_of_faster_growth_serves_slower_growth():
    records = {0: solve_point(_instance(0.1)), 1: solve_point(_instance(0.2))}
    checks = check_plans(records, {0: _instance(0.1), 1: _instance(0.2)})
    fast = next(c for c in checks if 1 in c.chosen_at)
    slow = next(c for c in checks if 0 in c.chosen_at)
    assert fast.serves == (0, 1), fast.failure
    assert slow.fails == (1,) and "cannot be served" in slow.failure[1]
    plan = Plan.model_validate({k: records[1][k] for k in ("hours", "committed", "months")})
    assert [m.growth_factor for m in plan.months] == pytest.approx([1, 1.2, 1.2**2])
    restated = at_prices(_instance(0.1), plan)
    assert [m.growth_factor for m in restated.months] == pytest.approx([1, 1.1, 1.1**2])
