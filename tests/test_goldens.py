"""The golden results: each instance in instances/ solved as `fleetplan batch instances
--check --strict` solves it (solver.studies.batch.solve_one: its own settings, one solver
thread, its own time limit, the verifier again) and held to its NAME.expected.json as the
command holds it (check_golden, and cli.render.junit.verdict's reasons under --strict),
one test per instance. `make test` ran the command before pytest, so that the instances
other tests solve as well were solved twice a run, and the command's 2 workers waited on
its slowest instance while pytest had not started; as tests, pytest-xdist spreads them
over its workers, and an instance that other tests solve at the same settings is solved
once a run: chat-3region is conftest's `default_solved` (`_solving_as`).

The command itself (the folder, its pool of --jobs workers, the table, the exit codes,
--strict) is tested on small folders in tests/cli/test_batch.py."""

from contextlib import contextmanager
from pathlib import Path

import pytest

import solver.studies.batch as batch
from cli.render.junit import verdict
from models.io.loading import load_instance
from solver.settings import SolveSettings
from solver.solve import Solved
from solver.studies.batch import check_golden, instance_files, solve_one
from tests.paths import DEFAULT_INSTANCE, INSTANCES

SLOWEST = ("procurement-3region", "growth-horizon", "zipf-20-models", "diurnal-chat-batch")
"""The instances of 7 s of CPU and more (20, 12, 8.7 and 7.6 s at 455b948b; chat-3region's
9 s is the session's): first, so that no worker takes one on when the others are done."""

FILES = sorted(instance_files(INSTANCES), key=lambda path: path.stem not in SLOWEST)


@contextmanager
def _solving_as(solved: Solved):
    """While open, the batch's call to solve returns `solved`'s plan where it is the call
    that `solved` is the result of (the same instance, and settings equal but for the
    deadline: `solve_one` asks for one thread, `default_solved` has the instance's one);
    any other call solves."""
    real = batch.solve
    settings_of_it = SolveSettings.of(solved.instance, threads=1)

    def solve(asked, settings=None):
        if asked == solved.instance and settings == settings_of_it:
            return solved.plan
        return real(asked, settings)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(batch, "solve", solve)
        yield


@pytest.mark.parametrize("path", FILES, ids=[path.stem for path in FILES])
def test_the_instance_meets_its_golden(path: Path, request):
    """No reason to fail under `batch --check --strict`: the same status, a cost within
    the golden's tolerance (or cheaper and verified), the same binding families, a plan
    the verifier accepts, the same input (instance, catalog, version)."""
    instance = load_instance(path)
    if path == DEFAULT_INSTANCE:
        with _solving_as(request.getfixturevalue("default_solved")):
            outcome = solve_one(str(path), instance, None)
    else:
        outcome = solve_one(str(path), instance, None)
    result = verdict(outcome, check_golden(outcome), strict=True)
    assert result["reasons"] == [], f"{path.name}: {result['finding']}: " + "; ".join(
        result["reasons"]
    )
