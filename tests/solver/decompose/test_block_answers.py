"""Proven block answers kept across the period rounds' passes and a month's day choices
(solver.backends.compile_memo.Answers): which answers are kept and handed back, and a
second solve of the same blocks through one memo (a day's other choice that agrees with
the first) that hands the backend no block and ends where the first did."""

import re

from solver.backends.compile_memo import WITHIN_LIMIT, Answers, CompileMemo
from solver.decompose.by_period import answer, begin_periods
from solver.program.lp import SolveResult, Termination
from tests.solver.decompose.test_by_period import EXACT
from tests.solver.decompose.test_period_twins import _Counted, _day


def _result(termination: Termination, runtime_s: float) -> SolveResult:
    return SolveResult(termination, "highs", "1", runtime_s, objective=1.0, values={"x": 1.0})


def test_a_proven_answer_is_handed_back_within_half_the_limit():
    """An OPTIMAL answer run in 0.2 s stands for a solve of a 0.4 s limit or more (0.2 <=
    0.5 x 0.4) or of none, not for one of 0.3 s (0.2 > 0.5 x 0.3 = 0.15); INFEASIBLE is
    proven too; one stopped by its limit (FEASIBLE) is never handed back."""
    assert WITHIN_LIMIT == 0.5
    answers = Answers()
    answers.keep("optimal", _result(Termination.OPTIMAL, 0.2), ("x",))
    answers.keep("infeasible", _result(Termination.INFEASIBLE, 0.2), ("x",))
    answers.keep("stopped", _result(Termination.FEASIBLE, 0.2), ("x",))
    assert answers.get("optimal", 0.4) is not None
    assert answers.get("optimal", None) is not None
    assert answers.get("optimal", 0.3) is None
    assert answers.get("infeasible", 1.0)[0].termination is Termination.INFEASIBLE
    assert answers.get("stopped", 100.0) is None
    assert answers.taken == 3


def _counts(message: str) -> tuple[int, int]:
    """(period solves, more periods the same program) of a rounds' method."""
    solves = int(re.search(r"(\d+) period solves?", message).group(1))
    shared = re.search(r"\((\d+) more periods? the same program as one solved\)", message)
    return solves, int(shared.group(1)) if shared else 0


def test_the_same_blocks_again_through_one_memo_take_their_answers():
    """The day of test_period_twins with its commitment free (priced pass, lowest levels,
    a master round): solved twice through one memo, as a day's two choices that agree on
    every block are, the second hands the backend no block (the LP relaxation and the
    masters only) and returns the first's plan, cost and proven gap; its method counts
    every block of the first, solved or twin, as the same program as one solved."""
    program = _day()
    memo = CompileMemo()
    first, second = _Counted(), _Counted()
    once = answer(begin_periods(program.lp, first, EXACT.started(), memo=memo))
    blocks = []
    run = second.run
    second.run = lambda lp, *a, **k: blocks.append(lp.name) or run(lp, *a, **k)
    again = answer(begin_periods(program.lp, second, EXACT.started(), memo=memo))
    assert once.termination is again.termination is Termination.OPTIMAL
    assert again.values == once.values
    assert (again.objective, again.mip_gap) == (once.objective, once.mip_gap)
    assert not [name for name in blocks if "-period" in name]
    solves, shared = _counts(once.message)
    assert solves > 0
    assert _counts(again.message) == (0, solves + shared)
