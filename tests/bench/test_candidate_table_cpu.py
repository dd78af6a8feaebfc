"""CPU seconds of the candidate table and of the whole `fleetplan solve`, on the generated
10 regions x 20 workloads x 6 GPU types instance with region loss at the policy defaults
(issue 33: `tests.synthetic.generated_data(10, 20, 6, "region", seed=0)` through
`at_policy_defaults`) and on chat-3region, side by side with another checkout of the
project (a base to compare against). Run by `make bench` only.

Set `FLEETPLAN_BASE` to the base checkout (`git worktree add --detach /tmp/base main`);
without it only this checkout's rows are printed. Each measure runs in a fresh process,
base and this checkout in turn (A B A B), `ROUNDS` times; the table gives the fastest of
each (CPU seconds, user + system: on the shared 2-core machine wall times are noise) and
their ratio. The table is built in one process (`build_candidates`: no worker split),
the solve is the command a planner runs, with its workers.

Measured on 2026-12-07 (table23), 2-core machine under a load of 5-15. The table of the
10 x 20 x 6 instance, built in one process: 4.9-6.9 s CPU (issue 33: 3.6-4.8 s idle), 880
configurations of 20 workloads evaluated, 780 usable, 243 kept; the physics asked 2,770
times (2,379 distinct inputs): 660 lone replicas, 562 unlimited pools (pruning), 1,437
ladder sizes and their survivors, 111 failover curves (TTFT 2.0 s less 80, 90 or 100 ms).
A capacity is never computed per region: regions enter only through the ladder's largest
pool (their supply) and the failover round trips. Where the time goes (py-spy, the whole
table): the capacity searches' points 67% (Brent's method, ~9.5 evaluations a search),
their iteration mixtures 46% (three a point: t(B), the tail batch, the feedback gain's
B + dB), the MoE passes 14%, the step models 5%.

Tried, numbers unchanged to the bit (sha256 of every candidate of all 20 instances/
tables and four generated ones), and left out for want of a gain: a table-wide memo of
`PoolPhysics.at` (the 5 workloads that repeat a model, mix and SLO ask their ladders
again): no gain, `BatchModel.point`'s table already returns repeated searches' points; a
per-`BatchModel` mixture dict before the shared table: no gain, and it breaks the shared
table's least-recently-used order (tests/models/serving/test_kept_mixtures.py); the
fixed-length mixture's tokens computed once and the Poisson terms built by zip/map:
1.00x replaying 3,016 recorded mixtures; a memo of a layout's memory budget and step
model by the identity of its configuration and efficiency (~5% of the table): unsafe,
the step model also reads the MoE constants a calibration trial swaps in
(`models.physics.catalog.moe_efficiency.trial_constants`) for the same objects.

Measured on 2026-12-07 (chat25, issue 33), the same machine under a load of 3-8, table
alone (`-k table_side`, fastest of 5, A B A B against main at c510d686), after a
configuration's layout fit (memory budget, step model, mix in tokens) was worked out once
and read at every pool size (`solver.candidates.pools.PoolPhysics.fit`): 10x20x6 3.81 ->
3.48 s (0.92), chat-3region 0.75 -> 0.66 (0.88), procurement-3region 0.25 -> 0.21 (0.84),
growth-horizon 0.09 -> 0.08 (0.88), seed-chat-sizing 0.06 -> 0.05 (0.84); every candidate
the same to the bit (tests/bench/table_digests.py over the 20 shipped and two generated
instances). What is left is the capacity searches themselves: 10x20x6's table spends 82%
of `batch_capacity` in `find_edge` (~11 points a search, each up to three iteration
mixtures, all distinct: 47,878 mixtures computed, 47,878 distinct), 1,449 of its 2,896
physics calls tabulate TPOT-limited unified ladders and their survivors. Tried and left
out: `batch_capacity` bracketing its search between the largest passing batch of a
smaller pool and the smallest failing one of a larger pool of the same configuration,
mix and targets (a pass at n passes at every larger n, a fail fails at every smaller
one): 10x20x6 asked 23,569 points instead of 31,506 (-25%), table 3.97 -> 3.39 s (0.85,
fastest of 3, A B A B), chat-3region 3,537 -> 3,398 (its pools are mostly prefill); but
the searches end on other floats within their 1e-12 (9,841 of 11,654 tabulated rates
moved, by at most 1.7e-12 relative), so every program the goldens hold moves in its
last digits: not taken without refreezing and checking them.

Where a solve's CPU goes (`fleetplan solve --json`, stage functions wrapped, thread CPU,
main at c510d686): chat-3region 9.6-10.6 s in all, table 0.61-0.65 s, warm start
1.33-1.38 s (HiGHS on the restriction), region programs 2.3-2.4 s (their own thread,
beside the warm start), the whole program's search about 5 s; procurement-3region 16.3 s,
table 0.25 s (two tables), the periods programs the rest (1,624 HiGHS runs, 8.6 s);
growth-horizon 17.9 s, table 0.11 s, HiGHS 15.5 s (1,235 runs); seed-chat-sizing 0.97 s,
table 0.10 s. The table is a large share of a solve only where the program is small
or the instance large (10x20x6).
"""

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.bench.tables import print_table
from tests.synthetic import at_policy_defaults, generated_data

