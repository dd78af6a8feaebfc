"""explain's slack by constraint family agrees with the plan it explains: on an hourly
plan the rows are the periods program's, which credit the replicas started after a loss.
The peak period's static program has no such columns, so its capacity rows read the
warm survivors alone: two regions (60 and 40 requests/s, failover_start_s 0, every
loss carried by started spare) read a min slack of -59.3 requests/s where the plan
carries each loss with 22 to spare."""

import pytest

from solver.analysis.explain import _family_slack
from solver.solve import solve_program
from tests.solver.time.test_failover_start import _instance


@pytest.fixture(scope="module")
def started_spare():
    """The plan whose region losses are carried by spare started at once."""
    return solve_program(_instance(start_s=0))


def test_a_feasible_hourly_plan_has_no_negative_slack(started_spare):
    assert any(hour.failover_starts for hour in started_spare.plan.hours)  # started spare
    families = {f.family: f for f in _family_slack(started_spare)}
    assert families["capacity"].min_slack >= -1e-6
    assert all(f.min_slack >= -1e-6 for f in families.values())


def test_its_capacity_rows_are_every_period_s(started_spare):
    # Per period: 'none' in r1 and r2, each loss in the one survivor: 2 + 1 + 1 = 4 rows.
    periods = len(started_spare.time_step.program.periods)
    families = {f.family: f for f in _family_slack(started_spare)}
    assert families["capacity"].rows == 4 * periods
