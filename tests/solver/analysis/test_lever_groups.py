"""GPU levers proven together (solver.analysis.lever_groups): the containment the proof
rests on, checked by hand on small programs, and a group's answers against each lever
solved alone."""

from dataclasses import replace

import pytest

from solver.analysis import lever_groups
from solver.analysis import levers as levers_module
from solver.analysis.lever_edits import lever_work
from solver.analysis.lever_groups import (
    GROUP_NOTE,
    STOPPED_NOTE,
    Neutral,
    contains,
    neutral,
    plan_of,
    probes_early,
    servers_bound,
    solve_group,
)
from solver.analysis.lever_programs import static_program
from solver.analysis.lever_solve import solve_lever
from solver.analysis.levers import LeverRun
from solver.decompose import by_workload
from solver.program.lp import LinearProgram, Sense, Variable
from solver.settings import SolveSettings
from solver.solve import solve_program
from solver.stages import candidate_table
from tests import synthetic

GAP = 0.001


def _base() -> LinearProgram:
    """min 5x + 3y, 2x + y >= 3, x, y integer in [0, 4]."""
    lp = LinearProgram("p")
    lp.add_variable("x", upper=4.0, integer=True)
    lp.add_variable("y", upper=4.0, integer=True)
    lp.add_constraint("cover", "demand", {"x": 2.0, "y": 1.0}, Sense.GE, 3.0)
    lp.add_objective({"x": 5.0, "y": 3.0})
    return lp


def _with_z(cost: float = 1.0, coef: float = 4.0) -> LinearProgram:
    """The base with a column z in the cover row: min 5x + 3y + cost z, 2x + y + coef z >= 3."""
    lp = _base()
    lp.add_variable("z", upper=4.0, integer=True)
    cover = {"x": 2.0, "y": 1.0, "z": coef}
    lp.constraints["cover"] = replace(lp.constraints["cover"], coefficients=cover)
    lp.add_objective({"z": cost})
    return lp


def test_a_program_with_a_column_added_contains_the_one_without():
    assert contains(_with_z(), _base())  # z = 0: every plan of the base, same cost
    assert not contains(_base(), _with_z())  # z is no column of the base


def test_containment_fails_where_a_plan_could_break_a_row_or_cost_more():
    tighter = _with_z()
    tighter.constraints["cover"] = replace(tighter.constraints["cover"], rhs=4.0)
    assert not contains(tighter, _base())  # x = 0, y = 3 holds 3 >= 3, not >= 4
    dearer = _with_z()
    dearer.objective["y"] = 3.5
    assert not contains(dearer, _base())  # a plan costs more in the outer program
    cheaper = _with_z()
    cheaper.objective["y"] = 2.5
    assert contains(cheaper, _base())  # no greater objective: the bound carries over
    narrower = _with_z()
    narrower.variables["y"] = Variable("y", upper=3.0, integer=True)
    assert not contains(narrower, _base())  # y = 4 is a plan of the base only
    must_use_z = _with_z()
    must_use_z.add_constraint("use", "force", {"z": 1.0}, Sense.GE, 1.0)
    assert not contains(must_use_z, _base())  # z = 0 breaks it


def test_a_row_the_inner_bounds_imply_does_not_break_containment():
    # one configuration per pool over a column of the inner program and one of the outer
    # only: on the inner's columns it reads x <= 4, which x's bound already says
    outer = _with_z()
    outer.add_constraint("configs", "configs_per_pool", {"x": 1.0, "z": 1.0}, Sense.LE, 4.0)
    assert contains(outer, _base())
    outer.constraints["configs"] = replace(outer.constraints["configs"], rhs=3.0)
    assert not contains(outer, _base())  # x = 4 breaks x <= 3


def _instance(h100_price: float):
    return synthetic.instance(
        {"us": {"h100-sxm": (64, h100_price)}, "eu": {"h100-sxm": (64, h100_price * 1.2)}},
        [synthetic.workload("chat", {"us": 12.0, "eu": 6.0})],
        links=[("us", "eu", 80.0)],
        survive="region",
        mip_gap=GAP,
        policy={"buy_unit": "node", "max_configs_per_pool": 1},
    )


def _members(instance, gpus: tuple[str, ...]) -> tuple[Neutral, ...]:
    members = []
    for item in lever_work(instance):
        if item.offers in gpus:
            settings = SolveSettings.of(item.instance)
            table = candidate_table(item.instance, settings)
            lp = static_program(item.instance, table, settings)
            members.append(Neutral(item.name, item.offers, lp))
    return tuple(members)


