"""The curve of time limit -> cost, gap and wall on generated region-loss instances at the
policy's defaults (whole servers, one configuration per pool), before and after stop 28's
budget of the solve's time, side by side, A B A B, each solve in a fresh interpreter
(tests/bench/limit_curve_run.py: cold caches, as a command starts). Run by `make bench`
only (not `make test`); no timed assertions.

`before` (main at 3c4b5430): the stages after the solve kept 4 x the build's seconds
(solver.stages.AFTER_PER_BUILD), the cut loop's LP rounds run until they find no row,
the regions' stage takes REGION_FIRST_SHARE (0.75) of the solve's time even where no
whole solve can follow it, the regions' own programs half of that (BOUND_SHARE), and the
covers come after the floored program. `after`: 3 x the build kept; LP rounds stopped at
LP_ROUNDS_SHARE of the solve's time (solver.decompose.scenario_cuts); the regions' stage
takes all the solve's time where the whole would not follow (solver.decompose.by_workload
._little_after); the regions' programs rounds / (rounds + 2) of it, and none started
where that gives each less than REGION_MIN_S (solver.decompose.regions.timing); where the
clock left a region without a plan, the whole program's cover first
(solver.decompose.regions.plan.COVERS_FIRST). Each row: the result, cost, stated
gap, wall (the child process: interpreter, instance, solve) and user CPU seconds, and
after / before ratios of cost and wall for the pair.

Measured with the command line (`fleetplan solve FILE --set solver.time_limit_s=L --json
OUT`, main 3c4b5430 in a detached worktree against this branch, alternating A B, two
pairs a row; 2 cores shared with three other engineers' work; wall and user seconds of
the whole command from /usr/bin/time, the interpreter's ~0.5 s start included; the
`after` rows at b02344a7, before 774f419b moved the too-short check ahead of the
regions' build, whose 0.3-0.5 s the 5 s rows spent for nothing):

    10 x 20 x 6 region, 19:14-19:21 UTC, load 4.9-7.4
    L s   before: cost, gap, wall / user s              after: cost, gap, wall / user s
    5     $728,073 10.72%  6.0 / 3.9,  6.0 / 3.9        $728,073 10.72%  6.6 / 4.4,  6.7 / 4.2
    10    $728,073 10.72% 10.8 / 7.2, 10.6 / 7.1        $728,073  9.49% 10.8 / 7.0, 10.5 / 6.9
    15    $728,073  9.54% 13.7 / 9.1, 13.3 / 8.9        $698,289  1.91% 14.2 / 9.5, 14.1 / 9.2
    30    $700,858 2.70% and $692,215 1.05%, 21.0 / 13.6 $692,215  1.05% 26.3 / 17.0, 26.5 / 17.1
    60    $692,215  1.05% 39.4 / 25.9, 39.2 / 25.8      $692,215  1.05% 50.5 / 32.5, 50.3 / 31.4

At 18:58-19:12 UTC, load 3.5-4.0, the same code less the check: 10 s gave $698,289
(1.91%, 9.6 s) in one pair of two, against the cover; 15 s $698,289 in both. At 19:29
UTC, load 2.7-3.5, at 774f419b: 5 s $728,073 both sides, wall 5.7 and 5.7 s before, 5.5
and 5.5 s after (gap 10.72% -> 7.8%: the regions' stopped bound); 15 s before $692,215
(1.05%, 10.7 s) and $700,858 (3.39%, 11.1 s), after $698,289 (1.91%, 13.4 and 13.6 s):
with both cores free `before` proves the regions too, and its search, from another
floored plan, once found the 30 s plan. Over the seven 15 s pairs: after $698,289 in
all, before $728,073 in five. The curve
stops at $692,215 (1.05% above the regions' bound, $684,946) from 30 s on: the search
over neighbourhoods of regions finds nothing cheaper in the extra time. At 5 s every
stage gets too little: candidates 1.5-2.4 s (one process when the load is up), build
0.45-0.9 s, and the regions' programs need 5-5.6 s of CPU (0.5-1.3 s each, most at the
root, 0.3 s each to a plan within a few percent) and the floored program 0.8 s, so the
plan is the cover built without a solver ($728,073), as before.

    other cases at 5 s (18:51-19:22 UTC, load 3-6.7)
    5 x 10 x 3 region    $263,559 both sides (12.4%; 4.7-4.9 s before, 4.9-5.0 after)
    20 x 20 x 6 region   $1,463,679 both (the parts' covers, 10.4%) where the load let
                         the build end; at load 6.4+ both exit 4 in candidates or build
    10 x 20 x 6 none     $711,370 (6.8-8.1%, 5.9-6.1 s) -> $689,412 and $694,843
                         (2.3%, 4.0%; 6.4 s); at 10 s both $685,090 (0.01%), 5.7-6.1 s
    20 x 20 x 6 region at 10 s, 19:12 UTC, load 4.0-4.3: $1,463,679 both, wall 11.0 and
    14.5 s before, 12.2 and 14.4 s after (the check; without it 13.6-14.0 against 11.2-11.4)

The goldens keep their costs (tests/test_goldens.py).
"""

