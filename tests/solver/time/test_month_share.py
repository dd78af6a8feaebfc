"""A month of a procurement horizon solves within an equal part of the solve time left
(solver.time.shares.month_share)."""

import time
from dataclasses import replace

import pytest

from solver.settings import Deadline, SolveSettings
from solver.time.horizon import Horizon
from solver.time.shares import kept_until, month_share


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


def test_a_month_its_share_leaves_without_a_plan_goes_on_within_one_more_part(monkeypatch):
    """Month 3 of 12: its share ends with no plan (time limit, nothing found), so it
    is solved again within one more part of what is left, 18 s over the 9 months from
    it: 6 + 18 / 9 = 8 s (the first try is faked: no time passes), so that months 4-11
    keep theirs; with a plan in its share it is not solved again."""
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
        months.held_fleet, months.settings, months.build_s = None, SolveSettings(), 0.0
        months.optimise(None, _at(6.0, 24.0))
        assert len(seen) == calls
        assert seen[0] == pytest.approx(6.0 + 18.0 / 9, abs=0.05)  # 18 s left over 9 months
        assert seen[-1] == pytest.approx(6.0 + 18.0 / 9, abs=0.05)


def test_a_later_month_shares_from_its_turn_and_keeps_its_overhead_out():
    """24 s of solve time; month 6 of 12 began its turn at 12 s (before its build) and
    the month before took 0.5 s besides its solve: its part is (24 - 12) / 6 = 2 s from
    12 s, less 0.5 s, so its solve's deadline is 13.5 s, whenever its solve starts."""
    month = Horizon(month=6, months=12, started_s=12.0, overhead_s=0.5)
    assert month_share(_at(12.4, 24.0), month).deadline.limit_s == pytest.approx(13.5, abs=0.05)


def test_a_month_whose_build_ate_its_part_still_solves_within_a_quarter_of_it():
    """Month 6 of 12 from 12 s, part 2 s, overhead 0.5 s: at 13.8 s the 13.5 s deadline
    has passed, so the solve gets MIN_SOLVE_SHARE x 2 = 0.5 s from now: 14.3 s."""
    from solver.time.shares import MIN_SOLVE_SHARE

    month = Horizon(month=6, months=12, started_s=12.0, overhead_s=0.5)
    late = month_share(_at(13.8, 24.0), month)
    assert MIN_SOLVE_SHARE == 0.25
    assert late.deadline.limit_s == pytest.approx(14.3, abs=0.05)


def test_the_last_month_keeps_its_overhead_out_of_the_limit():
    """Month 11 of 12 from 20 s, overhead 1 s: 20 + 4 / 1 - 1 = 23 s, inside the 24 s;
    and never past the limit, however little the overhead."""
    month = Horizon(month=11, months=12, started_s=20.0, overhead_s=1.0)
    assert month_share(_at(20.0, 24.0), month).deadline.limit_s == pytest.approx(23.0, abs=0.05)
    late = month_share(_at(23.5, 24.0), month)
    assert late.deadline.limit_s == pytest.approx(24.0, abs=0.05)


def test_a_month_with_no_time_left_is_solved_once_within_the_solve_deadline(monkeypatch):
    """The solve time is spent (24 s of 24) when month 3's solve starts: its share is
    spent too, so the periods program is solved once within the solve deadline (which
    answers at once), not twice."""
    from solver.program.lp import SolveResult, Termination
    from solver.program.optimised import Optimised
    from solver.time import step

    seen = []

    def answering(_program, _backend, settings, _fleet=None):
        seen.append(settings.deadline.limit_s)
        return Optimised(SolveResult(Termination.TIME_LIMIT, "fake", "0", 0.0))

    monkeypatch.setattr(step, "optimise_periods", answering)
    months = step.PeriodsStep.__new__(step.PeriodsStep)
    months.horizon = Horizon(month=3, months=12, started_s=20.0, overhead_s=3.0)
    months.program, months.held_fleet, months.held = None, None, None
    months.settings, months.build_s = SolveSettings(), 0.0
    months.optimise(None, _at(24.5, 24.0))
    assert seen == [24.0]
    assert months.optimise_s >= 0.0


