"""Each region's proven cost as a row (solver.decompose.region_bounds): which columns and
rows a region's own program holds, its bound on a hand-sized program, and that the rows
never move the optimum."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import solver.decompose.region_bounds as region_bounds
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.program.build import build_program, with_bounds
from solver.program.lp import LinearProgram, Sense
from solver.settings import SolveSettings
from tests.synthetic import instance, workload

EAST, WEST = "purchased[east,h100-sxm]", "purchased[west,h100-sxm]"


def hand_program() -> LinearProgram:
    """GPUs at $20 in east and $10 in west; east's own users need 2.5 GPUs there, and
    both regions together 10 (a row of both, in neither region's program)."""
    lp = LinearProgram("hand")
    lp.add_variable(EAST, upper=64, integer=True)
    lp.add_variable(WEST, upper=64, integer=True)
    lp.add_constraint("own[east]", "test", {EAST: 1.0}, Sense.GE, 2.5)
    lp.add_constraint("both[east,west]", "test", {EAST: 1.0, WEST: 1.0}, Sense.GE, 10.0)
    lp.add_objective({EAST: 20.0, WEST: 10.0})
    return lp


def test_a_column_belongs_to_the_region_its_index_names():
    assert region_bounds.region_of(EAST) == "east"
    # served[f,w,o,d]: the serving region d, not the users' origin o
    assert region_bounds.region_of("served[lose=west,chat,west,east]") == "east"
    assert region_bounds.region_of("replicas[chat,h100-sxm.fp8.tp2pp1.unified,west]") == "west"
    assert region_bounds.region_of("no_such_family[east]") is None


def test_a_region_program_holds_the_rows_of_its_columns_alone():
    programs = region_bounds.region_programs(hand_program())
    assert set(programs) == {"east", "west"}
    assert set(programs["east"].constraints) == {"own[east]"}
    assert programs["east"].objective == {EAST: 20.0}
    assert programs["west"].constraints == {}


def test_the_row_lifts_the_relaxation_to_whole_gpus(monkeypatch):
    monkeypatch.setattr(region_bounds, "MIN_INTEGERS", 0)
    backend, lp = get_backend("highs"), hand_program()
    plain = SolveSettings(mip_gap=0.0)
    # east alone: 20 x ceil(2.5) = $60
    east = region_bounds.region_programs(lp)["east"]
    assert region_bounds.proven_bound(backend, east, plain) == pytest.approx(60.0)
    rows = region_bounds.with_region_rows(lp, backend, plain)
    assert rows.constraints["region_cost[east]"].rhs == pytest.approx(60.0)
    assert "region_cost[west]" not in rows.constraints  # west proves nothing (no rows)
    # LP without the row: 2.5 x 20 + 7.5 x 10 = 125; with it: 3 x 20 + 7 x 10 = 130,
    # the integer optimum of both
    relaxed = backend.run(with_bounds(lp, {}, relax=True), plain)
    tightened = backend.run(with_bounds(rows, {}, relax=True), plain)
    assert relaxed.objective == pytest.approx(125.0)
    assert tightened.objective == pytest.approx(130.0)
    assert backend.run(rows, plain).objective == pytest.approx(backend.run(lp, plain).objective)


def test_a_small_program_is_left_as_it_is():
    lp = hand_program()  # 2 integers, below MIN_INTEGERS
    assert region_bounds.with_region_rows(lp, get_backend("highs"), SolveSettings()) is lp


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    east=st.floats(2.0, 14.0),
    west=st.floats(1.0, 8.0),
    west_price=st.floats(1.8, 2.8),
)
def test_the_rows_never_move_the_optimum(east, west, west_price):
    """Whole servers, one configuration per pool, region loss: the optimum with the rows
    is the optimum without them (both proved to a zero gap)."""
    inst = instance(
        {"east": {"h100-sxm": (64, 2.0)}, "west": {"h100-sxm": (64, round(west_price, 2))}},
        [workload("chat", {"east": east, "west": west}, max_failover_rtt_ms=80)],
        links=[("east", "west", 40)],
        survive="region",
        tensor_parallel=[1, 2, 4],
        pipeline_parallel=[1, 2],
        policy={"buy_unit": "node", "max_configs_per_pool": 1},
    )
    lp = build_program(inst, build_candidates(inst)).lp
    backend, exact = get_backend("highs"), SolveSettings(mip_gap=0.0)
    saved = region_bounds.MIN_INTEGERS
    region_bounds.MIN_INTEGERS = 0
    try:
        rows = region_bounds.with_region_rows(lp, backend, exact)
    finally:
        region_bounds.MIN_INTEGERS = saved
    assert "region_cost[east]" in rows.constraints
    without, with_rows = backend.run(lp, exact), backend.run(rows, exact)
    assert with_rows.objective == pytest.approx(without.objective, rel=1e-6)


