"""Solves that several test modules (or both pytest-xdist workers) need, done once a run.

`once_a_run` computes a value once per run: without pytest-xdist, in this process; under
it, the first worker to ask computes it and leaves it pickled (every float as computed)
in the run's shared temporary folder under a file lock, where the others read it
(pytest-xdist's recipe for a session fixture that runs once). Each caller gets its own
copy, so a module that edits what it got cannot change what another module reads.

`solving_default_once` lends the session's solve of the default instance
(conftest.default_solved) to the `fleetplan` commands that would solve it again.

`in_time` solves an instance as a run that ends within its own time limit does, on any
machine at any load."""

import dataclasses
import fcntl
import json
import os
import pickle
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import cli.solve
from solver.settings import SolveSettings
from solver.solve import Solved, solve_program
from tests.paths import INSTANCES

_PICKLED: dict[str, bytes] = {}
"""What this process computed or read, by name, pickled."""


def once_a_run(tmp_path_factory, name: str, compute: Callable[[], Any]) -> Any:
    """A copy of `compute()`, computed once a run under `name` (the module docstring)."""
    if name not in _PICKLED:
        _PICKLED[name] = _shared(tmp_path_factory, name, compute)
    return pickle.loads(_PICKLED[name])


def _shared(tmp_path_factory, name: str, compute: Callable[[], Any]) -> bytes:
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return pickle.dumps(compute())
    shared = tmp_path_factory.getbasetemp().parent
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        stored = shared / f"{name}.pickle"
        if not stored.exists():
            stored.write_bytes(pickle.dumps(compute()))
        return stored.read_bytes()


LOADED_LIMIT_S = 600.0
"""The time limit `in_time` solves at: ten times the shipped instances' 60 s, which a
2-core machine shared by several test runs has needed (chat-3region's solve takes
seconds of CPU at idle, and its 60 s stopped it at a 12.8% gap under load)."""


def in_time(instance) -> Solved:
    """`solve_program(instance)` at the instance's own settings, as a run that ends within
    the instance's time limit gives it, whatever the machine's load: solved with the limit
    raised to LOADED_LIMIT_S, and the limit the plan states (`solver.time_limit_s`) and the
    settings carry set back to the instance's own. The tests that share it read the plan
    and the optimum, not where a limit stops the run: a plan is the same whichever limit
    it ended within (the search takes the same path until a limit stops it), and what a
    limit does is tested on a clock that does not depend on the load
    (tests.guards.ticking_clock: tests/solver/time/test_time_limit.py and others)."""
    own = SolveSettings.of(instance)
    solved = solve_program(instance, own.limited(LOADED_LIMIT_S))
    stated = solved.plan.solver.model_copy(update={"time_limit_s": own.time_limit_s})
    return dataclasses.replace(
        solved,
        plan=solved.plan.model_copy(update={"solver": stated}),
        settings=dataclasses.replace(solved.settings, time_limit_s=own.time_limit_s),
    )


def diurnal_at_a_5_percent_gap(tmp_path_factory) -> tuple[Any, dict]:
    """(instance, plan as `solve --json` writes it) of instances/diurnal-chat-batch.yaml
    at a 5% gap (solver.mip_gap=0.05): the hour verifier's tests tamper with it
    (tests/solver/verify/test_verify_hours_hostile.py, test_verify_hour_scenarios.py),
    and tests/solver/time/test_hourly_status.py reads its status."""

    def compute():
        from models.io.overrides import load_instance_with, parse_overrides
        from solver.solve import solve

        instance = load_instance_with(
            INSTANCES / "diurnal-chat-batch.yaml", parse_overrides(["solver.mip_gap=0.05"])
        )
        return instance, json.loads(solve(instance).model_dump_json())

    return once_a_run(tmp_path_factory, "diurnal-5pct", compute)


def peak_hour_plan(tmp_path_factory) -> tuple[Any, Any]:
    """(instance, plan) of tests/solver/time/test_agree_peak_hour.py's day: the
    base-and-adapters hourly instance (an 8B chat beside two adapters' group, a reserved
    price) with chat at 1x its rate for 12 hours and 1.5x for 12; the peak-hour tests
    there and in tests/solver/test_agree_simulate_unrouted.py read it."""

    def compute():
        from models.io.loading import validate_instance
        from solver.solve import solve
        from tests.solver.time.test_agree_hourly_groups import _hourly
        from tests.solver.time.test_agree_peak_hour import PROFILE

        data = _hourly().model_dump(mode="json", exclude_unset=True)
        data["workloads"][0]["demand"]["east"]["hourly_profile"] = PROFILE
        instance = validate_instance(data, "profiled.yaml")
        return instance, solve(instance)

    return once_a_run(tmp_path_factory, "peak-hour", compute)


def hourly_groups_plan(tmp_path_factory) -> tuple[Any, Any]:
    """(instance, plan) of tests/solver/time/test_agree_hourly_groups.py's `_hourly`: the
    base-and-adapters instance with a reserved price, so its groups plan hour by hour;
    that module, test_agree_idle_groups.py and test_horizon_outputs.py read it."""

    def compute():
        from solver.solve import solve
        from tests.solver.time.test_agree_hourly_groups import _hourly

        instance = _hourly()
        return instance, solve(instance)

    return once_a_run(tmp_path_factory, "hourly-groups", compute)


def growth_horizon_2_months(tmp_path_factory) -> tuple[Any, dict]:
    """(instance, plan as `solve --json` writes it) of instances/growth-horizon.yaml cut
    to GROWTH_HORIZON_MONTHS of its 12 months, at its own settings: the hour verifier's
    tests tamper with it (tests/solver/verify/test_verify_hour_scenarios.py) and
    tests/cli/test_report_html.py draws it (`report --plan`)."""

    def compute():
        from models.io.overrides import load_instance_with, parse_overrides
        from solver.solve import solve

        months = parse_overrides([f"policy.horizon_months={GROWTH_HORIZON_MONTHS}"])
        instance = load_instance_with(INSTANCES / "growth-horizon.yaml", months)
        return instance, json.loads(solve(instance).model_dump_json())

    return once_a_run(tmp_path_factory, "growth-horizon-2-months", compute)


GROWTH_HORIZON_MONTHS = 2
"""The months of `growth_horizon_2_months`."""


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
