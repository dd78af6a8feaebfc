"""A plan the solve hands back after the run's deadline has passed is kept: the answer
is judged (solver.stages.solution) once the solve has one, and the deadline no longer
throws it away (solver.solve's text). Before, solution() checked the run's deadline after
a plan was in hand and raised TimeLimitReached (exit 4): a backend or a held fleet's
last plan that ended past the limit lost the plan of a peak hour, a day or a month.

The clock is not waited on: the deadline's clock jumps past the limit once the backend
has answered the program, as a solve that ended late would leave it."""

import types

from models.io.loading import load_instance, validate_instance
from solver import settings as settings_module
from solver import solve as pipeline
from solver.settings import SolveSettings
from solver.solve import solve_program
from solver.verify.hours import verify_hours
from tests.solver.decompose.test_by_period import _base


class _Late:
    """The real backend; once it has answered the program solved (a day's periods
    program, `*-hours`, past its build: the peak plan beside the build is not it) the
    clock reads past the limit."""

    def __init__(self, real, late, solved):
        self.real, self.late, self.solved = real, late, solved

    def __getattr__(self, name):
        return getattr(self.real, name)

    def run(self, lp, settings, start=None):
        found = self.real.run(lp, settings, start=start)
        if self.solved in lp.name:
            self.late()
        return found


def _late_clock(monkeypatch, solved: str = "") -> None:
    """The deadline's clock jumps 10^6 s once the backend has answered a program whose
    name holds `solved`."""
    real = settings_module.time.monotonic
    offset = [0.0]
    clock = types.SimpleNamespace(monotonic=lambda: real() + offset[0])
    monkeypatch.setattr(settings_module, "time", clock)
    backend = pipeline.get_backend

    def late() -> None:
        offset[0] = 1e6

    monkeypatch.setattr(pipeline, "get_backend", lambda name: _Late(backend(name), late, solved))


def test_a_peak_hour_plan_solved_past_the_limit_is_kept(monkeypatch):
    """tests/fixtures/one-model-one-region.yaml at a 60 s limit, its solve answered at
    10^6 s: the plan is returned and verified, and says its verification ended past the
    limit (solver.stages.verified's note)."""
    _late_clock(monkeypatch)
    inst = load_instance("tests/fixtures/one-model-one-region.yaml")
    plan = solve_program(inst, SolveSettings.of(inst)).plan
    assert plan.replicas and plan.cost_per_month > 0
    assert any("past the 60 s limit" in note for note in plan.notes)


def test_an_hourly_plan_solved_past_the_limit_is_kept(monkeypatch):
    """The two-region hourly day (tests/solver/decompose/test_by_period), its periods
    program's first answer at 10^6 s: the day's plan is returned, verified by the hour
    verifier."""
    _late_clock(monkeypatch, "-hours")
    inst = validate_instance(_base(), "periods.yaml")
    plan = solve_program(inst, SolveSettings.of(inst, mip_gap=1e-3)).plan
    assert plan.hours and plan.cost_per_month > 0
    assert verify_hours(inst, plan).ok
