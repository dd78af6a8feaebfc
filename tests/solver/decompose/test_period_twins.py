"""Blocks of the period rounds that are one program, solved once
(solver.decompose.period_passes.Twins): which blocks are twins on a day whose profile repeats
itself, and rounds that solve each of them once and end where solving every block ends."""

from unittest.mock import patch

from solver.backends import get_backend
from solver.decompose import period_passes
from solver.decompose.by_period import solve_by_period
from solver.decompose.period_split import split
from solver.program.families.pricing import GpuCoverRow
from solver.program.lp import Termination
from tests.solver.decompose.test_by_period import EXACT, _data, _held_at, _program


def _day():
    """r1 at 40 requests/s all day, r2 at 25 from hour 8 to 16 and 25 / 3 else, H100
    only, no loss (a region's pools of a period are a block of their own). A period is
    the hours of one demand in both regions (their warm rates: r2's rise and fall add
    hours of their own), so r1's demand is the same in every period and r2's differs
    from period to period."""
    data = _data({"r1": 40.0, "r2": 25.0}, [1.0] * 24, 0.6, False, None, "none", "node", None)
    data["workloads"][0]["demand"]["r2"]["hourly_profile"] = [1] * 8 + [3] * 8 + [1] * 8
    return _program(data)


class _Counted:
    """The HiGHS backend, its solves counted."""

    def __init__(self):
        self.backend = get_backend("highs")
        self.name, self.version = self.backend.name, self.backend.version
        self.is_available = self.backend.is_available
        self.capabilities = self.backend.capabilities
        self.solves = 0

    def run(self, lp, settings, start=None):
        self.solves += 1
        return self.backend.run(lp, settings, start=start)


def test_periods_of_one_demand_and_length_in_one_region_are_twins():
    """A block per region and period; r1's blocks of periods of the same length are one
    program (the same demand: cost per hour x hours alike), r2's are each their own
    (its demand differs from period to period), and no block of r1 is one of r2."""
    program = _day()
    parts = split(program.lp)
    assert parts is not None and len(parts.blocks) == 2 * len(program.periods)
    hours = {p.first_hour: p.period.weight_hours for p in program.periods}
    assert len(set(hours.values())) < len(hours)  # two periods of one length at least
    where = [GpuCoverRow.parse(b.covers[0].row) for b in parts.blocks]
    expected = {("r1", hours[at.period]) if at.region == "r1" else at for at in where}
    twins = period_passes.Twins(program.lp, parts)
    assert len(set(twins.shape)) == len(expected)
    for i, at in enumerate(where):
        first = where[twins.shape[i]]
        assert first.region == at.region and hours[first.period] == hours[at.period]


def test_the_rounds_solve_each_program_once_and_end_as_solving_every_block():
    """The commitment held at 2 servers (one level: every block solved once, from no
    start): one backend call per shape of block instead of one per block, and the same
    plan, cost and proven bound as rounds that solve every block (twins switched off)."""
    program = _day()
    _held_at(program.lp, 2)
    parts = split(program.lp)
    shapes = len(set(period_passes.Twins(program.lp, parts).shape))
    alone, shared = _Counted(), _Counted()
    with patch.object(period_passes.Twins, "shared", lambda *_args: ({}, {}, {})):
        every = solve_by_period(program.lp, alone, EXACT.started())
    once = solve_by_period(program.lp, shared, EXACT.started())
    assert every.termination is once.termination is Termination.OPTIMAL
    assert once.values == every.values
    assert (once.objective, once.mip_gap) == (every.objective, every.mip_gap)
    assert alone.solves - shared.solves == len(parts.blocks) - shapes > 0
    assert once.message.endswith(
        f"({len(parts.blocks) - shapes} more periods the same program as one solved)"
    )


def test_rounds_that_keep_answers_read_no_block_shape():
    """The rounds keep each proven answer (compile_memo.Answers), so every block is
    built and keyed by its arrays: the shapes are never read (`_shape` raising here),
    and the plan, cost and bound are those of rounds that solve every block."""
    program = _day()
    _held_at(program.lp, 2)
    with patch.object(period_passes.Twins, "shared", lambda *_args: ({}, {}, {})):
        every = solve_by_period(program.lp, _Counted(), EXACT.started())

    def unread(*_args):
        raise AssertionError("a block's shape was read")

    with patch.object(period_passes, "_shape", unread):
        found = solve_by_period(program.lp, _Counted(), EXACT.started())
    assert found.termination is every.termination is Termination.OPTIMAL
    assert (found.values, found.objective) == (every.values, every.objective)
