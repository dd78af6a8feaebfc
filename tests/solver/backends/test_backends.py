"""Solver backends: every solving test runs over every registered backend.

A backend that cannot run here is skipped with its own reason (how to get it). The
expected values are hand arithmetic; solutions are also checked row by row against
the program, independently of the solver.
"""

import dataclasses
import math
import random
import subprocess
import sys
import textwrap
import time

import pytest

from solver.backends import (
    DEFAULT_BACKEND,
    UnknownBackendError,
    available_backends,
    backend_names,
    get_backend,
)
from solver.backends import cbc as cbc_module
from solver.backends.base import relative_gap
from solver.backends.cpsat import search as cpsat_search
from solver.backends.cpsat.grid import make_grid
from solver.backends.cpsat.presolve import implied_integers, propagate_bounds
from solver.program.lp import LinearProgram, Sense, SolveResult, Termination

TOLERANCE = 1e-6


@pytest.fixture(params=backend_names())
def backend(request):
    """Each registered backend, skipped (with how to get it) where it cannot run."""
    chosen = get_backend(request.param)
    if not chosen.is_available():
        pytest.skip(f"{chosen.name} unavailable: {chosen.unavailable_reason()}")
    return chosen


def check_solution(lp: LinearProgram, result: SolveResult) -> None:
    """Every row and bound holds and the objective is what the values give."""
    assert result.termination.has_solution, result
    assert set(result.values) == set(lp.variables)
    for row in lp.constraints.values():
        scale = max(1.0, abs(row.rhs))
        assert row.slack(result.values) >= -TOLERANCE * scale, (row.name, result.values)
    for var in lp.variables.values():
        value = result.values[var.name]
        assert value >= var.lower - TOLERANCE
        assert var.upper is None or value <= var.upper + TOLERANCE
        if var.integer:
            assert value == round(value)
    assert result.objective == pytest.approx(lp.objective_value(result.values), rel=1e-6)


# --- hand-solved programs ------------------------------------------------------------


def gpu_mix() -> LinearProgram:
    """Two GPU types for 13 req/s at least cost, at most 2 of type B.

    A: 5 $/h, 6 req/s;  B: 4 $/h, 4 req/s;  a, b integer >= 0.
        min 5a + 4b  s.t.  6a + 4b >= 13,  b <= 2.
    By hand: b <= 2 gives at most 8 req/s from B, so a >= 1.
        a = 1: 6 + 4b >= 13 -> b >= 1.75 -> b = 2: cost 5 + 8 = 13.
        a = 2: 12 + 4b >= 13 -> b = 1: cost 10 + 4 = 14.
        a = 3: b = 0: cost 15.  So (1, 2) at 13; the LP relaxation (a = 13/6) is 10.83.
    """
    lp = LinearProgram("gpu-mix")
    a = lp.add_variable("replicas[A, us-east]", integer=True)
    b = lp.add_variable("replicas[B, us-east]", upper=2, integer=True)
    lp.add_constraint("demand[us-east]", "demand", {a: 6, b: 4}, Sense.GE, 13)
    lp.add_objective({a: 5, b: 4})
    return lp


def priced_lp() -> LinearProgram:
    """An LP whose duals are derived by hand, one row per sense.

        min 3x + 2y - z + 7w
        s.t. demand:  x + y >= 4      -> y carries the margin:       dual +2
             floor:   x >= 1          -> one more x replaces a y:   dual 3 - 2 = +1
             cap:     z <= 5          -> one more z lowers cost:    dual -1
             pin:     w == 2          -> one more w costs 7:        dual +7
    Optimum x = 1, y = 3, z = 5, w = 2: 3 + 6 - 5 + 14 = 18.
    Duals are d(objective)/d(rhs): a binding >= row of a minimisation is positive.
    """
    lp = LinearProgram("priced")
    for name in ("x", "y", "z", "w"):
        lp.add_variable(name)
    lp.add_constraint("demand", "demand", {"x": 1, "y": 1}, Sense.GE, 4)
    lp.add_constraint("floor", "floor", {"x": 1}, Sense.GE, 1)
    lp.add_constraint("cap", "cap", {"z": 1}, Sense.LE, 5)
    lp.add_constraint("pin", "pin", {"w": 1}, Sense.EQ, 2)
    lp.add_objective({"x": 3, "y": 2, "z": -1, "w": 7})
    return lp


def test_tiny_mip_by_hand(backend):
    lp = gpu_mix()
    result = backend.solve(lp, mip_gap=0.0)
    assert result.termination is Termination.OPTIMAL
    assert result.objective == pytest.approx(5 * 1 + 4 * 2)
    assert result.values == {"replicas[A, us-east]": 1.0, "replicas[B, us-east]": 2.0}
    assert result.mip_gap == pytest.approx(0.0, abs=1e-9)
    assert result.solver == backend.name
    assert result.solver_version
    assert result.runtime_s > 0
    check_solution(lp, result)


def test_lp_duals_by_hand(backend):
    lp = priced_lp()
    result = backend.solve(lp, want_duals=True)
    assert result.termination is Termination.OPTIMAL
    assert result.objective == pytest.approx(3 * 1 + 2 * 3 - 5 + 7 * 2)
    assert result.values == pytest.approx({"x": 1, "y": 3, "z": 5, "w": 2})
    if backend.capabilities.duals:
        assert result.duals == pytest.approx(
            {"demand": 2.0, "floor": 3.0 - 2.0, "cap": -1.0, "pin": 7.0}
        )
    else:
        assert result.duals == {}
        assert "no duals" in result.message


