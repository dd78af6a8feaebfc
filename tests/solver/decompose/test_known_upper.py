"""The blocks' known solutions re-costed (solver.decompose.period_split.Known): the
cheapest known solution at some levels, kept between calls, is the one read afresh
from every solution known, however many were added since it was last asked."""

from solver.backends import get_backend
from solver.decompose.by_period import _Rounds
from solver.decompose.period_split import Known, split
from solver.settings import SolveSettings
from tests.solver.decompose.test_by_period import _base, _program

EXACT = SolveSettings(time_limit_s=120.0, mip_gap=1e-6)


def test_the_cheapest_known_is_read_again_where_solutions_were_added():
    """Block solutions found at the lowest levels, then at the highest: at the lowest
    levels each block's cheapest is that of a Known holding them all from the start,
    and some block's changed where the later solutions were added (renting less there
    than what was known first: the check is not empty)."""
    lp = _program(_base()).lp
    parts = split(lp)
    run = _Rounds(lp, parts, get_backend("highs"), EXACT)
    lowest = {o.gpus: o.lowest for o in parts.offers}
    highest = {o.gpus: o.highest for o in parts.offers}
    blocks = range(len(parts.blocks))
    assert run.solve_blocks(highest, blocks)
    before = [run.known.upper(i, lowest) for i in blocks]
    assert run.solve_blocks(lowest, blocks)
    after = [run.known.upper(i, lowest) for i in blocks]
    fresh = Known(lp, parts)
    fresh.solutions = [list(found) for found in run.known.solutions]
    assert after == [fresh.upper(i, lowest) for i in blocks]
    assert any(b is None or a[0] < b[0] for a, b in zip(after, before, strict=True))
