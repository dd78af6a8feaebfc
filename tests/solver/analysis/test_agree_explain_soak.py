"""explain's engine-effects replay of an hourly plan replays the batch its replayed hour
soaks, as `simulate` does: it is handed the instance the plan answers (Solved.instance),
not the program's, which holds the peak period's workloads only (no batch). Before, a
chat beside a nightly batch soaked into every hour (a flat day: one period) was replayed
at hour 0 with the chat's 11 replicas alone, and the soak neither replayed nor named
(left alone at the last stop)."""

from dataclasses import replace

import solver.simulate.effects as effects_module
from models.io.loading import validate_instance
from solver.analysis.explain import explain_solved
from solver.simulate.replay import simulate_plan
from solver.solve import solve_program
from tests.solver.simulate.test_agree_simulate_soak import _with_nightly


def test_the_effects_replay_holds_the_batch_the_hour_soaks(monkeypatch):
    data = _with_nightly(0.0, 1)
    data["workloads"][0]["demand"]["r1"]["hourly_profile"] = [1] * 24  # soaked every hour
    solved = solve_program(validate_instance(data, "soak.yaml"))
    assert all(hour.batch_soak for hour in solved.plan.hours)
    handed = {}

    def replayed(instance, plan, stop, *args, **kwargs):
        handed["instance"] = instance
        return (), ()

    monkeypatch.setattr(effects_module, "effects_until", replayed)
    unproven = solved.plan.model_copy(update={"status": "feasible"})  # no re-solves
    explain_solved(replace(solved, plan=unproven))
    instance = handed["instance"]
    assert "nightly" in [w.name for w in instance.workloads]
    # with it, a replay of the plan's hour puts the soak beside the chat, naming none
    run = simulate_plan(instance, solved.plan, duration_s=5.0)
    (pool,) = run.pools
    assert [b.batch for b in pool.batch] == ["nightly"]
    assert not any("nightly" in n for n in run.not_simulated)
