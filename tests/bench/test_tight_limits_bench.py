"""Tight time limits on generated instances at the policy's defaults (whole servers, one
configuration per pool), before and after keeping the stages' plans, side by side in one
run. Run by `make bench` only (not `make test`); no timed assertions.

`before`: the regions' stage returns nothing unless every region's own program proves
its bound (`KEEP_STOPPED` off in solver.decompose.regions.plan), and the first workload
part to start may take all the time left (`EQUAL_SHARES` off in
solver.decompose.join_run). `kept`: the floored plan is kept with its gap against the
regions' results as the clock left them, started from the regions' own plans, and each
part gets an equal share of the time left when it starts. `after`: as `kept`, and where
the clock left some region (or the whole) no plan, the cover built without a solver
stands in (`COVER` in solver.decompose.regions.join; solver.decompose.cover). Each row:
wall time, the result (status, or the stage the limit stopped and its message), gap and
method.
"""

import time

import pytest

import solver.decompose.join_run as join_run
import solver.decompose.regions.join as region_join
import solver.decompose.regions.plan as by_region
from models.io.loading import validate_instance
from solver.errors import NoSolution
from solver.solve import SolveSettings, solve_program
from tests.bench.tables import print_table
from tests.synthetic import at_policy_defaults, generated_data

SIZES = [
    (10, 20, 6, "region", 0),
    (10, 20, 6, "none", 0),
    (20, 20, 6, "region", 0),
    (20, 30, 6, "none", 7),
]
"""(regions, workloads, GPU types, what the fleet survives, seed); the last exited 4 at an
18 s limit without the cover."""
LIMITS_S = [10.0, 20.0, 30.0, 60.0]
MIP_GAP = 1e-3
ROWS: list[tuple] = []


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = ("size", "failover", "limit s", "side", "wall s", "result", "gap", "method")
    title = f"tight limits: before vs after (highs, {MIP_GAP:.1%} gap)"
    print_table(title, header, ROWS)


def _instance(size: tuple[int, int, int, str]):
    data = generated_data(*size[:3], survive=size[3], seed=size[4])
    at_policy_defaults(data)
    data["name"] += "-default-policy"
    return validate_instance(data, data["name"])


@pytest.mark.parametrize("limit_s", LIMITS_S, ids=lambda s: f"{s:g}s")
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s[:3])) + f"-{s[3]}")
def test_tight_limit_before_and_after(size, limit_s, monkeypatch):
    inst = _instance(size)
    label = " x ".join(map(str, size[:3]))
    settings = SolveSettings.of(inst, time_limit_s=limit_s, mip_gap=MIP_GAP)
    for side, kept, cover in (
        ("before", False, False),
        ("kept", True, False),
        ("after", True, True),
    ):
        monkeypatch.setattr(by_region, "KEEP_STOPPED", kept)
        monkeypatch.setattr(join_run, "EQUAL_SHARES", kept)
        monkeypatch.setattr(region_join, "COVER", cover)
        started = time.perf_counter()
        try:
            plan = solve_program(inst, settings).plan
        except NoSolution as stopped:
            wall_s = time.perf_counter() - started
            row = (label, size[3], f"{limit_s:g}", side, f"{wall_s:.1f}", str(stopped), "-", "-")
            ROWS.append(row)
            continue
        wall_s = time.perf_counter() - started
        gap = plan.solver.mip_gap
        method = plan.solver.method.split(":")[0]
        ROWS.append(
            (
                label,
                size[3],
                f"{limit_s:g}",
                side,
                f"{wall_s:.1f}",
                f"{plan.status.split(' (')[0]}, ${plan.cost_per_month:,.0f}",
                "-" if gap is None else f"{gap:.2%}",
                method,
            )
        )
        assert plan.cost_per_month > 0
