"""verify of a plan of months lists the scenario checks of every month it checks, as it
lists every month's violations: month m's hours are judged against month m's demand, so
its checks are counted and named (month[m].none@t00). Before, the checks held month 0's
alone: mo (two regions, three scenarios, 3 months) read '72 scenario checks' where it
checked 3 x 24 x 3 = 216, and month 2's demand appeared nowhere in verify --json."""

from models.io.loading import validate_instance
from models.operations.procurement import month_instance
from solver.solve import solve
from solver.verify.hours import verify_hours
from tests.solver.time.test_months import _data, _lone_rps

HORIZON = 3
GROWTH = 0.10


def test_every_month_s_checks_are_listed_at_its_own_demand():
    rate = 2.5 * _lone_rps()
    instance = validate_instance(_data(rate, GROWTH, 0, HORIZON), "months.yaml")
    plan = solve(instance)
    result = verify_hours(instance, plan)
    assert result.ok, result.violations
    # one region, scenario none, 24 hours a month: 24 checks a month
    assert len(result.checks) == HORIZON * 24
    for month in range(1, HORIZON):
        mine = [c for c in result.checks if c.scenario.startswith(f"month[{month}].")]
        assert len(mine) == 24
        # a flat day: every hour asks the month's rate, 2.5 q x 1.1^m
        grown = month_instance(instance, month).workload("chat").demand["r1"].peak_rps
        assert grown == rate * (1 + GROWTH) ** month
        assert all(abs(c.demand_requests_per_s - grown) < 1e-9 * grown for c in mine)
