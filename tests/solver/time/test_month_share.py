"""A month of a procurement horizon solves within an equal part of the solve time left
(solver.time.step.month_share)."""

import time
from dataclasses import replace

import pytest

from solver.settings import Deadline, SolveSettings
from solver.time.horizon import Horizon
from solver.time.step import month_share


def _at(elapsed_s: float, limit_s: float) -> SolveSettings:
    deadline = Deadline(time.monotonic() - elapsed_s, limit_s)
    return replace(SolveSettings(time_limit_s=limit_s), deadline=deadline)


def test_month_m_of_h_gets_the_time_left_over_the_months_left():
    """24 s of solve time, 12 s spent, month 6 of 12: 12 s over 12 - 6 = 6 months is
    2 s, so its deadline is 12 + 2 = 14 s from the start."""
    shared = month_share(_at(12.0, 24.0), Horizon(month=6, months=12))
    assert shared.deadline.limit_s == pytest.approx(14.0, abs=0.05)


def test_the_last_month_gets_all_that_is_left_and_month_0_a_twelfth():
    last = month_share(_at(20.0, 24.0), Horizon(month=11, months=12))
    assert last.deadline.limit_s == pytest.approx(24.0, abs=0.05)
    first = month_share(_at(0.0, 24.0), Horizon(month=0, months=12))
    assert first.deadline.limit_s == pytest.approx(24.0 / 12, abs=0.05)


def test_a_day_without_months_keeps_its_deadline():
    settings = _at(3.0, 24.0)
    assert month_share(settings, Horizon()) is settings


def test_a_month_its_share_leaves_without_a_plan_goes_on_within_the_rest(monkeypatch):
    """Month 3 of 12: its share ends with no plan (time limit, nothing found), so it
    is solved again with the whole solve deadline; with a plan in its share it is not."""
    from solver.program.lp import SolveResult, Termination
    from solver.program.optimised import Optimised
    from solver.time import step

    for first, calls in ((Termination.TIME_LIMIT, 2), (Termination.FEASIBLE, 1)):
        seen = []

        def answering(_program, _backend, settings, _fleet=None, first=first, seen=seen):
            seen.append(settings.deadline.limit_s)
            termination = first if len(seen) == 1 else Termination.OPTIMAL
            return Optimised(SolveResult(termination, "fake", "0", 0.0))

        monkeypatch.setattr(step, "optimise_periods", answering)
        months = step.PeriodsStep.__new__(step.PeriodsStep)
        months.horizon, months.program = Horizon(month=3, months=12), None
        months.held_fleet = None
        months.optimise(None, _at(6.0, 24.0))
        assert len(seen) == calls
        assert seen[0] == pytest.approx(6.0 + 18.0 / 9, abs=0.05)  # 18 s left over 9 months
        assert seen[-1] == (24.0 if calls == 2 else seen[0])
