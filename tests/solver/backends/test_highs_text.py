"""The highs backend's two ways into HiGHS give HiGHS the same model, to the bit.

A small program goes in as free-format MPS text (`mps_text`, read by `readModel`) so that
a one-model solve never imports numpy; a larger one as arrays (`highs_lp`, `passModel`).
Here both ways load random programs (every bound kind, every row sense, integer columns
in runs, empty rows and columns, negative and tiny coefficients) and HiGHS's own copy of
each model (`getLp`, column-wise) is compared field by field; then the solves agree.
"""

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.backends import get_backend
from solver.backends import highs as highs_module
from solver.backends.base import compile_program
from solver.program.lp import LinearProgram, Sense, Termination

BOUNDS = [
    (0.0, None),
    (-math.inf, None),
    (-math.inf, 7.5),
    (-3.25, 4.0),
    (2.0, 2.0),
    (0.0, 1e-7),
    (-8.0, -1.5),
]
"""(lower, upper) kinds of a column: free, half-bounded either way, boxed, fixed, tiny."""


def random_program(seed: int, variables: int = 8, rows: int = 7) -> LinearProgram:
    """A program with every bound kind and row sense, some empty rows and columns."""
    rng = random.Random(seed)
    lp = LinearProgram(f"random-{seed}")
    names = []
    for j in range(variables):
        lower, upper = rng.choice(BOUNDS)
        integer = rng.random() < 0.4 and upper != 1e-7
        names.append(lp.add_variable(f"x[{j}]", lower=lower, upper=upper, integer=integer))
    lp.add_objective({name: rng.choice([0.0, 1.0, -2.5, 1 / 3, 1e-9]) for name in names})
    for i in range(rows):
        picked = rng.sample(names, rng.randint(0, min(4, variables)))
        terms = {name: rng.choice([1.0, -1.0, 0.1, 7 / 3, -1e-6, 250.0]) for name in picked}
        lp.add_constraint(f"row[{i}]", "f", terms, rng.choice(list(Sense)), rng.uniform(-5, 5))
    return lp


def _model(highs) -> dict:
    """HiGHS's copy of its model, column-wise, as plain lists."""
    highs.ensureColwise()
    lp = highs.getLp()
    matrix = lp.a_matrix_
    integrality = [int(kind) for kind in lp.integrality_]
    return {
        "columns": lp.num_col_,
        "rows": lp.num_row_,
        "cost": list(lp.col_cost_),
        "lower": list(lp.col_lower_),
        "upper": list(lp.col_upper_),
        "row_lower": list(lp.row_lower_),
        "row_upper": list(lp.row_upper_),
        "start": list(matrix.start_),
        "index": list(matrix.index_),
        "value": list(matrix.value_),
        "integer": [j for j, kind in enumerate(integrality) if kind],
        "offset": lp.offset_,
        "sense": int(lp.sense_),
    }


def _both_ways(lp: LinearProgram) -> tuple[dict, dict]:
    program = compile_program(lp)
    error = highs_module._core().HighsStatus.kError
    by_arrays = highs_module._new_highs()
    assert by_arrays.passModel(highs_module.highs_lp(program)) != error
    by_text = highs_module._new_highs()
    text = highs_module.mps_text(program)
    assert text is not None
    assert highs_module._read_mps(by_text, text) != error
    return _model(by_arrays), _model(by_text)


@settings(max_examples=60, deadline=None)
@given(st.integers(min_value=0, max_value=10**6), st.integers(1, 12), st.integers(0, 10))
def test_text_and_arrays_load_the_same_model(seed, variables, rows):
    arrays, text = _both_ways(random_program(seed, variables, rows))
    assert text == arrays


def test_a_row_mps_cannot_say_is_left_to_the_arrays():
    """A ranged row (two finite bounds) has no MPS sense without RANGES: no text."""
    from array import array
    from dataclasses import replace

    program = compile_program(random_program(1, rows=1))
    ranged = replace(program, row_lower=array("d", [-1.0]), row_upper=array("d", [1.0]))
    assert highs_module.mps_text(ranged) is None


@pytest.mark.parametrize("seed", range(8))
def test_a_small_and_a_large_program_solve_alike(seed, monkeypatch):
    """The same program through text (the default for small ones) and through arrays
    (text switched off): same termination, objective and values."""
    lp = random_program(seed, variables=10, rows=8)
    highs = get_backend("highs")
    monkeypatch.setattr(highs_module, "_numpy_loaded", lambda: False)
    by_text = highs.solve(lp, mip_gap=0.0)
    monkeypatch.setattr(highs_module, "SMALL_PROGRAM_NONZEROS", -1)
    by_arrays = highs.solve(lp, mip_gap=0.0)
    assert by_text.termination == by_arrays.termination
    if by_text.termination is Termination.OPTIMAL:
        assert by_text.objective == by_arrays.objective
        assert by_text.values == by_arrays.values


