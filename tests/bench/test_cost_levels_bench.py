"""Each region's cost level (solver.program.cost_levels), off and on, side by side (issue
33: chat-3region proven optimal in under 1 s of solve, `explain --levers` under 30 s).
Run by `make bench` only (not `make test`).

`test_cost_levels_programs` (in this process, no base needed): every shipped instance is
solved once as `solve` runs it, recording each program the whole-program search hands to
`with_cost_levels` (the one with the region rows, and its start). Where there is one, that
program is given to HiGHS directly (one thread, the instance's gap, from the solve's start)
without and with the levels, `SEEDS` random seeds, the two one after the other per seed
(the machine is shared: read the rows of one run against each other). Printed per
instance: the LP relaxation's bound, the bound after HiGHS's root cuts (seed 0, no
start, one node), the median HiGHS CPU seconds (`time.process_time` around `run`) and the
mean nodes, and the optimum. Instances whose whole-program search has no region rows (too
small: solver.decompose.region_bounds.MIN_INTEGERS, or one region) get no levels and are
listed as such. The optima must agree (the levels are exact). FLEETPLAN_BENCH_INSTANCES
(comma-separated names) runs only those.

`test_side_by_side` (FLEETPLAN_BASE: a base checkout's root; skipped without it):
`fleetplan solve` and `fleetplan explain --levers` of chat-3region, each a fresh process,
base and this checkout interleaved `ROUNDS` times, CPU seconds of the process and its
workers (`resource.getrusage` of the children). `--time-limit` is raised to
`LEVERS_LIMIT_S` so that the work, not the clock, ends the levers (at the instance's 60 s,
the run stops at its deadline on 2 cores whatever the code). The plans, and every lever's
answer, must cost the same.

Where the root bound is lost (chat-3region, the program of record: 951 columns, 585
integer; measured by /tmp scripts, the numbers here): LP $212,983 against the $236,520
optimum; fractional at the root: 13 pool_at_least (us-east's and us-west's H100 TP2
prefill pools at 0.629 / 0.774 on every step up to 16, eu-west's B200 pools at 0.43), 6
replicas (15.74 and 15.48 TP2 prefill, 10.21 H200 TP1 decode twice, 3.89 and 4.34 B200),
6 pool_used, 5 servers (3.93 / 1.28 / 3.87 / 1.28 / 1.57 against the optimum's 3 / 2 / 5 /
0 / 2). The LP's cost by region: us-east $78,254 (its region row, $78,256, binds: the
optimum's us-east costs exactly that), us-west $83,346 (optimum $75,920), eu-west $51,382
(optimum $82,344): the relaxation moves the failover capacity eu-west must hold when
us-east is lost onto us-west's cheaper fractional servers. Each pool's point is a convex
combination of the empty pool and the pool at its credit bound (n / M = pool_at_least),
inside the hull of that pool's own rows, and each region's part lies within the hull of
its region's plans (the Dantzig-Wolfe bound by region, $222.6k:
tests/bench/test_chat3region_speed.py): no row over one pool, one purchase row or one
region can lift the bound past that, and the rest of the gap is in which whole-server
levels the three regions take together (tests/bench/test_chat3region_value_functions.py).
Hence a column to branch on rather than a cut: the level of each region's cost, the
master's variable there. It leaves the LP and the root bound where they are (printed) and
shortens the search.

Measured (2026-12-07, chat24, shared 2-core machine at load 5-10; HiGHS 1.16, CPU seconds):

- The program of record from the solve's start, one thread, seeds 0-7, off / on, each
  seed's pair one after the other: 4.65 / 3.44, 4.25 / 2.95, 10.68 / 5.34, 4.31 / 3.23,
  5.20 / 4.53, 7.90 / 2.45, 10.00 / 3.85, 10.58 / 4.12 s; nodes 615 / 176, 668 / 228,
  2,947 / 573, 451 / 186, 961 / 747, 1,611 / 106, 2,191 / 364, 2,566 / 417. Median 6.55 ->
  3.64 s (0.56x), mean nodes 1,501 -> 350, every seed faster; both $236,520.06. LP bound
  $212,983 both, after the root's cuts $213,306 -> $213,307: the bound does not move.
- The same through the backend (`HighsBackend.run`, its options, seed 0), twice: 5.02,
  5.12 -> 3.69, 3.25 s.
- `solve` in one process, the final search's HiGHS CPU, two runs: 4.93, 4.03 -> 3.15,
  3.23 s; the whole solve 10.75, 9.22 -> 7.67, 7.66 s (the region programs, the warm
  start and the candidates are the rest, unchanged). `fleetplan solve`, one each at load 6:
  base 10.70 s user, this 9.48 s; both optimal at $236,520.
- `explain --levers --time-limit 900`, base / this / base / this: 199.6 / 169.5 / 167.6 /
  169.7 s user (wall 810 / 517 / 536 / 450 s): median 183.6 -> 169.6 s, 0.92x, within
  the noise of two runs; all 17 levers' answers identical. The levers' time is elsewhere
  (tests/bench/test_explain_stages_bench.py): not met (30 s).
- `test_side_by_side[solve]` (FLEETPLAN_BASE, load 3.1-3.3), median of 2 interleaved:
  base 10.96 / 11.09 s CPU, this 10.20 / 9.50 s (0.93x, 0.86x in two runs of the test).
- Under a clock too short for either (`solve --time-limit 14`, load 2.4, base / this /
  base / this): base feasible $240,608 (gap 9.03%), this optimal $236,520, base feasible
  $236,520 (4.49%), this feasible $236,520 (4.45%). In one default suite run (-n 2, load
  5-6) and one golden run beside an `explain --levers` (load 9-10) the default instance's
  60 s ran out before the proof (feasible $238,856 and $240,608); both pass at load 3-5.
- Every other shipped instance: no region rows in its whole program's search, so no
  levels; each plan identical field by field with the switch off and on.

Tried, not kept: the level as an equality with the cost left on purchased (presolve
substitutes it away: 1,410 nodes, as today); a continuous level (1,170 nodes); one level
for the whole fleet (920 nodes); levels in the region programs (us-east 1.24 -> 2.97 s,
us-west 0.99 -> 0.42, eu-west 0.85 -> 0.54) and in the warm start (1.37 -> 1.50 s): not
applied there.
"""

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from models.io.loading import load_instance
from solver.backends.base import compile_program
from solver.backends.highs import _core, _new_highs, highs_lp
from solver.decompose import by_workload
from solver.program import cost_levels
from solver.program.build import with_bounds
from solver.solve import solve
from tests.bench.tables import print_table
from tests.paths import INSTANCES as INSTANCE_FOLDER

