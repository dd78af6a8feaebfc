"""Each period's copy of the static program in the periods program
(solver.time.periods._copy_into): the same program, row for row and in the same order,
as adding each marked row through `LinearProgram.add_constraint` (the checked path), its
terms keyed by the declared columns' own names; and a name taken twice refused."""

import pytest

from solver.program.lp import LinearProgram
from solver.time import periods
from tests.solver.decompose.test_by_period import _data, _program


def _checked_copy(lp: LinearProgram, program, hour: int) -> None:
    """The copy through the checked path: each column and row added one by one."""
    for name, var in program.lp.variables.items():
        lp.add_variable(periods.timed_name(name, hour), var.lower, var.upper, var.integer)
    for name, row in program.lp.constraints.items():
        terms = {periods.timed_name(v, hour): c for v, c in row.coefficients.items()}
        lp.add_constraint(periods.timed_name(name, hour), row.family, terms, row.sense, row.rhs)


def _day():
    """Two regions, region loss, an H200 offer and an on-demand cap: failover routing,
    capacity per scenario and supply rows in every period."""
    shape = [1.0] * 8 + [3.0] * 10 + [2.0] * 6
    return _data({"r1": 40.0, "r2": 25.0}, shape, 0.6, True, 24, "region", "node", None)


def test_a_period_copy_is_the_checked_path_s_program(monkeypatch):
    fast = _program(_day()).lp
    monkeypatch.setattr(periods, "_copy_into", _checked_copy)
    checked = _program(_day()).lp
    assert list(fast.variables.items()) == list(checked.variables.items())
    assert list(fast.constraints.items()) == list(checked.constraints.items())
    assert fast.objective == checked.objective
    for row in fast.constraints.values():  # keyed by the declared names themselves
        assert all(name is fast.variables[name].name for name in row.coefficients)


def test_a_period_copied_twice_is_refused():
    program = _program(_day())
    part = program.periods[0]
    with pytest.raises(ValueError, match="duplicate"):
        periods._copy_into(program.lp, part.program, part.first_hour)
