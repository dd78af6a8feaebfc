"""Whole servers coordinated across workloads (solver.decompose.server_master): the master's
choice by hand, and on generated instances at the policy's defaults its plan holds every
row of the whole program, costs no less than the whole program's optimum, which costs no
less than the parts' bound."""

import time

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

import solver.decompose.join as join
from solver.backends import get_backend
from solver.decompose.by_workload import WHOLE_AFTER_JOIN_SHARE
from solver.decompose.join_run import JoinRun
from solver.decompose.join_values import broken_rows, joined_values, with_parts_bound
from solver.decompose.server_master import MASTER_MIN_S, Column, coordinate, has_servers, master
from solver.program.families.variables import PurchasedColumn
from solver.program.lp import LinearProgram, SolveResult, Termination
from solver.program.optimised import Method, Optimised
from solver.settings import SolveSettings
from tests.solver.decompose.default_policy import EXACT, default_policy_parts


@pytest.fixture(scope="module")
def small():
    return default_policy_parts(seed=2)


def test_the_master_fills_shared_servers(small):
    """Two parts on 8-GPU servers of one offer (r, g): A runs 5 GPUs in either of two
    plans, B 3 GPUs (plan 1, $10) or 4 (plan 2, $1). Plan pairs: 5 + 3 = 8 GPUs, one
    server; 5 + 4 = 9, two servers. With a server at 8 p, the master takes B's dearer
    plan 1 when 8 p > $9 (one server saves 8 p and costs $9 more); priced at
    $1 + 8 p + $1 plan 1 costs more than the server it saves, and the master takes plan 2."""
    program, _ = small
    r, g = next(key for key in program.sets.offers if key[1] == "h100-sxm")
    price = program.lp.objective[PurchasedColumn(r, g).name()]
    a = Column(("a",), {}, 0.0, {(r, g): 5.0})
    b1 = Column(("b",), {}, 10.0, {(r, g): 3.0})
    b2 = Column(("b",), {}, 1.0, {(r, g): 4.0})
    highs = get_backend("highs")
    chosen = master(program, highs, EXACT, {("a",): [a], ("b",): [b1, b2]}, 1e9)
    assert 8 * price > 9.0  # a GPU-month costs dollars, not cents
    assert chosen.columns[("b",)] is b1
    dear = Column(("b",), {}, 1.0 + 8 * price + 1.0, {(r, g): 3.0})
    chosen = master(program, highs, EXACT, {("a",): [a], ("b",): [dear, b2]}, 1e9)
    assert chosen.columns[("b",)] is b2


def test_the_rounded_join_is_the_masters_first_answer(small):
    """With only the parts' own plans the master's choice is the join's: the same
    columns, purchases rounded up to whole servers on the sum."""
    program, results = small
    assert has_servers(program)
    chosen = master(program, get_backend("highs"), EXACT, _first(program, results), 1e9)
    joined, _ = joined_values(program, list(results), results)
    assert chosen.cost == pytest.approx(program.lp.objective_value(joined))


def _first(program, results):
    from solver.decompose.server_master import column_of

    return {part: [column_of(program, part, result)] for part, result in results.items()}


@examples(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=10_000))
def test_the_masters_plan_is_a_plan_between_the_bounds(seed):
    """parts' bound <= whole optimum <= master's plan, which holds every row."""
    program, results = default_policy_parts(seed)
    highs = get_backend("highs")
    choice = coordinate(program, highs, EXACT, results, time.monotonic() + 60)
    whole = highs.run(program.lp, EXACT)
    bound = sum(result.objective for result in results.values())
    assert broken_rows(program.lp, choice.values, {}, {}) == []
    tolerance = 1e-6 * whole.objective
    assert bound <= whole.objective + tolerance
    assert whole.objective <= choice.cost + tolerance


def _run(limit_s: float | None, left_s: float) -> JoinRun:
    settings = SolveSettings(time_limit_s=limit_s)
    return JoinRun(None, None, settings, {}, time.monotonic() + left_s)


def test_the_master_takes_the_time_the_whole_program_would_not_get():
    """Limit 100 s: with 20 s left (< 25% of it) the whole program is not solved after
    the join, and the master runs until the deadline less its last program's floor
    (MASTER_MIN_S), however few the parts; with 90 s left it runs for COORDINATE_SHARE
    of them with COORDINATE_MIN_PARTS parts, not with fewer; with 8 s (< 2 floors) it
    does not run, nor without a limit and few parts."""
    assert join.WHOLE_SKIPPED_SHARE == WHOLE_AFTER_JOIN_SHARE
    few, many = 2, join.COORDINATE_MIN_PARTS
    run = _run(100.0, 20.0)
    assert join._master_deadline(run, few) == pytest.approx(run.deadline - MASTER_MIN_S)
    started = time.monotonic()
    until = join._master_deadline(_run(100.0, 90.0), many)
    assert started + join.COORDINATE_SHARE * 89.0 <= until <= time.monotonic() + 45.0
    assert join._master_deadline(_run(100.0, 90.0), few) is None
    assert join._master_deadline(_run(100.0, 8.0), many) is None
    assert join._master_deadline(_run(None, float("inf")), few) is None


def test_the_plan_names_the_master():
    """A join the master reached says so in the method, in place of the mends."""
    result = get_backend("highs").run(_one_column(), EXACT)
    optimised = Optimised(result, Method.BY_WORKLOAD, 20, 2, mended=3, coordinated=140)
    assert optimised.description == (
        "decomposed by workload: 20 independent programs joined, whole servers shared by a"
        " master over 140 plans, solved in 2 parallel processes"
    )


def _one_column() -> LinearProgram:
    lp = LinearProgram("one")
    lp.add_variable("x", upper=1.0, integer=True)
    lp.add_objective({"x": 1.0})
    return lp


def _stopped(objective: float, gap: float) -> SolveResult:
    return SolveResult(Termination.FEASIBLE, "highs", "1", 0.0, objective, mip_gap=gap)


def test_the_whole_programs_gap_is_against_the_better_bound():
    """The whole program stopped at $100 with its bound at $80 (gap 20%), solved from a
    join of $110 at 10% above the parts' bound ($99): the plan is (100 - 99) / 100 = 1%
    from a valid bound. With the parts' bound lower ($110 x 0.5 = $55) its own 20% stays."""
    assert with_parts_bound(_stopped(100.0, 0.2), _stopped(110.0, 0.1)).mip_gap == pytest.approx(
        0.01
    )
    assert with_parts_bound(_stopped(100.0, 0.2), _stopped(110.0, 0.5)).mip_gap == pytest.approx(
        0.2
    )
