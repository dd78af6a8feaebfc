"""Start-up: the command line imports only what the command it runs needs (issue 19).

Not timed (timings live in `make bench`): these check which modules get imported. What
importing the app and a one-model, one-region solve import (no graph library among them)
is tests/test_imports.py's.
"""

import ast
import inspect
import subprocess
import sys

import pytest

from cli import app as cli_app

HELP_AND_CATALOG = (("--help",), ("catalog", "gpus"), ("solve", "--help"))
"""Commands that answer without solving. (What importing the app loads is
tests/test_imports.py's test_importing_the_app_imports_no_solver_library_nor_numpy.)"""


def test_help_and_catalog_load_no_solver_backend():
    """The commands run one after the other in one fresh interpreter (a process each was
    0.4 to 1.2 s of CPU), the packages loaded printed after each: a package none loaded
    is in no list, and one a command loaded is named with the first command it is new
    after, as a process of its own would have named it."""
    code = "import sys\nfrom cli.app import main\n"
    for argv in HELP_AND_CATALOG:
        code += (
            f"sys.argv = ['fleetplan', *{argv!r}]\n"
            "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
            "print('LOADED', ' '.join(sorted({m.split('.')[0] for m in sys.modules})))\n"
        )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert result.returncode == 0, result.stderr
    after = [set(line.split()[1:]) for line in result.stdout.splitlines() if line[:7] == "LOADED "]
    assert len(after) == len(HELP_AND_CATALOG)
    before: set[str] = set()
    for argv, loaded in zip(HELP_AND_CATALOG, after, strict=True):
        assert not (loaded - before) & {"highspy", "ortools", "pulp"}, (argv, loaded - before)
        before = loaded


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
