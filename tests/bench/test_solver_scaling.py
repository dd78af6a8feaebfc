"""Solve time as generated instances grow in regions x workloads x GPU types, with and
without region-loss scenarios. Run by `make bench` only (not `make test`).

Prints two tables:

- scaling (the default backend, `highs`, which hands some workload programs to SCIP:
  solver.decompose.workload_parts, `part_backend`): regions x workloads x GPU types up to
  50 x 50, without failures and surviving any region loss (then a few sizes surviving
  zone or replica loss, and one with the policy's default whole servers and simple pools,
  marked `+`), each with its program's size, the
  wall time from `solve` start to verified plan (candidates, program, backend, pricing
  LP, verifier), the wall time per region-workload pair (flat when solve time grows
  linearly in regions x workloads), the wall time per thousand variables of the program
  (flat when it grows linearly in the program's size: with region loss by routing rows
  every lost region may reroute every region's users, so the program grows as
  regions^2 x workloads; by cut rows, `solver.scenario_rows: auto`, the default from 5
  regions, it grows as regions x workloads plus the Hall rows found), the cost, the gap
  reached, whether it was proved within the requested gap (`optimal`) or stopped by the
  time limit with a plan (`feasible`), and how it was solved (one program, or
  decomposed by workload, how many of its programs SCIP solved, and in how many
  processes);
- backends: every available backend on the small sizes.

The scaling rows time the command a planner runs, `fleetplan solve FILE --json OUT`, in
a process of its own, from its start to the plan written (interpreter, imports,
candidates, program, solve, pricing LP, verifier, report): the generated instance is
written to a file first. The backend rows solve in this process (`solve_program`).

The generator (tests.synthetic.generated) prices every GPU type in every region at its
catalog price times a random factor in [0.9, 1.2], so regions compete on price. Sizes
run while the bench's time budget lasts; the rest are listed as skipped. Every plan
passes the verifier (`solve` refuses one that does not).

The 10 regions x 20 workloads x 6 GPU types instance surviving any region loss, at a
0.1% gap, must be proved optimal; its wall time is printed, beside `LARGEST_LIMIT_S`.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from solver.backends import available_backends
from solver.errors import NoSolution
from solver.solve import SolveSettings, solve_program
from tests.bench.tables import print_table
from tests.synthetic import at_policy_defaults, generated, generated_data

SCALING = [
    (3, 2, 2),
    (5, 5, 3),
    (10, 10, 4),
    (10, 20, 6),
    (10, 50, 6),
    (20, 20, 6),
    (20, 50, 6),
    (50, 10, 6),
    (50, 50, 6),
]
"""(regions, workloads, GPU types) solved with the default backend."""
BACKEND_SIZES = [(3, 2, 2), (5, 5, 3)]
"""Sizes every available backend solves (the slower ones stop here)."""
SURVIVE = ["none", "region"]
FAILURE_KINDS = [((10, 20, 6), "replica"), ((10, 20, 6), "zone"), ((20, 20, 6), "zone")]
"""The other failure policies (zone loss with 3 zones per region), which move the line
between HiGHS and SCIP (solver.decompose.workload_parts.part_backend)."""
DEFAULT_POLICY_SIZES = [(5, 8, 4), (10, 20, 6)]
"""Solved with region loss and the policy's defaults (whole servers, one configuration
per pool), where the generator buys single GPUs: whole servers couple the workloads
(they share each region's servers), so the solve starts with the regions' programs
(solver.decompose.regions.join: their bound, and the whole program floored at their
fleets) and the whole program from that plan when it is not within the gap
(tests/bench/test_server_master_bench.py: against the master over server counts).
5 x 8 x 4 has too few regions for the search over pairs (regions.plan.SEARCH_MIN_REGIONS):
the whole program runs from the floored plan. How far the bound side of either gap can
move: tests/bench/test_hall_lagrangian_bench.py."""
TIME_LIMIT_S = 300.0
"""Time limit of one solve, pipeline included."""
BENCH_BUDGET_S = 1200.0
"""Sizes starting after the scaling runs have taken this long are skipped."""
LARGEST = (10, 20, 6)
LARGEST_LIMIT_S = 10.0
"""What `fleetplan solve` took on LARGEST with region loss when TPOT-limited pools were
credited a lone replica's capacity: 2.9-3.1 s on the shared 2-core machine (6.2-7.0 s
before solver.candidates.swap_dominance and forked workers). Crediting their pooled
capacity (policy.credit_tpot_pooling, on by default since commit 93de631: a looser
target never costs more) makes the plan 5.5% cheaper ($641,619 against $679,447 on the
generator's instance then) and every workload's program harder: 28-30 s by routing rows
(4 workloads handed to SCIP), 12.2 s by cut rows (scenario_rows auto, from 5 regions),
2.7 s with the credit off, idle, measured by bisection on 2026-12-05. Printed, not
asserted: a wall-time assertion fails on a loaded machine and says nothing a ratio
does not."""


SCALING_ROWS: list[tuple] = []
BACKEND_ROWS: list[tuple] = []
_spent_s = [0.0]


@pytest.fixture(scope="module", autouse=True)
def tables():
    yield
    header = (
        "regions x workloads x GPUs",
        "survive",
        "vars",
        "int",
        "rows",
        "wall s",
        "ms per r x w",
        "ms per 1k vars",
        "cost $/month",
        "gap",
        "status",
        "method",
    )
    title = (
        f"solver scaling, highs, large workload programs by SCIP (0.1% gap, time limit"
        f" {TIME_LIMIT_S:g} s per instance)"
    )
    print_table(title, header, SCALING_ROWS)
    header = ("instance", "backend", "vars", "int", "rows", "wall s", "cost $/month", "gap")
    print_table("backends (0.1% gap)", header, BACKEND_ROWS)


def _solve(regions: int, workloads: int, gpu_types: int, survive: str, backend: str):
    """(program size, wall s, cost, gap, method) of one generated instance."""
    inst = generated(regions, workloads, gpu_types, survive=survive)
    settings = SolveSettings.of(inst, backend=backend, time_limit_s=TIME_LIMIT_S, mip_gap=1e-3)
    started = time.perf_counter()
    try:
        solved = solve_program(inst, settings)
    except NoSolution as stopped:
        wall_s = time.perf_counter() - started
        return None, wall_s, "-", "-", f"no plan ({stopped.termination})"
    wall_s = time.perf_counter() - started
    plan = solved.plan
    assert plan.status in ("optimal", "feasible")
    cost = f"{plan.cost_per_month:,.0f}"
    gap = "-" if plan.solver.mip_gap is None else f"{plan.solver.mip_gap:.3%}"
    method = plan.solver.method.replace("decomposed by workload: ", "by workload: ")
    return solved.program.lp.size(), wall_s, cost, gap, method, plan


def _command(
    regions: int,
    workloads: int,
    gpu_types: int,
    survive: str,
    folder: Path,
    default_policy: bool = False,
):
    """(plan JSON or None, wall s, what stopped it) of `fleetplan solve` on the generated
    instance, in a process of its own (`default_policy`: with the policy's own whole
    servers and one configuration per pool, not the generator's single GPUs and free
    pools)."""
    data = generated_data(regions, workloads, gpu_types, survive=survive)
    if default_policy:
        at_policy_defaults(data)
        data["name"] += "-default-policy"
    data["solver"] |= {"time_limit_s": TIME_LIMIT_S, "mip_gap": 1e-3}
    source = folder / f"{data['name']}.json"
    source.write_text(json.dumps(data), encoding="utf-8")
    out = folder / f"{data['name']}.plan.json"
    command = [str(Path(sys.executable).with_name("fleetplan")), "solve", str(source)]
    started = time.perf_counter()
    done = subprocess.run(
        [*command, "--json", str(out)], capture_output=True, text=True, timeout=TIME_LIMIT_S + 60
    )
    wall_s = time.perf_counter() - started
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return None, wall_s, f"no plan (exit {done.returncode}: {last[:60]})"
    return json.loads(out.read_text(encoding="utf-8")), wall_s, ""


@pytest.mark.parametrize("survive", SURVIVE)
@pytest.mark.parametrize("size", SCALING, ids=lambda s: "x".join(map(str, s)))
def test_scaling(size, survive, tmp_path):
    _scaling_row(size, survive, tmp_path)


@pytest.mark.parametrize(
    "size,survive", FAILURE_KINDS, ids=["x".join(map(str, z)) + f"-{s}" for z, s in FAILURE_KINDS]
)
def test_failure_kinds(size, survive, tmp_path):
    _scaling_row(size, survive, tmp_path)


@pytest.mark.parametrize("size", DEFAULT_POLICY_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_default_policy(size, tmp_path):
    """The generator buys single GPUs with free pools; the policy's defaults buy whole
    servers with one configuration per pool (rows marked `+`)."""
    _scaling_row(size, "region", tmp_path, default_policy=True)


def _scaling_row(
    size: tuple[int, int, int], survive: str, tmp_path: Path, default_policy: bool = False
) -> None:
    """Solve one generated instance by `fleetplan solve` and add its row to the table."""
    regions, workloads, gpu_types = size
    label = f"{regions} x {workloads} x {gpu_types}" + (" +" if default_policy else "")
    if _spent_s[0] > BENCH_BUDGET_S:
        SCALING_ROWS.append((label, survive, *["-"] * 9, "skipped"))
        pytest.skip(f"bench budget of {BENCH_BUDGET_S:g} s spent")
    plan, wall_s, stopped = _command(*size, survive, tmp_path, default_policy)
    _spent_s[0] += wall_s
    per_pair_ms = 1e3 * wall_s / (regions * workloads)
    if plan is None:
        row = ("-", "-", "-", f"{wall_s:.2f}", f"{per_pair_ms:.0f}", "-", "-", "-", "-", stopped)
        SCALING_ROWS.append((label, survive, *row))
        return
    solver = plan["solver"]
    shape = (solver["variables"], solver["integer_variables"], solver["constraints"])
    gap = "-" if solver["mip_gap"] is None else f"{solver['mip_gap']:.3%}"
    method = solver["method"].replace("decomposed by workload: ", "by workload: ")
    method = method.replace("decomposed by coupled workloads: ", "by coupled workloads: ")
    cost = f"{plan['cost_per_month']:,.0f}"
    status = plan["status"].split()[0]  # optimal, or feasible: stopped by the time limit
    per_size_ms = 1e6 * wall_s / shape[0]  # wall ms per 1,000 variables
    times = (f"{wall_s:.2f}", f"{per_pair_ms:.0f}", f"{per_size_ms:.2f}")
    SCALING_ROWS.append((label, survive, *shape, *times, cost, gap, status, method))
    if size == LARGEST and survive == "region" and not default_policy:
        assert plan["status"] == "optimal"
        print(f"{label}: {wall_s:.1f} s wall against {LARGEST_LIMIT_S:g} s (LARGEST_LIMIT_S)")


@pytest.mark.parametrize("backend", available_backends())
@pytest.mark.parametrize("survive", SURVIVE)
@pytest.mark.parametrize("size", BACKEND_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_backends(size, survive, backend):
    size_, wall_s, cost, gap, _method, *_plan = _solve(*size, survive, backend)
    shape = (
        ("-", "-", "-")
        if size_ is None
        else (size_["variables"], size_["integer_variables"], size_["constraints"])
    )
    name = f"{'x'.join(map(str, size))} {survive}"
    BACKEND_ROWS.append((name, backend, *shape, f"{wall_s:.2f}", cost, gap))
