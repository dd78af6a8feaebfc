"""CompileMemo: a program compiled through the memo is the program compiled whole, the
rows' arrays reused only while the rows and columns still say the same, and a row or
column changed since compiles anew."""

import pickle
from dataclasses import replace

import pytest

from solver.backends import base
from solver.backends.base import compile_program
from solver.backends.compile_memo import NUMPY_ROWS, CompiledOnce, CompileMemo, handed_on
from solver.decompose.period_passes import relaxation
from solver.program.lp import LinearProgram, Sense, Variable

FIELDS = (
    "variable_names",
    "constraint_names",
    "lower",
    "upper",
    "integer",
    "cost",
    "objective_constant",
    "row_start",
    "col_index",
    "coef",
    "row_lower",
    "row_upper",
)


def _block(memo: CompileMemo | None, level: float = 2.0) -> LinearProgram:
    """A period block as the rounds build it: x (on demand) and n (replicas) over two
    rows, the commitment y held at `level`:

        cover:   y + x - 8 n >= 0      (committed plus rented cover the GPUs used)
        demand:  3 n >= 7              (three requests/s a replica, seven asked)
    """
    lp = LinearProgram("block", rows_memo=memo)
    lp.add_variable("x")
    lp.add_variable("n", integer=True)
    lp.add_variable("y", lower=level, upper=level)
    lp.add_constraint("cover", "cover", {"y": 1.0, "x": 1.0, "n": -8.0}, Sense.GE, 0.0)
    lp.add_constraint("demand", "demand", {"n": 3.0}, Sense.GE, 7.0)
    lp.add_objective({"x": 2.5})
    return lp


def _same(a, b) -> bool:
    """Every array and name of two compiled programs equal, value by value."""
    read = lambda value: value if isinstance(value, float) else list(value)  # noqa: E731
    return all(read(getattr(a, f)) == read(getattr(b, f)) for f in FIELDS)


def test_a_block_at_other_levels_reuses_its_rows_and_compiles_as_whole():
    memo = CompileMemo()
    first = compile_program(_block(memo, level=0.0))
    again = compile_program(_block(memo, level=16.0))  # the same rows, y held at 16
    assert memo.reused == 1
    assert _same(first, compile_program(_block(None, level=0.0)))
    assert _same(again, compile_program(_block(None, level=16.0)))
    assert again.row_start is first.row_start  # the rows' arrays were not compiled again
    assert list(again.lower) == [0.0, 0.0, 16.0]  # x, n, y: y at the new level


@pytest.mark.parametrize(
    "change",
    [
        lambda lp: lp.constraints.__setitem__(
            "demand",
            replace(lp.constraints["demand"], rhs=10.0),  # 3 n >= 10
        ),
        lambda lp: lp.constraints["cover"].coefficients.__setitem__("n", -4.0),  # in place
        lambda lp: lp.constraints.__setitem__(
            "demand", replace(lp.constraints["demand"], sense=Sense.LE)
        ),
        lambda lp: lp.variables.__setitem__("z", Variable("z")),  # a column more
    ],
    ids=["rhs", "coefficient in place", "sense", "column"],
)
def test_a_changed_row_or_column_compiles_anew(change):
    memo = CompileMemo()
    compile_program(_block(memo))
    changed = _block(memo)
    change(changed)
    compiled = compile_program(changed)
    assert memo.reused == 0
    changed.rows_memo = None
    assert _same(compiled, compile_program(changed))


def test_a_row_changed_after_its_compile_is_not_read_from_the_memo():
    """The memo keeps what the rows said, not the rows: a coefficient changed in place in
    a row that both programs share (the same Constraint object) compiles anew."""
    memo = CompileMemo()
    first = _block(memo)
    compile_program(first)
    second = _block(memo)
    second.constraints = first.constraints  # the very same row objects
    first.constraints["demand"].coefficients["n"] = 2.0  # 2 n >= 7 now
    compiled = compile_program(second)
    assert memo.reused == 0
    assert list(compiled.coef)[-1] == 2.0


