"""The join where the clock stopped parts (solver.decompose.join_values.cover_join): the
cover stands in for a part without a plan or with a dearer one, and the mix is a plan of
the whole; the parts' bound raised to the LP rounds' floors (`parts_bound`, `lp_floors`)."""

import pytest

from models.operations.scenarios import failure_scenarios
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose.cover import covering_plan
from solver.decompose.join_values import (
    cover_join,
    joined_values,
    lp_floors,
    parts_bound,
    per_workload,
)
from solver.decompose.scenario_cuts import _lp_rounds
from solver.decompose.workload_parts import workload_program
from solver.program.build import build_program
from solver.program.families.hall import TransportCredit
from solver.program.lp import SolveResult, Termination, plan_of
from solver.program.row_names import split_name
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings
from tests.synthetic import generated

EXACT = SolveSettings(time_limit_s=60.0, mip_gap=0.0)
PARTS = [("w00",), ("w01",)]


@pytest.fixture(scope="module")
def solved():
    """3 regions x 2 workloads x 2 GPU types, no failover, single GPUs (the generator's):
    the whole program, its cover, and each workload's own program solved to optimality."""
    inst = generated(3, 2, 2, survive="none")
    table = build_candidates(inst)
    program = build_program(inst, table, sets=ProgramSets(inst, table, failure_scenarios(inst)))
    backend = get_backend("highs")
    results = {part: backend.run(workload_program(program, part).lp, EXACT) for part in PARTS}
    return program, covering_plan(program.lp), results


def _own(program, values):
    return {n: v for n, v in values.items() if per_workload(n) and n in program.lp.variables}


def test_a_part_without_a_plan_keeps_the_covers_columns(solved):
    """w01 stopped before a plan: its columns are the cover's; w00's optimum is no dearer
    than the cover's w00 (the cover's w00 is a plan of w00's program), so where it is
    cheaper it is taken, and the mix is a plan of the whole no dearer than the cover."""
    program, cover, results = solved
    mixed = cover_join(program, {}, PARTS, {PARTS[0]: results[PARTS[0]]})
    assert mixed is not None and plan_of(program.lp, mixed.values)
    assert mixed.cost == pytest.approx(program.lp.objective_value(mixed.values))
    assert mixed.cost <= cover.cost + 1e-6
    w01 = _own(program, results[PARTS[1]].values)
    assert all(mixed.values.get(n, 0.0) == cover.values.get(n, 0.0) for n in w01)
    if mixed.covered == 1:  # w00 taken: its own columns are its plan's
        w00 = _own(program, results[PARTS[0]].values)
        assert all(mixed.values[n] == pytest.approx(v) for n, v in w00.items())
    assert mixed.bound == pytest.approx(cover.bound)


def test_parts_at_their_optima_make_the_parts_join(solved):
    """Both parts solved: each optimum is no dearer than the cover's columns of its
    workload, and without failover nothing but the supply links them (single GPUs:
    purchases are the sum of uses), so the mix costs what the parts' join costs, the
    sum of the parts' optima (solver.decompose.by_workload: LB = UB)."""
    program, cover, results = solved
    mixed = cover_join(program, {}, PARTS, results)
    join, _ = joined_values(program, PARTS, results)
    optima = sum(result.objective for result in results.values())
    assert mixed is not None and plan_of(program.lp, mixed.values)
    assert mixed.cost == pytest.approx(program.lp.objective_value(join), rel=1e-9)
    assert mixed.cost == pytest.approx(optima, rel=1e-6)
    assert mixed.cost <= cover.cost + 1e-6


def test_a_dearer_part_plan_is_not_taken(solved):
    """w00's plan with one replica more than the cover's (still a plan of w00's
    program: more capacity) costs more: the mix keeps the cover whole."""
    program, cover, results = solved
    dear = dict(cover.values)
    extra = next(n for n, v in dear.items() if split_name(n)[0] == "replicas" and v >= 1)
    dear[extra] += 1
    stopped = {PARTS[0]: _with_values(results[PARTS[0]], dear)}
    mixed = cover_join(program, {}, PARTS, stopped)
    assert mixed.covered == 2
    assert mixed.values == cover.values and mixed.cost == pytest.approx(cover.cost)


def test_a_cheaper_mix_that_breaks_a_row_falls_back_on_the_cover(solved):
    """w00's 'plan' with every replica at 0 is cheaper and carries nobody: the mix takes
    it, breaks w00's capacity rows, and the cover alone is the plan."""
    program, cover, results = solved
    empty = {n: 0.0 if split_name(n)[0] == "replicas" else v for n, v in cover.values.items()}
    assert program.lp.objective_value(empty) < cover.cost
    mixed = cover_join(program, {}, PARTS, {PARTS[0]: _with_values(results[PARTS[0]], empty)})
    assert mixed.covered == 2
    assert mixed.values == cover.values and plan_of(program.lp, mixed.values)


def _with_values(result, values):
    from dataclasses import replace

    return replace(result, values=values)


def test_a_parts_bound_is_at_least_its_workloads_lp_floors():
    """Part (a,): $100 at a 50% gap proves $50, its LP floor $70: $70. Part (b, c): $200
    proved (gap 0), floors $10 + $15: $200. The parts' bound: 70 + 200 = $270; without
    floors 50 + 200 = $250."""
    parts = [("a",), ("b", "c")]
    results = {
        ("a",): SolveResult(Termination.FEASIBLE, "highs", "", 0.0, objective=100.0, mip_gap=0.5),
        ("b", "c"): SolveResult(
            Termination.OPTIMAL, "highs", "", 0.0, objective=200.0, mip_gap=0.0
        ),
    }
    floors = {"a": 70.0, "b": 10.0, "c": 15.0}
    assert parts_bound(EXACT, parts, results, floors) == pytest.approx(270.0)
    assert parts_bound(EXACT, parts, results) == pytest.approx(250.0)


