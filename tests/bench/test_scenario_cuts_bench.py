"""Region loss by routing rows against Hall cuts (`solver.scenario_rows`, issue 33), side
by side in one run. Run by `make bench` only (not `make test`).

For each generated instance (tests.synthetic.generated: per-region random prices, single
GPUs and free pools; `+`: the policy's defaults, whole servers and one configuration per
pool) the same candidates are solved twice through `solve_program` in this process,
once with every lost region's routing restated (`routing`) and once with only the Hall
rows the solutions break (`cuts`, solver.decompose.scenario_cuts: the default, `auto`,
from 5 regions), each to a verified plan; the largest sizes by cuts only (the routing
program at 50 x 50 x 6 is some 736,000 columns). The table prints the program each
solved (the cut program's rows include the Hall rows it ended with), the wall time from
the start of `solve_program` to the verified plan, that time per region-workload pair
(flat when the solve grows linearly in regions x workloads: the target is no more than
1.5 times the 10 x 20 figure up to 50 x 50), the cost, the gap reached and how it was
solved. Both are proved within the same requested gap (0.1%), so their costs may differ
by up to that much where several plans lie within it; the column after the status is
cuts' cost less routing's, relative. A solve the time limit stops (status `feasible`)
states its gap, and its cost is not compared.
"""

import time

import pytest

from models.io.loading import validate_instance
from solver.errors import NoSolution
from solver.solve import SolveSettings, solve_program
from tests.bench.tables import print_table
from tests.synthetic import at_policy_defaults, generated, generated_data

SIZES = [
    ((3, 2, 2), False),
    ((5, 5, 3), False),
    ((10, 20, 6), False),
    ((20, 20, 6), False),
    ((30, 30, 6), False),
    ((50, 50, 6), False),
    ((10, 20, 6), True),
]
"""(regions, workloads, GPU types), and whether at the policy's defaults."""
CUTS_ONLY_FROM = 30
"""Regions from which only the cut rows are solved (the routing program is too large to
finish within the limit on two cores)."""
TIME_LIMIT_S = 600.0
ROWS: list[tuple] = []


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = (
        "regions x workloads x GPUs",
        "scenario rows",
        "vars",
        "int",
        "rows",
        "wall s",
        "ms per r x w",
        "cost $/month",
        "gap",
        "status",
        "cuts vs routing",
        "method",
    )
    title = f"region loss: routing rows vs Hall cuts (highs, 0.1% gap, limit {TIME_LIMIT_S:g} s)"
    print_table(title, header, ROWS)


def _instance(size: tuple[int, int, int], default_policy: bool):
    if not default_policy:
        return generated(*size, survive="region")
    data = generated_data(*size, survive="region")
    at_policy_defaults(data)
    data["name"] += "-default-policy"
    return validate_instance(data, data["name"])


@pytest.mark.parametrize(
    "size,default_policy",
    SIZES,
    ids=["x".join(map(str, s)) + ("+" if d else "") for s, d in SIZES],
)
def test_routing_against_cuts(size, default_policy):
    inst = _instance(size, default_policy)
    label = " x ".join(map(str, size)) + (" +" if default_policy else "")
    costs, proved = {}, {}
    pairs = size[0] * size[1]
    for rows in ("routing", "cuts") if size[0] < CUTS_ONLY_FROM else ("cuts",):
        settings = SolveSettings.of(
            inst, time_limit_s=TIME_LIMIT_S, mip_gap=1e-3, scenario_rows=rows
        )
        started = time.perf_counter()
        try:
            solved = solve_program(inst, settings)
        except NoSolution as stopped:
            wall_s = time.perf_counter() - started
            per_pair = f"{1e3 * wall_s / pairs:.0f}"
            ROWS.append(
                (label, rows, *["-"] * 3, f"{wall_s:.2f}", per_pair, *["-"] * 4, str(stopped))
            )
            continue
        wall_s = time.perf_counter() - started
        plan, size_ = solved.plan, solved.program.lp.size()
        costs[rows] = plan.cost_per_month
        proved[rows] = plan.status == "optimal"
        gap = "-" if plan.solver.mip_gap is None else f"{plan.solver.mip_gap:.3%}"
        versus = (
            f"{costs['cuts'] / costs['routing'] - 1:+.4%}"
            if rows == "cuts" and "routing" in costs
            else "-"
        )
        ROWS.append(
            (
                label,
                rows,
                size_["variables"],
                size_["integer_variables"],
                size_["constraints"],
                f"{wall_s:.2f}",
                f"{1e3 * wall_s / pairs:.0f}",
                f"{plan.cost_per_month:,.2f}",
                gap,
                plan.status.split()[0],
                versus,
                plan.solver.method.replace("decomposed by workload: ", "by workload: "),
            )
        )
    if len(costs) == 2 and all(proved.values()):  # both within 0.1% of the optimum
        assert abs(costs["cuts"] - costs["routing"]) <= 1e-3 * costs["routing"] + 1e-6
