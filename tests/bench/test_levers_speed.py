"""`explain --levers` before and after, side by side in one run (issue 33: chat-3region's
levers under 30 s). Run by `make bench` only (not `make test`).

For each instance the base is solved once (one solver thread); then explain's work after
the base solve is done twice, back to back, as `explain --levers` runs it
(cli.levers.RunningLevers: the levers begun right after the base solve, beside the
explanation's re-solves, `JOBS` at a time in worker processes):

- `before`: every lever solved alone (solver.analysis.lever_groups.GROUPS off).
- `after`: `allow GPU` levers that save nothing proven together where they can be
  (solver.analysis.lever_groups), the others alone as before.

Printed: each lever's $/month and status both ways, then wall and CPU seconds (this
process and its reaped workers) of each run, their ratio, and the load average (the
machine is shared: read the ratios). Asserted: exactness only, never time. A lever
proven within the instance's gap g in both runs has both costs in [opt, opt / (1 - g)],
so they differ by at most about g of the larger; a lever proven in both runs has the
same status.
"""

import os
import resource
import time
from dataclasses import replace

import pytest

from models.io.loading import load_instance
from solver.analysis import lever_groups
from solver.analysis.explain import explain_solved
from solver.analysis.levers import LeverResult, LeverRun
from solver.settings import SolveSettings
from solver.solve import solve_program
from tests.paths import INSTANCES

JOBS = 2
"""Levers at once, as `explain --levers` runs them by default."""
BENCH_INSTANCES = ("chat-3region", "diurnal-chat-batch")
"""The default instance and an hourly one (levers work on every horizon)."""


def _cpu_s() -> float:
    """CPU seconds of this process and of its reaped children (the pools' workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _before(solved) -> tuple[LeverResult, ...]:
    """Every lever solved alone (no groups), begun beside the explanation."""
    lever_groups.GROUPS = False
    try:
        return _after(solved)
    finally:
        lever_groups.GROUPS = True


def _after(solved) -> tuple[LeverResult, ...]:
    """The levers begun, the explanation beside them, then the levers waited for."""
    start = solved.result.values
    run = LeverRun(solved.instance, solved.plan, jobs=JOBS, start=start, program=solved.program.lp)
    with run.begin(beside=True):
        explain_solved(solved)
        return run.results()


def _restarted(solved):
    """The solved base with its run's deadline starting now: each side's explanation gets
    the instance's time limit (as the command's, less the base solve's few seconds)."""
    settings = replace(solved.settings, deadline=None).started()
    return replace(solved, settings=settings)


def _timed(run):
    wall, cpu = time.perf_counter(), _cpu_s()
    results = run()
    return results, time.perf_counter() - wall, _cpu_s() - cpu


@pytest.mark.parametrize("name", BENCH_INSTANCES)
def test_explain_levers_before_and_after(name):
    instance = load_instance(INSTANCES / f"{name}.yaml")
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    base_cost = solved.plan.cost_per_month
    load_before = os.getloadavg()[0]
    before, before_wall, before_cpu = _timed(lambda: _before(_restarted(solved)))
    after, after_wall, after_cpu = _timed(lambda: _after(_restarted(solved)))
    load_after = os.getloadavg()[0]
    gap = instance.solver.mip_gap
    by_name = {r.lever: r for r in before}
    print(f"\n{name}: base ${base_cost:,.0f}/month ({solved.plan.status}), {len(after)} levers")
    print(f"{'lever':30} {'before $/mo':>12} {'status':>22} {'after $/mo':>12} {'status':>22} diff")
    for result in after:
        was = by_name[result.lever]
        diff = ""
        both = was.status == result.status == "solved"
        if both and was.cost_per_month and result.cost_per_month:
            diff = f"{abs(was.cost_per_month - result.cost_per_month) / was.cost_per_month:.3%}"
        print(
            f"{result.lever:30} {_cost(was):>12} {_status(was):>22} "
            f"{_cost(result):>12} {_status(result):>22} {diff}"
        )
        if both and was.cost_per_month is not None:
            larger = max(was.cost_per_month, result.cost_per_month)
            assert abs(was.cost_per_month - result.cost_per_month) <= gap * larger + 0.01
        if result.note.startswith("proven with"):
            print(f"{'':30} (proven in a group: solver.analysis.lever_groups)")
    print(f"{'explain + levers':30} {'wall s':>12} {'CPU s':>12}")
    print(f"{'before':30} {before_wall:>12.1f} {before_cpu:>12.1f}")
    print(f"{'after':30} {after_wall:>12.1f} {after_cpu:>12.1f}")
    print(
        f"{'ratio after / before':30} {after_wall / before_wall:>12.2f} "
        f"{after_cpu / before_cpu:>12.2f}   (load average {load_before:.1f} -> {load_after:.1f})"
    )
    assert {r.lever for r in after} == set(by_name)


def _cost(result: LeverResult) -> str:
    return "-" if result.cost_per_month is None else f"{result.cost_per_month:,.0f}"


def _status(result: LeverResult) -> str:
    return result.status if result.gap is None else f"{result.status} ({result.gap:.2%})"
