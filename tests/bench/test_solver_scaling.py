"""Solve time by backend as generated instances grow in regions x workloads x GPU types,
with and without region-loss scenarios. Run by `make bench` only (not `make test`).

Prints one table: the program's size (variables, integer variables, constraints), the
candidate evaluation time, the solve wall time (pipeline included: candidates, program,
backend, pricing LP, verifier), the cost, the gap reached and how the program was
solved. Every plan passes the verifier (`solve` refuses one that does not).

The largest instance, 10 regions x 20 workloads x 6 GPU types surviving any region loss
at a 0.1% gap, must solve in seconds with the default backend.
"""

import time

import pytest

from solver.backends import available_backends
from solver.candidates import build_candidates
from solver.errors import NoSolution
from solver.program import build_program
from solver.solve import SolveSettings, solve
from tests.synthetic import generated

SIZES = [(3, 2, 2), (5, 5, 3), (10, 10, 4), (10, 20, 6)]
"""(regions, workloads, GPU types)."""
SURVIVE = ["none", "region"]
TIME_LIMIT_S = 60.0
LARGEST_LIMIT_S = 60.0
"""What the default backend may take on the largest instance, pipeline included."""

ROWS: list[tuple] = []


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = (
        "instance",
        "backend",
        "vars",
        "int",
        "rows",
        "cands s",
        "solve s",
        "cost $/month",
        "gap",
        "method",
    )
    widths = [max(len(str(row[i])) for row in [header, *ROWS]) for i in range(len(header))]
    lines = [
        " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True))
        for row in [header, *ROWS]
    ]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    print(f"\n\nsolver scaling (0.1% gap, 1 thread, time limit {TIME_LIMIT_S:g} s)\n")
    print("\n".join(lines))


@pytest.mark.parametrize("backend", available_backends())
@pytest.mark.parametrize("survive", SURVIVE)
@pytest.mark.parametrize("size", SIZES, ids=lambda s: "x".join(map(str, s)))
def test_scaling(size, survive, backend):
    regions, workloads, gpu_types = size
    inst = generated(regions, workloads, gpu_types, survive=survive)
    started = time.perf_counter()
    table = build_candidates(inst)
    candidates_s = time.perf_counter() - started
    lp_size = build_program(inst, table).lp.size()
    settings = SolveSettings.of(inst, backend=backend, time_limit_s=TIME_LIMIT_S, mip_gap=1e-3)
    started = time.perf_counter()
    try:
        plan = solve(inst, settings)
    except NoSolution as stopped:
        wall_s = time.perf_counter() - started
        no_plan = ("-", "-", f"no plan ({stopped.termination})")
        _record(inst.name, backend, lp_size, candidates_s, wall_s, *no_plan)
        return
    wall_s = time.perf_counter() - started
    cost = f"{plan.cost_per_month:,.0f}"
    gap = "-" if plan.solver.mip_gap is None else f"{plan.solver.mip_gap:.3%}"
    method = "by workload" if plan.solver.method.startswith("decomposed") else "one program"
    _record(inst.name, backend, lp_size, candidates_s, wall_s, cost, gap, method)
    assert plan.status in ("optimal", "feasible")
    if size == SIZES[-1] and survive == "region" and backend == "highs":
        assert plan.status == "optimal" and wall_s < LARGEST_LIMIT_S


def _record(
    name: str, backend: str, lp_size: dict, candidates_s: float, wall_s: float, *outcome: str
) -> None:
    """One row of the table: the instance, its program's size and times, then the outcome
    (cost, gap, method)."""
    ROWS.append(
        (
            name,
            backend,
            lp_size["variables"],
            lp_size["integer_variables"],
            lp_size["constraints"],
            f"{candidates_s:.2f}",
            f"{wall_s:.2f}",
            *outcome,
        )
    )
