"""A result judged against another method's proven bound (solver.program.lp.SolveResult
.bound and .within): the periods program's rounds and its whole program each prove a
lower bound, and the plan states its gap to the better one."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from solver.program.lp import SolveResult, Termination


def _result(objective, gap, termination=Termination.FEASIBLE):
    return SolveResult(termination, "highs", "1", 0.0, objective=objective, mip_gap=gap)


def test_the_bound_is_the_objective_less_its_gap():
    # 29,570 at 13.8%: 29,570 x (1 - 0.138) = 25,489.34
    assert _result(29_570.0, 0.138).bound == pytest.approx(25_489.34)
    assert _result(29_570.0, None).bound is None  # no stated gap, no bound
    assert SolveResult(Termination.TIME_LIMIT, "highs", "1", 0.0).bound is None


def test_a_lower_bound_without_a_stated_gap_is_only_what_the_ending_proves():
    # CBC proving within its -ratio states no gap: OPTIMAL at 29,570 asked for 1% proves
    # 29,570 x (1 - 0.01) = 29,274.3; stopped by the clock with no gap, nothing: 0. A
    # stated gap is read as `bound` reads it, whatever was asked.
    assert _result(29_570.0, None, Termination.OPTIMAL).lower_bound(0.01) == pytest.approx(29_274.3)
    assert _result(29_570.0, None).lower_bound(0.01) == 0.0
    assert _result(29_570.0, 0.138).lower_bound(0.01) == pytest.approx(25_489.34)


def test_a_better_bound_from_the_rounds_tightens_the_whole_programs_gap():
    """The whole program stops at 29,570 with its own gap 13.8%; the rounds proved 28,455:
    (29,570 - 28,455) / 29,570 = 3.77%, still short of 0.1%, so it stays feasible."""
    judged = _result(29_570.0, 0.138).within(28_455.0, 0.001)
    assert judged.mip_gap == pytest.approx(1_115.0 / 29_570.0)
    assert judged.termination is Termination.FEASIBLE


def test_a_bound_within_the_asked_gap_proves_the_plan():
    # 100 against a proven 99.95: 0.05% <= 0.1%
    judged = _result(100.0, 0.2).within(99.95, 0.001)
    assert judged.termination is Termination.OPTIMAL
    assert judged.mip_gap == pytest.approx(0.0005)


def test_a_weaker_bound_or_no_solution_changes_nothing():
    own = _result(100.0, 0.01)
    assert own.within(90.0, 0.001) is own
    assert own.within(None, 0.001) is own
    stopped = SolveResult(Termination.TIME_LIMIT, "highs", "1", 0.0)
    assert stopped.within(50.0, 0.001) is stopped


@given(
    objective=st.floats(1.0, 1e7),
    own=st.floats(0.0, 0.9),
    other=st.floats(0.0, 0.9),
)
def test_the_judged_gap_is_never_looser_than_either(objective, own, other):
    """Judging against a second valid bound never widens the gap, and the bound it states
    is the better of the two."""
    lower = objective * (1 - other)
    judged = _result(objective, own).within(lower, 0.001)
    assert judged.mip_gap <= own + 1e-12
    assert judged.bound == pytest.approx(max(objective * (1 - own), lower), rel=1e-9)