ROOT = Path(__file__).parents[2]
SEEDS = (0, 1, 2)
ROUNDS = 2
LEVERS_LIMIT_S = 900
TIME_LIMIT_S = 300.0
CLI = "from cli.app import main; main()"


def _recorded(name: str):
    """The last (program, start) `solve` hands `with_cost_levels` for instance `name`, and
    the instance's gap; None where it hands none."""
    seen = []
    original = by_workload.with_cost_levels

    def record(lp, start):
        seen.append((lp, start))
        return original(lp, start)

    by_workload.with_cost_levels = record
    try:
        instance = load_instance(INSTANCE_FOLDER / f"{name}.yaml")
        solve(instance)
    finally:
        by_workload.with_cost_levels = original
    return (seen[-1], instance.solver.mip_gap) if seen else (None, instance.solver.mip_gap)


def _highs(lp, start, gap, seed=0, relax=False, root=False):
    """(CPU s, nodes, objective, bound) of HiGHS on `lp` from `start`."""
    program = compile_program(with_bounds(lp, {}, relax=True) if relax else lp)
    highs = _new_highs()
    options = {
        "threads": 1,
        "random_seed": seed,
        "mip_rel_gap": gap,
        "mip_allow_restart": False,  # as the highs backend runs it
        "time_limit": TIME_LIMIT_S,
        "output_flag": False,
    }
    if root:
        options["mip_max_nodes"] = 1
    for option, value in options.items():
        highs.setOptionValue(option, value)
    highs.passModel(highs_lp(program))
    if start is not None and not relax and not root:
        solution = _core().HighsSolution()
        solution.col_value = [start.get(n, 0.0) for n in program.variable_names]
        solution.value_valid = True
        highs.setSolution(solution)
    started = time.process_time()
    highs.run()
    cpu = time.process_time() - started
    info = highs.getInfo()
    constant = program.objective_constant
    bound = info.objective_function_value if relax else info.mip_dual_bound
    objective = info.objective_function_value + constant
    return cpu, 0 if relax else info.mip_node_count, objective, bound + constant


