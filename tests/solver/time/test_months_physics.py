"""A months solve computes each configuration's physics at a pool size once for all its
months (solver.solve runs the months within solver.candidates.pools.shared_physics):
`replica_capacity` is a pure function of its inputs, and every month's candidate table,
program and read-back ask it the same questions at their own demand."""

from collections import Counter
from unittest.mock import patch

from models.io.loading import validate_instance
from solver.candidates import pools
from solver.solve import solve
from tests.solver.time.test_months import _data


def test_no_physics_is_computed_twice_across_the_months():
    """Three months at 10% growth on a day of three levels (1, 3 and 2 x the base rate)
    with a TPOT target the pools can lift: every call of `replica_capacity` has inputs
    (configuration, traffic, targets, efficiency, pool size) no earlier call had."""
    data = _data(40.0, 0.1, 1, 3)
    data["workloads"][0]["slo"] = {"ttft_p99_ms": 1000, "tpot_p99_ms": 40}
    data["workloads"][0]["demand"]["r1"]["hourly_profile"] = [1] * 8 + [3] * 10 + [2] * 6
    calls: Counter = Counter()
    real = pools.replica_capacity

    def counted(config, mix, targets, efficiency, replicas, *fitted):
        calls[(repr(config), repr(mix), repr(targets), repr(efficiency), replicas)] += 1
        return real(config, mix, targets, efficiency, replicas, *fitted)

    with patch.object(pools, "replica_capacity", counted):
        plan = solve(validate_instance(data, "months.yaml"))
    assert len(plan.months) == 3 and calls
    assert max(calls.values()) == 1
