"""An hourly lever that only loosens the question starts from the base plan, where that
is a plan of its periods program, and answers as it does without the start."""

import yaml

from models.io.loading import validate_instance
from solver.analysis.lever_edits import allow_gpu, looser_slo
from solver.analysis.lever_solve import solve_lever
from solver.program.lp import plan_of
from solver.settings import SolveSettings
from solver.solve import solve_program
from solver.time import day_choice
from tests.paths import ONE_MODEL_ONE_REGION


def _hourly():
    # one fp8 8B model on h100 in one region (tests/fixtures), its day in two levels: the
    # peak for 12 hours, half of it the other 12
    data = yaml.safe_load(ONE_MODEL_ONE_REGION.read_text())
    data["workloads"][0]["demand"]["us-east"]["hourly_profile"] = [1.0] * 12 + [0.5] * 12
    return validate_instance(data, "one-model-one-region-hourly")


def test_an_hourly_lever_that_loosens_starts_from_the_base_plan(monkeypatch):
    instance = _hourly()
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    cost = solved.plan.cost_per_month
    starts = []
    solve_periods = day_choice.solve_periods

    def recorded(lp, backend, settings, fleet=None, start=None):
        starts.append(start is not None and plan_of(lp, start))
        return solve_periods(lp, backend, settings, fleet, start)

    monkeypatch.setattr(day_choice, "solve_periods", recorded)
    h200 = allow_gpu("h200")(instance)  # an option added: the base plan is a plan of it
    alone = solve_lever("allow h200", h200, cost, None)
    started = solve_lever("allow h200", h200, cost, None, start=solved.start)
    assert starts == [False, True]  # none given, then the base plan, a plan of the lever's
    assert (started.cost_per_month, started.status) == (alone.cost_per_month, alone.status)
    assert started.cost_per_month <= cost  # an option added never costs more
    # values that are no plan of the lever's periods program (a column it lacks set to 1)
    # are not handed to the search: it begins from none, as before
    starts.clear()
    looser = looser_slo("tpot_p99_ms")(instance)
    solve_lever("TPOT +20%", looser, cost, None, start={"no such column": 1.0})
    assert starts == [False]
