"""Where a solve of the shipped procurement-3region (3 regions x 3 workloads x 2 GPU
types, 21 periods, 12 months) spends its time (issue 33's target: within 0.1% in under
10 s). Run by `make bench` only (not `make test`).

One `solve_program` of instances/procurement-3region.yaml at its own settings, its
stages timed in place, wall clock and CPU (`time.process_time`: every thread of the
process, so a stage's CPU holds what ran beside it: the held fleet's static plan beside
each month's build, the pricing LP beside its read-back), summed over the months: the
candidates (month 0's table, then the horizon's), each month's periods program built
(`PeriodsStep.build`), solved (`optimise`: the day's configuration choices, each by the
period rounds; of which the relaxation's choice, the blocks' prices from the LP
relaxation, the priced pass, the held fleet's pass, the lowest levels' pass and the
rounds' block solves, and the masters), read back (`read_back`, which waits for the
pricing LP run beside it), month 0 verified alone (the seconds the horizon's
verification keeps: solver.time.months.verification_kept) and the horizon verified once
(`verify_hours`); the rest is the pipeline between them. Beside them: the block
programs compiled and how many of them compiled their rows (solver.backends
.compile_memo: a block's rows once for all its passes and the day's choices, a choice's
moved right-hand sides restated), the blocks that took a proven answer kept from an
earlier pass or choice (the memo's `answers`), and the day's choices
(solver.time.day_choice): begun, and finished past their priced pass (the one of the
lowest bound first, the others cut off at its plan where their bound passes it).
Start-up (imports, about a second) is not in `solve_program`: compare `fleetplan solve`
wall times of two checkouts side by side for that. Last, the cyclic garbage collector:
its collections (full ones apart) and the thread CPU spent inside them (`gc.callbacks`,
each collection timed on the thread it ran on), which the stages above include
wherever a collection fell (solver.time.collector).

Measured at stop 25 (proc25, load 3-8 on the shared 2-core machine), main then this
branch: the collector 1,709 collections (12 full) in 1.9 s of CPU, then 89 (none full)
in 0.33 s; the whole solve 16.6 and 15.4-15.5 s of CPU in those runs (one each).
"""

import gc
import os
import threading
import time
from pathlib import Path

import solver.solve as pipeline
from models.io.loading import load_instance
from solver.backends import base, compile_memo
from solver.decompose import by_period
from solver.solve import SolveSettings, solve_program
from solver.time import day_choice, months
from solver.time.step import PeriodsStep
from solver.verify import hours
from tests.bench.tables import print_table

INSTANCE = Path(__file__).parents[2] / "instances" / "procurement-3region.yaml"

HELD, BLOCKS = "  held fleet's pass", "  lowest levels and rounds' blocks"

STAGES = (
    ("candidates (month 0)", pipeline, "candidate_table"),
    ("candidates (the horizon's)", months, "horizon_table"),
    ("build (per month)", PeriodsStep, "build"),
    ("optimise (per month)", PeriodsStep, "optimise"),
    ("  the relaxation's choice (LP)", day_choice, "relaxed_choice"),
    ("  the blocks' prices (LP)", by_period, "lp_prices"),
    ("  priced pass", by_period._Rounds, "priced_blocks"),
    (HELD, by_period._Rounds, "solve_held"),
    (BLOCKS, by_period._Rounds, "solve_blocks"),
    ("  masters", by_period._Rounds, "master"),
    ("read-back and pricing (per month)", PeriodsStep, "read_back"),
    ("month 0 verified alone (kept)", months, "verification_kept"),
    ("verify (the horizon)", hours, "verify_hours"),
)
"""(stage, owner, attribute): the indented stages are parts of `optimise`; a held pass's
own solve_blocks counts in the held pass."""


def _timed(spent: dict, name: str, function, busy: set):
    """`function`, its wall and CPU time and calls added to `spent[name]` (a call made
    while a stage of `busy` runs on this stage's behalf, the hour verifier's months or a
    held pass's blocks, counted in the outer one)."""

    def timed(*args, **kwargs):
        if name in busy or (name == BLOCKS and HELD in busy):
            return function(*args, **kwargs)
        busy.add(name)
        started, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            busy.discard(name)
            seconds, cpu_s, calls = spent.get(name, (0.0, 0.0, 0))
            spent[name] = (
                seconds + time.perf_counter() - started,
                cpu_s + time.process_time() - cpu,
                calls + 1,
            )

    return timed


def test_procurement_stages(monkeypatch):
    inst = load_instance(INSTANCE)
    spent: dict[str, tuple[float, float, int]] = {}
    busy: set[str] = set()
    for name, owner, attribute in STAGES:
        timed = _timed(spent, name, getattr(owner, attribute), busy)
        monkeypatch.setattr(owner, attribute, timed)
    counted: dict[str, tuple[float, float, int]] = {}
    monkeypatch.setattr(base, "compile_rows", _timed(counted, "rows", base.compile_rows, set()))
    whole = _timed(counted, "programs", base.compile_with_rows, set())
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
    collected, began = [0, 0, 0.0], threading.local()  # collections, full ones, CPU s

    def collecting(phase: str, info: dict) -> None:
        if phase == "start":
            began.cpu = time.thread_time()
            return
        collected[0] += 1
        collected[1] += info["generation"] == 2
        collected[2] += time.thread_time() - began.cpu

    load = f"{os.getloadavg()[0]:.1f}"
    gc.callbacks.append(collecting)
    started, cpu = time.perf_counter(), time.process_time()
    try:
        plan = solve_program(inst, SolveSettings.of(inst)).plan
    finally:
        gc.callbacks.remove(collecting)
    wall_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
    rows = [
        (name, calls, f"{seconds:.2f}", f"{cpu_used:.2f}")
        for name, *_ in STAGES
        if name in spent
        for seconds, cpu_used, calls in [spent[name]]
    ]
    top = [spent[name] for name, *_ in STAGES if name in spent and not name.startswith("  ")]
    rest = (wall_s - sum(s for s, _, _ in top), cpu_s - sum(c for _, c, _ in top))
    rows.append(("the rest", "-", f"{rest[0]:.2f}", f"{rest[1]:.2f}"))
    rows.append(("solve_program", 1, f"{wall_s:.2f}", f"{cpu_s:.2f} (load {load})"))
    programs, rows_compiled = counted["programs"][2], counted["rows"][2]
    rows.append(("programs compiled / rows compiled", programs, rows_compiled, ""))
    rows.append(("rows restated (right-hand sides moved)", "-", sum(m.restated for m in memos), ""))
    taken = sum(m.answers.taken for m in memos)
    rows.append(("blocks that took an earlier proven answer", "-", taken, ""))
    rows.append(("day choices finished / in full", len(finished), sum(finished), ""))
    full = f"{collected[0]} ({collected[1]} full)"
    rows.append(("garbage collections, CPU in them", full, "", f"{collected[2]:.2f}"))
    title = (
        f"procurement-3region: {plan.status.split()[0]}, ${plan.cost_per_month:,.0f}/month, "
        f"${plan.horizon_cost:,.0f} over the horizon"
    )
    print_table(title, ("stage", "calls", "wall s", "CPU s"), rows)
    assert plan.months and len(plan.months) == inst.policy.horizon_months