def test_duals_move_the_objective_as_they_say(backend):
    """d(objective)/d(rhs) by finite difference: raise demand's rhs by 1, cost rises 2."""
    if not backend.capabilities.duals:
        pytest.skip(f"{backend.name} gives no duals")
    base = backend.solve(priced_lp(), want_duals=True)
    moved = priced_lp()
    row = moved.constraints["demand"]
    moved.constraints["demand"] = type(row)(row.name, row.family, row.coefficients, row.sense, 5)
    assert backend.solve(moved).objective - base.objective == pytest.approx(base.duals["demand"])


def test_mip_gets_no_duals(backend):
    result = backend.solve(gpu_mix(), want_duals=True)
    assert result.termination is Termination.OPTIMAL
    assert result.duals == {}
    assert "with_integers_fixed" in result.message


def test_fixed_integers_give_lp_duals():
    """The pricing route: fix the MIP's integers, re-solve as an LP, read the duals."""
    highs = get_backend("highs")
    mip = gpu_mix()
    fixed = mip.with_integers_fixed(highs.solve(mip).values)
    result = highs.solve(fixed, want_duals=True)
    # a = 1, b = 2 fixed: 14 req/s against 13, the demand row is slack: price 0.
    assert result.duals == pytest.approx({"demand[us-east]": 0.0})


def test_continuous_variables_are_not_rounded(backend):
    """min 3x + 2y, x + y >= 4.5, x >= 1, x integer, y continuous: x = 1, y = 3.5 -> 10.

    Treating y as an integer (what CP-SAT does unaided) would give y = 4 -> 11.
    """
    lp = LinearProgram("mixed")
    lp.add_variable("x", integer=True)
    lp.add_variable("y")
    lp.add_constraint("demand", "demand", {"x": 1, "y": 1}, Sense.GE, 4.5)
    lp.add_constraint("floor", "floor", {"x": 1}, Sense.GE, 1)
    lp.add_objective({"x": 3, "y": 2})
    result = backend.solve(lp, mip_gap=0.0)
    assert result.termination is Termination.OPTIMAL
    assert result.objective == pytest.approx(3 * 1 + 2 * 3.5)
    assert result.values == pytest.approx({"x": 1, "y": 3.5})


def squeeze_program(n_capacity: float, m_cost: float) -> LinearProgram:
    """min n + m_cost x m s.t. s >= 100.0002, s <= n_capacity x n + 10 m, s <= 1000:
    demand a hair above a multiple of one replica's capacity, n and m integer."""
    lp = LinearProgram("squeeze")
    lp.add_variable("n", integer=True)
    lp.add_variable("m", integer=True)
    lp.add_variable("s", upper=1000)
    lp.add_constraint("demand", "demand", {"s": 1}, Sense.GE, 100.0002)
    lp.add_constraint("capacity", "capacity", {"s": 1, "n": -n_capacity, "m": -10}, Sense.LE, 0)
    lp.add_objective({"n": 1, "m": m_cost})
    return lp


def test_demand_just_above_a_multiple_of_capacity(backend):
    """min n + 1.5m s.t. s >= 100.0002, s <= 10n + 10m, s <= 1000, n, m integer.

    Ten replicas carry 100 req/s, 2e-4 short (2e-6 relative: beyond every solver's
    feasibility tolerance), so n = 11, m = 0: cost 11. With integral data in the
    capacity row, CP-SAT treats s as an implied integer, so no grid rounding can hide
    the shortfall (the repair of a squeeze that does slip through a grid is tested in
    test_cpsat_repairs_a_squeeze_with_feasibility_cuts).
    """
    lp = squeeze_program(n_capacity=10, m_cost=1.5)
    result = backend.solve(lp, mip_gap=0.0)
    assert result.termination is Termination.OPTIMAL
    assert (result.values["n"], result.values["m"], result.objective) == (11, 0, 11)


# --- infeasible, unbounded, degenerate ----------------------------------------------


@pytest.mark.parametrize("integer", [False, True], ids=["lp", "mip"])
def test_infeasible(backend, integer):
    lp = LinearProgram("infeasible")
    lp.add_variable("x", integer=integer)
    lp.add_variable("y", integer=integer)
    lp.add_constraint("supply", "supply", {"x": 1, "y": 1}, Sense.LE, 1)
    lp.add_constraint("demand", "demand", {"x": 1, "y": 1}, Sense.GE, 2)
    lp.add_objective({"x": 1})
    result = backend.solve(lp, time_limit_s=10)
    assert result.termination is Termination.INFEASIBLE
    assert result.values == {} and result.objective is None


@pytest.mark.parametrize("integer", [False, True], ids=["lp", "mip"])
def test_unbounded(backend, integer):
    """min -x - y s.t. x - y <= 1: x = y = t is feasible for every t >= 0.

    Solvers that can only say "infeasible or unbounded" (HiGHS's presolve, CP-SAT,
    GLOP) and MIP solvers that only saw an unbounded relaxation are settled by the
    interface's zero-objective feasibility re-solve, so every backend says UNBOUNDED.
    """
    lp = LinearProgram("unbounded")
    lp.add_variable("x", integer=integer)
    lp.add_variable("y")
    lp.add_constraint("spread", "spread", {"x": 1, "y": -1}, Sense.LE, 1)
    lp.add_objective({"x": -1, "y": -1})
    result = backend.solve(lp, time_limit_s=10)
    assert result.termination is Termination.UNBOUNDED
    assert result.objective is None


