"""The import structure: no circle between fleetplan's modules, and a verifier that is
independent of the program in fact (it reads models/, the plan schema and the row names
only).

Imports are read from the source with `ast`, every `import` statement counted wherever it
stands (a `TYPE_CHECKING` import is still a dependency of the reader)."""

import ast
import functools
import re
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
    """Module -> the fleetplan modules it imports: a copy of the graph read once per test
    process (reading and parsing the ~300 modules took 1.2 s of CPU, ten times a run)."""
    return _read_import_graph().copy()


@functools.cache
def _read_import_graph() -> nx.DiGraph:
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
    "solver.plan.schema": "the plan it checks",
    "solver.plan.records": "the records the plan is made of (pools, GPUs, scenarios)",
    "solver.plan.binding": "the binding rows the plan states (tight, priced or in whole units)",
    "solver.plan.time_records": "the plan's records of time planning (hours, months, batch)",
    "solver.plan.summary": "the buyer's summary read off the plan's own fields, which the "
    "verifier recomputes to check the one the plan states",
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
    "solver.verify.display": "what a plan displays per scenario (utilisation, started "
    "replicas, moves), read as the verifier reads it",
    "solver.verify.attribution": "the cost attribution's rows recomputed from the pools and "
    "prices (static and hourly plans)",
}
"""Modules of the verifier itself, split out of solver/verify/fleet.py; each may import from
solver/ only the plan vocabulary and the verifier's other parts."""


def test_the_plan_vocabulary_names_every_module_of_the_plan_package():
    graph = import_graph()
    plan_modules = {m for m in graph if m.startswith("solver.plan.")}
    assert plan_modules and plan_modules <= set(PLAN_VOCABULARY)


def test_the_verifier_imports_nothing_from_solver_but_the_plan_schema():
    graph = import_graph()
    solver_imports = {m for m in graph.successors("solver.verify.fleet") if m.startswith("solver")}
    assert set(VERIFIER_PARTS) <= solver_imports <= set(PLAN_VOCABULARY) | set(VERIFIER_PARTS)
    for module in (m for m in graph if m.startswith("solver.verify.")):
        outside = {
            m
            for m in graph.successors(module)
            if m.startswith("solver") and not m.startswith("solver.verify")
        }
        assert outside <= set(PLAN_VOCABULARY), module
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
    "solver.verify.hour_idle": "an hourly plan's idle share over the GPUs paid, recomputed "
    "from its hours; held to the hour verifier's rule",
    "solver.verify.hour_rows": "the period and month of each binding row, checked against "
    "the hours; held to the hour verifier's rule",
    "solver.verify.hour_scenarios": "each hour's scenario table (what simulate --hour "
    "replays) against the hour's pools and demand; held to the hour verifier's rule",
    "solver.verify.day_configs": "policy.max_configs_per_pool over the whole day, from the "
    "hours' pools; held to the hour verifier's rule",
    "solver.verify.hour_capacity": "each hour's interactive pools against its warm demand "
    "(region losses after the starts and by the error budget, spot down); held to the hour "
    "verifier's rule",
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


def test_the_plan_vocabulary_imports_nothing_from_solver_but_itself():
    graph = import_graph()
    for module in PLAN_VOCABULARY:
        outside = [
            m
            for m in graph.successors(module)
            if m.startswith("solver") and m not in PLAN_VOCABULARY
        ]
        assert outside == [], module


def test_models_never_import_solver_or_cli():
    graph = import_graph()
    upward = [
        (a, b) for a, b in graph.edges if a.startswith("models") and not b.startswith("models")
    ]
    assert upward == []


SCHEMA_VALUE_VOCABULARY = {
    "models.schema.quantities",
    "models.schema.limits",
    "models.schema.errors",
    "models.schema.traffic",
}
"""The schema's modules that physics and serving may read: units, bounds, input errors and
token distributions, none of which imports the instance schema."""


