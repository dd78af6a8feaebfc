"""Each lever's CPU by stage and its HiGHS nodes, before and after side by side (issue 33:
chat-3region's `explain --levers` under 30 s). Run by `make bench` only (not `make test`).

Each side runs in a spawned process of its own, as a lever worker does (no nested
workers: every stage's CPU is in that process), the instance's time limit raised to
`LIMIT_S` so that the base and every lever are proven: the base solved, then every lever
one after the other (`LeverRun(jobs=1)`, probes, group and all). `before`: each lever's
search from the base plan keeps the pools config dominance removes (levers.DOMINATED
off); `after`: as shipped. Stages are exclusive CPU seconds (`time.process_time`, so a
thread beside the main one, the region programs or the pricing LP, counts in the stage
the main thread is in; `(bg)` lines are those threads' own CPU, already counted): the
candidate table, the lever's program build, the `allow GPU` probe, the restricted warm
start, HiGHS (by the stage that called it: `highs@search` is the whole program's search
from the start), read-back, verifier. Printed per lever: both sides' CPU and nodes, the
ratio; asserted: every lever the same cost and status both ways, never a time.

Measured 2026-12-07 (levers25, chat-3region, load 4-8 on 2 cores; a script doing the
same), levers CPU 169.3 s before, 98.0 s after (0.58x): allow gh200 75.1 -> 18.2 s (8,713
-> 2,355 nodes), the group of seven neutral GPU types 26.6 -> 25.1 s (1,362 nodes both:
it was reduced already), TTFT +20% 11.3 -> 8.5, prefix-cache +10 points 9.6 -> 9.1,
TPOT +20% 9.1 -> 5.6, allow mi325x / mi300x / mi355x 7.6 / 7.3 / 6.3 -> 5.9 / 6.5 / 4.4,
precision one step down 3.2 -> 2.6, drop survive 2.8 -> 2.0, each probe 0.9-2.1 s with
its table and build, fp4 KV 0.3 (infeasible). After, per lever: the whole program's
search 1-19 s, its region programs beside it 1.3-2.7 s (`(bg) highs`; 5.2 s for the
group), the candidate table 0.1-1.1 s, the build 0.05-0.3 s, read-back and verifier
under 0.1 s each.
"""

import multiprocessing
import threading
import time
from collections import Counter, defaultdict

import pytest

LIMIT_S = 600.0
"""Every solve's time limit: long enough that none is stopped."""
BENCH_INSTANCES = ("chat-3region",)