class NoRuns:
    """A backend that must not be asked: the rows are known already."""

    def is_available(self) -> bool:
        return True

    def run(self, *args, **kwargs):
        raise AssertionError("the region programs were solved again")


def test_known_rows_serve_a_narrower_program_and_no_looser_one(monkeypatch):
    monkeypatch.setattr(region_bounds, "MIN_INTEGERS", 0)
    base, plain, known = hand_program(), SolveSettings(mip_gap=0.0), {}
    region_bounds.with_region_rows(base, get_backend("highs"), plain, base, known)
    assert known["rows"]["east"][1] == pytest.approx(60.0)
    narrower = with_bounds(base, {WEST: (0.0, 0.0)})  # a pool fixed at 0, as explain does
    looser = with_bounds(base, {EAST: (0.0, None)})  # east's bound of 64 lifted
    assert region_bounds.narrower(narrower, base) and not region_bounds.narrower(looser, base)
    again = region_bounds.with_region_rows(narrower, NoRuns(), plain, base, known)
    assert again.constraints["region_cost[east]"].rhs == pytest.approx(60.0)
    assert region_bounds.with_region_rows(looser, NoRuns(), plain, base, known) is looser


def test_a_bound_cut_short_by_the_clock_gives_no_row():
    """A region program stopped by its time limit proves a valid bound too, but one that
    moves with the machine's load, and the program (and the optimum among ties) with it:
    only a bound proved within the gap makes a row."""
    from types import SimpleNamespace

    from solver.decompose.region_bounds import proven_bound
    from solver.program.lp import LinearProgram, SolveResult, Termination

    def answering(termination: Termination):
        result = SolveResult(
            termination=termination,
            solver="fake",
            solver_version="0",
            runtime_s=1.0,
            objective=100.0,
            values={},
            mip_gap=0.02,
        )
        return SimpleNamespace(run=lambda program, settings, start=None: result)

    program, plain = LinearProgram("region"), SolveSettings()
    assert proven_bound(answering(Termination.OPTIMAL), program, plain) == 98.0  # 100 - 2%
    assert proven_bound(answering(Termination.TIME_LIMIT), program, plain) is None
    assert proven_bound(answering(Termination.FEASIBLE), program, plain) is None


def test_a_region_program_starts_from_the_settings_start_on_its_own_columns():
    """A lever's base plan (SolveSettings.start) starts each region's program, restricted
    to the region's columns; the bound is the one proved all the same."""
    from dataclasses import replace as with_fields

    from solver.decompose.region_bounds import proven_bound

    program = region_bounds.region_programs(hand_program())["east"]
    highs = get_backend("highs")
    plain = SolveSettings(mip_gap=0.0)
    alone = proven_bound(highs, program, plain)
    seen = {}

    class Recording:
        capabilities = highs.capabilities

        def run(self, lp, settings, start=None):
            seen["start"] = start
            return highs.run(lp, settings, start=start)

    started = with_fields(plain, start={EAST: 2.0, "not_a_column": 7.0})
    assert proven_bound(Recording(), program, started) == pytest.approx(alone)
    assert seen["start"] == {EAST: 2.0}


def two_region_program() -> LinearProgram:
    """`hand_program` with west's own users too: 1.5 GPUs in west."""
    lp = hand_program()
    lp.add_constraint("own[west]", "test", {WEST: 1.0}, Sense.GE, 1.5)
    return lp


def test_region_programs_side_by_side_prove_what_they_prove_one_by_one(monkeypatch):
    monkeypatch.setattr(region_bounds, "MIN_INTEGERS", 0)
    backend, lp, plain = get_backend("highs"), two_region_program(), SolveSettings(mip_gap=0.0)
    one_by_one = region_bounds.region_rows(lp, backend, plain, threads=1)
    side_by_side = region_bounds.region_rows(lp, backend, plain, threads=2)
    # east: 20 x ceil(2.5) = $60; west: 10 x ceil(1.5) = $20
    assert {r: bound for r, (_, bound) in one_by_one.items()} == pytest.approx(
        {"east": 60.0, "west": 20.0}
    )
    assert side_by_side == one_by_one


