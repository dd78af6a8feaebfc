"""`fleetplan` commands whose solve of the default instance is the session's
(conftest.default_solved), so that a run solves chat-3region once, not once for the
fixture, once for `solve`'s output tests and once for the README's demo."""

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

import cli.solve
from solver.settings import SolveSettings
from solver.solve import Solved


@contextmanager
def solving_default_once(solved: Solved) -> Iterator[None]:
    """While open, the call the `solve`, `explain` and `verify` commands make to solve
    (cli.solve's solve_program) returns `solved` where it is the call that `solved` is
    the result of: the same instance, at its own settings (SolveSettings compares
    everything but the deadline), no candidate table given. Any other call solves. The
    commands' parsing, checks, rendering and files are their own."""
    real = cli.solve.solve_program
    instance, settings_of_it = solved.instance, SolveSettings.of(solved.instance)

    def solve_program(asked, settings=None, table=None):
        if table is None and settings == settings_of_it and asked == instance:
            return solved
        return real(asked, settings, table)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cli.solve, "solve_program", solve_program)
        yield
