"""Where `explain --levers` spends its CPU, stage by stage (issue 33: chat-3region's
`explain --levers` under 30 s on 2 cores). Run by `make bench` only (not `make test`).

Everything runs in this one process, one after the other, one solver thread, so that
`time.process_time()` counts each stage alone (the command runs the levers in worker
processes beside explain's own re-solves; here nothing overlaps, and the sum is the CPU
the command would need to answer everything):

- the base solve (the instance's limit raised to `LIMIT_S`, so that it is proven);
- explain's re-solves one by one (`explain_solved(busy=...)` with every core taken:
  each "without pool X", then the one with the limit on configurations per pool
  lifted), each with the comparison gap and `LIMIT_S`;
- the engine-effects replay (solver.simulate.effects: every pool with every effect on,
  then with each off);
- each lever (`LeverRun(jobs=1)`, as `explain --levers-time-limit` unset: each with the
  instance's own time limit), with its status and gap: a lever its limit stops spends
  what the limit and the machine's load allow, so read its CPU with its status.

Each line prints the stage's CPU seconds and the part of them inside HiGHS's `run`
(`HighsBackend._solve`: the process's CPU during the call, so region programs that
run in a thread beside it count there too), and the wall seconds (the machine is
shared: CPU is the measure). Asserted: every pool re-solved and every lever answered,
never a time.

Measured 2026-12-07 (levers23 at main 455b948b, two runs at load 2-14 on 2 cores; the
same staging as this bench, in a script), CPU s: base solve 10.4-12.9; explain's eight
"without" re-solves 35.8-38.4, of which us-east's h100 TP2 prefill 11.6-12.3 and h200
TP2 unified 18.6-19.7 (each its whole-program search from the neighbourhood's plan with
the base_bound row: 10.3 and 17.1 s in HiGHS), the six others 0.3-2.1 (the base bound's
proof); the limit on configurations lifted 7.1-8.4 (HiGHS 6.9; $232,432, the limit
costs $4,088); engine effects 6.0-7.4; the levers 119-122 (allow gh200 18-20, still
unproven at its 60 s; the neutral group of seven 32-35 with its probes; TPOT +20% 15;
allow mi300x / mi325x 9-11 each; prefix-cache +10 points 10; TTFT +20% 8-9; precision
one step down 6.6; allow mi355x 4.6-5; drop survive 2.4; fp4 KV 0.4). In all 182-191
CPU s; under cProfile two thirds of the time is inside HiGHS (highspy's run: 326 of 494
s), the rest candidate tables, builds, probes and the replay. At the instance's 60 s
limit on 2 cores `explain --levers` gets about 110 CPU s (the lead's run: 109.7 s user
in 61.6 s wall), so it ends at the deadline with what fits; under 30 s with every answer
it gives at its limit needs this sum under about 55 s.

One run of this bench (load 13-15): 161 CPU s in all, 142 in HiGHS; explain's two
us-east searches 8.0 and 8.8 s where a script giving each re-solve 600 s took 11.6-17.0
and 15.8-22.6 s (the neighbourhood's share of the time changes the start the search
gets): compare changes to these re-solves interleaved, in one run.

Tried for explain's "without" re-solves, not kept (chat-3region, before / after
interleaved in one process, each re-solve given 600 s):

- config dominance kept in the search from the neighbourhood's plan
  (`SolveSettings.dominated_with_start`): the same eight answers, 0.94x and 0.96x CPU
  on the two us-east searches (15.7 against 16.6 s, 21.6 against 22.6 s): noise here.
- region_cost[r] of the pool's region worked out again on P_X (X's replicas at 0:
  us-east's own program $78,080 -> $84,096, a valid row for P_X) instead of the base's:
  0.60x and 0.68x CPU (7.9 against 13.3 s, 10.8 against 15.8 s), but the stronger bound
  lets the search stop at the first plan within the 1% gap of it: us-east prefill's
  answer moved from $240,608 (7 TP2 decode + 8 TP2xPP2 prefill) to $242,360, a dearer
  plan a planner reads. Kept out then; kept at stop 28 (without.own_region_row), where
  the answer among plans within the gap was found to move with HiGHS's seed alone as
  much ($240,608 or $242,360 on either re-solve over seeds 0-2, without the row too).

Stop 28 (levers28, issue 33), this bench at load 5.7-6.1 on 2 cores: 63.6 -> 51.3 CPU s
in all, every lever's $/month and status and every alternative the same. Base 4.5 /
4.4; explain's re-solves 16.5 -> 15.1 (us-east prefill 7.0 / 7.0, unified 8.0 / 6.7:
its region's row worked out again on P_X; over HiGHS seeds 0-2 the two together 48.7 ->
36.8 s, 0.76x); the limit lifted 2.0 / 1.8; the replay 1.7 / 1.5; the levers 38.9 -> 28.3:
each lever's search from the base plan works out no region programs
(lever_solve.REGION_ROWS: gh200 6.8 -> 4.8, mi300x 3.9 -> 2.3, mi325x 3.6 -> 1.8, TTFT 3.2 ->
2.8, prefix-cache 3.3 -> 2.7; the group keeps them: 9.5 s with, 19.2 without) and the
probes start from the base screen's plan (the seven neutral 3.6 -> 2.6 s); the group
with its probes 12.0 -> 9.8. The command itself, main 3c4b5430 against c7d5b712, A B
A B, `--time-limit 300` so that both answer everything (load 3.9-7.7, from other work on
the machine): wall 131.8 / 176.3, 139.2 / 92.9, 105.8 / 98.1 s; user CPU 69.1 / 63.1,
70.5 / 56.6, 67.3 / 60.4 s (0.91, 0.80, 0.90), the same 17 levers and 8 alternatives in
all six. At the instance's 60 s (load 4.1-5.7) both end at the limit: main proved 1, 2
and 5 levers of 17, the branch 5, 5 and 9. The plain command at 19:32-19:36 UTC (load
2.0-3.2, main against 240dbbef): wall 60.4 / 28.7 (main stopped at its limit, 7 of 17
levers proven), 33.4 / 28.6 (0.86), 32.3 / 29.3 s (0.91); user CPU 54.3 / 52.5, 61.4 /
52.2, 59.1 / 53.6 s; every branch run proves all 17 levers, the same $/month and
status as main's full runs, the same base plan and alternatives (three levers end on
an equal-cost plan of other GPUs among ties: mi355x 39 -> 38, mi300x 82 -> 83,
prefix-cache 96 -> 94). Where the levers do not begin beside explain (at 19:36 UTC, the
one-minute load 1.1 falling from 2.7: solver.decompose.parallel.idle_cores counted a
core busy), the branch took 43.9 s: the base to 4.2 s, explain's re-solves one at a
time to 22.0, the replay to 23.6, then the levers two at a time to 43.4, allow gh200
stopped by its even share (3.5 s, gap 6%) and solved again last (5.1 s, alone beside
the group's end): the time is then the two stages' sum, not their overlap. Two more
pairs at 19:39-19:42 (load 2.7-3.7): 40.9 / 61.5 s (the branch's levers not begun
beside, 4 of 17 proven by the limit; main's beside, 17) and 50.7 / 42.1 s (17 and 17):
under others' load, whether the levers begin beside explain moves the wall by 15-30 s
either way, more than the CPU saved.

Tried at stop 28, not kept (chat-3region, one process):
- region programs of pairs (us-east with each other region) worked out on P_X for rows
  beside the region's own: 2.3-3.2 s for the pair programs (us-east + us-west proved
  nothing within its 500 nodes), 9.2 against 7.8 and 8.5 against 7.7 s in all.
- HiGHS's mip_heuristic_effort 0 for the two us-east searches (they start from a plan):
  7.2 / 7.1, 8.5 / 8.8, 8.8 / 8.8 s (off / default, seeds 0-2, prefill): no change.
- no region rows for the group of neutral levers as for each lever alone: 9.5 -> 19.2 s;
  nor for the limit lifted: 2.1 -> 4.5 s.
"""

