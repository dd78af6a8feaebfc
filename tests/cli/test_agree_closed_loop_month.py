"""simulate's guard on a closed loop's size counts the replicas of the hour it replays
(--month, --hour), where it counted month 0's peak fleet: a later month's larger fleet
passed the 500,000-request limit unchecked.

test_months' hand case (Llama 3.1 8B TP1, 10.5 q growing 10% a month over 4 months):
month 0 runs ceil(10.5) = 11 replicas, month 3 ceil(10.5 x 1.1^3) = ceil(13.98) = 14. At
4,000 users each sending 10 requests: 4,000 x 11 x 10 = 440,000 (within 500,000),
4,000 x 14 x 10 = 560,000 (past it)."""

import pytest

from cli.simulate import _check_closed_loop_size
from models.io.loading import validate_instance
from models.schema.errors import InputError
from solver.solve import solve
from tests.solver.time.test_months import _data, _lone_rps


def test_a_later_month_s_closed_loop_is_sized_by_its_own_replicas():
    plan = solve(validate_instance(_data(10.5 * _lone_rps(), 0.10, 0, 4), "months.yaml"))
    assert sum(p.count for p in plan.replicas) == 11
    _check_closed_loop_size(plan, 4_000)  # month 0's peak: 440,000 requests
    _check_closed_loop_size(plan, 4_000, month=0)
    with pytest.raises(InputError, match="14 replicas replayed send 560,000"):
        _check_closed_loop_size(plan, 4_000, month=3)
