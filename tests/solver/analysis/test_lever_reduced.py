"""Levers of a large static program search without the pools config dominance removes
(solver.analysis.levers.DOMINATED): the reduction loses no optimum, so the same cost."""

import pytest

from solver.analysis import lever_groups, levers
from solver.analysis.lever_edits import levers_for
from solver.analysis.lever_solve import solve_lever
from solver.analysis.levers import LeverRun
from solver.settings import SolveSettings
from solver.solve import solve_program
from tests import synthetic
from tests.solver.analysis.test_lever_groups import spied_reductions


@pytest.fixture(scope="module")
def base():
    return synthetic.us_eu_chat()


def test_a_levers_search_from_the_base_plan_leaves_out_the_dominated_pools(base, monkeypatch):
    # `reduced`: the search from the base plan asks for config dominance's reduction
    # (without it, a search from a start keeps the dominated pools), and ends at the same
    # cost: the reduction loses no optimum
    solved = solve_program(base, SolveSettings.of(base, threads=1))
    changed = next(lever for lever in levers_for(base) if lever.name == "TPOT +20%").apply(base)
    asked = spied_reductions(monkeypatch)
    args = ("TPOT +20%", changed, solved.plan.cost_per_month, None, None, solved.result.values)
    reduced = solve_lever(*args, reduced=True)
    whole = solve_lever(*args)
    assert asked and set(asked[: len(asked) // 2]) == {True}
    assert set(asked[len(asked) // 2 :]) == {False}
    assert reduced.status == whole.status == "solved"
    assert reduced.cost_per_month == whole.cost_per_month


def test_only_a_large_static_programs_levers_are_searched_reduced(base, monkeypatch):
    # as the groups: below lever_groups.MIN_INTEGERS integer columns (this base has far
    # fewer) every lever keeps the dominated pools; at or above, each is reduced, unless
    # levers.DOMINATED is off (the bench's before)
    solved = solve_program(base, SolveSettings.of(base, threads=1))

    def reduced() -> bool:
        run = LeverRun(base, solved.plan, start=solved.result.values, program=solved.program.lp)
        run._shares = run._new_shares()
        return run._task(run.work[0], 0)[2].get("reduced", False)

    assert not reduced()
    monkeypatch.setattr(lever_groups, "MIN_INTEGERS", 0)
    assert reduced()
    monkeypatch.setattr(levers, "DOMINATED", False)
    assert not reduced()