def test_the_one_model_text_is_the_expected_mps():
    """min 3x + 2y subject to x + y >= 4, x integer in [1, inf): the MPS HiGHS reads."""
    lp = LinearProgram("tiny")
    lp.add_variable("x", lower=1.0, integer=True)
    lp.add_variable("y")
    lp.add_objective({"x": 3.0, "y": 2.0})
    lp.add_constraint("need", "f", {"x": 1.0, "y": 1.0}, Sense.GE, 4.0)
    assert highs_module.mps_text(compile_program(lp)).splitlines() == [
        "NAME fleetplan",
        "ROWS",
        " N obj",
        " G r0",
        "COLUMNS",
        " MARKER 'MARKER' 'INTORG'",
        " c0 obj 3.0",
        " c0 r0 1.0",
        " MARKER 'MARKER' 'INTEND'",
        " c1 obj 2.0",
        " c1 r0 1.0",
        "RHS",
        " rhs r0 4.0",
        "BOUNDS",
        " LO bnd c0 1.0",
        " PL bnd c0",
        " LO bnd c1 0.0",
        " PL bnd c1",
        "ENDATA",
    ]
    result = get_backend("highs").solve(lp, mip_gap=0.0)
    assert result.values == {"x": 1.0, "y": 3.0}  # 3 * 1 + 2 * 3 = 9 beats 3 * 4 = 12
    assert result.objective == 9.0


def _solve_in_a_fresh_process(prelude: str) -> str:
    """Run `prelude`, then a highs solve of min 3x + 2y, x + y >= 4, x >= 1 (x integer),
    in a fresh interpreter; its output: the objective and the highspy modules loaded."""
    import subprocess
    import sys

    code = prelude + (
        "\nimport sys\nfrom solver.backends import get_backend\n"
        "from solver.program.lp import LinearProgram, Sense\n"
        "lp = LinearProgram('tiny')\n"
        "lp.add_variable('x', lower=1.0, integer=True)\nlp.add_variable('y')\n"
        "lp.add_objective({'x': 3.0, 'y': 2.0})\n"
        "lp.add_constraint('need', 'f', {'x': 1.0, 'y': 1.0}, Sense.GE, 4.0)\n"
        "result = get_backend('highs').solve(lp)\n"
        "print(result.objective, result.message)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('highspy', 'numpy')))))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return result.stdout


def test_the_compiled_module_loads_alone():
    objective, modules = _solve_in_a_fresh_process("").splitlines()
    assert objective.split()[0] == "9.0"  # 3 * 1 + 2 * 3
    assert "highspy._core" in modules.split()
    assert "highspy" not in modules.split() and "numpy" not in modules


def test_highspy_imported_first_or_laid_out_otherwise_still_solves():
    """With highspy imported before (its `_core` already loaded), or with no extension
    file found next to highspy's `__init__` (the package is imported instead)."""
    imported_first = _solve_in_a_fresh_process("import highspy")
    assert imported_first.splitlines()[0].split()[0] == "9.0"
    no_file = _solve_in_a_fresh_process(
        "import importlib.machinery\nimportlib.machinery.EXTENSION_SUFFIXES.clear()"
    )
    objective, modules = no_file.splitlines()
    assert objective.split()[0] == "9.0"
    assert "highspy" in modules.split()  # the whole package, numpy with it


def test_a_small_program_goes_as_arrays_once_numpy_is_loaded(monkeypatch):
    """Text saves numpy's import only where numpy is not loaded: with it loaded, a small
    program goes as arrays (no text written), without it as text; the same optimum
    (min 3x + 2y, x + y >= 4, x >= 1 integer: x = 1, y = 3, objective 9)."""
    lp = LinearProgram("tiny")
    lp.add_variable("x", lower=1.0, integer=True)
    lp.add_variable("y")
    lp.add_objective({"x": 3.0, "y": 2.0})
    lp.add_constraint("need", "f", {"x": 1.0, "y": 1.0}, Sense.GE, 4.0)
    texts = []
    writer = highs_module.mps_text
    monkeypatch.setattr(highs_module, "mps_text", lambda p: texts.append(p) or writer(p))
    for loaded, written in ((True, 0), (False, 1)):
        monkeypatch.setattr(highs_module, "_numpy_loaded", lambda loaded=loaded: loaded)
        result = get_backend("highs").solve(lp, mip_gap=0.0)
        assert len(texts) == written
        assert result.objective == pytest.approx(9.0)
