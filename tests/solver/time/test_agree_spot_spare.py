"""With survive: replica, a spot pool keeps its load without one replica on top of its
spot replicas down: the spot margin -q_top (u spot + beta spot_open) is charged in the
rows without one replica (replica_spare, group_spare) as in the capacity rows, as the
hour verifier takes the spot replicas down before it checks a replica's loss.

Before: only the capacity rows carried it, so a plan could hold its spare only while
no spot replica was down, and the verifier rejected it now and then (the rounds' plan
depends on timing): solve exit 70 on a 2-region hourly instance with spot, reserved
prices and disaggregation ('replica_spare[w01,r01,unified,h200.fp8.tp4pp1.unified]@t06:
r01 serves 4.04 requests/s of w01; without one replica of h200 fp8 tp4xpp1 unified it
carries 2.59')."""

from models.io.loading import validate_instance
from solver.candidates.table import build_candidates
from solver.program.row_names import split_timed
from solver.solve import solve
from solver.time.periods import build_time_program
from tests.solver.time.test_spot_pools import _instance

PROFILE = [1.0] * 12 + [3.0] * 12


def _spare_spot():
    data = _instance(0.99).model_dump(mode="json", exclude_unset=True)
    data["policy"]["survive"] = "replica"
    data["workloads"][0]["demand"]["r1"]["hourly_profile"] = PROFILE
    return validate_instance(data, "spot-spare.yaml")


def test_the_spare_rows_charge_the_spot_margin():
    inst = _spare_spot()
    lp = build_time_program(inst, build_candidates(inst)).lp
    spot_columns = [name for name in lp.variables if name.startswith("spot[")]
    assert spot_columns
    spare_rows = [r for name, r in lp.constraints.items() if name.startswith("replica_spare[")]
    assert spare_rows
    for row in spare_rows:
        _, period, _ = split_timed(row.name)
        mine = [c for c in spot_columns if split_timed(c)[1] == period]
        # every spot column of the period's pools (one workload, one region here)
        assert mine and all(row.coefficients.get(c, 0.0) < 0 for c in mine), row.name


def test_a_spot_plan_with_a_spare_passes_the_hour_verifier():
    plan = solve(_spare_spot())  # the hour verifier runs inside (PlanRejected)
    assert any(hour.spot_pools for hour in plan.hours)
