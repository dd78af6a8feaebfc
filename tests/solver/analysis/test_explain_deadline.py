"""explain past its deadline keeps what it has: the re-solves stop starting, the pools
left out say so, and the plan and the re-solves done stay. Before, a re-solve ending
0.1 s past the limit threw the whole explanation of a proven plan away (exit 4 after
120 s on instances/procurement-3region.yaml)."""

import time
from dataclasses import replace

import pytest

import solver.analysis.explain as explain_module
from models.io.loading import load_instance
from solver.analysis.explain import (
    EFFECTS_CUT,
    EFFECTS_PAST_DEADLINE,
    NOT_RESOLVED,
    _engine_effects,
    explain_solved,
)
from solver.settings import Deadline, SolveSettings
from solver.simulate import effects
from solver.solve import solve_program
from tests.paths import INSTANCES

SMALL = INSTANCES / "region-loss-3.yaml"


def _solved_with_deadline(limit_s: float):
    instance = load_instance(SMALL)
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    deadline = Deadline(time.monotonic(), limit_s)
    return replace(solved, settings=replace(solved.settings, deadline=deadline))


def test_an_expired_deadline_keeps_the_plan_and_names_every_pool_not_resolved():
    solved = _solved_with_deadline(1.0)
    time.sleep(1.05)  # the deadline has passed before explain starts
    explanation = explain_solved(solved)
    assert explanation.plan == solved.plan
    assert explanation.cost_per_month == solved.plan.cost_per_month
    chosen = [p for p in solved.plan.replicas if not p.shared]
    assert len(explanation.alternatives) == len(chosen) > 0
    assert all(a.replaced_by == (NOT_RESOLVED,) for a in explanation.alternatives)
    assert all(a.cost_without_per_month is None for a in explanation.alternatives)
    assert explanation.engine_effects == ()  # its replays do not start past the deadline
    assert explanation.engine_effects_method == EFFECTS_PAST_DEADLINE


def test_a_deadline_passing_after_the_first_re_solve_keeps_that_one(monkeypatch):
    real = explain_module._resolve_without

    def then_wait(*args):
        result = real(*args)
        time.sleep(1.6)  # the 1.5 s deadline passes during this re-solve
        return result

    monkeypatch.setattr(explain_module, "_resolve_without", then_wait)
    solved = _solved_with_deadline(1.5)
    explanation = explain_solved(solved)
    first, *rest = explanation.alternatives
    assert rest, "region-loss-3 chooses a pool in each of its three regions"
    assert first.replaced_by != (NOT_RESOLVED,)
    assert all(a.replaced_by == (NOT_RESOLVED,) for a in rest)


class _PassingAfter:
    """A deadline that passes at its `calls`-th question."""

    def __init__(self, calls: int):
        self.calls, self.asked = calls, 0

    def expired(self) -> bool:
        self.asked += 1
        return self.asked >= self.calls


def test_a_deadline_passing_during_the_replay_names_the_pools_left_out(monkeypatch):
    # asked once before the replay, then before each pool and each run with an effect off
    # (1 + 4 per pool of one configuration): passing at the 7th question, the first pool is
    # replayed, and the method names every later one. The questions are counted, not
    # timed, so each run is 10 s of arrivals, not explain's 120 (its CPU time 2.3 -> 0.3 s)
    real = effects.effects_until
    monkeypatch.setattr(effects, "effects_until", lambda *args: real(*args, duration_s=10.0))
    solved = _solved_with_deadline(60.0)
    settings = replace(solved.settings, deadline=_PassingAfter(7))
    found = _engine_effects(solved.program.sets.instance, solved.plan, settings)
    assert len(found["engine_effects"]) == 1
    method = found["engine_effects_method"]
    cut = EFFECTS_CUT.split("{")[0]
    assert cut in method
    left_out = method.split(cut)[1].split(", ")
    assert len(left_out) >= 2  # region-loss-3: a pool in each of its three regions


@pytest.mark.usefixtures("no_engine_effects")
def test_the_re_solves_take_only_the_cores_the_levers_beside_them_leave(monkeypatch):
    # 2 workers would be started (patched: an idle machine, programs worth it), but the
    # levers already solve on every core but this process's: one at a time, here
    monkeypatch.setattr(explain_module, "processes_for", lambda jobs: 2)
    monkeypatch.setattr(explain_module, "worth_parallel", lambda programs: True)
    solved = _solved_with_deadline(60.0)
    told: list[str] = []
    busy = explain_module.machine_threads()
    explanation = explain_solved(solved, progress=told.append, busy=busy)
    assert told[0].endswith(", 1 at a time")
    assert all(a.replaced_by != (NOT_RESOLVED,) for a in explanation.alternatives)


def test_the_limits_re_solve_whose_build_passes_the_deadline_is_not_found_in_time():
    """What max_configs_per_pool costs, asked once the deadline has passed (a deadline
    100 s old of 60 s): its program's build stops (TimeLimitReached in "program build"),
    and the cost with the limit lifted is not found in time (None), where that escaped
    explain as exit 4 ('no explanation') with the plan in hand."""
    from tests.paths import ONE_MODEL_ONE_REGION
    from tests.synthetic import with_policy

    instance = with_policy(load_instance(ONE_MODEL_ONE_REGION), max_configs_per_pool=1)
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    late = replace(solved.settings, deadline=Deadline(time.monotonic() - 100.0, 60.0))
    program = solved.program
    found = explain_module._simplicity(program, solved.plan, late, program.sets.table)
    assert found is not None and found.max_configs_per_pool == 1
    assert found.cost_per_month_unlimited is None and found.extra_cost_per_month is None
