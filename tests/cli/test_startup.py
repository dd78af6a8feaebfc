"""Start-up: the command line imports only what the command it runs needs (issue 19).

Not timed (timings live in `make bench`): these check which modules get imported.
"""

import ast
import inspect
import subprocess
import sys

import pytest

from cli import app as cli_app
from tests.paths import ONE_MODEL_ONE_REGION

HEAVY = ("highspy", "ortools", "pulp", "networkx", "numpy", "solver")


def _imported_after(code: str) -> set[str]:
    """Top-level package names in sys.modules after running `code` in a fresh interpreter."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted({{m.split('.')[0] for m in sys.modules}})))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return set(result.stdout.splitlines()[-1].split())


def test_importing_the_app_imports_no_solver_backend():
    loaded = _imported_after("import cli.app")
    assert not loaded & set(HEAVY), loaded & set(HEAVY)


@pytest.mark.parametrize("argv", [["--help"], ["catalog", "gpus"], ["solve", "--help"]])
def test_help_and_catalog_load_no_solver_backend(argv):
    code = (
        "import sys\nfrom cli.app import main\n"
        f"sys.argv = ['fleetplan', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
    )
    loaded = _imported_after(code)
    assert not loaded & {"highspy", "ortools", "pulp"}, loaded


def test_every_command_summary_is_its_docstring_first_sentence():
    for name, module in cli_app.COMMANDS.items():
        function = getattr(__import__(module, fromlist=[name]), name.replace("-", "_"))
        doc = " ".join(inspect.getdoc(function).split("\n\n")[0].split())
        summary = cli_app.summary(name)
        assert summary and doc.startswith(summary.rstrip(".")), (name, summary, doc)


def test_an_unknown_command_is_refused(run_cli):
    result = run_cli("solv")
    assert result.exit_code == 2
    assert "No such command" in result.stderr


def test_a_one_region_solve_imports_no_graph_library():
    instance = ONE_MODEL_ONE_REGION
    code = (
        "import sys\nfrom cli.app import main\n"
        f"sys.argv = ['fleetplan', 'solve', {str(instance)!r}]\n"
        "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
    )
    loaded = _imported_after(code)
    assert "solver" in loaded  # it did solve
    assert "networkx" not in loaded


def test_each_backend_name_loads_its_own_class_and_only_it():
    from solver.backends import backend_names, get_backend

    assert [get_backend(name).name for name in backend_names()] == list(backend_names())
    code = "from solver.backends import get_backend\nget_backend('highs')\n"
    probe = f"{code}import sys\nprint(' '.join(sorted(m for m in sys.modules if 'backends' in m)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=60
    )
    loaded = set(result.stdout.split())
    assert "solver.backends.highs" in loaded
    assert not loaded & {"solver.backends.cbc", "solver.backends.scip", "solver.backends.cpsat"}


@pytest.mark.parametrize("argv", [["--help"], ["catalog", "gpus"], ["solv"]])
def test_the_collector_runs_again_after_the_command(run_cli, argv):
    """`main` pauses the cyclic garbage collector while a command loads; whichever way the
    command ends (help, output, an error), the collector is running again after it."""
    import gc

    assert gc.isenabled()
    run_cli(*argv)
    assert gc.isenabled()


def test_a_definition_is_cut_at_the_next_top_level_statement():
    """The summary reader parses `def name(...)` alone: a signature closed by `)` in
    column 0, comments in column 0 and indented docstring lines stay in; the next
    decorator ends it. A cut that does not parse falls back to the whole source."""
    source = (
        "import x\n\n\ndef other():\n    pass\n\n\n"
        "def solve(\n    file: int,\n) -> None:\n"
        '    """Find the cheapest fleet.\n\n    More.\n    """\n# a comment\n    return None\n\n\n'
        "@decorator\ndef after():\n    pass\n"
    )
    tree = cli_app._definition(source, "solve")
    assert [node.name for node in tree.body] == ["solve"]
    assert ast.get_docstring(tree.body[0]) == "Find the cheapest fleet.\n\nMore."
    text_in_column_0 = (
        'x = 1\n\n\ndef solve():\n    text = """\nat column 0\n"""\n    return text\n'
    )
    whole = cli_app._definition(text_in_column_0, "solve")
    assert [type(node).__name__ for node in whole.body] == ["Assign", "FunctionDef"]