import time
from collections import Counter

import pytest

from models.io.loading import load_instance
from solver.analysis import explain as explain_module
from solver.analysis.explain import NOT_RESOLVED, explain_solved
from solver.analysis.levers import LeverRun
from solver.backends.highs import HighsBackend
from solver.candidates.pools import shared_physics
from solver.settings import SolveSettings, machine_threads
from solver.solve import solve_program
from tests.paths import INSTANCES

LIMIT_S = 600.0
"""The base solve's and explain's re-solves' time limit: long enough that nothing is
stopped, so each stage's CPU is what it needs."""
BENCH_INSTANCES = ("chat-3region",)


class Stages:
    """CPU, HiGHS CPU and wall seconds since the last `mark`, printed per stage."""

    def __init__(self):
        self.highs = Counter()
        self.last = (time.process_time(), time.perf_counter())
        self.rows: list[tuple[str, float, float, float]] = []

    def mark(self, what: str) -> None:
        cpu, wall = time.process_time(), time.perf_counter()
        row = (what, cpu - self.last[0], self.highs["s"], wall - self.last[1])
        self.rows.append(row)
        print(f"{row[1]:8.2f} {row[2]:8.2f} {row[3]:8.2f}  {what}", flush=True)
        self.last, self.highs = (cpu, wall), Counter()

    def counting(self, solve):
        """`HighsBackend._solve` with its CPU added to this stage's."""

        def counted(backend, program, options, deadline):
            began = time.process_time()
            try:
                return solve(backend, program, options, deadline)
            finally:
                self.highs["s"] += time.process_time() - began

        return counted


@pytest.mark.parametrize("name", BENCH_INSTANCES)
def test_explain_levers_stages(name, monkeypatch):
    instance = load_instance(INSTANCES / f"{name}.yaml")
    stages = Stages()
    monkeypatch.setattr(HighsBackend, "_solve", stages.counting(HighsBackend._solve))
    effects = explain_module._engine_effects

    def timed_effects(*args, **kwargs):
        stages.mark("explain: the rest before the replay")
        found = effects(*args, **kwargs)
        stages.mark("engine effects (replay, each effect off)")
        return found

    monkeypatch.setattr(explain_module, "_engine_effects", timed_effects)
    print(f"\n{name}: {'CPU s':>8} {'HiGHS s':>8} {'wall s':>8}")
    with shared_physics():  # as explain --levers
        settings = SolveSettings.of(instance, threads=1, time_limit_s=LIMIT_S)
        solved = solve_program(instance, settings)
        stages.mark(f"base solve (${solved.plan.cost_per_month:,.0f}, {solved.plan.status})")
        explanation = explain_solved(solved, progress=stages.mark, busy=machine_threads())
        stages.mark("explain: tables")
        run = LeverRun(
            instance,
            solved.plan,
            jobs=1,
            on_done=lambda r: stages.mark(
                f"lever {r.lever}: {r.cost_per_month} {r.status}"
                + ("" if r.gap is None else f" (gap {r.gap:.2%})")
            ),
            start=solved.start,
            program=solved.program.lp,
            table=solved.program.sets.table,
        )
        results = run.results()
    total = sum(row[1] for row in stages.rows)
    in_highs = sum(row[2] for row in stages.rows)
    print(f"{total:8.2f} {in_highs:8.2f} {'':8}  in all")
    assert all(NOT_RESOLVED not in a.replaced_by for a in explanation.alternatives)
    assert {r.lever for r in results} == {item.name for item in run.work}