def test_cost_levels_programs():
    asked = os.environ.get("FLEETPLAN_BENCH_INSTANCES")  # comma-separated; default: all
    names = asked.split(",") if asked else sorted(p.stem for p in INSTANCE_FOLDER.glob("*.yaml"))
    rows, untouched = [], []
    for name in names:
        (found, gap) = _recorded(name)
        if found is None:
            untouched.append(name)
            continue
        lp, start = found
        levelled, level_start = cost_levels.with_cost_levels(lp, start)
        if levelled is lp:
            untouched.append(f"{name} (no region has a level)")
            continue
        runs = {"off": [], "on": []}
        for seed in SEEDS:
            runs["off"].append(_highs(lp, start, gap, seed))
            runs["on"].append(_highs(levelled, level_start, gap, seed))
        for side, program in (("off", lp), ("on", levelled)):
            done = runs[side]
            lp_bound = _highs(program, None, gap, relax=True)[3]
            root = _highs(program, None, gap, root=True)[3]
            rows.append(
                (
                    name,
                    side,
                    f"{lp_bound:,.0f}",
                    f"{root:,.0f}",
                    f"{statistics.median(r[0] for r in done):.2f}",
                    ", ".join(f"{r[0]:.2f}" for r in done),
                    f"{statistics.mean(r[1] for r in done):.0f}",
                    f"{min(r[2] for r in done):,.2f}",
                )
            )
        off, on = (min(r[2] for r in runs[side]) for side in ("off", "on"))
        assert on == pytest.approx(off, rel=2 * gap), f"{name}: the optimum moved"
    print_table(
        f"the whole program's search, levels off / on, HiGHS 1 thread, seeds {SEEDS} "
        f"(load {os.getloadavg()[0]:.1f})",
        (
            "instance",
            "levels",
            "LP bound",
            "root cuts",
            "CPU s (median)",
            "each",
            "nodes",
            "optimum",
        ),
        rows,
    )
    print("no levels (no region rows in the whole program's search):", ", ".join(untouched))


def _cli(checkout: Path, args: list[str]) -> tuple[float, float]:
    """(wall s, CPU s) of one `fleetplan` run by `checkout`."""
    env = dict(os.environ, PYTHONPATH=str(checkout), PYTHONDONTWRITEBYTECODE="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", CLI, *args], cwd=checkout, env=env, check=True, capture_output=True
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@pytest.mark.parametrize("command", ["solve", "explain --levers"])
def test_side_by_side(command, tmp_path):
    base = os.environ.get("FLEETPLAN_BASE")
    if not base:
        pytest.skip("FLEETPLAN_BASE (a base checkout's root) is not set")
    import json

    checkouts = {"base": Path(base), "this": ROOT}
    runs: dict[str, list[tuple[float, float]]] = {side: [] for side in checkouts}
    costs: dict[str, set] = {side: set() for side in checkouts}
    instance = str(ROOT / "instances" / "chat-3region.yaml")
    for round_ in range(ROUNDS):
        for side, checkout in checkouts.items():
            out = tmp_path / f"{side}{round_}.json"
            args = [*command.split()[:1], instance, *command.split()[1:], "--json", str(out)]
            if command != "solve":
                args += ["--time-limit", str(LEVERS_LIMIT_S)]
            runs[side].append(_cli(checkout, args))
            found = json.loads(out.read_text())
            levers = tuple(
                (lever.get("lever") or lever.get("name"), lever.get("cost_per_month"))
                for lever in found.get("levers") or ()
            )
            costs[side].add((found.get("plan", found).get("cost_per_month"), levers))
    cpu = {side: statistics.median(c for _, c in found) for side, found in runs.items()}
    rows = [
        (
            side,
            f"{statistics.median(w for w, _ in found):.2f}",
            f"{cpu[side]:.2f}",
            str(costs[side]),
        )
        for side, found in runs.items()
    ]
    rows.append(("this / base", "", f"{cpu['this'] / cpu['base']:.3f}", ""))
    load = os.getloadavg()[0]
    print_table(
        f"chat-3region `{command}`: median of {ROUNDS}, interleaved (load {load:.1f})",
        ("checkout", "wall s", "CPU s", "$/month"),
        rows,
    )
    assert costs["this"] == costs["base"], "an answer moved"