def _profile(name: str, dominated: bool, out) -> None:
    """The base and its levers solved in this process, each lever's stage CPU and nodes
    put on `out` with its answer."""
    from models.io.loading import load_instance
    from solver import solve as solve_module
    from solver.analysis import lever_groups, lever_programs, levers
    from solver.backends import highs
    from solver.candidates.pools import shared_physics
    from solver.decompose import by_workload
    from solver.settings import SolveSettings
    from tests.paths import INSTANCES

    levers.DOMINATED = dominated
    cpu: dict[str, Counter] = defaultdict(Counter)
    nodes: Counter = Counter()
    now = {"lever": "base"}
    stack: list[list] = []  # [stage, its CPU so far, process_time when it last resumed]

    def timed(owner, attr: str, stage: str) -> None:
        inner = getattr(owner, attr)

        def stage_of(*args, **kwargs):
            if threading.current_thread() is not threading.main_thread():
                began = time.thread_time()
                try:
                    return inner(*args, **kwargs)
                finally:
                    cpu[now["lever"]]["(bg) " + stage] += time.thread_time() - began
            label = f"highs@{stack[-1][0] if stack else 'search'}" if stage == "highs" else stage
            clock = time.process_time()
            if stack:
                stack[-1][1] += clock - stack[-1][2]
            stack.append([label, 0.0, clock])
            try:
                return inner(*args, **kwargs)
            finally:
                clock = time.process_time()
                top = stack.pop()
                cpu[now["lever"]][top[0]] += top[1] + clock - top[2]
                if stack:
                    stack[-1][2] = clock

        setattr(owner, attr, stage_of)

    for owner, attr, stage in (
        (levers, "candidate_table", "table"),
        (lever_programs, "candidate_table", "table"),
        (solve_module, "candidate_table", "table"),
        (lever_programs, "static_fleet_program", "build"),
        (solve_module.StaticStep, "build", "build"),
        (lever_groups, "servers_bound", "probe"),
        (by_workload, "warm_start", "warm start"),
        (highs.HighsBackend, "_solve", "highs"),
        (solve_module.StaticStep, "read_back", "read-back"),
        (solve_module.StaticStep, "price", "pricing"),
        (solve_module.StaticStep, "verify", "verifier"),
    ):
        timed(owner, attr, stage)
    new_highs = highs._new_highs

    class Counted:
        """A HiGHS instance whose `run` adds its nodes to the lever's."""

        def __init__(self, solver):
            self.solver = solver

        def __getattr__(self, name):
            return getattr(self.solver, name)

        def run(self):
            status = self.solver.run()
            nodes[now["lever"]] += int(self.solver.getInfo().mip_node_count)
            return status

    highs._new_highs = lambda: Counted(new_highs())

    def each(solve, name_of):
        def solved(first, *args, **kwargs):
            now["lever"] = name_of(first)
            began = time.process_time()
            try:
                return solve(first, *args, **kwargs)
            finally:
                cpu[now["lever"]]["total"] += time.process_time() - began

        return solved

    levers.solve_lever = each(levers.solve_lever, lambda name: name)
    group = "group ({})".format
    levers.solve_group = each(levers.solve_group, lambda m: group(", ".join(n.offers for n in m)))
    instance = load_instance(INSTANCES / f"{name}.yaml")
    limit = instance.solver.model_copy(update={"time_limit_s": LIMIT_S})
    instance = instance.model_copy(update={"solver": limit})
    with shared_physics():  # as explain --levers
        began = time.process_time()
        solved = solve_module.solve_program(instance, SolveSettings.of(instance, threads=1))
        cpu["base"]["total"] = time.process_time() - began
        run = levers.LeverRun(
            instance,
            solved.plan,
            jobs=1,
            start=solved.start,
            program=solved.program.lp,
            table=solved.program.sets.table,
        )
        results = run.results()
    answers = {r.lever: (r.cost_per_month, r.status, r.total_gpus) for r in results}
    out.put(({k: dict(v) for k, v in cpu.items()}, dict(nodes), answers))


def _side(name: str, dominated: bool):
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    process = context.Process(target=_profile, args=(name, dominated, out))
    process.start()
    found = out.get()
    process.join()
    return found


@pytest.mark.parametrize("name", BENCH_INSTANCES)
def test_lever_stages_before_and_after(name):
    before, after = _side(name, dominated=False), _side(name, dominated=True)
    cpu_b, nodes_b, answers_b = before
    cpu_a, nodes_a, answers_a = after
    print(f"\n{name}: {'CPU s before':>12} {'after':>8} {'ratio':>6} {'nodes':>13}  lever")
    for lever in sorted(cpu_a, key=lambda k: -cpu_a[k].get("total", 0.0)):
        was, now = cpu_b.get(lever, {}).get("total", 0.0), cpu_a[lever].get("total", 0.0)
        ratio = f"{now / was:6.2f}" if was else ""
        moved = f"{nodes_b.get(lever, 0):>6} {nodes_a.get(lever, 0):>6}"
        print(f"{'':{len(name) + 1}} {was:12.2f} {now:8.2f} {ratio:>6} {moved}  {lever}")
        stages = ", ".join(
            f"{k} {v:.2f}" for k, v in sorted(cpu_a[lever].items()) if k != "total" and v >= 0.05
        )
        print(f"{'':{len(name) + 38}}after: {stages}")
    total_b = sum(v.get("total", 0.0) for k, v in cpu_b.items() if k != "base")
    total_a = sum(v.get("total", 0.0) for k, v in cpu_a.items() if k != "base")
    print(f"levers in all (base apart): {total_b:.1f} -> {total_a:.1f} CPU s")
    print(f"ratio after / before: {total_a / total_b:.2f}")
    assert answers_a.keys() == answers_b.keys()
    for lever, (cost, status, _gpus) in answers_a.items():
        assert (cost, status) == answers_b[lever][:2], lever
