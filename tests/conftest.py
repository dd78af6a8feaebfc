"""Shared fixtures: paths and an in-process runner for the `fleetplan` command line."""

import os
import sys
from dataclasses import dataclass

import pytest
from hypothesis import settings

# Tables follow COLUMNS when it is set (cli.render.console reads it once, at import);
# pytest-xdist's workers set it to 80. Tests read the file width every run gets without it.
os.environ.pop("COLUMNS", None)

from cli.app import main
from tests.schedule import slow_first

# No hypothesis example is timed (hypothesis's default deadline is 200 ms a call): a time
# is no assertion of the suite's (tests/bench measures speed), and on a loaded machine a
# quick property failed on its deadline (test_expert_parallel's imbalance, 256 ms at a
# load of ~8 on 2 cores). A property that names no max_examples draws SUITE_EXAMPLES in
# `make test` (hypothesis's 100 were ~37 tests' 7.6 s of CPU in tests/cli, tests/models
# and the top level alone), and THOROUGH_EXAMPLES under `make bench`, which runs every
# property test again with `--hypothesis-profile thorough`. A test's own @settings still
# sets whatever it says (max_examples included: those are sized to their cost already).
SUITE_EXAMPLES = 50
THOROUGH_EXAMPLES = 500
settings.register_profile("suite", deadline=None, max_examples=SUITE_EXAMPLES)
settings.register_profile("thorough", deadline=None, max_examples=THOROUGH_EXAMPLES)
settings.load_profile("suite")


def pytest_collection_modifyitems(items):
    """The slow modules first (tests.schedule says why and how)."""
    slow_first(items)


@dataclass(frozen=True)
class CliResult:
    """What one `fleetplan` invocation produced."""

    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """Run `fleetplan ARGS...` in-process through the real entry point (exit-code mapping
    included) and return its exit code and output."""

    def run(*args: str) -> CliResult:
        monkeypatch.setattr(sys, "argv", ["fleetplan", *map(str, args)])
        code = 0
        try:
            main()
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="session")
def default_solved(tmp_path_factory):
    """The default instance solved once per run as `fleetplan solve` solves it
    (solver.solve.solve_program: the plan, its program and result): chat-3region takes
    seconds of CPU, and the tests that need its plan (to deploy, tamper or verify) or the
    command's output of it (tests/cli/test_solve_cli.py, the README's demo:
    tests.solved_once) share it. Under pytest-xdist the first worker to need it solves it
    and leaves it pickled (every float as solved) in the run's shared temporary folder,
    where the others read it (tests.solved_once.once_a_run). It is the run that ends
    within the instance's limit on any machine at any load (tests.solved_once.in_time)."""
    from models.io.loading import load_instance
    from tests.paths import DEFAULT_INSTANCE
    from tests.solved_once import in_time, once_a_run

    return once_a_run(
        tmp_path_factory, "default-solved", lambda: in_time(load_instance(DEFAULT_INSTANCE))
    )


@pytest.fixture(scope="session")
def default_plan(default_solved):
    """The default instance's plan (`solve(instance)`, which is solve_program's plan; a
    solve of it is tested in tests/solver/test_solve.py)."""
    return default_solved.plan


@pytest.fixture
def no_engine_effects(monkeypatch):
    """explain without its engine-effects replay (solver.analysis.explain._engine_effects:
    five runs of 120 s of arrivals per pool, most of a small explain's CPU time), for tests
    that read none of it: the explanation has no `engine_effects` fields. The replay's own
    tests are tests/solver/analysis/test_engine_effects.py and test_explain_deadline.py."""
    import solver.analysis.explain as explain_module

    monkeypatch.setattr(explain_module, "_engine_effects", lambda *_: {})
