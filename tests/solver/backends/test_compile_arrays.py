"""compile_program's two ways to the row arrays: the loop (small programs) and numpy
(`rows_by_arrays`, programs above ARRAYS_FROM_NONZEROS) give the same arrays, and a bad
row is named the same way by both."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.backends import row_arrays
from solver.backends.base import compile_program
from solver.program.lp import Constraint, LinearProgram, Sense

COEFFICIENTS = st.sampled_from([0.0, 1.0, -1.0, 2.5, -0.125, 1e-7, 3e6])


@st.composite
def programs(draw):
    """A program of 1-12 columns and 1-15 rows, with zero coefficients, every sense,
    and rows whose columns are given out of column order."""
    columns = draw(st.integers(1, 12))
    lp = LinearProgram("random")
    for j in range(columns):
        lp.add_variable(f"x[{j}]", upper=draw(st.sampled_from([None, 1.0, 10.0])))
    for i in range(draw(st.integers(1, 15))):
        used = draw(st.lists(st.integers(0, columns - 1), unique=True, max_size=columns))
        terms = {f"x[{j}]": draw(COEFFICIENTS) for j in used}
        sense = draw(st.sampled_from(list(Sense)))
        lp.add_constraint(f"row[{i}]", "f", terms, sense, draw(st.floats(-50, 50)))
    # a row keyed by names that are equal to the declared ones but other objects
    lp.constraints["copied"] = Constraint(
        "copied", "f", {"".join(["x[", "0", "]"]): 4.0}, Sense.LE, 1.0
    )
    return lp


def _arrays(compiled):
    return (
        compiled.row_start,
        compiled.col_index,
        compiled.coef,
        compiled.row_lower,
        compiled.row_upper,
    )


@settings(max_examples=60, deadline=None)
@given(programs())
def test_the_numpy_rows_are_the_loops(lp):
    """Same typecodes, same values, whichever path compiles the rows."""
    names = tuple(lp.variables)
    index = {name: j for j, name in enumerate(names)}
    rows = tuple(lp.constraints)
    by_loop = row_arrays.rows_by_loop(lp, index, rows)
    by_arrays = row_arrays.rows_by_arrays(lp, index, rows)
    for loop_array, numpy_array in zip(by_loop, by_arrays, strict=True):
        assert loop_array.typecode == numpy_array.typecode
        assert list(loop_array) == list(numpy_array)


def test_rows_are_sorted_and_zeros_dropped(monkeypatch):
    """Row a: {x2: 3, x0: 0, x1: -1} >= 2 is stored as columns [1, 2], coefficients
    [-1, 3] (x0's zero dropped, columns in order), bounds [2, inf]; row b: x0 == 5 is
    [0], [1], [5, 5]. row_start = [0, 2, 3]."""
    monkeypatch.setattr(row_arrays, "ARRAYS_FROM_NONZEROS", 0)
    lp = LinearProgram("tiny")
    for name in ("x0", "x1", "x2"):
        lp.add_variable(name)
    lp.constraints["a"] = Constraint("a", "f", {"x2": 3.0, "x0": 0.0, "x1": -1.0}, Sense.GE, 2)
    lp.add_constraint("b", "f", {"x0": 1.0}, Sense.EQ, 5)
    compiled = compile_program(lp)
    assert list(compiled.row_start) == [0, 2, 3]
    assert list(compiled.col_index) == [1, 2, 0]
    assert list(compiled.coef) == [-1.0, 3.0, 1.0]
    assert list(compiled.row_lower) == [2.0, 5.0]
    assert list(compiled.row_upper) == [math.inf, 5.0]


@pytest.mark.parametrize(
    "row, message",
    [
        (Constraint("bad", "f", {"nowhere": 1.0}, Sense.LE, 1), "undeclared variable nowhere"),
        (Constraint("bad", "f", {"x0": math.nan}, Sense.LE, 1), "coefficient nan on x0"),
        (Constraint("bad", "f", {"x0": 1.0}, Sense.LE, math.inf), "right-hand side inf"),
    ],
)
def test_a_bad_row_is_named_on_the_numpy_path(monkeypatch, row, message):
    """The numpy path hands a bad program to the loop, which names the row."""
    monkeypatch.setattr(row_arrays, "ARRAYS_FROM_NONZEROS", 0)
    lp = LinearProgram("bad")
    lp.add_variable("x0")
    lp.add_constraint("fine", "f", {"x0": 1.0}, Sense.GE, 0)
    lp.constraints["bad"] = row
    with pytest.raises(ValueError, match="bad") as raised:
        compile_program(lp)
    assert message in str(raised.value)


def test_add_constraint_keys_rows_by_the_declared_names():
    """A row's keys are the very name objects its columns were declared with (what lets a
    compile's lookups match by identity), whatever objects the caller passed."""
    lp = LinearProgram("names")
    declared = lp.add_variable("".join(["pool", "[a]"]))
    row = lp.add_constraint("r", "f", {"".join(["po", "ol[a]"]): 1.0}, Sense.GE, 0)
    (key,) = row.coefficients
    assert key is declared


@pytest.mark.parametrize(
    "terms, message",
    [
        ({"x1": 2.0, "nowhere": 1.0, "x0": math.inf}, "undeclared variable nowhere"),
        ({"x1": 2.0, "x0": math.inf, "nowhere": 1.0}, "coefficient inf on x0"),
        ({"x0": 0.0, "x1": -math.inf}, "coefficient -inf on x1"),
    ],
)
def test_the_loop_names_a_rows_first_bad_term(terms, message):
    """The loop looks a row's columns up at once, and walks a bad row term by term:
    the message names the first bad term in the row's order (an undeclared name before
    a coefficient that is not finite, or after it), as the term-by-term loop always did;
    the row before it, `fine`, compiles."""
    lp = LinearProgram("bad")
    lp.add_variable("x0")
    lp.add_variable("x1")
    lp.add_constraint("fine", "f", {"x1": 1.0, "x0": 2.0}, Sense.GE, 0)
    lp.constraints["bad"] = Constraint("bad", "f", terms, Sense.LE, 1)
    index = {"x0": 0, "x1": 1}
    with pytest.raises(ValueError, match="constraint bad") as raised:
        row_arrays.rows_by_loop(lp, index, ("fine", "bad"))
    assert message in str(raised.value)
    assert list(row_arrays.rows_by_loop(lp, index, ("fine",))[1]) == [0, 1]  # sorted
