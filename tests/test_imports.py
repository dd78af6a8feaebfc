"""The import structure: no circle between fleetplan's modules, and a verifier that is
independent of the program in fact (it reads models/, the plan schema and the row names
only).

Imports are read from the source with `ast`, every `import` statement counted wherever it
stands (a `TYPE_CHECKING` import is still a dependency of the reader)."""

import ast
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("models", "solver", "cli")


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, known: set[str]) -> set[str]:
    """The fleetplan modules a file imports (`from a.b import c` counts a.b.c when that is
    a module, else a.b)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [
                f"{node.module}.{alias.name}"
                if f"{node.module}.{alias.name}" in known
                else node.module
                for alias in node.names
            ]
        else:
            continue
        found |= {name for name in names if name in known}
    return found


def import_graph() -> nx.DiGraph:
    """Module -> the fleetplan modules it imports."""
    files = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph = nx.DiGraph()
    graph.add_nodes_from(files)
    for name, path in files.items():
        for target in _imports(path, set(files)):
            if target != name and not name.startswith(target + "."):  # a package's own init
                graph.add_edge(name, target)
    return graph


def test_the_graph_sees_the_imports_it_must():
    graph = import_graph()
    assert graph.has_edge("solver.verify.fleet", "solver.plan.schema")
    assert graph.has_edge("cli.solve", "solver.solve")


PLAN_VOCABULARY = {
    "solver.plan.schema": "the plan schema it checks",
    "solver.program.row_names": "the names of the program's rows, so that a violation is named as "
    "the row it breaks; it imports nothing from solver/ itself",
}
"""What the verifier may import from solver/, and why."""

VERIFIER_PARTS = {
    "solver.verify.totals": "the check of every figure a plan states (issue 16); part of "
    "the verifier, held to the same rule: from solver/ it reads the plan schema only",
    "solver.verify.verdict": "the verdict's types (Violation, ScenarioCheck, Verification) "
    "and the tolerances the checks allow",
    "solver.verify.pools": "the plan's pools with their physics recomputed (step 1)",
    "solver.verify.site": "supply, cost, servers, power, racks, configs per pool (steps 2-3)",
    "solver.verify.scenarios": "every failure scenario served (step 4)",
    "solver.verify.groups": "shared groups recomputed (step 5)",
}
"""Modules of the verifier itself, split out of solver/verify/fleet.py; each may import from
solver/ only the plan vocabulary and the verifier's other parts."""


def test_the_verifier_imports_nothing_from_solver_but_the_plan_schema():
    graph = import_graph()
    solver_imports = {m for m in graph.successors("solver.verify.fleet") if m.startswith("solver")}
    assert solver_imports == set(PLAN_VOCABULARY) | set(VERIFIER_PARTS)
    for part in VERIFIER_PARTS:
        part_imports = {m for m in graph.successors(part) if m.startswith("solver")}
        assert part_imports <= set(PLAN_VOCABULARY) | set(VERIFIER_PARTS), part


HOUR_VERIFIER_PARTS = {
    "solver.verify.batch": "the hour verifier's batch checks (soak shares, deadlines); held "
    "to the hour verifier's rule",
    "solver.verify.months": "the hour verifier's month checks (each month verified alone, "
    "orders a lead time ahead); held to the hour verifier's rule",
    "solver.verify.hour_figures": "every other figure an hourly plan states, recomputed "
    "(issue 36); held to the hour verifier's rule",
    "solver.verify.hour_reports": "the figures an hourly plan reports beside its counts "
    "(idle hours, batch placements, headroom), recomputed; held to the hour verifier's rule",
}


def test_the_hour_verifier_imports_nothing_from_solver_but_the_verifier_and_the_plan():
    graph = import_graph()
    solver_imports = {m for m in graph.successors("solver.verify.hours") if m.startswith("solver")}
    allowed = {"solver.verify.fleet", *PLAN_VOCABULARY, *VERIFIER_PARTS}
    assert solver_imports <= allowed | set(HOUR_VERIFIER_PARTS)
    assert {"solver.verify.fleet", *HOUR_VERIFIER_PARTS} <= solver_imports
    for part in HOUR_VERIFIER_PARTS:  # a part may use another's helpers (no circle: above)
        part_imports = {m for m in graph.successors(part) if m.startswith("solver")}
        assert part_imports <= allowed | set(HOUR_VERIFIER_PARTS), part


def test_the_plan_vocabulary_imports_nothing_from_solver():
    graph = import_graph()
    for module in PLAN_VOCABULARY:
        assert [m for m in graph.successors(module) if m.startswith("solver")] == [], module


def test_models_never_import_solver_or_cli():
    graph = import_graph()
    upward = [
        (a, b) for a, b in graph.edges if a.startswith("models") and not b.startswith("models")
    ]
    assert upward == []


def test_the_import_graph_has_no_circle():
    cycles = list(nx.simple_cycles(import_graph()))
    assert cycles == []


NOT_ON_THE_ONE_MODEL_PATH = {
    "numpy": "the compiled program is array.array; HiGHS gets a small program as MPS text",
    "highspy.highs": "highspy's Python layer imports numpy; the backend loads highspy._core",
    "models.colocation.coresident": "co-location physics: loaded when a group is evaluated",
    "multiprocessing": "worker processes: started only for large instances",
    "concurrent.futures": "worker pools: likewise",
    "ortools": "the scip and cpsat backends' library",
    "pulp": "the cbc backend's library",
    "models.operations.time_periods": "hourly demand grids: hourly plans only",
    "models.operations.autoscaling": "warm pools by hour: hourly plans only",
    "solver.verify.hours": "the hour verifier: `fleetplan verify`'s (solve verifies with "
    "solver.verify.fleet)",
}
"""Modules a one-model, one-region solve must not import (issue 19), and why."""


def _modules_after(argv: list[str]) -> set[str]:
    """Every module in sys.modules after `fleetplan ARGV...` ran in a fresh interpreter."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom cli.app import main\n"
        f"sys.argv = ['fleetplan', *{argv!r}]\n"
        "try:\n    main()\nexcept SystemExit as stop:\n    assert not stop.code, stop.code\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return set(result.stderr.split())


def test_importing_the_app_imports_no_solver_library_nor_numpy():
    import subprocess
    import sys

    probe = "import cli.app, sys\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    loaded = {name.split(".")[0] for name in result.stdout.split()}
    assert not loaded & {"highspy", "ortools", "pulp", "numpy"}, loaded


def test_a_one_model_solve_imports_only_what_it_needs():
    from tests.paths import ONE_MODEL_ONE_REGION

    loaded = _modules_after(["solve", str(ONE_MODEL_ONE_REGION)])
    assert "solver.backends.highs" in loaded and "highspy._core" in loaded  # it solved
    assert sorted(set(NOT_ON_THE_ONE_MODEL_PATH) & loaded) == []