def test_physics_and_serving_never_import_the_instance_schema():
    """No module of models.physics or models.serving imports models.schema.instance, nor a
    module of models.schema that imports it (directly or not): the roofline and the serving
    model load without the instance file's schema (issue 31)."""
    graph = import_graph()
    instance = "models.schema.instance"
    near_instance = {
        m for m in graph if m.startswith("models.schema.") and nx.has_path(graph, m, instance)
    }
    assert {instance, "models.schema.serving_inputs"} <= near_instance  # the graph sees them
    assert near_instance.isdisjoint(SCHEMA_VALUE_VOCABULARY)
    reads_the_schema = {
        (module, target)
        for module in graph
        if module.startswith(("models.physics.", "models.serving."))
        for target in graph.successors(module)
        if target in near_instance
    }
    assert reads_the_schema == set()


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
    "networkx": "the region graph's library: one region has no graph to search",
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
    heavy = {"highspy", "ortools", "pulp", "numpy", "networkx", "solver"}
    assert "cli" in loaded and not loaded & heavy, loaded & heavy


def test_a_one_model_solve_imports_only_what_it_needs():
    from tests.paths import ONE_MODEL_ONE_REGION

    loaded = _modules_after(["solve", str(ONE_MODEL_ONE_REGION)])
    assert "solver.backends.highs" in loaded and "highspy._core" in loaded  # it solved
    assert sorted(set(NOT_ON_THE_ONE_MODEL_PATH) & loaded) == []


def _contract(allowed: str, why: str) -> tuple[frozenset[str], str]:
    """A contract: the packages or modules allowed (space-separated), and why."""
    return frozenset(allowed.split()), why