def test_rows_started_beside_the_warm_start_are_kept_for_the_solve(monkeypatch):
    monkeypatch.setattr(region_bounds, "MIN_INTEGERS", 0)
    base, plain, known = two_region_program(), SolveSettings(mip_gap=0.0), {}
    region_bounds.start_region_rows(base, get_backend("highs"), plain, known)()
    assert known["lp"] is base
    rows = region_bounds.with_region_rows(base, NoRuns(), plain, base, known)
    assert rows.constraints["region_cost[west]"].rhs == pytest.approx(20.0)
    # known already: nothing is started again
    region_bounds.start_region_rows(base, NoRuns(), plain, known)()


def test_a_failure_beside_the_warm_start_reaches_the_caller(monkeypatch):
    monkeypatch.setattr(region_bounds, "MIN_INTEGERS", 0)
    wait = region_bounds.start_region_rows(two_region_program(), NoRuns(), SolveSettings(), {})
    with pytest.raises(AssertionError, match="solved again"):
        wait()


def test_one_rule_for_a_proven_bound_where_the_backend_states_no_gap():
    """OPTIMAL means proved within the requested gap: a backend that states no gap gives
    an integer program's objective less that gap (100 x (1 - 0.05) = 95), an LP's
    objective itself; a solve the clock stopped gives none."""
    from solver.decompose.region_bounds import bound_of
    from solver.program.lp import SolveResult, Termination

    def result(termination, gap):
        return SolveResult(
            termination=termination, solver="fake", solver_version="0", runtime_s=1.0,
            objective=100.0, values={}, mip_gap=gap,
        )  # fmt: skip

    mip, lp = LinearProgram("mip"), LinearProgram("lp")
    mip.add_variable("servers", integer=True)
    lp.add_variable("gpus")
    asked = SolveSettings(mip_gap=0.05)
    assert bound_of(result(Termination.OPTIMAL, None), mip, asked) == pytest.approx(95.0)
    assert bound_of(result(Termination.OPTIMAL, None), lp, asked) == pytest.approx(100.0)
    assert bound_of(result(Termination.OPTIMAL, 0.02), mip, asked) == pytest.approx(98.0)
    assert bound_of(result(Termination.TIME_LIMIT, 0.02), mip, asked) is None


def test_region_programs_are_held_to_nodes_not_to_a_share_of_the_clock(monkeypatch):
    """Each region's program is given `REGION_NODES` branch-and-bound nodes (a work limit:
    the same rows on a busy machine as on an idle one) and at most `TIME_SHARE` of the
    time left over the rounds, as a guard: with 100 s left and two programs one at a time,
    each gets 0.5 x 100 / 2 = 25 s."""
    monkeypatch.setattr(region_bounds, "MIN_INTEGERS", 0)
    highs, seen = get_backend("highs"), []

    class Recording:
        capabilities = highs.capabilities

        def run(self, lp, settings, start=None):
            seen.append((settings.node_limit, settings.time_limit_s))
            return highs.run(lp, settings, start=start)

    timed = SolveSettings(mip_gap=0.0, time_limit_s=100.0)
    region_bounds.region_rows(two_region_program(), Recording(), timed, threads=1)
    assert [nodes for nodes, _ in seen] == [region_bounds.REGION_NODES] * 2
    assert all(s == pytest.approx(25.0, rel=0.01) for _, s in seen)


