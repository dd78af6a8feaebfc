"""The solve's deadline moved earlier to keep the stages after it their time
(solver.stages.kept_after), and the LP rounds' share of the solve
(solver.decompose.scenario_cuts.lp_share)."""

import time

import pytest

from solver.decompose.scenario_cuts import LP_ROUNDS_SHARE, lp_share
from solver.settings import SolveSettings
from solver.stages import kept_after, solving


def _run(limit_s: float | None, elapsed_s: float = 0.0) -> SolveSettings:
    return SolveSettings(time_limit_s=limit_s).started(at=time.monotonic() - elapsed_s)


def test_the_solve_ends_where_the_stages_after_it_still_fit():
    """A 10 s run: its solve stops at 0.8 x 10 = 8 s. Keeping 4 s after it moves that to
    10 - 4 = 6 s; keeping 1 s leaves 8 s (9 s is later); keeping 12 s puts it at the
    start (0 s: the solve is spent at once)."""
    run = _run(10.0)
    solve = solving(run)
    assert solve.deadline.limit_s == pytest.approx(8.0)
    assert kept_after(run, solve, 4.0).deadline.limit_s == pytest.approx(6.0)
    assert kept_after(run, solve, 1.0).deadline.limit_s == pytest.approx(8.0)
    spent = kept_after(run, solve, 12.0)
    assert spent.deadline.limit_s == 0.0 and spent.spent()
    assert kept_after(run, solve, 4.0).deadline.start == run.deadline.start


def test_no_limit_keeps_the_solve_as_it_is():
    run = _run(None)
    assert kept_after(run, solving(run), 4.0) == solving(run)
    assert kept_after(run, solving(run), 4.0).deadline.limit_s is None


def test_the_lp_rounds_take_their_share_of_what_is_left():
    """2 s into a solve stopping at 10 s: 8 s left, the LP rounds stop at
    2 + 0.25 x 8 = 4 s. Without a limit, nothing moves."""
    solve = _run(10.0, elapsed_s=2.0)
    rounds = lp_share(solve)
    assert LP_ROUNDS_SHARE == 0.25
    assert rounds.deadline.limit_s == pytest.approx(4.0, abs=0.05)
    assert rounds.deadline.start == solve.deadline.start
    assert lp_share(_run(None)).deadline.limit_s is None
