"""Which solver solves a part of a decomposed solve (solver.decompose.workload_parts,
`part_backend`): SCIP for a large part under the default backend, the same plan as HiGHS
alone, and the plan says how many parts SCIP solved."""

import pytest

import solver.decompose.parallel as parallel
import solver.decompose.workload_parts as part_backend_module
from solver.backends import get_backend
from solver.decompose.workload_parts import SCIP_MIN_COLUMNS, part_backend
from solver.program.lp import LinearProgram, Sense
from solver.program.optimised import Method, Optimised
from solver.settings import SolveSettings
from solver.solve import solve
from tests.synthetic import two_workloads

needs_scip = pytest.mark.skipif(
    not get_backend("scip").is_available(), reason="SCIP needs OR-Tools, not installed"
)


def cover(columns: int, integer: bool = True) -> LinearProgram:
    """min sum_i (1 + i/columns) x_i, sum_i x_i >= 2.5: x_0 = 3 (integer) or 2.5."""
    lp = LinearProgram(f"cover-{columns}")
    names = [lp.add_variable(f"x{i}", upper=10, integer=integer) for i in range(columns)]
    lp.add_objective({name: 1.0 + i / columns for i, name in enumerate(names)})
    lp.add_constraint("cover", "cover", {name: 1.0 for name in names}, Sense.GE, 2.5)
    return lp


@needs_scip
def test_a_large_integer_part_goes_to_scip_under_highs():
    highs = get_backend("highs")
    chosen = part_backend(highs, cover(SCIP_MIN_COLUMNS))
    assert chosen.name == "scip"
    # x_0 = ceil(2.5) = 3 at 1 each: SCIP solves what HiGHS would.
    result = chosen.run(cover(SCIP_MIN_COLUMNS), SolveSettings(time_limit_s=30))
    assert result.objective == pytest.approx(3.0)


def test_small_parts_lps_and_other_backends_stay_where_they_are():
    highs, cbc = get_backend("highs"), get_backend("cbc")
    assert part_backend(highs, cover(SCIP_MIN_COLUMNS - 1)).name == "highs"
    assert part_backend(highs, cover(SCIP_MIN_COLUMNS, integer=False)).name == "highs"
    assert part_backend(cbc, cover(SCIP_MIN_COLUMNS)).name == "cbc"


def with_row(lp: LinearProgram, family: str) -> LinearProgram:
    """`lp` with one more (slack) row of `family` over its first column."""
    first = next(iter(lp.variables))
    lp.add_constraint(f"{family}[x]", family, {first: 1.0}, Sense.LE, 10.0)
    return lp


@needs_scip
def test_the_failure_rows_move_the_line():
    highs = get_backend("highs")
    # Spare-replica rows (survive: replica): SCIP however small the part.
    assert part_backend(highs, with_row(cover(3), "replica_spare")).name == "scip"
    # Zone-survivor rows (survive: zone): HiGHS however large.
    assert part_backend(highs, with_row(cover(SCIP_MIN_COLUMNS), "zone_survivors")).name == (
        "highs"
    )
    # One configuration per pool (the policy's default): HiGHS however large.
    assert part_backend(highs, with_row(cover(SCIP_MIN_COLUMNS), "configs_per_pool")).name == (
        "highs"
    )
    # Hall rows (region loss by cut rows, no route columns): HiGHS however large.
    assert part_backend(highs, with_row(cover(SCIP_MIN_COLUMNS), "hall")).name == "highs"
    # An LP stays with HiGHS whatever its rows.
    lp = with_row(cover(3, integer=False), "replica_spare")
    assert part_backend(highs, lp).name == "highs"


def test_without_ortools_highs_keeps_every_part(monkeypatch):
    scip = type(get_backend("scip"))
    monkeypatch.setattr(scip, "is_available", lambda _self: False)
    assert part_backend(get_backend("highs"), cover(SCIP_MIN_COLUMNS)).name == "highs"


def test_the_method_counts_the_parts_scip_solved():
    result = get_backend("highs").run(cover(3), SolveSettings(time_limit_s=30))
    optimised = Optimised(result, Method.BY_WORKLOAD, 50, 2, 0, 35, 10)
    assert optimised.description == (
        "decomposed by workload: 50 independent programs joined (10 of them solved by"
        " SCIP), 35 re-solved to fit a region's supply, solved in 2 parallel processes"
    )


@needs_scip
def test_parts_solved_by_scip_give_the_plan_highs_gives(monkeypatch):
    inst = two_workloads()
    settings = SolveSettings.of(inst, time_limit_s=60, mip_gap=0.0)
    monkeypatch.setattr(parallel, "PARALLEL_MIN_INTEGERS", 10**9)  # in this process
    highs_alone = solve(inst, settings)
    monkeypatch.setattr(part_backend_module, "SCIP_MIN_COLUMNS", 1)
    handed = solve(inst, settings)
    assert highs_alone.solver.method == "decomposed by workload: 2 independent programs joined"
    assert handed.solver.method == (
        "decomposed by workload: 2 independent programs joined (2 of them solved by SCIP)"
    )
    assert handed.solver.name == "highs"  # the run's backend: the pricing LP is HiGHS's
    assert handed.cost_per_month == pytest.approx(highs_alone.cost_per_month, rel=1e-9)