def test_a_search_from_a_start_works_out_region_rows_only_where_asked(monkeypatch):
    """A lever's re-solve from the base plan (SolveSettings.region_rows_with_start off)
    solves no region program and adds no rows; on, or with no start, it works them out;
    rows the program holds already (explain's re-solves) serve it either way. The
    optimum is the same every way: the rows remove no plan."""
    from dataclasses import replace as with_fields

    from solver.decompose import by_workload

    monkeypatch.setattr(region_bounds, "MIN_INTEGERS", 0)
    inst = instance(
        {"east": {"h100-sxm": (64, 2.0)}, "west": {"h100-sxm": (64, 2.3)}},
        [workload("chat", {"east": 6.0, "west": 3.0}, max_failover_rtt_ms=80)],
        links=[("east", "west", 40)],
        survive="region",
        tensor_parallel=[1, 2],
        policy={"buy_unit": "node", "max_configs_per_pool": 1},
    )
    worked_out, rowed = [], []
    real_rows, real_with = region_bounds.region_rows, by_workload.with_region_rows
    monkeypatch.setattr(
        region_bounds, "region_rows", lambda *a, **k: worked_out.append(1) or real_rows(*a, **k)
    )
    monkeypatch.setattr(
        by_workload, "with_region_rows", lambda *a, **k: rowed.append(1) or real_with(*a, **k)
    )
    backend, exact = get_backend("highs"), SolveSettings(mip_gap=0.0)

    def solved(settings, program=None):
        program = program or build_program(inst, build_candidates(inst))
        worked_out.clear(), rowed.clear()
        return program, by_workload.optimise(program, backend, settings).result

    base, first = solved(exact)  # no start: the rows, as every base solve
    assert (len(worked_out), len(rowed)) == (1, 1) and base.region_costs["rows"]
    start = with_fields(exact, start=dict(first.values))
    _, off = solved(with_fields(start, region_rows_with_start=False))
    assert (len(worked_out), len(rowed)) == (0, 0)
    _, on = solved(start)
    assert (len(worked_out), len(rowed)) == (1, 1)
    _, known = solved(with_fields(start, region_rows_with_start=False), base)
    assert (len(worked_out), len(rowed)) == (0, 1)  # the base's rows, not worked out again
    for result in (off, on, known):
        assert result.objective == pytest.approx(first.objective, rel=1e-9)


def test_rows_are_tried_where_the_program_is_large_and_names_two_regions(monkeypatch):
    one_region = LinearProgram("one")
    one_region.add_variable(EAST, upper=64, integer=True)
    assert not region_bounds.rows_tried(two_region_program())  # 2 integers < MIN_INTEGERS
    monkeypatch.setattr(region_bounds, "MIN_INTEGERS", 0)
    assert region_bounds.rows_tried(two_region_program())
    assert not region_bounds.rows_tried(one_region)


@pytest.mark.parametrize("beside", [False, True])
def test_a_solve_with_region_rows_looks_for_no_restricted_start(monkeypatch, beside):
    """Where the region programs run (a plain solve, no join, no start given), the
    restricted program's start (solver.decompose.warm_start) is not solved, and the region
    programs take every core; `START_BESIDE_REGION_ROWS` on, the bench's `before`: the
    start beside them, on the core they leave it. The optimum is the same either way."""
    from solver.decompose import by_workload

    monkeypatch.setattr(region_bounds, "MIN_INTEGERS", 0)
    monkeypatch.setattr(by_workload, "START_BESIDE_REGION_ROWS", beside)
    inst = instance(
        {"east": {"h100-sxm": (64, 2.0)}, "west": {"h100-sxm": (64, 2.3)}},
        [workload("chat", {"east": 6.0, "west": 3.0}, max_failover_rtt_ms=80)],
        links=[("east", "west", 40)],
        survive="region",
        tensor_parallel=[1, 2],
        policy={"buy_unit": "node", "max_configs_per_pool": 1},
    )
    started, threads = [], []
    real_start, real_rows = by_workload.warm_start, region_bounds.region_rows
    monkeypatch.setattr(
        by_workload, "warm_start", lambda *a, **k: started.append(1) or real_start(*a, **k)
    )
    monkeypatch.setattr(
        region_bounds,
        "region_rows",
        lambda lp, backend, settings, threads_=1: (
            threads.append(threads_) or real_rows(lp, backend, settings, threads_)
        ),
    )
    monkeypatch.setattr(region_bounds.os, "cpu_count", lambda: 4)
    program = build_program(inst, build_candidates(inst))
    result = by_workload.optimise(program, get_backend("highs"), SolveSettings(mip_gap=0.0))
    assert (len(started), threads) == ((1, [3]) if beside else (0, [4]))
    assert program.region_costs["rows"]
    cold = get_backend("highs").solve(program.lp, mip_gap=0.0)
    assert result.result.objective == pytest.approx(cold.objective, abs=1e-6)