REPO = Path(__file__).resolve().parents[2]
ROUNDS = 3
TABLE_ROUNDS = 5
TIME_LIMIT_S = 300
ROWS: list[tuple] = []

_TABLE = """
import sys, time
from models.io.loading import load_instance
from solver.candidates.table import build_candidates
instance = load_instance(sys.argv[1])
started = time.process_time()
build_candidates(instance)
print(time.process_time() - started)
"""


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = ("instance", "measure", "base CPU s", "this CPU s", "this / base")
    print_table("candidate table and solve, CPU seconds (fastest of rounds)", header, ROWS)


def _checkouts() -> list[tuple[str, Path]]:
    base = os.environ.get("FLEETPLAN_BASE")
    return ([("base", Path(base))] if base else []) + [("this", REPO)]


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _table_cpu_s(checkout: Path, instance: Path) -> float:
    done = subprocess.run(
        [sys.executable, "-c", _TABLE, str(instance)],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.split()[-1])


def _solve_cpu_s(checkout: Path, instance: Path, out: Path) -> tuple[float, float]:
    """(CPU seconds of the command and its workers, cost of the plan)."""
    before = _children_cpu_s()
    command = "import sys; from cli.app import main; sys.argv[0] = 'fleetplan'; main()"
    limit = ("--time-limit", str(TIME_LIMIT_S))
    subprocess.run(
        [sys.executable, "-c", command, "solve", str(instance), "--json", str(out), *limit],
        cwd=checkout,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        capture_output=True,
        check=True,
    )
    cost = json.loads(out.read_text(encoding="utf-8"))["cost_per_month"]
    return _children_cpu_s() - before, cost


def _instances(folder: Path) -> dict[str, Path]:
    data = at_policy_defaults(generated_data(10, 20, 6, "region", seed=0))
    generated = folder / "gen-10x20x6-region-default.yaml"
    generated.write_text(yaml.safe_dump(data), encoding="utf-8")
    return {"10x20x6 region +": generated, "chat-3region": REPO / "instances/chat-3region.yaml"}


TABLE_ONLY = ["procurement-3region", "growth-horizon", "seed-chat-sizing"]
"""Shipped instances whose table is measured alone (their solves are the periods
program's and the months', not the table's)."""


@pytest.mark.parametrize("name", ["10x20x6 region +", "chat-3region", *TABLE_ONLY])
def test_table_side_by_side(name, tmp_path):
    """The table alone, `TABLE_ROUNDS` times a checkout (A B A B): cheap enough to run
    where the solves are not (`-k table_side`)."""
    instance = _instances(tmp_path).get(name, REPO / "instances" / f"{name}.yaml")
    checkouts = _checkouts()
    runs: dict[str, list[float]] = {label: [] for label, _ in checkouts}
    for _ in range(TABLE_ROUNDS):
        for label, checkout in checkouts:
            runs[label].append(_table_cpu_s(checkout, instance))
    this = min(runs["this"])
    base = min(runs["base"]) if "base" in runs else None
    ratio = "-" if base is None else f"{this / base:.2f}"
    base_text = "-" if base is None else f"{base:.2f}"
    ROWS.append((name, f"table ({TABLE_ROUNDS} rounds)", base_text, f"{this:.2f}", ratio))


@pytest.mark.parametrize("name", ["10x20x6 region +", "chat-3region"])
def test_table_and_solve_side_by_side(name, tmp_path):
    instance = _instances(tmp_path)[name]
    checkouts = _checkouts()
    tables: dict[str, list[float]] = {label: [] for label, _ in checkouts}
    solves: dict[str, list[float]] = {label: [] for label, _ in checkouts}
    costs: dict[str, set[float]] = {label: set() for label, _ in checkouts}
    for _ in range(ROUNDS):
        for label, checkout in checkouts:  # A B A B
            tables[label].append(_table_cpu_s(checkout, instance))
            cpu_s, cost = _solve_cpu_s(checkout, instance, tmp_path / f"{label}.json")
            solves[label].append(cpu_s)
            costs[label].add(cost)
    if len(checkouts) == 2:  # the same plan's cost, base and this
        assert costs["base"] == costs["this"]
    for measure, runs in (("table", tables), ("solve", solves)):
        this = min(runs["this"])
        base = min(runs["base"]) if "base" in runs else None
        ratio = "-" if base is None else f"{this / base:.2f}"
        base_text = "-" if base is None else f"{base:.2f}"
        ROWS.append((name, measure, base_text, f"{this:.2f}", ratio))