def test_a_month_keeps_for_each_month_after_it_one_and_a_half_builds():
    """A 600 s run, month 3 of 12, months 1 and 2 built in 10 s and 30 s, month 3 in
    20 s: the longest build is 30 s, and the 12 - 3 - 1 = 8 months after it keep
    1.5 x 30 x 8 = 360 s, so month 3 ends by 600 - 360 = 240 s; the last month keeps
    nothing (600 s); a day without months, or a run without a limit, none."""
    from solver.time.shares import LATER_MONTH_BUILDS

    assert LATER_MONTH_BUILDS == 1.5
    month = Horizon(month=3, months=12, builds_s=(10.0, 30.0))
    assert kept_until(_at(0.0, 600.0), month, 20.0) == pytest.approx(240.0)
    last = Horizon(month=11, months=12, builds_s=(10.0,) * 11)
    assert kept_until(_at(0.0, 600.0), last, 50.0) == pytest.approx(600.0)
    assert kept_until(_at(0.0, 600.0), Horizon(), 30.0) is None
    assert kept_until(SolveSettings(), month, 30.0) is None


def test_every_month_keeps_the_horizons_verification_the_last_one_alone():
    """The same 600 s run, the horizon's verification foretold at V = 150 s
    (`Horizon.verify_s`), of which the solve share keeps (1 - 0.8) x 600 = 120 s already
    (every month's solve ends by 480 s): month 3 ends by 600 - 1.5 x 30 x 8 - 30 = 210 s,
    the last month by 600 - 30 = 570 s, where before nothing after it was kept; a
    verification within the 120 s changes nothing."""
    from solver.settings import SOLVE_SHARE

    assert SOLVE_SHARE == 0.8
    month = Horizon(month=3, months=12, builds_s=(10.0, 30.0), verify_s=150.0)
    assert kept_until(_at(0.0, 600.0), month, 20.0) == pytest.approx(600.0 - 360.0 - 30.0)
    last = Horizon(month=11, months=12, builds_s=(10.0,) * 11, verify_s=150.0)
    assert kept_until(_at(0.0, 600.0), last, 50.0) == pytest.approx(600.0 - 30.0)
    within = Horizon(month=11, months=12, builds_s=(10.0,) * 11, verify_s=120.0)
    assert kept_until(_at(0.0, 600.0), within, 50.0) == pytest.approx(600.0)


def test_month_0_of_a_long_horizon_gets_a_twelfth_not_a_hundred_and_twentieth():
    """24 s of solve time, month 0 of 120: its part is 24 / min(120, 12) = 2 s, as in
    a 12-month horizon, where over the 120 months left it was 0.2 s (growth-horizon at
    120 months and 30 s: 0.23 s of solving, a 65% gap); month 115 of 120 from 12 s
    shares the 12 s left with the 5 months left, 2.4 s; its second try likewise."""
    from solver.time.shares import SHARED_MONTHS, retry_share

    assert SHARED_MONTHS == 12
    first = month_share(_at(0.0, 24.0), Horizon(month=0, months=120))
    assert first.deadline.limit_s == pytest.approx(24.0 / 12, abs=0.05)
    late = month_share(_at(12.0, 24.0), Horizon(month=115, months=120))
    assert late.deadline.limit_s == pytest.approx(12.0 + 12.0 / 5, abs=0.05)
    again = retry_share(_at(12.0, 24.0), Horizon(month=3, months=120))
    assert again.deadline.limit_s == pytest.approx(12.0 + 12.0 / 12, abs=0.05)


