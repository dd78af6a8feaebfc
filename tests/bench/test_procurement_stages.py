"""Where a solve of the shipped procurement-3region (3 regions x 3 workloads x 2 GPU
types, 21 periods, 12 months) spends its time (issue 33's target: within 0.1% in under
10 s). Run by `make bench` only (not `make test`).

One `solve_program` of instances/procurement-3region.yaml at its own settings, its
stages timed in place (wall clock, summed over the months): the candidates, each
month's periods program built (`PeriodsStep.build`), solved (`optimise`: the day's
configuration choices, each by the period rounds), read back (`read_back`, which waits
for the pricing LP run beside it) and the horizon verified once (`verify_hours`); the
rest is the pipeline between them. Beside them: the block programs compiled and how
many of them compiled their rows (solver.backends.compile_memo: a block's rows once for
all its passes and the day's choices, a choice's moved right-hand sides restated), and the
day's choices (solver.time.day_choice): begun, and finished past their priced pass (the
one of the lowest bound first, the others cut off at its plan where their bound passes
it). Start-up (imports, about a second) is not in `solve_program`: compare
`fleetplan solve` wall times of two checkouts side by side for that.
"""

import os
import time
from pathlib import Path

import solver.solve as pipeline
from models.io.loading import load_instance
from solver.backends import base, compile_memo
from solver.solve import SolveSettings, solve_program
from solver.time import day_choice
from solver.time.step import PeriodsStep
from solver.verify import hours
from tests.bench.tables import print_table

INSTANCE = Path(__file__).parents[2] / "instances" / "procurement-3region.yaml"


def _timed(spent: dict, name: str, function):
    """`function`, its wall time and calls added to `spent[name]` (a call inside a call
    of it, the hour verifier's months, counted in the outer one)."""
    depth = [0]

    def timed(*args, **kwargs):
        if depth[0]:
            return function(*args, **kwargs)
        depth[0] += 1
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            depth[0] -= 1
            seconds, calls = spent.get(name, (0.0, 0))
            spent[name] = (seconds + time.perf_counter() - started, calls + 1)

    return timed


def test_procurement_stages(monkeypatch):
    inst = load_instance(INSTANCE)
    spent: dict[str, tuple[float, int]] = {}
    for name, owner, attribute in (
        ("candidates", pipeline, "candidate_table"),
        ("build (per month)", PeriodsStep, "build"),
        ("optimise (per month)", PeriodsStep, "optimise"),
        ("read-back and pricing (per month)", PeriodsStep, "read_back"),
        ("verify (the horizon)", hours, "verify_hours"),
    ):
        monkeypatch.setattr(owner, attribute, _timed(spent, name, getattr(owner, attribute)))
    counted: dict[str, tuple[float, int]] = {}
    monkeypatch.setattr(base, "compile_rows", _timed(counted, "rows", base.compile_rows))
    whole = _timed(counted, "programs", base.compile_with_rows)
    monkeypatch.setattr(base, "compile_with_rows", whole)
    monkeypatch.setattr(compile_memo, "compile_with_rows", whole)
    finished = []
    finish = day_choice._Begun.finish

    def finished_choice(run, cutoff):
        found = finish(run, cutoff)
        finished.append(found.termination.has_solution or "no plan below" not in found.message)
        return found

    monkeypatch.setattr(day_choice._Begun, "finish", finished_choice)
    memos: list[compile_memo.CompileMemo] = []  # each month's, shared by its choices
    monkeypatch.setattr(
        day_choice, "CompileMemo", lambda: memos.append(compile_memo.CompileMemo()) or memos[-1]
    )
    load = f"{os.getloadavg()[0]:.1f}"
    started, cpu = time.perf_counter(), time.process_time()
    plan = solve_program(inst, SolveSettings.of(inst)).plan
    wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    timed_s = sum(seconds for name, (seconds, _) in spent.items() if "verify" not in name)
    rows = [(name, calls, f"{seconds:.2f}") for name, (seconds, calls) in spent.items()]
    rows.append(("the rest", "-", f"{wall_s - timed_s - spent['verify (the horizon)'][0]:.2f}"))
    rows.append(("solve_program", 1, f"{wall_s:.2f} (CPU {cpu_s:.2f}, load {load})"))
    programs, rows_compiled = counted["programs"][1], counted["rows"][1]
    rows.append(("programs compiled / rows compiled", programs, rows_compiled))
    rows.append(("rows restated (right-hand sides moved)", "-", sum(m.restated for m in memos)))
    rows.append(("day choices finished / in full", len(finished), sum(finished)))
    title = (
        f"procurement-3region: {plan.status.split()[0]}, ${plan.cost_per_month:,.0f}/month, "
        f"${plan.horizon_cost:,.0f} over the horizon"
    )
    print_table(title, ("stage", "calls", "wall s"), rows)
    assert plan.months and len(plan.months) == inst.policy.horizon_months
