"""A lever that only adds options is a relaxing lever (lever_edits.Lever.relaxes): every
plan of the instance is a plan of the lever's at the same cost, so its re-solve starts
from the base plan and a stop on a dearer plan reports the base (lever_solve.base_is_better).
'precision one step down' adds the next lower weight precision beside the ones allowed
and was not marked so: growth-horizon's lever table read it at $64,767/month, saving
-$21,464 (44 GPUs where the base holds 24; its re-solve stopped at a 60% gap).

Hand case: tests/solver/time/test_whole_servers.py's r1 day at P = 11.7 q on Llama 3.1 8B
fp8; the lever allows fp4 as well."""

import pytest

from models.physics.precision import Precision
from solver.analysis.lever_edits import levers_for
from solver.solve import solve
from solver.verify.hours import verify_any
from tests.solver.time.test_whole_servers import DAYS, ON_DEMAND, RESERVED, _instance, _lone_rps

BASE_PER_DAY = 24 * 8 * RESERVED + 12 * 8 * ON_DEMAND  # tests/solver/time/test_time_levers.py


def test_a_lower_precision_allowed_beside_the_others_relaxes_the_question():
    instance = _instance({"r1": 11.7 * _lone_rps()})
    (lever,) = [lever for lever in levers_for(instance) if lever.name == "precision one step down"]
    assert lever.relaxes
    loosened = lever.apply(instance)
    assert loosened is not None
    (model,) = loosened.models
    assert set(model.weight_precisions) == {Precision.FP8, Precision.FP4}
    base = solve(instance)
    assert base.cost_per_month == pytest.approx(DAYS * BASE_PER_DAY, abs=0.005)  # 422.4 $/day
    check = verify_any(loosened, base)  # the fp8 fleet serves the question with fp4 allowed
    assert check.ok, check.violations