def test_a_month_whose_turn_comes_past_what_the_tail_leaves_is_cut():
    """A 30 s limit, the horizon's verification foretold at 9 s: a month whose turn
    comes at 20 s is searched, at 21 s (30 - 9) and past it cut (held and grown), as
    past the limit itself; without a limit never."""
    from solver.time.shares import tail_due

    assert not tail_due(_at(20.0, 30.0), 9.0)
    assert tail_due(_at(21.0, 30.0), 9.0)
    assert tail_due(_at(31.0, 30.0), 0.0)
    assert not tail_due(SolveSettings(time_limit_s=None), 9.0)


def test_a_month_stopped_by_its_share_says_so_and_how_much_of_the_limit_it_used():
    """Month 46's share of a 60 s limit ended at 20.6 s: 20.6 / 60 = 34% of the limit
    used; past the limit, or without a share, the limit's own words."""
    from solver.settings import TimeLimitReached, reached

    said = reached("month 46", 60.0, 20.6, "month 46")
    assert (
        said
        == "month 46's share of the 60 s time limit ran out after 20.6 s (34% of the limit used)"
    )
    assert reached("solve", 60.0, 20.6, "month 0").startswith(
        "month 0's share of the 60 s time limit ran out after 20.6 s in solve (34%"
    )
    assert reached("month 46", 60.0, 61.0, "month 46") == (
        "time limit of 60 s reached in month 46 after 61.0 s"
    )
    assert str(TimeLimitReached("candidates", 2.0, 1.4)).startswith(
        "time limit of 2 s reached in candidates after 1.4 s"
    )


def test_the_horizons_verification_is_foretold_by_month_0s_own(monkeypatch):
    """Month 0's plan verified in 2.5 s of its thread's CPU (a fake clock: 100 s, then
    102.5 s): the 3-month horizon's verification, each month's hours as month 0's, is
    kept at 1.5 x 3 x 2.5 = 11.25 s; a plan the verifier refuses is refused here; a run without a
    limit keeps nothing and verifies nothing here."""
    from types import SimpleNamespace

    from solver.errors import PlanRejected
    from solver.time import months
    from solver.verify.verdict import Verification

    def verdict(ok: bool) -> Verification:
        return Verification(ok=ok, violations=(), cost_per_month=0.0, total_gpus=0, checks=())

    ticks = iter([100.0, 102.5, 200.0])
    monkeypatch.setattr(months, "time", SimpleNamespace(thread_time=lambda: next(ticks)))
    monkeypatch.setattr(months, "verify_hours", lambda instance, plan: verdict(True))
    assert months.VERIFY_MARGIN == 1.5
    limited = _at(0.0, 60.0)
    assert months.verification_kept(None, None, 3, limited) == pytest.approx(1.5 * 3 * 2.5)
    assert months.verification_kept(None, None, 3, SolveSettings()) == 0.0  # no limit: none
    refused = verdict(False)
    monkeypatch.setattr(months, "verify_hours", lambda instance, plan: refused)
    with pytest.raises(PlanRejected):
        months.verification_kept(None, None, 3, limited)


def test_what_the_months_after_need_comes_before_a_months_part_and_its_floor():
    """Month 6 of 12 from 12 s, part (24 - 12) / 6 = 2 s: at 12.4 s its deadline would be
    14 s, and at 13.8 s (its part eaten) 13.8 + 0.25 x 2 = 14.3 s; the months after it
    need all but 13 s, so it is 13 s both times (at 13.8 s: spent, its fallback plan);
    kept past its own deadline (30 s) changes nothing."""
    month = Horizon(month=6, months=12, started_s=12.0)
    assert month_share(_at(12.4, 24.0), month, 13.0).deadline.limit_s == pytest.approx(13.0)
    late = month_share(_at(13.8, 24.0), month, 13.0)
    assert late.deadline.limit_s == pytest.approx(13.0)
    assert late.deadline.expired()
    own = month_share(_at(12.4, 24.0), month, 30.0).deadline.limit_s
    assert own == pytest.approx(14.0, abs=0.05)