def test_parity_infeasible(backend):
    """2x - 2y == 1 has no integer point although its LP relaxation is unbounded in -x.

    (CBC cannot prove it with unbounded integers, so x and y get bounds here; CP-SAT's
    MIP conversion would call the row MODEL_INVALID, the backend catches it first.)
    """
    lp = LinearProgram("parity")
    lp.add_variable("x", upper=1000, integer=True)
    lp.add_variable("y", upper=1000, integer=True)
    lp.add_constraint("odd", "odd", {"x": 2, "y": -2}, Sense.EQ, 1)
    lp.add_objective({"x": -1})
    assert backend.solve(lp, time_limit_s=10).termination is Termination.INFEASIBLE


def test_degenerate_programs(backend):
    empty = LinearProgram("empty")
    empty.objective_constant = 4.0
    result = backend.solve(empty)
    assert (result.termination, result.objective) == (Termination.OPTIMAL, 4.0)

    no_rows = LinearProgram("no-rows")
    no_rows.add_variable("n", lower=2, upper=5, integer=True)
    no_rows.add_objective({"n": 3})
    no_rows.objective_constant = 10
    result = backend.solve(no_rows)
    assert (result.termination, result.objective) == (Termination.OPTIMAL, 3 * 2 + 10)

    hollow = LinearProgram("hollow")
    hollow.add_variable("x")
    hollow.add_constraint("nothing[here]", "f", {}, Sense.GE, 1)
    result = backend.solve(hollow)
    assert result.termination is Termination.INFEASIBLE
    assert "nothing[here]" in result.message

    crossed = LinearProgram("crossed")
    crossed.add_variable("x", lower=3, upper=2)
    result = backend.solve(crossed)
    assert result.termination is Termination.INFEASIBLE
    assert "lower bound 3" in result.message


def test_free_variables(backend):
    """min x + 2n, x + n >= -3.5, n >= -10, both free: n = -10, x = 6.5 -> -13.5."""
    lp = LinearProgram("free")
    lp.add_variable("x", lower=-math.inf)
    lp.add_variable("n", lower=-math.inf, integer=True)
    lp.add_constraint("sum", "f", {"x": 1, "n": 1}, Sense.GE, -3.5)
    lp.add_constraint("n_floor", "f", {"n": 1}, Sense.GE, -10)
    lp.add_objective({"x": 1, "n": 2})
    result = backend.solve(lp, mip_gap=0.0)
    assert result.termination is Termination.OPTIMAL
    assert result.objective == pytest.approx(6.5 + 2 * -10)


# --- names ---------------------------------------------------------------------------

AWKWARD = (
    "capacity[lose=eu-west, llama-3.3-70b, us-east, decode]",
    "replicas[llama 3.1 8B, H100 SXM, fp8, tp=2, pp=1, us-east-1]",
    "a-b",
    "a_b",
    "a b",
    "a.b",
    "x0",
    "c0",
    "_dummy",
    "__dummy",
    "ünïcode[µs]",
    "",
)


def test_awkward_names_round_trip(backend):
    """Names PuLP would mangle into collisions ("a-b", "a_b", "a b") and names that
    look like the backends' own ("x0", "c0", "__dummy") all come back as given."""
    lp = LinearProgram("names")
    for k, name in enumerate(AWKWARD):
        lp.add_variable(name, upper=10, integer=k % 2 == 0)
        lp.add_constraint(f"floor[{name}]", "floor", {name: 1}, Sense.GE, k % 4)
        lp.add_objective({name: 1 + k})
    result = backend.solve(lp, want_duals=True)
    assert result.termination is Termination.OPTIMAL
    assert result.values == {name: float(k % 4) for k, name in enumerate(AWKWARD)}
    check_solution(lp, result)

    continuous = LinearProgram("names-lp")
    for k, name in enumerate(AWKWARD):
        continuous.add_variable(name)
        continuous.add_constraint(name or "[]", "floor", {name: 1}, Sense.GE, k + 1)
        continuous.add_objective({name: 1 + k})
    result = backend.solve(continuous, want_duals=True)
    assert result.values == pytest.approx({name: k + 1 for k, name in enumerate(AWKWARD)})
    if backend.capabilities.duals:
        assert result.duals == pytest.approx(
            {name or "[]": 1 + k for k, name in enumerate(AWKWARD)}
        )


# --- time limit ----------------------------------------------------------------------


