"""A sweep over an hourly instance (solver.studies.sweep): each point's plan is checked
against every point by the hour verifier on its hours, so a plan serves at least its own
point, and the larger fleet serves the smaller point too.

The flat-day case of test_months: Llama 3.1 8B fp8 at TP 1, KV-limited, so a rate of
k x q(1) needs ceil(k) GPUs in every hour."""

from models.io.loading import validate_instance
from solver.studies.sweep import check_plans, robust_choice, solve_point
from tests.solver.time.test_months import _data, _lone_rps


def test_each_hourly_plan_serves_its_own_point_and_the_larger_serves_both():
    q = _lone_rps()
    points = {
        index: validate_instance(_data(k * q, 0.0, 0, 1), f"point{index}.yaml")
        for index, k in enumerate((5.5, 10.5))  # ceil: 6 and 11 GPUs
    }
    records = {index: solve_point(instance) for index, instance in points.items()}
    assert [records[i]["total_gpus"] for i in (0, 1)] == [6, 11]
    checks = {c.chosen_at: c for c in check_plans(records, points)}
    # before: the peak pools alone went to the hour verifier ("needs UTC hours 0-23"),
    # so no plan served even its own point
    assert checks[(0,)].serves == (0,) and checks[(0,)].fails == (1,)
    assert checks[(1,)].serves == (0, 1)
    assert robust_choice(checks.values()) == checks[(1,)]