def test_grouped_levers_answer_as_each_solved_alone(monkeypatch):
    # h100 at $0.50 an hour: no catalog GPU at its catalog price beats it here; a small
    # program, grouped all the same
    monkeypatch.setattr(lever_groups, "MIN_INTEGERS", 0)
    instance = _instance(0.5)
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    base_cost = solved.plan.cost_per_month
    run = LeverRun(instance, solved.plan, start=solved.result.values, program=solved.program.lp)
    results = {r.lever: r for r in run.results()}
    grouped = {name for name, r in results.items() if r.note.startswith(GROUP_NOTE[:12])}
    assert len(grouped) >= 2
    for name in grouped:
        item = next(i for i in lever_work(instance) if i.name == name)
        alone = solve_lever(name, item.instance, base_cost, None, start=solved.result.values)
        assert results[name].status == alone.status == "solved"
        # both proven within the gap of the lever's optimum: the same cost within it; the
        # group answers with the base plan or its own where that is the lever's too and
        # no dearer there (the same fleet cost, so no more GPUs: the tie-break)
        assert results[name].cost_per_month == pytest.approx(base_cost, abs=0.01)
        assert alone.cost_per_month == pytest.approx(base_cost, rel=GAP)
        assert results[name].total_gpus <= solved.plan.total_gpus


def test_the_base_screen_waits_for_the_levers_hand_out_and_is_worked_out_once(monkeypatch):
    # made beside explain's re-solves, a LeverRun leaves the base's screen to the thread
    # that hands its levers out: none at its making, one at the first hand-out
    monkeypatch.setattr(lever_groups, "MIN_INTEGERS", 0)
    instance = _instance(0.5)
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    screened = []
    real = levers_module.servers_screen
    monkeypatch.setattr(
        levers_module, "servers_screen", lambda lp, b: screened.append(lp) or real(lp, b)
    )
    run = LeverRun(instance, solved.plan, start=solved.result.values, program=solved.program.lp)
    assert len(run._probing) >= 2 and screened == [] and run._base_bound is None
    run._screened()
    run._screened()
    assert screened == [solved.program.lp]
    bound, values = run._base_bound
    assert bound == pytest.approx(servers_bound(solved.program.lp, None), rel=1e-9)
    assert values.keys() <= solved.program.lp.variables.keys()


def test_a_group_with_a_saving_member_answers_none():
    # h100 at $8 an hour: a100 at its catalog $1.30 serves the same users for less
    instance = _instance(8.0)
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    members = _members(instance, ("a100-80gb-sxm", "l40s"))
    outcome = solve_group(
        members,
        instance,
        solved.plan.cost_per_month,
        None,
        solved.result.values,
        solved.program.lp,
    )
    assert outcome.answered == {} and set(outcome.unanswered) == {m.lever for m in members}


def test_a_group_stopped_short_of_the_gap_says_it_searched_not_that_it_proved(monkeypatch):
    # h100 at $0.50 an hour: neither a100 nor l40s saves (the group's own solve proves the
    # base plan within the gap: GROUP_NOTE, gap None); then the same group stopped with a
    # bound at half its plan's cost, as a search its time limit cut at the root would be:
    # each member's gap is (base - bound) / base = 0.5 > 0.001, so status feasible at that
    # gap, and its note must not say "proven"
    instance = _instance(0.5)
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    base = solved.plan.cost_per_month
    members = _members(instance, ("a100-80gb-sxm", "l40s"))
    group = (members, instance, base, None, solved.result.values, solved.program.lp)
    proven = solve_group(*group).answered
    assert set(proven) == {m.lever for m in members}
    assert all(a.gap is None and a.note.startswith(GROUP_NOTE[:12]) for a in proven.values())

    monkeypatch.setattr(lever_groups, "bound_of", lambda result, lp, settings: base / 2)
    stopped = solve_group(*group).answered
    assert set(stopped) == {m.lever for m in members}
    for answer in stopped.values():
        assert answer.cost_per_month == pytest.approx(base, abs=0.01)
        assert answer.gap == pytest.approx(0.5, abs=1e-3)
        assert answer.note == STOPPED_NOTE.format(others="a100-80gb-sxm, l40s")
        assert "proven" not in answer.note


def test_the_screen_relaxes_all_but_whole_servers():
    # min 5 r + 3 s, 2 r + 4 s >= 5, s whole servers: s = 1, r = 0.5 costs 3 + 2.5 = 5.5
    # (s = 2: 6; s = 0, r = 2.5: 12.5); with r integer too it would be 6 (s = 2), with
    # neither 3 x 1.25 = 3.75
    assert servers_bound(_screened(), None) == pytest.approx(3 * 1 + 5 * 0.5, rel=1e-4)


def _screened() -> LinearProgram:
    """min 5 r + 3 s, 2 r + 4 s >= 5 (the screen's test above derives its screen, 5.5)."""
    lp = LinearProgram("p")
    lp.add_variable("replicas[w,c,r]", upper=4.0, integer=True)
    lp.add_variable("servers[r,g]", upper=4.0, integer=True)
    cover = {"replicas[w,c,r]": 2.0, "servers[r,g]": 4.0}
    lp.add_constraint("cover", "demand", cover, Sense.GE, 5.0)
    lp.add_objective({"replicas[w,c,r]": 5.0, "servers[r,g]": 3.0})
    return lp