def test_a_memo_pickles_empty():
    memo = CompileMemo()
    compile_program(_block(memo))
    copy = pickle.loads(pickle.dumps(_block(memo)))
    compile_program(copy)
    assert copy.rows_memo.reused == 0


def test_a_right_hand_side_moved_keeps_the_rows_structure_and_compiles_as_whole():
    """demand 3 n >= 7, then 3 n >= 10 (a later month's grown demand): the second compile
    keeps the first's row starts, columns and coefficients, and its bounds are the rows'
    new ones, [0, 10] below and [inf, inf] above: the arrays of the program compiled
    whole."""
    memo = CompileMemo()
    first = compile_program(_block(memo))
    moved = _block(memo)
    moved.constraints["demand"] = replace(moved.constraints["demand"], rhs=10.0)
    compiled = compile_program(moved)
    assert (memo.reused, memo.restated) == (0, 1)
    assert compiled.row_start is first.row_start and compiled.coef is first.coef
    assert list(compiled.row_lower) == [0.0, 10.0]
    assert list(compiled.row_upper) == [float("inf"), float("inf")]
    moved.rows_memo = None
    assert _same(compiled, compile_program(moved))


def test_a_memo_with_a_limit_lets_the_least_recent_program_go():
    """A limit of 1: the block compiled, then another of other names, then the block
    again: its rows were let go, so it compiles anew (nothing reused)."""
    memo = CompileMemo(limit=1)
    compile_program(_block(memo))
    other = _block(memo)
    other.constraints = {"x" + k: v for k, v in other.constraints.items()}
    compile_program(other)
    compile_program(_block(memo))
    assert (memo.reused, memo.restated) == (0, 0)
    compile_program(_block(memo))
    assert memo.reused == 1


def test_a_whole_program_compiles_its_rows_by_numpy_to_the_loops_arrays(monkeypatch):
    """NUMPY_ROWS (the months' whole programs: their LP relaxations, the pricing LP):
    the block's arrays as compiled whole, its rows by numpy, not by the loop."""
    whole = compile_program(_block(None))
    monkeypatch.setattr(base, "rows_by_loop", None)  # the loop is not called
    relaxed = relaxation(_block(None))
    assert relaxed.rows_memo is NUMPY_ROWS
    compiled = compile_program(relaxed)
    assert _same(compiled, replace(whole, integer=compiled.integer))
    assert list(compiled.integer) == [0, 0, 0]  # n relaxed: x, n, y all continuous
    assert list(compiled.coef) == [1.0, -8.0, 1.0, 3.0]  # cover: x, n, y; demand: n


def test_a_whole_program_with_a_bad_row_is_named_as_the_loop_names_it():
    """A row over an undeclared column: numpy cannot read it, the loop names it."""
    lp = _block(None)
    stray = replace(lp.constraints["demand"], name="stray", coefficients={"q": 1.0})
    lp.constraints["stray"] = stray
    lp.rows_memo = NUMPY_ROWS
    with pytest.raises(ValueError, match="constraint stray uses undeclared variable q"):
        compile_program(lp)


def test_a_compile_handed_on_is_the_next_compile_and_only_the_next():
    """Twins compiles a block for its key and hands it to the backend: the backend's
    compile of that very program is the same compile (nothing compiled again, the memo
    not asked), and the one after goes through the memo (its rows reused)."""
    memo = CompileMemo()
    lp = _block(memo)
    first = handed_on(lp)
    assert isinstance(lp.rows_memo, CompiledOnce)
    assert compile_program(lp) is first
    assert lp.rows_memo is memo and memo.reused == 0  # the memo was not asked
    again = compile_program(lp)
    assert again is not first and memo.reused == 1
    assert _same(again, compile_program(_block(None)))


def test_a_program_with_its_compile_handed_on_pickles_with_its_memo_empty():
    lp = _block(CompileMemo())
    handed_on(lp)
    copy = pickle.loads(pickle.dumps(lp))
    assert isinstance(copy.rows_memo, CompileMemo) and copy.rows_memo.reused == 0
    assert _same(compile_program(copy), compile_program(_block(None)))
