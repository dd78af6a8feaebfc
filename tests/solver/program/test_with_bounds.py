"""solver.program.build.with_bounds: a copy with some columns' bounds replaced (and,
relaxed, every integer column continuous); the rows and every column it leaves alone
are the original's own (frozen) objects."""

from dataclasses import fields

from hypothesis import given, settings
from hypothesis import strategies as st

from solver.program.build import with_bounds
from solver.program.lp import LinearProgram, Sense, Variable


def _program() -> LinearProgram:
    """x integer in [0, 4], y continuous in [0, inf), z integer in [1, 1]; one row."""
    lp = LinearProgram("three", objective={"x": 2.0, "y": 1.0})
    lp.add_variable("x", upper=4, integer=True)
    lp.add_variable("y")
    lp.add_variable("z", lower=1, upper=1, integer=True)
    lp.add_constraint("r", "f", {"x": 1.0, "y": 1.0}, Sense.GE, 3)
    return lp


def test_bounded_columns_change_and_the_rest_are_shared():
    """x bounded to [2, 2]: a new column, still integer; y and z the original objects;
    the row and the objective as they were."""
    lp = _program()
    copy = with_bounds(lp, {"x": (2.0, 2.0)})
    assert copy.variables["x"] == Variable("x", 2.0, 2.0, True)
    assert copy.variables["y"] is lp.variables["y"]
    assert copy.variables["z"] is lp.variables["z"]
    assert copy.constraints["r"] is lp.constraints["r"]
    assert copy.objective == lp.objective and copy.objective is not lp.objective
    assert lp.variables["x"] == Variable("x", 0.0, 4, True)  # the original untouched


def test_relaxed_integers_become_continuous():
    """Relaxed: x and z continuous at their own bounds (z [1, 1]), y (continuous) shared."""
    lp = _program()
    copy = with_bounds(lp, {}, relax=True)
    assert copy.variables["x"] == Variable("x", 0.0, 4, False)
    assert copy.variables["z"] == Variable("z", 1, 1, False)
    assert copy.variables["y"] is lp.variables["y"]


@settings(max_examples=40, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["x", "y", "z"]),
        st.tuples(st.sampled_from([0.0, 1.0, 2.0]), st.sampled_from([None, 2.0, 5.0])),
    ),
    st.booleans(),
)
def test_each_column_is_its_bounds_and_integrality(bounds, relax):
    """Every column of the copy: the given bounds where given, else its own; integer
    where it was and the copy is not relaxed; its name kept."""
    lp = _program()
    copy = with_bounds(lp, bounds, relax)
    assert list(copy.variables) == list(lp.variables)
    for name, var in lp.variables.items():
        lower, upper = bounds.get(name, (var.lower, var.upper))
        assert copy.variables[name] == Variable(name, lower, upper, var.integer and not relax)


def test_a_changed_column_is_rebuilt_from_every_field_of_variable():
    """with_bounds builds a changed column as Variable(name, lower, upper, integer),
    positionally (dataclasses.replace costs more on tens of thousands of columns): a field
    added to Variable would be dropped there silently. This fails first, so that whoever
    adds one carries it through with_bounds too."""
    assert [field.name for field in fields(Variable)] == ["name", "lower", "upper", "integer"]