def test_a_probe_starts_from_the_base_screens_plan_and_proves_the_same_bound(monkeypatch):
    # The lever adds another type's servers h at $4 covering 4: h = 1, r = 0.5 costs 4 +
    # 2.5 = 6.5 > 5.5, so its screen is the base's 5.5 (neutral). The base screen's plan
    # (s = 1, r = 0.5; h at 0) is a plan of the lever's screen: the probe starts from it.
    base = _screened()
    lever = _screened()
    lever.add_variable("servers[r,h]", upper=4.0, integer=True)
    lever.constraints["cover"].coefficients["servers[r,h]"] = 4.0
    lever.objective["servers[r,h]"] = 4.0
    screen = lever_groups.servers_screen(base, None)
    assert screen.objective == pytest.approx(5.5, rel=1e-4)
    started: list = []
    real = lever_groups.get_backend

    class Recorded:
        def __init__(self, backend):
            self.backend = backend

        def solve(self, lp, **options):
            started.append(options.get("start"))
            return self.backend.solve(lp, **options)

    monkeypatch.setattr(lever_groups, "get_backend", lambda name: Recorded(real(name)))
    values = dict(screen.values)
    assert neutral(lever, screen.objective, None, values)
    assert started == [values]
    assert servers_bound(lever, None, values) == pytest.approx(servers_bound(lever, None))


def test_probes_go_right_after_the_levers_before_them():
    # a b c d e, probing c and e: a and b (before the first probe, the longest) keep
    # their place, then c and e, then d
    named = [type("Work", (), {"name": name})() for name in "abcde"]
    assert [w.name for w in probes_early(named, {"c", "e"})] == list("abced")
    assert [w.name for w in probes_early(named, set())] == list("abcde")


def test_a_plan_of_a_program_holds_its_rows_bounds_and_integers():
    base = _base()  # 2x + y >= 3, x, y integer in [0, 4]
    assert plan_of(base, {"x": 1.0, "y": 1.0})  # 2 + 1 >= 3
    assert not plan_of(base, {"x": 1.0})  # 2 + 0 < 3
    assert not plan_of(base, {"x": 1.5, "y": 0.0})  # 3 >= 3, but x is an integer
    assert not plan_of(base, {"x": 5.0})  # above x's bound of 4
    assert not plan_of(base, {"x": 2.0, "z": 1.0})  # z is no column of the program
    assert plan_of(base, {"x": 2.0, "z": 0.0})  # a column of none at 0


def test_levers_of_a_small_program_are_solved_alone():
    instance = _instance(0.5)
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    integers = sum(v.integer for v in solved.program.lp.variables.values())
    assert integers < lever_groups.MIN_INTEGERS
    run = LeverRun(instance, solved.plan, start=solved.result.values, program=solved.program.lp)
    assert run._probing == set()


def spied_reductions(monkeypatch) -> list[bool]:
    """Whether each call of by_workload.optimal_reduction from here on asked for config
    dominance's reduction (`configs`), in order (the call itself goes through)."""
    asked: list[bool] = []
    reduction = by_workload.optimal_reduction

    def spied(program, bounds=None, narrowed=frozenset(), configs=True):
        asked.append(configs)
        return reduction(program, bounds, narrowed, configs)

    monkeypatch.setattr(by_workload, "optimal_reduction", spied)
    return asked


def test_a_group_searches_from_the_base_plan_without_the_pools_dominance_removes(monkeypatch):
    # h100 at $0.50 an hour (as above): a100 and l40s, neutral, proven together; the
    # group's whole-program search starts from the base plan and, unlike a lever's own,
    # leaves out the pools config dominance removes (the optimum unchanged), answering
    # each member as before
    instance = _instance(0.5)
    solved = solve_program(instance, SolveSettings.of(instance, threads=1))
    members = _members(instance, ("a100-80gb-sxm", "l40s"))
    asked = spied_reductions(monkeypatch)
    args = (members, instance, solved.plan.cost_per_month, None, solved.result.values)
    reduced = solve_group(*args, solved.program.lp)
    monkeypatch.setattr(lever_groups, "DOMINATED", False)
    whole = solve_group(*args, solved.program.lp)
    assert asked and set(asked[: len(asked) // 2]) == {True}  # the group's, reduced
    assert set(asked[len(asked) // 2 :]) == {False}  # before: a search from a start kept them
    assert reduced.answered.keys() == whole.answered.keys() == {m.lever for m in members}
    for name, answer in reduced.answered.items():
        assert answer.cost_per_month == whole.answered[name].cost_per_month