def market_split(seed: int, rows: int, columns: int, slack: bool) -> LinearProgram:
    """Cornuéjols-Dawande market split: sum_j a_ij x_j == floor(sum_j a_ij / 2), x binary.

    With `slack`, each row may miss by over/under at unit cost (a trivial incumbent,
    a root bound of 0 that branch and bound closes only by enumeration); without it,
    finding any point is itself the hard part.
    """
    rng = random.Random(seed)
    lp = LinearProgram(f"market-split-{seed}")
    for j in range(columns):
        lp.add_variable(f"x[{j}]", upper=1, integer=True)
    for i in range(rows):
        weights = [rng.randint(0, 99) for _ in range(columns)]
        coefficients = {f"x[{j}]": weights[j] for j in range(columns)}
        if slack:
            over, under = lp.add_variable(f"over[{i}]"), lp.add_variable(f"under[{i}]")
            coefficients |= {over: -1, under: 1}
            lp.add_objective({over: 1, under: 1})
        lp.add_constraint(f"split[{i}]", "split", coefficients, Sense.EQ, sum(weights) // 2)
    return lp


LIMIT_S = 0.5


def test_time_limit_with_incumbent(backend):
    lp = market_split(seed=3, rows=6, columns=50, slack=True)
    result = backend.solve(lp, time_limit_s=LIMIT_S, mip_gap=0.0)
    assert result.termination in (Termination.FEASIBLE, Termination.TIME_LIMIT)
    if result.termination is Termination.FEASIBLE:
        assert result.mip_gap is not None and result.mip_gap > 0
        check_solution(lp, result)


def test_time_limit_without_incumbent(backend):
    lp = market_split(seed=3, rows=6, columns=50, slack=False)
    result = backend.solve(lp, time_limit_s=LIMIT_S)
    # Finding a point would prove it optimal (the objective is 0): either is honest.
    assert result.termination in (Termination.TIME_LIMIT, Termination.OPTIMAL)
    if result.termination is Termination.TIME_LIMIT:
        assert result.values == {} and result.objective is None and result.mip_gap is None


# --- agreement on a random family ---------------------------------------------------


def fleet_program(seed: int) -> LinearProgram:
    """A small fleet program: integer replicas per (GPU, region), continuous routed
    demand between regions (routing off-region costs 1.5 per req/s), GPU supply."""
    rng = random.Random(seed)
    regions = [f"r{k}" for k in range(3 + seed % 3)]
    configs = [(f"g{c}", rng.choice((1, 2, 4, 8)), rng.uniform(1.5, 12.0)) for c in range(3)]
    lp = LinearProgram(f"fleet-{seed}")
    for gpu, gpus, _ in configs:
        for region in regions:
            name = lp.add_variable(f"replicas[{gpu}, {region}]", integer=True)
            lp.add_objective({name: round(rng.uniform(1.0, 4.0), 2) * gpus * 730})
    routes = [(a, b) for a in regions for b in regions if a == b or rng.random() < 0.4]
    for a, b in routes:
        lp.add_objective({lp.add_variable(f"served[{a} -> {b}]"): 0.0 if a == b else 1.5})
    for region in regions:
        demand = round(rng.uniform(5.0, 120.0), 2)
        served = {f"served[{region} -> {b}]": 1.0 for a, b in routes if a == region}
        lp.add_constraint(f"demand[{region}]", "demand", served, Sense.GE, demand)
        load = {f"served[{a} -> {region}]": 1.0 for a, b in routes if b == region}
        capacity = {f"replicas[{gpu}, {region}]": -cap for gpu, _, cap in configs}
        lp.add_constraint(f"capacity[{region}]", "capacity", load | capacity, Sense.LE, 0.0)
        supply = {f"replicas[{gpu}, {region}]": float(gpus) for gpu, gpus, _ in configs}
        lp.add_constraint(f"gpu_supply[{region}]", "supply", supply, Sense.LE, rng.randint(40, 200))
    return lp


@pytest.mark.parametrize("seed", range(6))
def test_backends_agree_on_random_mips(backend, seed):
    lp = fleet_program(seed)
    reference = get_backend(DEFAULT_BACKEND).solve(lp, mip_gap=0.0)
    assert reference.termination is Termination.OPTIMAL
    result = backend.solve(lp, mip_gap=1e-5, time_limit_s=20)
    assert result.termination is Termination.OPTIMAL, result.message
    assert result.objective == pytest.approx(reference.objective, rel=1e-5)
    # CBC prints no final bound when it finishes within a non-zero gap: None then.
    assert result.mip_gap is None or result.mip_gap <= 1e-5
    check_solution(lp, result)


# --- registry ------------------------------------------------------------------------


def test_unknown_backend_lists_the_choices():
    with pytest.raises(UnknownBackendError) as caught:
        get_backend("gurobi")
    assert isinstance(caught.value, ValueError)
    for name in ("highs", "cbc", "scip", "cpsat"):
        assert name in str(caught.value)


def test_registry():
    assert backend_names()[0] == DEFAULT_BACKEND == "highs"
    assert set(backend_names()) == {"highs", "cbc", "scip", "cpsat"}
    assert set(available_backends()) <= set(backend_names())
    assert "highs" in available_backends()
    assert get_backend(" HiGHS ").name == "highs"
    assert get_backend("cpsat").capabilities.duals is False
    assert get_backend("cpsat").capabilities.exact_continuous is False


@pytest.mark.parametrize(
    "arguments",
    [{"time_limit_s": 0}, {"time_limit_s": -1}, {"mip_gap": -0.1}, {"threads": 0}],
)
def test_invalid_arguments_raise(arguments):
    with pytest.raises(ValueError):
        get_backend("highs").solve(gpu_mix(), **arguments)


def test_cbc_without_a_binary_says_how_to_get_it(monkeypatch):
    """PuLP 4 ships no CBC; with none on PATH the backend is unavailable and says why."""
    import pulp

    monkeypatch.delattr(pulp, "PULP_CBC_CMD")
    monkeypatch.setattr(cbc_module.shutil, "which", lambda _: None)
    cbc_module._locate.cache_clear()
    try:
        cbc = get_backend("cbc")
        assert not cbc.is_available()
        assert "pip install 'pulp" in cbc.unavailable_reason()
        assert "coinor-cbc" in cbc.unavailable_reason()
        result = cbc.solve(gpu_mix())
        assert result.termination is Termination.ERROR
        assert result.message == cbc.unavailable_reason()
    finally:
        cbc_module._locate.cache_clear()


def test_library_failure_is_an_error_result(backend, monkeypatch):
    """A library exception never escapes `solve`: it becomes ERROR with its message."""

    def explode(*_args, **_kwargs):
        raise RuntimeError("solver library fell over")

    monkeypatch.setattr(type(backend), "_solve", explode)
    result = backend.solve(gpu_mix())
    assert result.termination is Termination.ERROR
    assert "solver library fell over" in result.message
    assert result.values == {} and result.objective is None


def test_highs_thread_count_can_change_between_solves():
    """HiGHS sizes a per-thread scheduler on first use; a later solve with another
    thread count must reset it rather than fail."""
    highs = get_backend("highs")
    for threads in (2, 1, 3, 1):
        assert highs.solve(gpu_mix(), threads=threads).termination is Termination.OPTIMAL


def test_relative_gap():
    assert relative_gap(100.0, 99.0) == pytest.approx(0.01)
    assert relative_gap(0.0, 0.0) == 0.0
    assert relative_gap(10.0, None) is None
    assert relative_gap(10.0, -math.inf) is None


# --- CP-SAT's grid -------------------------------------------------------------------


def test_bound_propagation():
    """x + y <= 10 caps both at 10; 2n >= 7 with n integer lifts n to ceil(3.5) = 4;
    s <= 3m with m <= 5 (from m <= 5.5, integer) caps s at 15."""
    from solver.backends.base import compile_program

    lp = LinearProgram("propagate")
    for name in ("x", "y", "s"):
        lp.add_variable(name)
    lp.add_variable("n", integer=True)
    lp.add_variable("m", upper=5.5, integer=True)
    lp.add_constraint("pair", "f", {"x": 1, "y": 1}, Sense.LE, 10)
    lp.add_constraint("half", "f", {"n": 2}, Sense.GE, 7)
    lp.add_constraint("cap", "f", {"s": 1, "m": -3}, Sense.LE, 0)
    lower, upper = propagate_bounds(compile_program(lp).numpy())
    assert upper[:3] == pytest.approx([10, 10, 15], rel=1e-6)
    assert lower[3] == 4 and upper[4] == 5


def test_grid_relaxation_bound_is_below_the_optimum():
    """CP-SAT's lower bound (grid relaxation minus the rounding allowance) never
    exceeds HiGHS's optimum, on every random program."""
    from solver.backends.base import compile_program

    for seed in range(6):
        lp = fleet_program(seed)
        grid = make_grid(compile_program(lp).numpy())
        assert grid.objective_slack >= 0 and (grid.row_slack >= 0).all()
        if not get_backend("cpsat").is_available():
            continue
        result = get_backend("cpsat").solve(lp, mip_gap=1e-5)
        optimum = get_backend("highs").solve(lp, mip_gap=0.0).objective
        lower_bound = result.objective * (1 - result.mip_gap)
        assert lower_bound <= optimum * (1 + 1e-9)


def test_cpsat_falls_back_to_the_grid_restriction(monkeypatch):
    """When both grids' integers fail the polish, the restriction (exact rows, inward
    domains) still yields a true solution: here the optimum, x = 1, y = 3.5 -> 10."""
    cpsat = get_backend("cpsat")
    if not cpsat.is_available():
        pytest.skip(cpsat.unavailable_reason())
    polish = cpsat_search.polish
    calls = []

    def squeezed(program, point, deadline):
        calls.append(point)
        return None if len(calls) <= 2 else polish(program, point, deadline)

    monkeypatch.setattr(cpsat_search, "polish", squeezed)
    lp = LinearProgram("mixed")
    lp.add_variable("x", integer=True)
    lp.add_variable("y")
    lp.add_constraint("demand", "demand", {"x": 1, "y": 1}, Sense.GE, 4.5)
    lp.add_constraint("floor", "floor", {"x": 1}, Sense.GE, 1)
    lp.add_objective({"x": 3, "y": 2})
    result = cpsat.solve(lp, mip_gap=1e-4)
    assert len(calls) == 3
    assert result.termination is Termination.OPTIMAL
    assert result.values == pytest.approx({"x": 1, "y": 3.5})
    assert result.message.count("the relaxation's integers are infeasible") == 2


# --- process hygiene -----------------------------------------------------------------


def test_ortools_after_highspy_in_one_process_and_nothing_on_stdout():
    """highspy first, then SCIP, CP-SAT, GLOP and CBC in the same interpreter: no crash
    (OR-Tools' own HiGHS is never loaded) and not a byte on stdout (no HiGHS banner)."""
    script = textwrap.dedent(
        """
        import highspy  # noqa: F401  (first, as in the CLI)
        from solver.backends import available_backends, get_backend
        from solver.program.lp import LinearProgram, Sense
        lp = LinearProgram("p")
        lp.add_variable("x", integer=True)
        lp.add_variable("y")
        lp.add_constraint("d", "d", {"x": 1, "y": 1}, Sense.GE, 4.5)
        lp.add_objective({"x": 3, "y": 2})
        for name in ("highs", *available_backends(), "highs"):
            for program in (lp, lp.with_integers_fixed({"x": 1})):
                result = get_backend(name).solve(program, want_duals=True)
                assert result.termination.value == "optimal", (name, result)
        import sys
        sys.stderr.write("done")
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stderr.endswith("done"), run.stderr[-2000:]
    assert run.stdout == ""


# --- CP-SAT on fleet-shaped programs: integers plus continuous routing ---------------


def failover_program(seed: int, regions: int = 4) -> LinearProgram:
    """A fleet program in miniature, over three scenarios (none, lose r0, lose r1).

    Per (GPU type, region): integer replicas (a 1e-4 tie-break cost per GPU) and a
    pool that earns 10% more per replica once it holds at least 4 (pool_at_least
    binary, pooled continuous). Per region: GPUs purchased (continuous, priced).
    Per scenario: continuous served[origin -> destination] meeting each origin's
    demand exactly (a lost origin's demand is rerouted), within each live region's
    capacity. CP-SAT's old grid (every continuous variable at 1e-6 of its size) found
    no plan for seed 1 within 20 s and took 11 s on seed 5.
    """
    rng = random.Random(seed)
    names = [f"r{k}" for k in range(regions)]
    gpus = [(f"g{c}", rng.choice((1, 2, 4)), round(rng.uniform(0.5, 8.0), 4)) for c in range(3)]
    lp = LinearProgram(f"failover-{seed}")
    pools = {}
    for gpu, per, per_replica in gpus:
        for region in names:
            n = lp.add_variable(f"replicas[{gpu}, {region}]", upper=64, integer=True)
            lp.add_objective({n: 1e-4 * per})
            at_least = lp.add_variable(f"pool_at_least[{gpu}, {region}]", upper=1, integer=True)
            pooled = lp.add_variable(f"pooled[{gpu}, {region}]", upper=64)
            index = f"{gpu}, {region}"
            lp.add_constraint(f"pool_size[{index}]", "pool", {n: 1, at_least: -4}, Sense.GE, 0)
            lp.add_constraint(f"pooled_within[{index}]", "pool", {pooled: 1, n: -1}, Sense.LE, 0)
            lp.add_constraint(
                f"pooled_open[{index}]", "pool", {pooled: 1, at_least: -64}, Sense.LE, 0
            )
            pools[gpu, region] = (pooled, 0.1 * per_replica)
    for region in names:
        bought = lp.add_variable(f"purchased[{region}]", upper=512)
        lp.add_objective({bought: round(rng.uniform(1500.0, 2500.0), 1)})
        uses = {f"replicas[{gpu}, {region}]": -float(per) for gpu, per, _ in gpus}
        lp.add_constraint(f"purchase[{region}]", "purchase", uses | {bought: 1.0}, Sense.GE, 0)
    demand = {region: rng.uniform(5.0, 60.0) * 100 / 108 for region in names}
    for lost in (None, names[0], names[1]):
        tag = "none" if lost is None else f"lose={lost}"
        alive = [region for region in names if region != lost]
        load: dict[str, dict[str, float]] = {d: {} for d in alive}
        for origin in names:
            served = {}
            for d in alive:
                if d == origin or lost == origin or rng.random() < 0.5:
                    name = lp.add_variable(f"served[{tag}, {origin} -> {d}]")
                    served[name] = 1.0
                    load[d][name] = -1.0
            lp.add_constraint(
                f"demand[{tag}, {origin}]", "demand", served, Sense.EQ, demand[origin]
            )
        for d in alive:
            capacity = {f"replicas[{gpu}, {d}]": q for gpu, _, q in gpus}
            capacity |= {pools[gpu, d][0]: pools[gpu, d][1] for gpu, _, _ in gpus}
            lp.add_constraint(
                f"capacity[{tag}, {d}]", "capacity", load[d] | capacity, Sense.GE, 0.0
            )
    return lp


def cpsat_or_skip():
    cpsat = get_backend("cpsat")
    if not cpsat.is_available():
        pytest.skip(cpsat.unavailable_reason())
    return cpsat


CPSAT_BUDGET_S = 5.0
"""What CP-SAT may take on a failover program (it needs well under a second)."""


@pytest.mark.parametrize("seed", [1, 3, 5, 7])
def test_cpsat_matches_highs_on_failover_programs(seed):
    cpsat = cpsat_or_skip()
    lp = failover_program(seed)
    reference = get_backend("highs").solve(lp, mip_gap=0.0)
    assert reference.termination is Termination.OPTIMAL
    result = cpsat.solve(lp, mip_gap=1e-5, time_limit_s=CPSAT_BUDGET_S)
    assert result.termination is Termination.OPTIMAL, result.message
    assert result.objective == pytest.approx(reference.objective, rel=1e-5)
    assert result.mip_gap is not None and result.mip_gap <= 1e-5
    # The bound behind the gap is a true lower bound.
    assert result.objective * (1 - result.mip_gap) <= reference.objective * (1 + 1e-9)
    check_solution(lp, result)


def test_implied_integers():
    """purchased >= 2n with a cost rounds down; pooled <= n and then pooled2 <= pooled
    (no cost) round up, the second once the first is known integral; w >= 2n written
    as 2w - 4n >= 0 too. Not: s >= n + 0.5 (fractional bound), t + u >= 3 (two
    continuous variables heading for one bound), 2v >= 3n (3/2 not integral)."""
    from solver.backends.base import compile_program

    lp = LinearProgram("implied")
    lp.add_variable("n", upper=10, integer=True)
    for name in ("purchased", "pooled", "pooled2", "w", "s", "t", "u", "v"):
        lp.add_variable(name, upper=100)
    lp.add_constraint("purchase", "f", {"purchased": 1, "n": -2}, Sense.GE, 0)
    lp.add_constraint("within", "f", {"pooled": 1, "n": -1}, Sense.LE, 0)
    lp.add_constraint("within2", "f", {"pooled2": 1, "pooled": -1}, Sense.LE, 0)
    lp.add_constraint("capacity", "f", {"pooled": 0.3, "pooled2": 0.7, "t": -1}, Sense.GE, 0)
    lp.add_constraint("double", "f", {"w": 2, "n": -4}, Sense.GE, 0)
    lp.add_constraint("half", "f", {"s": 1, "n": -1}, Sense.GE, 0.5)
    lp.add_constraint("pair", "f", {"t": 1, "u": 1}, Sense.GE, 3)
    lp.add_constraint("odd", "f", {"v": 2, "n": -3}, Sense.GE, 0)
    lp.add_objective({"purchased": 3, "w": 1, "s": 1, "t": 1, "u": 1, "v": 1, "n": 1})
    program = compile_program(lp).numpy()
    implied = dict(zip(program.variable_names, implied_integers(program).tolist(), strict=True))
    assert implied == {
        "n": False,
        "purchased": True,
        "pooled": True,
        "pooled2": True,
        "w": True,
        "s": False,
        "t": False,
        "u": False,
        "v": False,
    }


@pytest.mark.parametrize("seed", range(4))
def test_implied_integers_keep_the_optimum(seed):
    """Declaring the implied integers integer leaves HiGHS's optimum where it was."""
    from dataclasses import replace

    from solver.backends.base import compile_program

    lp = failover_program(seed)
    mask = implied_integers(compile_program(lp).numpy())
    names = [name for name, flag in zip(lp.variables, mask.tolist(), strict=True) if flag]
    assert {name.split("[")[0] for name in names} == {"purchased", "pooled"}
    declared = LinearProgram(lp.name, objective=dict(lp.objective), constraints=lp.constraints)
    for var in lp.variables.values():
        declared.variables[var.name] = replace(var, integer=var.integer or var.name in names)
    highs = get_backend("highs")
    assert highs.solve(declared, mip_gap=0.0).objective == pytest.approx(
        highs.solve(lp, mip_gap=0.0).objective, rel=1e-9
    )


@pytest.mark.parametrize("seed", range(4))
def test_cuts_hold_at_the_optimum(seed):
    """Any row multipliers give valid cuts (they hold at HiGHS's optimum); the elastic
    LP's cuts at an empty fleet also cut that fleet off."""
    import numpy as np

    from solver.backends.base import Deadline, compile_program
    from solver.backends.cpsat.cuts import feasibility_cuts, lagrangian_cuts

    cpsat_or_skip()
    lp = failover_program(seed)
    program = compile_program(lp).numpy()
    grid = make_grid(program)
    optimum = get_backend("highs").solve(lp, mip_gap=0.0).values
    best_point = np.array([optimum[name] for name in program.variable_names])
    rng = random.Random(seed)
    multipliers = [
        [rng.gauss(0.0, 1.0) for _ in range(program.num_rows)],
        [abs(rng.gauss(0.0, 1.0)) for _ in range(program.num_rows)],
    ]
    cuts = [
        cut
        for pi in multipliers
        for cut in lagrangian_cuts(program, grid.integral, np.array(pi), grid.valid_box())
    ]
    empty = np.zeros(program.num_variables)
    deadline = Deadline(time.perf_counter(), 10.0)
    repairs = feasibility_cuts(program, grid.integral, empty, grid.valid_box(), deadline)
    assert cuts and repairs
    for cut in cuts + repairs:
        activity = float(np.dot(cut.coef, best_point[cut.cols]))
        assert activity >= cut.rhs - 1e-7 * max(1.0, abs(cut.rhs)), cut
    for cut in repairs:
        assert float(np.dot(cut.coef, empty[cut.cols])) < cut.rhs


def test_cpsat_repairs_a_squeeze_with_feasibility_cuts(monkeypatch):
    """min n + m s.t. s >= 100.0002, s <= 9.5n + 10m, s <= 1000, n, m integer.

    m = 10 carries 100 req/s, 2e-4 short, so the optimum costs 11 (n + m = 11). s has
    no cost, so its grid step is 1 and, without the LP relaxation's cuts up front, the
    loosened rows let m = 10 through at cost 10; the exact LP finds it short and its
    cut, 9.5n + 10m >= 100.0002, closes the squeeze. (With 10n instead of 9.5n, s
    would be an implied integer: s <= 10n + 10m rounds up to an integer.)
    """
    cpsat = cpsat_or_skip()
    monkeypatch.setattr(cpsat_search, "SURROGATE_CUTS", False)
    lp = squeeze_program(n_capacity=9.5, m_cost=1)
    result = cpsat.solve(lp, mip_gap=0.0)
    assert result.termination is Termination.OPTIMAL
    assert result.objective == 11
    check_solution(lp, result)
    assert "grid 1e-06: the relaxation's integers are infeasible" in result.message
    assert "1 round of feasibility cuts from the exact LP, repaired" in result.message


def test_cpsat_out_of_time_says_so_and_names_highs(monkeypatch):
    """A search stopped by the time limit before any point: TIME_LIMIT, no values, and
    a message that recommends highs."""
    from solver.backends import _mathopt

    cpsat = cpsat_or_skip()
    solve = _mathopt.solve

    def stopped(arrays, solver, **kwargs):
        if solver == "CP_SAT":
            return _mathopt.Outcome(
                Termination.TIME_LIMIT, None, None, None, "CP_SAT: no_solution_found"
            )
        return solve(arrays, solver, **kwargs)

    monkeypatch.setattr(_mathopt, "solve", stopped)
    result = cpsat.solve(failover_program(1), time_limit_s=1.0)
    assert result.termination is Termination.TIME_LIMIT
    assert result.values == {} and result.objective is None
    assert "highs backend" in result.message


def test_backend_names_come_from_one_list():
    from typing import get_args

    from models.schema.backend_names import BACKEND_NAMES
    from models.schema.policy import SolverSettings

    schema_names = get_args(SolverSettings.model_fields["backend"].annotation)
    assert backend_names() == BACKEND_NAMES == schema_names


# --- what CP-SAT refuses rather than guesses ------------------------------------------


def test_cpsat_refuses_a_grid_beyond_its_integers():
    """n integer in [0, 1e17] at step 1 spans 1e17 integers; CP-SAT's mip_max_bound
    (twice the widest domain, 2e17) stops at 1e17: refused before any search, by name."""
    cpsat = cpsat_or_skip()
    lp = LinearProgram("wide")
    lp.add_variable("n", upper=1e17, integer=True)
    lp.add_constraint("floor", "f", {"n": 1}, Sense.GE, 5)
    lp.add_objective({"n": 1})
    result = cpsat.solve(lp, time_limit_s=10)
    assert result.termination is Termination.ERROR
    assert "variable n spans [" in result.message and "highs backend" in result.message


def test_cpsat_refuses_infeasible_only_within_its_box():
    """999999n - 1000000m = 1 with n, m >= 0 integer and no upper bounds: 999999 = -1
    (mod 1e6), so n = 999999, m = 999998 solves it (999999^2 - 1e6 x 999998 = 1), far
    beyond the box CP-SAT puts around n (1000 x the largest number / 999999). No point
    in the box is not a proof: ERROR, never INFEASIBLE."""
    cpsat = cpsat_or_skip()
    lp = LinearProgram("far")
    lp.add_variable("n", integer=True)
    lp.add_variable("m", integer=True)
    row = lp.add_constraint("far", "f", {"n": 999999, "m": -1000000}, Sense.EQ, 1)
    lp.add_objective({"n": 1})
    assert 999999 * 999999 - 1000000 * 999998 == 1
    assert row.slack({"n": 999999, "m": 999998}) == 0
    result = cpsat.solve(lp, time_limit_s=10)
    assert result.termination is Termination.ERROR
    assert "finite bound" in result.message and "it found no point" in result.message


def test_cpsat_refuses_an_optimum_on_the_edge_of_its_box():
    """min -x0 s.t. x_k <= 3 x_(k+1) (k = 0..19), x20 <= 1, x0 integer: x0 = 3^20 =
    3486784401. Ten rounds of propagation bound x10..x20 only (x10 <= 3^10), so x0 gets
    an artificial box of 1000 x 3^10 = 59049000, whose edge CP-SAT's best point sits on
    while the LP relaxation is bounded: ERROR rather than a wrong "optimal"."""
    cpsat = cpsat_or_skip()
    lp = LinearProgram("chain")
    lp.add_variable("x0", integer=True)
    for k in range(1, 21):
        lp.add_variable(f"x{k}")
    for k in range(20):
        lp.add_constraint(f"link[{k}]", "f", {f"x{k}": 1, f"x{k + 1}": -3}, Sense.LE, 0)
    lp.add_constraint("top", "f", {"x20": 1}, Sense.LE, 1)
    lp.add_objective({"x0": -1})
    assert get_backend("highs").solve(lp).objective == pytest.approx(-(3**20))
    result = cpsat.solve(lp, time_limit_s=10)
    assert result.termination is Termination.ERROR
    assert "lies on the edge" in result.message and "highs backend" in result.message


def test_a_start_kept_beside_the_optimums_objective_is_solved_again_without_it():
    """A backend that hands back a MIP start's values with the optimum's objective (HiGHS
    does when its presolve solves a started MIP outright) is asked again without the
    start: gpu-mix's optimum is (1, 2) at 13; the start (3, 0) costs 15."""
    from solver.backends.highs import HighsBackend

    calls = []

    class KeepsTheStart(HighsBackend):
        def _solve(self, program, options, deadline):
            answer = super()._solve(program, options, deadline)
            calls.append(program.start is not None)
            if program.start is not None:  # the start's values, the optimum's objective
                return dataclasses.replace(answer, values=list(program.start))
            return answer

    backend = KeepsTheStart()
    if not backend.is_available():
        pytest.skip(backend.unavailable_reason())
    lp = gpu_mix()
    start = {"replicas[A, us-east]": 3.0, "replicas[B, us-east]": 0.0}
    result = backend.solve(lp, start=start)
    assert calls == [True, False]  # asked again, without the start
    assert result.objective == pytest.approx(13.0)
    assert lp.objective_value(result.values) == pytest.approx(13.0)
