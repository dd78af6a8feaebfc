"""The solve's deadline moved earlier to keep the stages after it their time
(solver.stages.kept_after)."""

import time

import pytest

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
