"""A re-solve without one chosen pool, proven by the base solve's bound
(solver.analysis.without): the neighbourhood's plan, its gap to the base bound, the base
fleet's plan where the region alone finds none, the row that carries the bound into the
search."""

import math

import pytest

from solver.analysis import explain as explain_module
from solver.analysis import without as without_module
from solver.analysis.lever_groups import plan_of
from solver.analysis.without import BASE_BOUND, FLEET, BaseProof, start_without, with_base_bound
from solver.backends import get_backend
from solver.decompose.by_workload import optimise
from solver.program.build import with_bounds
from solver.program.row_names import ReplicasColumn, family_of
from solver.settings import SolveSettings
from solver.solve import solve_program
from tests.solver.test_solve import capacity_rps
from tests.synthetic import FLAT_SLO, instance, workload

H100, H200 = "h100-sxm", "h200"
HOURS = 730  # hours_per_month


def _base():
    """East and west, 100 requests/s each, H100 at $2.0 and H200 at $3.5 in each: the
    base buys H100 in both (cheaper per request/s), proven to gap 0."""
    inst = instance(
        {"east": {H100: (64, 2.0), H200: (64, 3.5)}, "west": {H100: (64, 2.0), H200: (64, 3.5)}},
        [workload("chat", {"east": 100.0, "west": 100.0})],
    )
    solved = solve_program(inst, SolveSettings.of(inst, mip_gap=0.0))
    (east,) = [p for p in solved.plan.replicas if p.region == "east"]
    assert east.label == "h100-sxm fp8 tp1xpp1 unified"
    key = solved.program.sets.table.find(east.workload, east.key).key
    return solved, east, ReplicasColumn("chat", key, "east").name()


def test_the_base_bound_proves_a_plan_that_changes_the_pools_region_alone():
    solved, _, var = _base()
    base = BaseProof.of(solved.program, solved.result, solved.settings)
    assert base.bound == pytest.approx(solved.result.objective)  # proven to gap 0
    q100, q200 = capacity_rps(solved.instance, H100), capacity_rps(solved.instance, H200)
    h100_region = math.ceil(100.0 / q100) * 2.0 * HOURS
    h200_region = math.ceil(100.0 / q200) * 3.5 * HOURS
    # Without east's H100 pool, east buys H200 and west keeps its H100 pool:
    without = h100_region + h200_region
    gap = (without - 2 * h100_region) / without  # against the base's cost, its bound
    loose = SolveSettings.of(solved.instance, mip_gap=gap * 1.01).started()
    started = start_without(solved.program, get_backend("highs"), loose, var, base)
    assert started.objective == pytest.approx(without, rel=1e-4)
    assert started.values[var] == 0.0
    assert plan_of(solved.program.lp, started.values)
    assert started.answer is not None and started.answer.mip_gap == pytest.approx(gap, rel=1e-3)
    assert started.answer.objective == pytest.approx(without, rel=1e-4)
    # A gap tighter than the plan's distance from the bound proves nothing: a start only.
    tight = SolveSettings.of(solved.instance, mip_gap=gap * 0.99).started()
    again = start_without(solved.program, get_backend("highs"), tight, var, base)
    assert again.answer is None and again.objective == pytest.approx(without, rel=1e-4)


def test_the_base_bound_row_keeps_the_optimum_of_the_program_without_the_pool():
    solved, _, var = _base()
    base = BaseProof.of(solved.program, solved.result, solved.settings)
    bounded = with_base_bound(solved.program, var, base)
    (row,) = [r for r in bounded.lp.constraints.values() if r.family == BASE_BOUND.name]
    assert row.name == "base_bound[east]" and row.rhs <= base.bound
    assert bounded.region_costs.get("lp") in (None, bounded.lp)
    backend, settings = get_backend("highs"), SolveSettings.of(solved.instance, mip_gap=0.0)
    plain = optimise(solved.program, backend, settings.started(), {var: (0.0, 0.0)}).result
    with_row = optimise(bounded, backend, settings.started(), {var: (0.0, 0.0)}).result
    assert with_row.objective == pytest.approx(plain.objective, rel=1e-9)
    assert not row.broken_by(plain.values)  # the row removes no plan of the program


