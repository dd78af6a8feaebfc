"""compare's '$/GPU-hour (blended over GPUs paid)' divides the bill by the GPU-hours it
pays: for an hourly plan, each hour's committed, owned-in-use, on-demand and spot GPUs
(solver.analysis.paid.gpu_hours_paid), not the busiest hour's GPUs held all month.

Before, growth-horizon's month 0 ($26,163: 16 committed H100 at $1.44 and $1.74, the peak
rented at $2.40) read $1.49 per GPU-hour, below every price it pays; its hours pay 488
GPU-hours a day, $1.76 each."""

import pytest

from models.io.loading import validate_instance
from solver.analysis.compare import side_of
from solver.solve import solve
from tests.solver.time.test_months import ON_DEMAND, _data, _lone_rps


def test_a_fleet_rented_by_the_hour_at_one_price_blends_to_that_price():
    # no reserved price: every GPU-hour is rented on demand at ON_DEMAND = $2.00, so the
    # bill over the GPU-hours it pays is exactly $2.00 whatever the day's shape
    q = _lone_rps()
    data = _data(10.5 * q, 0.0, 0, 1)
    del data["regions"][0]["supply"]["h100-sxm"]["reserved_price_per_gpu_hour"]
    data["workloads"][0]["demand"]["r1"]["hourly_profile"] = [1] * 8 + [2, 3] + [4] * 14
    instance = validate_instance(data, "rented.yaml")
    plan = solve(instance)
    used = [sum(g.used for g in h.gpus) for h in plan.hours]
    assert min(used) < max(used)  # the trough rents fewer GPUs than the peak
    side = side_of(instance, plan, "solved")
    assert side.usd_per_gpu_hour == pytest.approx(ON_DEMAND)  # read 2.00 x mean / peak
