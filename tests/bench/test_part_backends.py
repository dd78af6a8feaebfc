"""Which solver takes a workload program (solver.decompose.workload_parts), measured: every
workload program of a generated instance built, reduced and solved alone by HiGHS and by
SCIP (one thread, 0.1% gap), as a decomposed solve builds and reduces them. Run by
`make bench` only (not `make test`); skipped where OR-Tools (SCIP) is missing.

Prints one row per instance: its programs, their columns, the seconds of each backend
over all of them, on how many programs SCIP was the faster, and how many the rule hands
to SCIP (`hands_to_scip`). The rule holds where the programs it hands over are those SCIP
solves faster; the README's speed notes keep the larger instances (50 regions), which
take longer than this bench's budget.
"""

import time

import pytest

from solver.backends import get_backend
from solver.candidates.swap_dominance import reduced_program
from solver.candidates.table import build_candidates
from solver.decompose.workload_parts import hands_to_scip, workload_program
from solver.program.build import build_program
from solver.settings import SolveSettings
from tests.bench.tables import print_table
from tests.synthetic import generated

INSTANCES = [
    ((10, 20, 6), "region"),
    ((20, 20, 6), "region"),
    ((10, 20, 6), "replica"),
    ((20, 20, 6), "zone"),
]
"""(regions, workloads, GPU types) and the failure policy: each failure kind on either
side of the rule's line (zone loss with 3 zones per region)."""
TIME_LIMIT_S = 120.0
"""Time limit of one program's solve by one backend."""
BENCH_BUDGET_S = 900.0
"""Instances starting after the solves have taken this long are skipped."""

ROWS: list[tuple] = []
_spent_s = [0.0]


@pytest.fixture(scope="module", autouse=True)
def table():
    yield
    header = (
        "instance",
        "survive",
        "programs",
        "columns",
        "HiGHS s",
        "SCIP s",
        "SCIP faster",
        "rule: to SCIP",
    )
    print_table("workload programs alone, HiGHS against SCIP (one thread, 0.1% gap)", header, ROWS)


def _seconds(backend: str, lp) -> float:
    settings = SolveSettings(backend, time_limit_s=TIME_LIMIT_S, mip_gap=1e-3, threads=1)
    started = time.perf_counter()
    result = get_backend(backend).run(lp, settings)
    assert result.termination.has_solution, (backend, result.termination)
    return time.perf_counter() - started


@pytest.mark.parametrize(
    "size,survive", INSTANCES, ids=["x".join(map(str, z)) + f"-{s}" for z, s in INSTANCES]
)
def test_part_backends(size, survive):
    if not get_backend("scip").is_available():
        pytest.skip("SCIP (OR-Tools) is not installed")
    label = " x ".join(map(str, size))
    if _spent_s[0] > BENCH_BUDGET_S:
        ROWS.append((label, survive, *["-"] * 5, "skipped"))
        pytest.skip(f"bench budget of {BENCH_BUDGET_S:g} s spent")
    inst = generated(*size, survive=survive)
    program = build_program(inst, build_candidates(inst, SolveSettings.of(inst)))
    columns, highs_s, scip_s, scip_faster, handed = [], 0.0, 0.0, 0, 0
    for workload in program.sets.workloads:
        lp = reduced_program(workload_program(program, workload))
        by_highs, by_scip = _seconds("highs", lp), _seconds("scip", lp)
        columns.append(len(lp.variables))
        highs_s += by_highs
        scip_s += by_scip
        scip_faster += by_scip < by_highs
        handed += hands_to_scip(lp)
    _spent_s[0] += highs_s + scip_s
    span = f"{min(columns):,}-{max(columns):,}"
    ROWS.append(
        (
            label,
            survive,
            len(columns),
            span,
            f"{highs_s:.2f}",
            f"{scip_s:.2f}",
            scip_faster,
            handed,
        )
    )