CONTRACTS: dict[str, tuple[frozenset[str], str]] = {
    "models": _contract("", "the package's own __init__: a docstring"),
    "models.schema": _contract(
        "models.physics models.io models.calculators models.serving.replica "
        "models.serving.prefix_kv",
        "the instance refers to catalog records, imports config.json and the voice budget; "
        "what it imports reads back only the value vocabulary, so the modules make no circle; "
        "serving_inputs turns a workload into serving's TrafficMix and LatencyTargets, and a "
        "pool of it into its prefix cache (one description for planner, verifier, simulator)",
    ),
    "models.physics": _contract(
        "models.schema.quantities",
        "the roofline loads without the instance schema: only the unit types",
    ),
    "models.io": _contract(
        "models.schema models.physics",
        "files become schema records; the YAML reader and the LLM records are physics'",
    ),
    "models.serving": _contract(
        "models.physics models.schema.traffic",
        "capacity at the SLO is the roofline under a traffic mix; of the schema only the token "
        "distributions, never the instance schema",
    ),
    "models.colocation": _contract(
        "models.physics models.serving models.schema",
        "co-resident engines are replicas sharing memory; warm_cold reads the instance",
    ),
    "models.operations": _contract(
        "models.schema models.physics models.serving",
        "time, pricing and failure act on pools whose capacity serving computes",
    ),
    "models.calculators": _contract(
        "models.physics models.serving models.operations models.schema",
        "the back-of-envelope estimate runs the whole model on one workload",
    ),
    "models.profiles": _contract(
        "models.io models.physics models.serving models.schema",
        "a user's runs are read through the bounded readers and replayed on the serving model",
    ),
    "solver": _contract("", "the package's own __init__: a docstring"),
    "solver.workers": _contract("", "the one worker-pool helper: the standard library only"),
    "solver.background": _contract(
        "", "a call run beside its caller in a thread (the pricing LP): the standard library only"
    ),
    "solver.errors": _contract("", "the solver's error types: imported by all, importing nothing"),
    "solver.progress": _contract(
        "", "progress of long work on the fleetplan.progress logger: the standard library only"
    ),
    "solver.settings": _contract(
        "models.schema solver.errors solver.progress",
        "one settings object built from the instance and the backend names",
    ),
    "solver.plan": _contract(
        "models.physics models.serving models.schema.quantities",
        "the plan vocabulary names precisions and replica records, nothing of the solver; "
        "its counts are the schema's strict numbers",
    ),
    "solver.program": _contract(
        "models.schema models.serving models.operations solver.candidates "
        "solver.colocation solver.settings solver.errors solver.backends",
        "the program reads the candidate table and templates; export writes MPS via HiGHS",
    ),
    "solver.backends": _contract(
        "models.schema.backend_names solver.program.lp solver.settings solver.progress",
        "a backend sees the solver-neutral program only, never the instance",
    ),
    "solver.candidates": _contract(
        "models.schema models.physics models.serving models.operations solver.plan "
        "solver.settings solver.errors solver.program solver.decompose",
        "the table is physics per configuration; the dominance reductions solve small "
        "programs; the worker pool fills the table",
    ),
    "solver.colocation": _contract(
        "models.colocation models.physics models.schema models.serving solver.candidates "
        "solver.plan solver.settings solver.errors solver.program solver.backends "
        "solver.decompose",
        "templates from candidates and co-location physics; the group search prices packings "
        "with a small program; linked workloads come from decompose",
    ),
    "solver.decompose": _contract(
        "models.schema models.operations solver.program solver.candidates "
        "solver.colocation solver.backends solver.settings solver.workers",
        "builds and solves the program in parts, in worker processes",
    ),
    "solver.readback": _contract(
        "models.serving models.operations solver.program solver.candidates solver.plan "
        "solver.settings solver.analysis",
        "solver values become the plan; each pool's cost lines come from cost attribution",
    ),
    "solver.time": _contract(
        "models.schema models.operations models.serving solver.program solver.candidates "
        "solver.readback solver.plan solver.verify solver.backends solver.settings "
        "solver.errors solver.analysis solver.stages solver.decompose solver.colocation",
        "the same program indexed by period and read back hour by hour; the stages around it "
        "(candidates, guards, deadline, solve) are the pipeline's (solver.stages); the "
        "periods' shared group templates built once (solver.colocation.templates)",
    ),
    "solver.verify": _contract(
        "models.schema models.physics models.serving models.operations models.colocation "
        "solver.plan solver.program.row_names",
        "independent of the program: the physics, the plan and the row names only",
    ),
    "solver.analysis": _contract(
        "models.schema models.io models.physics models.serving models.operations "
        "solver.solve solver.settings solver.errors solver.program solver.backends "
        "solver.decompose solver.readback solver.candidates solver.plan solver.verify "
        "solver.simulate solver.workers solver.stages",
        "explanation, levers and compare solve again and read the results back (a lever "
        "builds its table and program with the pipeline's stages first)",
    ),
    "solver.deploy": _contract(
        "models.schema models.serving models.operations models.io models.physics.overlap "
        "models.physics.catalog solver.plan solver.verify",
        "a plan's pools as engine arguments and manifests: the verifier's per-pool physics "
        "sizes the normal scenario and the scaling thresholds; each engine's two-batch "
        "overlap condition decides its switch; a running fleet read back "
        "(its JSON with the documents' one check of a key given twice, a misspelt GPU "
        "named with the catalog's closest name)",
    ),
    "solver.simulate": _contract(
        "models.physics models.serving models.schema models.operations solver.plan",
        "checks the queue formulas from outside the program: physics and the plan only, "
        "and a failure scenario's rerouted round trips (the targets a pool is judged at)",
    ),
    "solver.studies": _contract(
        "models.schema models.io models.physics solver.solve solver.settings solver.errors "
        "solver.backends solver.plan solver.verify solver.workers solver.time",
        "many solves, each through solver.solve and the hour verifier, in worker processes; "
        "a golden's fingerprint hashes the catalog; an hourly plan restated at another "
        "point's prices (solver.time.reprice)",
    ),
    "solver.solve": _contract(
        "models.schema models.physics models.operations models.colocation "
        "solver.settings solver.errors solver.candidates solver.program solver.backends "
        "solver.decompose solver.colocation solver.readback solver.time solver.verify "
        "solver.analysis solver.plan solver.stages solver.background solver.simplicity",
        "the pipeline: sequences every stage, for every horizon",
    ),
    "solver.simplicity": _contract(
        "models.schema solver.settings solver.candidates solver.program solver.backends "
        "solver.decompose solver.readback solver.plan",
        "what the limit on configurations per pool costs: the instance solved again with it "
        "lifted, read back to its cost",
    ),
    "solver.stages": _contract(
        "models.schema solver.settings solver.errors solver.candidates solver.program "
        "solver.backends solver.plan solver.verify",
        "the stages every horizon passes: backend, candidates and their guard, the solve's "
        "share of the deadline, the solver's answer judged, the verifier's verdict",
    ),
    "cli": _contract(
        "cli.render models.schema models.io models.physics models.serving "
        "models.calculators models.profiles solver.solve solver.settings solver.errors "
        "solver.backends "
        "solver.plan solver.verify solver.analysis solver.studies solver.simulate "
        "solver.candidates solver.program solver.deploy",
        "each command fronts one library function (export: the table and the program)",
    ),
    "cli.render": _contract(
        "solver.plan solver.analysis solver.studies models.calculators models.serving "
        "models.schema models.physics models.io.output_files models.io.output_kinds",
        "draws records: the plan, the report's data, a batch, the estimate, input errors, "
        "a replica's memory and efficiency factors (perf's tables); text reaches the "
        "terminal as output_files.terminal_safe spells it; the HTML report opens as "
        "output_kinds recognises an earlier one",
    ),
}
"""Package (or a module at solver/'s top level) -> what it may import outside itself, and
why. An entry is a package or a module; importing anything inside an entry is allowed. Each
package's __init__.py states the same in its "Imports:" paragraph."""