def test_the_lp_rounds_leave_each_workloads_floor_for_the_parts():
    """The LP rounds (scenario cut rows, 4 regions, one GPU type) keep each workload's LP
    relaxation as its floor on the program (`lp_floors`), their sum the rounds' bound,
    each no higher than its workload's own optimum (a relaxation of it)."""
    inst = generated(4, 2, 1, survive="region")
    table = build_candidates(inst)
    sets = ProgramSets(inst, table, failure_scenarios(inst), scenario_rows="cuts")
    program = build_program(inst, table, sets=sets)
    backend = get_backend("highs")
    *_, bound = _lp_rounds(program, backend, EXACT, TransportCredit(sets), {})
    floors = lp_floors(program)
    assert set(floors) == set(sets.workloads) and all(v > 0 for v in floors.values())
    assert sum(floors.values()) + program.lp.objective_constant == pytest.approx(bound)
    for w, floor in floors.items():
        optimum = backend.run(workload_program(program, w).lp, EXACT).objective
        assert floor <= optimum * (1 + 1e-9)


def test_a_spent_deadline_takes_the_cover_without_building_a_part(solved, monkeypatch):
    """The solve's deadline passed before the parts: each would be built only to stop at
    once without a plan, so none is built (building one fails the test) and the join is
    the cover's plan, a plan of the whole at the cover's cost."""
    import time

    from solver.decompose import join, join_run

    program, cover, _ = solved

    def no_build(*_args, **_kwargs):
        raise AssertionError("a part was built after the deadline")

    monkeypatch.setattr(join_run, "workload_program", no_build)
    spent = SolveSettings(time_limit_s=1.0).started(at=time.monotonic() - 2.0)
    assert spent.spent()
    found = join.solve_by_workload(program, get_backend("highs"), spent)
    assert found is not None
    values = found.result.values
    assert plan_of(program.lp, values)
    assert program.lp.objective_value(values) == pytest.approx(cover.cost)


def test_too_little_time_for_the_parts_takes_the_cover_without_building_a_part(solved, monkeypatch):
    """0.15 s left for 2 parts on one process: each would get 0.075 s, under
    `PART_MIN_S` (0.1 s: 2 rounds x 0.1 = 0.2 s > 0.15), so none is built and the join is
    the cover's plan, as where the deadline has passed; with `PART_MIN_S` at 0 the parts
    are built (the first build fails the test)."""
    import time

    from solver.decompose import join, join_run

    program, cover, _ = solved

    def no_build(*_args, **_kwargs):
        raise AssertionError("a part was built with too little time for it")

    monkeypatch.setattr(join_run, "workload_program", no_build)
    monkeypatch.setattr(join_run, "processes_for", lambda _programs: 1)
    monkeypatch.setattr(join_run, "PART_MIN_S", 0.1)
    near = SolveSettings(time_limit_s=10.0).started(at=time.monotonic() - 9.85)
    assert not near.spent()
    found = join.solve_by_workload(program, get_backend("highs"), near)
    assert found is not None
    values = found.result.values
    assert plan_of(program.lp, values)
    assert program.lp.objective_value(values) == pytest.approx(cover.cost)
    monkeypatch.setattr(join_run, "PART_MIN_S", 0.0)
    later = SolveSettings(time_limit_s=10.0).started(at=time.monotonic() - 9.85)
    with pytest.raises(AssertionError, match="too little time"):
        join.solve_by_workload(program, get_backend("highs"), later)


def test_the_join_keeps_the_covers_time_back_from_its_deadline(solved, monkeypatch):
    """2 s left for 2 parts on one process is time for them (2 rounds x `PART_MIN_S`
    0.1 s = 0.2 s), but with the cover's time kept back (`cover_reserve_s`: here set to
    1.9 s, `COVER_S_PER_NONZERO` = 1.9 / the program's nonzeros) 2.0 - 1.9 = 0.1 s is
    left, under 0.2 s: no part is built and the join is the cover's plan, which then
    ends by the deadline; with nothing kept back (0) the parts are built."""
    import time

    from solver.decompose import join, join_run

    program, cover, _ = solved
    nonzeros = program.lp.size()["nonzeros"]

    def no_build(*_args, **_kwargs):
        raise AssertionError("a part was built in the cover's time")

    monkeypatch.setattr(join_run, "workload_program", no_build)
    monkeypatch.setattr(join_run, "processes_for", lambda _programs: 1)
    monkeypatch.setattr(join_run, "PART_MIN_S", 0.1)
    monkeypatch.setattr(join_run, "COVER_S_PER_NONZERO", 1.9 / nonzeros)
    near = SolveSettings(time_limit_s=10.0).started(at=time.monotonic() - 8.0)
    assert join_run.cover_reserve_s(program, near) == pytest.approx(1.9)
    assert join_run.cover_reserve_s(program, SolveSettings(time_limit_s=None)) == 0.0
    found = join.solve_by_workload(program, get_backend("highs"), near)
    assert found is not None
    values = found.result.values
    assert plan_of(program.lp, values)
    assert program.lp.objective_value(values) == pytest.approx(cover.cost)
    monkeypatch.setattr(join_run, "COVER_S_PER_NONZERO", 0.0)
    later = SolveSettings(time_limit_s=10.0).started(at=time.monotonic() - 8.0)
    with pytest.raises(AssertionError, match="the cover's time"):
        join.solve_by_workload(program, get_backend("highs"), later)
