"""A month's rows compiled once and sliced (solver.backends.shared_rows): every block
program the rounds build, priced or at levels, gets the arrays the row-by-row compile
gives it, to the value; so does the whole program's relaxation at a day's choice; a
program whose rows are not the month's, or say something else, is not sliced."""

import math
from dataclasses import replace

import pytest

from models.io.loading import validate_instance
from solver.backends import get_backend
from solver.backends.base import compile_with_rows
from solver.backends.compile_memo import NUMPY_ROWS, CompileMemo
from solver.backends.row_arrays import rows_by_loop
from solver.backends.shared_rows import SharedRows
from solver.candidates.table import build_candidates
from solver.decompose.by_period import _Rounds
from solver.decompose.period_passes import relaxation
from solver.decompose.period_split import split
from solver.program.lp import Constraint, LinearProgram, Sense
from solver.settings import SolveSettings
from solver.time.day_choice import day_columns, without_day
from solver.time.periods import build_time_program
from tests.solver.decompose.test_by_period import _base, _program

EXACT = SolveSettings(time_limit_s=120.0, mip_gap=1e-6)


def _loop(lp: LinearProgram) -> tuple[tuple, ...]:
    index = {name: j for j, name in enumerate(lp.variables)}
    return tuple(map(tuple, rows_by_loop(lp, index, tuple(lp.constraints))))


def _sliced(shared: SharedRows, lp: LinearProgram) -> tuple[tuple, ...] | None:
    rows = shared.rows_for(lp)
    return None if rows is None else tuple(map(tuple, rows))


@pytest.fixture(scope="module")
def month():
    """The small hourly program's rounds, their blocks, and the month's rows."""
    lp = _program(_base()).lp
    parts = split(lp)
    run = _Rounds(lp, parts, get_backend("highs"), EXACT)
    return lp, parts, run, SharedRows(lp)


def test_every_block_program_slices_to_the_loops_arrays(month):
    """At the lowest and highest levels, renting or not, held pools or not, and priced
    with its own commitment free (a whole-server link row added): the loop's arrays,
    every one (a block's own columns come first, its commitment after them, so the
    cover rows' columns are re-sorted: those rows are checked here too)."""
    _, parts, run, shared = month
    lowest = {o.gpus: o.lowest for o in parts.offers}
    highest = {o.gpus: o.highest for o in parts.offers}
    programs = []
    for i in range(len(parts.blocks)):
        programs += [run._fixed(i, lowest), run._fixed(i, highest, rent=False)]
        programs.append(run._free(i, {o.gpus: 1.0 for o in parts.offers}))
    assert len(programs) == 3 * len(parts.blocks) >= 6
    linked = [p for p in programs if any(o.link in p.constraints for o in parts.offers)]
    assert linked  # the priced programs hold a link row over the commitment alone
    for program in programs:
        assert _sliced(shared, program) == _loop(program)
    assert shared.sliced == len(programs)


def test_a_relaxation_at_a_choice_slices_to_the_numpy_compile():
    """The program of a day's choice (its config_in_day rows new rows, right-hand sides
    moved: policy.max_configs_per_pool) compiles, sliced from the program at no choice,
    to what numpy compiles of it whole; the program without its day rows (a subset of
    the rows) alike."""
    data = _base()
    data["policy"]["max_configs_per_pool"] = 1
    inst = validate_instance(data, "periods.yaml")
    lp = build_time_program(inst, build_candidates(inst)).lp
    assert day_columns(lp)
    shared = SharedRows(without_day(lp, {}))
    choice = {name: 1.0 for name in day_columns(lp)}
    for relaxed in (relaxation(without_day(lp, choice)), relaxation(without_day(lp))):
        mine = shared.compile(relaxed)
        numpy = NUMPY_ROWS.compile(relaxed)
        for field in ("row_start", "col_index", "coef", "row_lower", "row_upper", "lower"):
            assert tuple(getattr(mine, field)) == tuple(getattr(numpy, field))
    assert shared.sliced == 2


def test_rows_that_are_not_the_months_are_compiled_as_before(month):
    """A row the month does not have, a coefficient changed, a right-hand side not
    finite, a column the program lacks: None (the loop compiles it, and names what is
    wrong); a moved right-hand side is sliced, its bounds the row's own."""
    _, parts, run, shared = month
    levels = {o.gpus: o.lowest for o in parts.offers}
    block = run._fixed(0, levels)
    name, row = next(iter(block.constraints.items()))
    column = next(iter(row.coefficients))

    def changed(**fields) -> LinearProgram:
        sub = run._fixed(0, levels)
        sub.constraints[name] = replace(row, **fields)
        return sub

    assert _sliced(shared, changed(rhs=row.rhs + 3.0)) == _loop(changed(rhs=row.rhs + 3.0))
    other = {**row.coefficients, column: row.coefficients[column] + 1.0}
    assert shared.rows_for(changed(coefficients=other)) is None
    assert shared.rows_for(changed(rhs=math.inf)) is None
    extra = run._fixed(0, levels)
    extra.constraints["extra"] = Constraint("extra", "extra", {column: 1.0}, Sense.LE, 1.0)
    assert shared.rows_for(extra) is None
    missing = run._fixed(0, levels)
    del missing.variables[column]
    assert shared.rows_for(missing) is None


def test_the_rounds_memo_slices_its_new_programs(month):
    """A compile memo with the month's rows gives a block program it has not seen the
    sliced arrays (the same compile as without them), and one it has seen its own."""
    lp, parts, run, _ = month
    memo = CompileMemo()
    memo.rows_from = shared = SharedRows(lp)
    levels = {o.gpus: o.lowest for o in parts.offers}
    first = run._fixed(1, levels)
    first.rows_memo = memo
    compiled = memo.compile(first)
    plain = compile_with_rows(first, None)
    for field in ("row_start", "col_index", "coef", "row_lower", "row_upper", "cost"):
        assert tuple(getattr(compiled, field)) == tuple(getattr(plain, field))
    assert shared.sliced == 1
    memo.compile(run._fixed(1, levels))
    assert shared.sliced == 1 and memo.reused == 1


def test_a_row_changed_in_place_since_the_compile_is_not_sliced():
    """What each row said is kept as a copy: a coefficient changed in the row's own
    dict after the month's compile is seen (the program then compiles by the loop)."""
    lp = _program(_base()).lp
    shared = SharedRows(lp)
    name, row = next((n, r) for n, r in lp.constraints.items() if len(r.coefficients) > 1)
    single = LinearProgram("one", variables=dict(lp.variables), constraints={name: row})
    assert _sliced(shared, single) == _loop(single)  # compiled, then sliced as it was
    column = next(iter(row.coefficients))
    row.coefficients[column] += 1.0
    assert shared.rows_for(single) is None
