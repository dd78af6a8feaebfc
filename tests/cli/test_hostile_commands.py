"""Hostile input, round seven: options and plans given to the commands. An unknown
`compare --backend` exited 70 after both solves; each case now exits 2 naming the flag
or the file, before any work."""

from tests.cli.test_hostile_input import run_checked
from tests.paths import ONE_MODEL_ONE_REGION


def test_compare_refuses_an_unknown_backend_naming_the_flag(run_cli):
    args = ("compare", ONE_MODEL_ONE_REGION, ONE_MODEL_ONE_REGION, "--backend", "gurobi")
    result = run_checked(run_cli, *args, needles=("--backend", "'gurobi'", "highs, cbc"))
    assert "internal error" not in result.stderr
