"""Pricing the supply rows a join overfills (solver.decompose.join_price): the Lagrangian bound by
hand and against the whole program's optimum, the first price, the bisection, and the
priced cost."""

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

from solver.backends import get_backend
from solver.candidates.swap_dominance import reduced_program
from solver.candidates.table import build_candidates
from solver.decompose.join_mend import supply_rows
from solver.decompose.join_price import (
    excess,
    first_prices,
    lagrangian_bound,
    next_prices,
    priced_objective,
    row_users,
)
from solver.decompose.workload_parts import workload_program
from solver.program.build import build_program
from solver.program.lp import Constraint, LinearProgram, Sense, SolveResult, Termination
from solver.program.row_names import GpuSupplyRow
from solver.settings import SolveSettings
from tests.solver.decompose.test_part_join import competing

ROW = GpuSupplyRow("east", "h100-sxm").name()


def _row(rhs: float = 4.0) -> Constraint:
    """gpu_supply[east,h100-sxm]: 1 x a + 2 x b <= rhs (b a 2-GPU replica)."""
    return Constraint(ROW, GpuSupplyRow.family, {"a": 1.0, "b": 2.0}, Sense.LE, rhs)


def _result(objective: float, gap: float | None = 0.0) -> SolveResult:
    return SolveResult(
        termination=Termination.OPTIMAL,
        solver="highs",
        solver_version="1",
        runtime_s=0.0,
        objective=objective,
        mip_gap=gap,
    )


def test_the_lagrangian_bound_by_hand():
    """Parts A (no user: $100 at gap 0) and B (a user: $200 at gap 1% unpriced, $230 at
    gap 0 paying lam = $5 per GPU of a row of S = 4 GPUs):
    LB = 100 + 230 - 5 x 4 = 310, where the unpriced bound is 100 + 200 x 0.99 = 298."""
    results = {("a",): _result(100.0), ("b",): _result(200.0, 0.01)}
    priced = {("b",): _result(230.0)}
    bound = lagrangian_bound(results, results, priced, [_row()], {ROW: 5.0}, 1e-3)
    assert bound == pytest.approx(100.0 + 230.0 - 5.0 * 4.0)
    unpriced = lagrangian_bound(results, results, {}, [_row()], {}, 1e-3)
    assert unpriced == pytest.approx(100.0 + 200.0 * (1 - 0.01))


def test_a_result_without_a_gap_is_bounded_at_the_requested_gap():
    """A backend that gives no gap: $500 x (1 - 0.002)."""
    results = {("a",): _result(500.0, None)}
    assert lagrangian_bound(results, results, {}, [], {}, 0.002) == pytest.approx(499.0)


def test_the_first_price_is_the_mends_cost_per_gpu_given_back():
    """a = 2 and b = 2 use 2 + 2 x 2 = 6 of 4 GPUs: 2 too many; a mend that cost $50 more
    prices the row at 50 / 2 = $25 per GPU. Nothing to give back, or a mend that cost
    nothing, gives no price."""
    values = {"a": 2.0, "b": 2.0}
    assert excess([_row()], values) == {ROW: 6.0 - 4.0}
    assert first_prices([_row()], values, 50.0) == {ROW: 50.0 / 2}
    assert first_prices([_row(6.0)], values, 50.0) is None
    assert first_prices([_row()], values, 0.0) is None


def test_prices_bisect_between_too_low_and_too_high():
    """At $25 the row is still overfilled (6 > 4): $25 is too low, the next try $50.
    At $50 it has room (2 < 4): halfway back to $25, $37.5."""
    over, room = {"a": 2.0, "b": 2.0}, {"a": 2.0, "b": 0.0}
    prices, below = next_prices({ROW: 25.0}, [_row()], over, {})
    assert (prices, below) == ({ROW: 50.0}, {ROW: 25.0})
    prices, below = next_prices(prices, [_row()], room, below)
    assert (prices, below) == ({ROW: (25.0 + 50.0) / 2}, {ROW: 25.0})
    first, _ = next_prices({ROW: 30.0}, [_row()], room, {})
    assert first == {ROW: 30.0 / 2}  # nothing known too low: halfway to 0


def test_the_priced_cost_adds_the_price_of_the_rows_gpus_and_leaves_the_program_alone():
    """cost 3a + 7b, lam = $5 per GPU of the row (a: 1 GPU, b: 2): 8a + 17b."""
    lp = LinearProgram("p")
    for name in ("a", "b"):
        lp.add_variable(name, integer=True)
    lp.add_constraint(ROW, GpuSupplyRow.family, {"a": 1.0, "b": 2.0}, Sense.LE, 4.0)
    lp.add_objective({"a": 3.0, "b": 7.0})
    priced = priced_objective(lp, {ROW: 5.0, "gpu_supply[west,h100-sxm]": 9.0})
    assert priced.objective == {"a": 3.0 + 5.0 * 1, "b": 7.0 + 5.0 * 2}
    assert lp.objective == {"a": 3.0, "b": 7.0}


def test_only_supply_rows_are_priced_and_users_carry_a_nonzero_column():
    demand = Constraint("demand[none,chat,east]", "demand", {"a": 1.0}, Sense.EQ, 3.0)
    assert supply_rows([_row()]) == [_row()]
    assert supply_rows([_row(), demand]) is None
    owner = {"a": ("chat",), "b": ("docs",)}
    assert row_users([_row()], {"a": 1.0, "b": 0.0}, owner) == {("chat",)}


@examples(max_examples=12, deadline=None)
@given(lam_per_gpu_hour=st.floats(min_value=0.0, max_value=30.0))
def test_the_lagrangian_bound_never_passes_the_whole_programs_optimum(lam_per_gpu_hour):
    """Two east workloads that each want 3 of east's 4 cheap H100s, and mail in west:
    whatever the price of the east H100 row, the parts re-solved paying it (their
    region left unreduced, as solver.decompose.join does) bound the whole program's optimum
    from below."""
    inst = competing()
    settings = SolveSettings.of(inst)
    program = build_program(inst, build_candidates(inst))
    backend = get_backend("highs")
    whole = backend.run(program.lp, settings)
    row = program.lp.constraints[ROW]
    prices = {ROW: lam_per_gpu_hour * 730}
    results, priced = {}, {}
    for w in program.sets.workloads:
        alone = workload_program(program, w)
        shares = {ROW: row.rhs} if ROW in alone.lp.constraints else {}
        lp = reduced_program(alone, supply=shares)
        results[(w,)] = backend.run(lp, settings)
        priced[(w,)] = backend.run(priced_objective(lp, prices), settings)
    bound = lagrangian_bound(results, results, priced, [row], prices, settings.mip_gap)
    assert bound <= whole.objective * (1 + 1e-9)