import json
import os
import resource
import subprocess
import sys
import time

import pytest

from tests.bench.tables import print_table

CASES = [
    ((10, 20, 6, "region", 0), [5.0, 10.0, 15.0, 30.0, 60.0]),
    ((5, 10, 3, "region", 0), [5.0, 10.0]),
    ((20, 20, 6, "region", 0), [5.0, 10.0]),
    ((10, 20, 6, "none", 0), [5.0, 10.0]),
]
"""(regions, workloads, GPU types, what the fleet survives, seed) and the limits tried."""
REPEATS = 2
ROWS: list[tuple] = []
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = ("case", "limit s", "side", "result", "cost", "gap", "wall s", "user s")
    header += ("cost x", "wall x")
    print_table("time limit -> cost, gap, wall (highs, 0.1% gap)", header, ROWS)


def _run(side: str, case: tuple, limit_s: float) -> tuple[dict, float, float]:
    """(the child's answer, its wall and user CPU seconds)."""
    args = [side, *map(str, case), f"{limit_s:g}"]
    env = dict(os.environ, PYTHONPATH=ROOT)
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tests.bench.limit_curve_run", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
    )
    wall_s = time.monotonic() - started
    user_s = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
    return json.loads(done.stdout.strip().splitlines()[-1]), wall_s, user_s


def _ratio(after: float | None, before: float | None) -> str:
    return "-" if not after or not before else f"{after / before:.3f}"


@pytest.mark.parametrize(
    ("case", "limit_s"),
    [(case, limit_s) for case, limits in CASES for limit_s in limits],
    ids=lambda v: "x".join(map(str, v[:4])) if isinstance(v, tuple) else f"{v:g}s",
)
def test_limit_curve_before_and_after(case, limit_s):
    label = " x ".join(map(str, case[:3])) + f" {case[3]}"
    for _ in range(REPEATS):
        pair = {}
        for side in ("before", "after"):
            answer, wall_s, user_s = _run(side, case, limit_s)
            pair[side] = answer.get("cost"), wall_s
            ratios = ("-", "-")
            if side == "after":
                cost, before = answer.get("cost"), pair["before"]
                ratios = (_ratio(cost, before[0]), _ratio(wall_s, before[1]))
            cost_text = "-" if "cost" not in answer else f"{answer['cost']:,.0f}"
            gap = answer.get("gap")
            gap_text = "-" if gap is None else f"{gap:.2%}"
            times = (f"{wall_s:.1f}", f"{user_s:.1f}")
            row = (label, f"{limit_s:g}", side, answer["result"], cost_text, gap_text)
            ROWS.append((*row, *times, *ratios))
            assert "cost" not in answer or answer["cost"] > 0
