"""Whole servers at the policy's defaults: the master over server counts
(solver.decompose.server_master) against the regions' programs
(solver.decompose.regions.join), side by side in one run. Run by `make bench` only (not
`make test`).

For each generated instance surviving any region loss (and the largest surviving none)
at the policy's defaults (whole servers, one configuration per pool;
tests.synthetic.generated: per-region random prices) the same candidates are solved
twice through `solve_program` in this process:
`master`, the code before the regions' programs (`REGION_SHARE` 0 in
solver.decompose.join, `REGIONS_FIRST` off in solver.decompose.regions.plan): with many
parts (`COORDINATE_MIN_PARTS`) the master first, for a share of the time left, and the
whole program from the cheaper of its plan and the rounded join; and `regions`, the
default: the regions' programs first, before any workload program (their bound, and
the whole program floored at their fleets: a plan), and when that is not proved within
the gap the whole program from its plan. The table prints the wall time from the start
of `solve_program` to the verified plan, the cost, the gap the plan states (against the
best bound known: the parts', the regions' or the whole program's), the status, and
`regions`' wall time and cost relative to `master`'s.
"""

import time

import pytest

import solver.decompose.join as join
import solver.decompose.regions.plan as by_region
from models.io.loading import validate_instance
from solver.errors import NoSolution
from solver.solve import SolveSettings, solve_program
from tests.bench.tables import print_table
from tests.synthetic import at_policy_defaults, generated_data

SIZES = [(3, 2, 2, "region"), (5, 5, 3, "region"), (10, 20, 6, "region"), (10, 20, 6, "none")]
"""(regions, workloads, GPU types, failures survived), at the policy's defaults."""
TIME_LIMIT_S = 300.0
ROWS: list[tuple] = []


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = (
        "regions x workloads x GPUs",
        "join",
        "wall s",
        "cost $/month",
        "gap",
        "status",
        "wall vs master",
        "cost vs master",
        "method",
    )
    title = f"whole servers: master vs regions (highs, 0.1% gap, limit {TIME_LIMIT_S:g} s)"
    print_table(title, header, ROWS)


def _instance(size: tuple[int, int, int, str]):
    data = generated_data(*size[:3], survive=size[3])
    at_policy_defaults(data)
    data["name"] += "-default-policy"
    return validate_instance(data, data["name"])


@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s[:3])) + f"-{s[3]}")
def test_master_against_regions(size, monkeypatch):
    inst = _instance(size)
    label = " x ".join(map(str, size[:3])) + f", survive {size[3]}"
    settings = SolveSettings.of(inst, time_limit_s=TIME_LIMIT_S, mip_gap=1e-3)
    walls, costs = {}, {}
    for name, share in (("master", 0.0), ("regions", join.REGION_SHARE)):
        monkeypatch.setattr(join, "REGION_SHARE", share)
        monkeypatch.setattr(by_region, "REGIONS_FIRST", share > 0)
        started = time.perf_counter()
        try:
            solved = solve_program(inst, settings)
        except NoSolution as stopped:
            wall_s = time.perf_counter() - started
            ROWS.append((label, name, f"{wall_s:.2f}", *["-"] * 5, str(stopped)))
            continue
        walls[name] = time.perf_counter() - started
        plan = solved.plan
        costs[name] = plan.cost_per_month
        gap = "-" if plan.solver.mip_gap is None else f"{plan.solver.mip_gap:.3%}"
        versus = (
            (
                f"{walls['regions'] / walls['master']:.2f}x",
                f"{costs['regions'] / costs['master'] - 1:+.3%}",
            )
            if name == "regions" and "master" in costs
            else ("-", "-")
        )
        ROWS.append(
            (
                label,
                name,
                f"{walls[name]:.2f}",
                f"{plan.cost_per_month:,.0f}",
                gap,
                plan.status.split()[0],
                *versus,
                plan.solver.method.replace("decomposed by workload: ", "by workload: "),
            )
        )