def _owner(module: str) -> str:
    """The contract that holds a module: the longest key that is it or a package above it."""
    owners = [key for key in CONTRACTS if module == key or module.startswith(key + ".")]
    assert owners, f"{module} is in no package with an import contract"
    return max(owners, key=len)


def _within(module: str, entry: str) -> bool:
    return module == entry or module.startswith(entry + ".")


def _outside_imports() -> dict[str, set[str]]:
    """Contract -> the modules outside it that its modules import."""
    found: dict[str, set[str]] = {key: set() for key in CONTRACTS}
    for a, b in import_graph().edges:
        if _owner(a) != _owner(b):
            found[_owner(a)].add(b)
    return found


def test_every_package_imports_only_what_its_contract_allows():
    broken = {
        (owner, target)
        for owner, targets in _outside_imports().items()
        for target in targets
        if not any(_within(target, entry) for entry in CONTRACTS[owner][0])
    }
    assert broken == set()


def test_every_entry_of_a_contract_is_used():
    """A contract is precise: an allowance no module uses is stale text."""
    imported = _outside_imports()
    unused = {
        (owner, entry)
        for owner, (allowed, _) in CONTRACTS.items()
        for entry in allowed
        if not any(_within(target, entry) for target in imported[owner])
    }
    assert unused == set()


def _imports_paragraph(init: Path) -> str:
    docstring = ast.get_docstring(ast.parse(init.read_text())) or ""
    paragraphs = [p for p in docstring.split("\n\n") if p.startswith("Imports:")]
    assert len(paragraphs) == 1, f"{init} states no 'Imports:' paragraph"
    return paragraphs[0]


def test_each_package_init_states_its_contract():
    """Every package's 'Imports:' paragraph names each entry of its contract and names no
    package outside it (a name inside an entry, such as a module of it, may be named)."""
    for key, (allowed, _) in CONTRACTS.items():
        init = ROOT / key.replace(".", "/") / "__init__.py"
        if key in PACKAGES or not init.exists():  # the top packages; solver/'s modules
            continue
        text = _imports_paragraph(init)
        named = set(re.findall(r"\b(?:models|solver|cli)(?:\.\w+)+", text))
        assert {entry for entry in allowed if entry not in named} == set(), key
        stray = {
            name for name in named if not any(_within(name, e) or _within(e, name) for e in allowed)
        }
        assert stray == set(), key


MAX_MODULES_PER_FOLDER = 20
MAX_MODULE_LINES = 600
SIZED = (*PACKAGES, "calibration")
"""Whose modules the size limits hold: the installed packages and the calibration tool."""

BEING_SPLIT: set[str] = set()
"""Modules over the line limit today, each being split; one that drops under the limit
leaves this set, so that the set stays the list of what is still to split."""


def _line_counts() -> dict[str, int]:
    return {
        path.relative_to(ROOT).as_posix(): len(path.read_text().splitlines())
        for pkg in SIZED
        for path in (ROOT / pkg).rglob("*.py")
    }


def test_no_folder_holds_more_than_twenty_modules():
    folders: dict[str, int] = {}
    for path in _line_counts():
        folder = path.rpartition("/")[0]
        folders[folder] = folders.get(folder, 0) + 1
    assert {f: n for f, n in folders.items() if n > MAX_MODULES_PER_FOLDER} == {}


def test_no_module_is_over_six_hundred_lines_but_those_being_split():
    lines = _line_counts()
    long_ones = {path for path, n in lines.items() if n > MAX_MODULE_LINES}
    assert long_ones - BEING_SPLIT == set()  # a new long module: split it
    assert BEING_SPLIT - long_ones == set()  # split already: take it off the list
