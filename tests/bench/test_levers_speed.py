"""`explain --levers` before and after, side by side in one run (issue 33: chat-3region's
`explain --levers` under 30 s). Run by `make bench` only (not `make test`).

For each instance the base is solved once (one solver thread); then explain's work after
the base solve is done twice, back to back, as `explain --levers` runs it
(cli.levers.RunningLevers: the levers begun right after the base solve, beside the
explanation's re-solves, `JOBS` at a time in worker processes), each side with the
instance's time limit from its start:

- `before`: explain's re-solves on their own (solver.analysis.without.FROM_BASE off: no
  base bound, no start from the base plan) on every core, every lever alone
  (lever_groups.GROUPS off) with the instance's whole time limit each, each building its
  candidate table's physics anew (levers.SHARED off; lever_shares.EXPECTED off), each
  search from the base plan keeping the pools config dominance removes (levers.DOMINATED
  off) and working out its regions' own programs for the region_cost rows
  (lever_solve.REGION_ROWS on).
- `after`: each "without pool X" re-solve proven by the base solve's bound where the
  base plan changed in X's region is within the gap (solver.analysis.without), else
  searched from it with the bound as a row; the limit on configurations priced from the
  base plan, the pool's region's row worked out again on P_X (without.REGION_ROW);
  neutral GPU levers proven together (each probe from the base's screen's plan) and
  every other lever alone, each search from the base plan without the pools config
  dominance removes (lever_groups.DOMINATED, levers.DOMINATED) and, but for the group,
  without region_cost rows (lever_solve.REGION_ROWS); a GPU lever whose type serves no
  workload (its candidate table the base's: lever_programs.offers_nothing) answered by
  the base plan, hourly plans too (diurnal-chat-batch: a100, gh200); the levers within
  what is left of the run's time limit (solver.analysis.lever_shares, a lever's share
  what the others would leave where that is more than even), their tables' physics shared
  (solver.candidates.pools.shared_physics) from the base solve's on (each worker starts
  with what the base's table computed: `seeded_share`), explain's re-solves on the cores
  the levers leave.

Printed: each alternative's and each lever's $/month and status both ways, then wall
and CPU seconds (this process and its reaped workers) of each run, their ratio, and the
load average (the machine is shared: read the ratios). Asserted: exactness only, never
time. Two answers proven within a gap g both lie in [opt, opt / (1 - g)], so they differ
by at most about g of the larger (g: the comparison gap for alternatives, the instance's
for levers); every alternative and every lever is answered both ways (none dropped).
"""

import os
import resource
import time
from dataclasses import replace

import pytest

from models.io.loading import load_instance
from solver.analysis import lever_groups, lever_shares, lever_solve, levers, without
from solver.analysis.explain import Explanation, explain_solved
from solver.analysis.lever_solve import LeverResult
from solver.analysis.levers import LeverRun
from solver.candidates.pools import shared_physics
from solver.settings import COMPARISON_GAP, SolveSettings
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


def _before(solved) -> tuple[Explanation, tuple[LeverResult, ...]]:
    """Explain's re-solves on their own, every lever alone with the whole limit each."""
    lever_groups.GROUPS, without.FROM_BASE = False, False
    levers.SHARED, lever_shares.EXPECTED, levers.DOMINATED = False, False, False
    lever_solve.REGION_ROWS = True
    try:
        return _run(solved, shared=False)
    finally:
        lever_groups.GROUPS, without.FROM_BASE = True, True
        levers.SHARED, lever_shares.EXPECTED, levers.DOMINATED = True, True, True
        lever_solve.REGION_ROWS = False


def _run(solved, shared: bool = True) -> tuple[Explanation, tuple[LeverResult, ...]]:
    """The levers begun, the explanation beside them, then the levers waited for (`shared`:
    within what is left of the run's time limit, as the command gives them, and the base's
    candidate table, for `offers_nothing`)."""
    settings = solved.settings
    run = LeverRun(
        solved.instance,
        solved.plan,
        jobs=JOBS,
        start=solved.start,
        program=solved.program.lp,
        time_limit_s=settings.remaining_s() if shared else None,
        deadline=settings.deadline if shared else None,
        table=solved.program.sets.table if shared else None,
    )
    with run.begin(beside=True):
        explanation = explain_solved(solved, busy=run.beside if shared else 0)
        return explanation, run.results()


