"""A period with no plan at any commitment proves the periods program infeasible
(solver.decompose.by_period: the priced pass solves each block with its own copy of the
commitment, a relaxation of the whole program), where a solver error proves nothing."""

import math
from dataclasses import replace
from unittest.mock import patch

from solver.backends import get_backend
from solver.decompose import by_period
from solver.decompose.by_period import solve_periods
from solver.decompose.period_split import split
from solver.program.lp import SolveResult, Termination
from solver.program.row_names import ReplicasColumn, family_of
from tests.solver.decompose import test_by_period
from tests.solver.decompose.test_by_period import EXACT, _base, _program


class _Spy(test_by_period._Spy):
    """The HiGHS backend, the programs it is handed recorded by name; `fail`: each
    period block's solve answers ERROR instead (a solver failure)."""

    def __init__(self, fail: bool = False):
        super().__init__()
        self.fail = fail

    def run(self, lp, settings, start=None):
        if self.fail and "-period" in lp.name:
            self.names.append(lp.name)
            return SolveResult(Termination.ERROR, self.name, self.version(), 0.0)
        return super().run(lp, settings, start=start)


def _without_pools_in_first_block():
    """The base day with no replica allowed in the first block's period and region
    (every replicas column there bounded at 0): its users, 24 requests/s that the
    demand row gives that region (demand == 24), must be served there (capacity >= served,
    capacity from replicas only), so that block has no plan at any commitment; the
    whole program's LP relaxation has none either, so the priced pass is handed a
    price of $1 per committed GPU on every block (any price gives a valid cut)."""
    program = _program(_base())
    lp = program.lp
    parts = split(lp)
    for name in parts.blocks[0].columns:
        if family_of(name) == ReplicasColumn.family:
            lp.variables[name] = replace(lp.variables[name], upper=0.0)
    prices = [{c.committed: 1.0 for c in block.covers} for block in parts.blocks]
    return lp, lambda *_args: (prices, -math.inf)


def test_a_period_infeasible_with_its_commitment_free_answers_without_the_whole():
    lp, priced = _without_pools_in_first_block()
    spy = _Spy()
    with patch.object(by_period, "lp_prices", priced):
        found = solve_periods(lp, spy, EXACT.started())
    assert found.termination is Termination.INFEASIBLE
    assert lp.name not in spy.names  # no whole program to confirm it
    assert get_backend("highs").run(lp, EXACT.started()).termination is Termination.INFEASIBLE


def test_a_period_solve_that_fails_leaves_the_whole_program_to_say():
    lp, priced = _without_pools_in_first_block()
    spy = _Spy(fail=True)
    with patch.object(by_period, "lp_prices", priced):
        found = solve_periods(lp, spy, EXACT.started())
    assert lp.name in spy.names  # an error is no proof: the whole program is solved
    assert found.termination is Termination.INFEASIBLE
