"""Short time limits on the 10 x 20 x 6 region-loss instance at the policy's defaults
(whole servers, one configuration per pool; per-region random prices), before and after
this stop's changes, side by side in one process, A B A B. Run by `make bench` only (not
`make test`); no timed assertions.

`before`: the solve runs to `SOLVE_SHARE` of the limit whatever the program's size
(`AFTER_PER_BUILD` 0 in solver.stages), the regions' stage returns nothing where the
floored program found no plan (`HELD_COVER` off in solver.decompose.regions.plan), and
the cover's sizing is its greedy alone (`PACKED` off in solver.decompose.cover.sizing).
`after`: the solve ends AFTER_PER_BUILD x the build's seconds before the limit (4 at stop 26,
3 since stop 28: tests/bench/test_limit_curve_bench.py) where that comes first,
the cover held at the regions' own plans is the plan where the floored program has none
cheaper, and the cover's sizing is re-chosen region by region from starts on one GPU
type each. Each row: cost, stated gap, wall seconds of `solve_program` (the report's
rendering not included), and after / before ratios of cost, gap and wall for the pair.

Measured: see the branch's report (stop 26; 2 cores shared by ~8 engineers, load 5-14:
wall times are the load's as much as the code's).
"""

import time

import pytest

import solver.decompose.cover.sizing as cover_sizing
import solver.decompose.regions.plan as by_region
import solver.stages as stages
from models.io.loading import validate_instance
from solver.errors import NoSolution
from solver.solve import SolveSettings, solve_program
from tests.bench.tables import print_table
from tests.synthetic import at_policy_defaults, generated_data

SEEDS = [0, 1, 2]
LIMITS_S = [5.0, 15.0, 30.0, 60.0]
REPEATS = 2
MIP_GAP = 1e-3
SIDES = {
    "before": (0.0, False),
    "after": (stages.AFTER_PER_BUILD, True),
}
"""side -> (AFTER_PER_BUILD, HELD_COVER and cover.sizing.PACKED)."""
ROWS: list[tuple] = []


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = ("seed", "limit s", "side", "result", "gap", "wall s", "cost x", "gap x", "wall x")
    print_table(f"short limits, 10 x 20 x 6 region loss (highs, {MIP_GAP:.1%} gap)", header, ROWS)


def _instance(seed: int):
    data = at_policy_defaults(generated_data(10, 20, 6, "region", seed))
    return validate_instance(data, data["name"])


def _solve(inst, limit_s: float) -> tuple[str, float | None, float | None, float]:
    """(result, cost, gap, wall seconds) of one solve."""
    settings = SolveSettings.of(inst, time_limit_s=limit_s, mip_gap=MIP_GAP)
    started = time.perf_counter()
    try:
        plan = solve_program(inst, settings).plan
    except NoSolution as stopped:
        return str(stopped)[:60], None, None, time.perf_counter() - started
    wall_s = time.perf_counter() - started
    result = f"{plan.status.split(' (')[0]}, ${plan.cost_per_month:,.0f}"
    return result, plan.cost_per_month, plan.solver.mip_gap, wall_s


def _ratio(after: float | None, before: float | None) -> str:
    return "-" if not after or not before else f"{after / before:.3f}"


@pytest.mark.parametrize("limit_s", LIMITS_S, ids=lambda s: f"{s:g}s")
@pytest.mark.parametrize("seed", SEEDS)
def test_short_limit_before_and_after(seed, limit_s, monkeypatch):
    inst = _instance(seed)
    for _ in range(REPEATS):
        pair = {}
        for side, (after_s, held) in SIDES.items():
            monkeypatch.setattr(stages, "AFTER_PER_BUILD", after_s)
            monkeypatch.setattr(by_region, "HELD_COVER", held)
            monkeypatch.setattr(cover_sizing, "PACKED", held)
            pair[side] = result, cost, gap, wall_s = _solve(inst, limit_s)
            ratios = ("-", "-", "-")
            if side == "after":
                before = pair["before"]
                ratios = (
                    _ratio(cost, before[1]),
                    _ratio(gap, before[2]),
                    _ratio(wall_s, before[3]),
                )
            gap_text = "-" if gap is None else f"{gap:.2%}"
            ROWS.append((seed, f"{limit_s:g}", side, result, gap_text, f"{wall_s:.1f}", *ratios))
            assert cost is None or cost > 0
