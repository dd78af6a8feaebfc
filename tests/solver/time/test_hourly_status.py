"""An hourly plan's status says what the static read-back says (solver.plan.schema.
plan_status): "feasible (gap X%)" with the gap reached, and "optimal" only within the
requested gap and 1%. It said "optimal" for any OPTIMAL termination (at --mip-gap 0.5 a
plan 5.04% from its bound read "optimal") and a bare "feasible" without its gap."""

from models.io.loading import load_instance
from solver.plan.schema import OPTIMAL_GAP_CEILING, plan_status
from solver.settings import SolveSettings
from solver.solve import solve
from tests.paths import INSTANCES

REQUESTED = 0.5


def test_an_hourly_plan_at_a_loose_gap_states_the_gap_it_reached():
    instance = load_instance(INSTANCES / "diurnal-chat-batch.yaml")
    plan = solve(instance, SolveSettings.of(instance, mip_gap=REQUESTED, threads=1))
    gap = plan.solver.mip_gap
    assert plan.status == plan_status(plan.solver.termination == "optimal", gap, REQUESTED)
    if gap > OPTIMAL_GAP_CEILING:
        assert plan.status == f"feasible (gap {gap:.2%})"
    assert plan.optimal == (gap <= OPTIMAL_GAP_CEILING)