def _restarted(solved):
    """The solved base with its run's deadline starting now: each side gets the
    instance's time limit (as the command's, less the base solve's few seconds)."""
    settings = replace(solved.settings, deadline=None).started()
    return replace(solved, settings=settings)


def _timed(run):
    wall, cpu = time.perf_counter(), _cpu_s()
    results = run()
    return results, time.perf_counter() - wall, _cpu_s() - cpu


@pytest.mark.parametrize("name", BENCH_INSTANCES)
def test_explain_levers_before_and_after(name):
    instance = load_instance(INSTANCES / f"{name}.yaml")
    with shared_physics():  # as explain --levers: the base solved in its levers' block
        solved = solve_program(instance, SolveSettings.of(instance, threads=1))
        load_before = os.getloadavg()[0]
        (was, before), before_wall, before_cpu = _timed(lambda: _before(_restarted(solved)))
        (now, after), after_wall, after_cpu = _timed(lambda: _run(_restarted(solved)))
        load_after = os.getloadavg()[0]
    base_cost = solved.plan.cost_per_month
    print(f"\n{name}: base ${base_cost:,.0f}/month ({solved.plan.status}), {len(after)} levers")
    _alternatives(was, now)
    _levers(before, after, instance.solver.mip_gap)
    print(f"{'explain + levers':30} {'wall s':>12} {'CPU s':>12}")
    print(f"{'before':30} {before_wall:>12.1f} {before_cpu:>12.1f}")
    print(f"{'after':30} {after_wall:>12.1f} {after_cpu:>12.1f}")
    print(
        f"{'ratio after / before':30} {after_wall / before_wall:>12.2f} "
        f"{after_cpu / before_cpu:>12.2f}   (load average {load_before:.1f} -> {load_after:.1f})"
    )


def _alternatives(was: Explanation, now: Explanation) -> None:
    """Each pool's cost without it both ways, within the comparison gap where both are
    proven."""
    print(f"{'without':42} {'before $/mo':>12} {'after $/mo':>12} diff")
    assert len(was.alternatives) == len(now.alternatives)
    for old, new in zip(was.alternatives, now.alternatives, strict=True):
        assert (old.region, old.configuration) == (new.region, new.configuration)
        a, b = old.cost_without_per_month, new.cost_without_per_month
        diff = "" if a is None or b is None else f"{abs(a - b) / max(a, b):.3%}"
        pool = f"{new.configuration} in {new.region}"
        print(f"{pool:42} {_money(a):>12} {_money(b):>12} {diff}")
        proven = not any(why.startswith("(not proven") for why in old.replaced_by + new.replaced_by)
        if proven and a is not None and b is not None:
            assert abs(a - b) <= COMPARISON_GAP * max(a, b) + 0.01


def _levers(before, after, gap: float) -> None:
    """Each lever both ways, within the instance's gap where both are proven."""
    by_name = {r.lever: r for r in before}
    print(f"{'lever':30} {'before $/mo':>12} {'status':>22} {'after $/mo':>12} {'status':>22} diff")
    for result in after:
        was = by_name[result.lever]
        diff = ""
        both = was.status == result.status == "solved"
        if both and was.cost_per_month and result.cost_per_month:
            diff = f"{abs(was.cost_per_month - result.cost_per_month) / was.cost_per_month:.3%}"
        print(
            f"{result.lever:30} {_money(was.cost_per_month):>12} {_status(was):>22} "
            f"{_money(result.cost_per_month):>12} {_status(result):>22} {diff}"
        )
        if both and was.cost_per_month is not None:
            larger = max(was.cost_per_month, result.cost_per_month)
            assert abs(was.cost_per_month - result.cost_per_month) <= gap * larger + 0.01
    assert {r.lever for r in after} == set(by_name)


def _money(cost: float | None) -> str:
    return "-" if cost is None else f"{cost:,.0f}"


def _status(result: LeverResult) -> str:
    return result.status if result.gap is None else f"{result.status} ({result.gap:.2%})"