def test_what_the_limit_on_configurations_costs_is_the_same_from_the_base_plan():
    # East, 300 requests/s: 3 H100 at $2.0 and any H200 at $3.5; at most one
    # configuration per pool, so the base cannot mix them, and the lifted program (the
    # base plan one of its plans) may: from the base plan or not, the same optimum
    # within the comparison gap
    inst = instance(
        {"east": {H100: (3, 2.0), H200: (64, 3.5)}},
        [workload("chat", {"east": 300.0})],
        policy={"max_configs_per_pool": 1},
    )
    solved = solve_program(inst, SolveSettings.of(inst, mip_gap=0.0))
    comparison = solved.settings.for_comparison()
    table, program = solved.program.sets.table, solved.program
    alone = explain_module._simplicity(program, solved.plan, comparison, table)
    started = explain_module._simplicity(program, solved.plan, comparison, table, solved.result)
    assert alone.cost_per_month_unlimited < solved.plan.cost_per_month  # the limit binds
    assert started.cost_per_month_unlimited == pytest.approx(
        alone.cost_per_month_unlimited, rel=comparison.mip_gap
    )


def test_where_the_region_alone_finds_nothing_the_base_fleet_answers(monkeypatch):
    # East alone, 100 requests/s of 8B on H100 in 8-GPU servers at $2.0, disaggregation
    # allowed (targets where the KV cache stops every batch): 3 unified replicas on one
    # server. Without the unified pool, a prefill and a decode pool on the same server
    # carry it: the same fleet at the same cost, 1 x 8 x $2.0 x 730 h, proven by the
    # base's bound (the tie-break on GPUs used moves the objective by cents only).
    inst = instance(
        {"east": {H100: (64, 2.0)}},
        [workload("chat", {"east": 100.0}, **FLAT_SLO)],
        disaggregation=True,
        policy={"buy_unit": "node"},
    )
    solved = solve_program(inst, SolveSettings.of(inst, mip_gap=0.0))
    (pool,) = solved.plan.replicas
    assert pool.role == "unified" and solved.plan.cost_per_month == 1 * 8 * 2.0 * HOURS
    key = solved.program.sets.table.find(pool.workload, pool.key).key
    var = ReplicasColumn("chat", key, "east").name()
    base = BaseProof.of(solved.program, solved.result, solved.settings)
    # The region alone finds nothing (its program's plan keeps the pool): the fleet's turn
    monkeypatch.setattr(
        without_module, "neighbourhood", lambda lp, free, values: with_bounds(lp, {var: (1, 1)})
    )
    settings = SolveSettings.of(inst, mip_gap=1e-3).started()
    started = start_without(solved.program, get_backend("highs"), settings, var, base)
    assert started.answer is not None and started.values[var] == 0.0
    assert plan_of(with_bounds(solved.program.lp, {var: (0.0, 0.0)}), started.values)
    assert started.objective == pytest.approx(1 * 8 * 2.0 * HOURS, rel=1e-5)
    fleet = [n for n in solved.program.lp.variables if family_of(n) in FLEET]
    assert fleet and all(started.values[n] == pytest.approx(base.values[n]) for n in fleet)


def test_the_pools_region_bounds_the_search_as_it_is_without_the_pool(monkeypatch):
    # East's own program with its H100 pool at 0 must buy H200: ceil(100 / q200) x $3.5
    # x 730 h, above the base's row for east (its H100 pool, ceil(100 / q100) x $2.0 x
    # 730 h); west's row stays the base's. Every plan of P_X holds the new row.
    from solver.decompose import region_bounds

    monkeypatch.setattr(region_bounds, "MIN_INTEGERS", 0)
    solved, _, var = _base()
    backend, exact = get_backend("highs"), SolveSettings.of(solved.instance, mip_gap=0.0)
    known = solved.program.region_costs
    known.update(
        lp=solved.program.lp, rows=region_bounds.region_rows(solved.program.lp, backend, exact)
    )
    q100, q200 = capacity_rps(solved.instance, H100), capacity_rps(solved.instance, H200)
    h100_region = math.ceil(100.0 / q100) * 2.0 * HOURS
    h200_region = math.ceil(100.0 / q200) * 3.5 * HOURS
    assert known["rows"]["east"][1] == pytest.approx(h100_region, rel=1e-3)
    base = BaseProof.of(solved.program, solved.result, solved.settings)
    settings = exact.started()
    bounded = with_base_bound(solved.program, var, base, backend, settings)
    rows = bounded.region_costs["rows"]
    assert bounded.region_costs["lp"] is bounded.lp and bounded.lp.variables[var].upper == 0.0
    assert rows["east"][1] == pytest.approx(h200_region, rel=without_module.REGION_GAP)
    assert rows["west"] == known["rows"]["west"]
    plain = optimise(bounded, backend, settings, {var: (0.0, 0.0)}).result
    assert plain.objective == pytest.approx(h100_region + h200_region, rel=1e-4)
    # off (the bench's before): the base's row
    monkeypatch.setattr(without_module, "REGION_ROW", False)
    again = with_base_bound(solved.program, var, base, backend, settings)
    assert again.region_costs["rows"] == known["rows"]
