"""`explain --levers` today and after, side by side in one run (issue 33: chat-3region's
levers under 30 s). Run by `make bench` only (not `make test`).

For each instance the base is solved once (one solver thread), then every lever is
re-solved twice, `JOBS` at a time in worker processes, back to back:

- `today`: each lever's instance solved on its own (`solve_lever` without a start), each
  with the instance's whole time limit, as `rank_levers` did before: candidates,
  program, the restricted program's warm start (solver.decompose.warm_start), the
  regions' programs (solver.decompose.region_bounds), the whole program, its pricing LP.
- `after`: `rank_levers` as `explain --levers` runs it: every static re-solve starts from
  the base plan (no restricted warm start: one program fewer per lever), each within the
  instance's time limit; a lever its limit stops reports its gap (an hourly lever has
  no base plan to start from: the periods program starts on its own).

Printed: each lever's $/month and status both ways, and the relative difference where
both are proven; then wall and CPU seconds (this process and its reaped workers) of
each run, their ratio, and the load average (the machine is shared: read the ratios).
Asserted: exactness only, never time. A lever proven within the instance's gap g in both
runs has both costs in [opt, opt / (1 - g)], so they differ by at most about g of the
larger.
"""

import os
import resource
import time
from concurrent.futures import as_completed

import pytest

from models.io.loading import load_instance
from solver.analysis.lever_edits import levers_for
from solver.analysis.levers import LeverResult, rank_levers, solve_lever
from solver.settings import SolveSettings
from solver.solve import solve_program
from solver.workers import process_pool
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


def _today(instance, base_cost: float) -> tuple[LeverResult, ...]:
    """Every lever solved on its own, each with the instance's time limit, no start."""
    work = [(lever.name, lever.apply(instance)) for lever in levers_for(instance)]
    with process_pool(JOBS) as pool:
        futures = [
            pool.submit(solve_lever, name, changed, base_cost, None) for name, changed in work
        ]
        return tuple(future.result() for future in as_completed(futures))


def _timed(run):
    wall, cpu = time.perf_counter(), _cpu_s()
    results = run()
    return results, time.perf_counter() - wall, _cpu_s() - cpu


@pytest.mark.parametrize("name", BENCH_INSTANCES)
def test_levers_today_and_after(name):
    instance = load_instance(INSTANCES / f"{name}.yaml")
    base = solve_program(instance, SolveSettings.of(instance, threads=1))
    base_cost = base.plan.cost_per_month
    load_before = os.getloadavg()[0]
    today, today_wall, today_cpu = _timed(lambda: _today(instance, base_cost))
    after, after_wall, after_cpu = _timed(
        lambda: rank_levers(instance, base.plan, jobs=JOBS, start=base.result.values)
    )
    load_after = os.getloadavg()[0]
    gap = instance.solver.mip_gap
    by_name = {r.lever: r for r in today}
    print(f"\n{name}: base ${base_cost:,.0f}/month ({base.plan.status}), {len(after)} levers")
    print(f"{'lever':30} {'today $/mo':>12} {'status':>22} {'after $/mo':>12} {'status':>22} diff")
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
    print(f"{'':30} {'wall s':>12} {'CPU s':>12}")
    print(f"{'today':30} {today_wall:>12.1f} {today_cpu:>12.1f}")
    print(f"{'after':30} {after_wall:>12.1f} {after_cpu:>12.1f}")
    print(
        f"{'ratio after / today':30} {after_wall / today_wall:>12.2f} "
        f"{after_cpu / today_cpu:>12.2f}   (load average {load_before:.1f} -> {load_after:.1f})"
    )
    assert {r.lever for r in after} == set(by_name)


def _cost(result: LeverResult) -> str:
    return "-" if result.cost_per_month is None else f"{result.cost_per_month:,.0f}"


def _status(result: LeverResult) -> str:
    return result.status if result.gap is None else f"{result.status} ({result.gap:.2%})"
