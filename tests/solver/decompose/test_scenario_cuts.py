"""Failover scenarios by Hall cuts (solver.decompose.scenario_cuts): a hand-built case where
the first solve breaks one scenario and one cut, its coefficients written out, mends it;
and on small generated instances the same optimum as the routing program."""

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import settings as examples
from hypothesis import strategies as st

import solver.decompose.scenario_cuts as scenario_cuts
from models.operations.scenarios import failure_scenarios
from models.serving.replica import Role
from solver.backends import get_backend
from solver.candidates.pools import PoolCurve
from solver.candidates.table import CandidateTable, build_candidates
from solver.decompose.scenario_cuts import (
    AUTO_MIN_REGIONS,
    FailoverRows,
    _lp_rounds,
    failover_rows,
    priced_by_cuts,
    solve_by_cuts,
)
from solver.decompose.workload_parts import workload_program
from solver.program.build import build_program, with_bounds
from solver.program.families.hall import HallRow, TransportCredit, add_hall_row
from solver.program.lp import Sense, Termination
from solver.program.row_names import ReplicasColumn
from solver.program.sets import ProgramSets
from solver.program.transport import transport
from solver.readback.assign import integral
from solver.readback.pricing import pricing_program
from solver.settings import SolveSettings
from solver.solve import solve_program
from tests.solver.program.test_program import H100, fake, three_regions
from tests.synthetic import generated, with_policy

SETTINGS = SolveSettings(time_limit_s=60.0, mip_gap=0.0)


def _hand_case():
    """chat's users only in us-east (10 requests/s); one-GPU replicas carrying 4 requests/s
    at the SLO, 3 at the TTFT target less the 62 ms round trip from us-east to us-west,
    2.5 less the 75 ms to eu-west (made-up curves: the physics is not under test)."""
    inst = three_regions()
    inst = inst.model_copy(
        update={
            "workloads": [
                inst.workloads[0].model_copy(
                    update={"demand": {"us-east": inst.workloads[0].demand["us-east"]}}
                )
            ]
        }
    )
    lone = fake("chat", 4.0)
    slower = {
        rtt_ms: PoolCurve(((1, replace(lone.capacity, requests_per_s=q)),), q)
        for rtt_ms, q in ((62.0, 3.0), (75.0, 2.5))
    }
    candidate = replace(lone, failover=tuple(slower.items()))
    return inst, CandidateTable({"chat": (candidate,)}), candidate


def test_the_first_solve_breaks_the_lost_region_and_one_cut_mends_it():
    inst, table, c = _hand_case()
    sets = ProgramSets(inst, table, failure_scenarios(inst), scenario_rows="cuts")
    program = build_program(inst, table, sets=sets)
    backend = get_backend("highs")
    credit = TransportCredit(sets)
    first = backend.run(program.lp, SETTINGS)
    # No scenario rows yet: us-east alone, ceil(10 / 4) = 3 replicas.
    east, west, eu = (ReplicasColumn("chat", c.key, r).name() for r in sets.regions)
    assert first.values[east] == 3 and first.values[west] == first.values[eu] == 0
    broken = {f.name: transport(credit, f, "chat", first.values).cut for f in sets.cut_scenarios}
    # Losing us-west or eu-west leaves us-east's 3 x 4 = 12 >= 10; losing us-east
    # leaves its users nothing.
    assert broken["lose=us-west"] is None and broken["lose=eu-west"] is None
    cut = broken["lose=us-east"]
    assert cut.origins == ("us-east",)
    assert [d for d, _, _ in cut.phases] == ["us-west", "eu-west"]
    name = add_hall_row(program.lp, credit, cut)
    row = program.lp.constraints[name]
    assert name == "hall[lose=us-east,chat,us-east,all]"
    # 3 x replicas[us-west] + 2.5 x replicas[eu-west] >= 10 / max_utilization (1):
    # each region credited at the TTFT target less the round trip from us-east.
    assert row.sense is Sense.GE and row.rhs == 10.0
    assert row.coefficients == {west: 3.0, eu: 2.5}
    second = backend.run(program.lp, SETTINGS)
    assert all(transport(credit, f, "chat", second.values).cut is None for f in sets.cut_scenarios)
    # 3 in us-east, and 4 replicas beside it: 4 x 3 = 12 or 3 x 3 + 2.5 = 11.5 >= 10.
    assert second.values[east] == 3 and second.values[west] + second.values[eu] == 4
    routed = backend.run(build_program(inst, table).lp, SETTINGS)
    assert abs(second.objective - routed.objective) <= 1e-6 * routed.objective


def test_the_cut_loop_reads_the_routing_back_and_serves_every_scenario():
    inst, table, _ = _hand_case()
    sets = ProgramSets(inst, table, failure_scenarios(inst), scenario_rows="cuts")
    program = build_program(inst, table, sets=sets)
    optimised = solve_by_cuts(program, get_backend("highs"), SETTINGS)
    values = optimised.result.values
    for f in sets.cut_scenarios:
        served = {
            name: rate
            for name, rate in values.items()
            if name.startswith(f"served[{f.name},chat,us-east,")
        }
        assert abs(sum(served.values()) - 10.0) <= 1e-6  # every user of us-east served
        assert f"served[{f.name},chat,us-east,{f.region}]" not in served  # never the lost one


@examples(max_examples=3, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    regions=st.integers(3, 4),
    workloads=st.integers(1, 3),
    survive=st.sampled_from(["region", "zone"]),
)
def test_cuts_reach_the_routing_programs_optimum(seed, regions, workloads, survive):
    """Both solved to a 0 gap, each plan verified (solve_program refuses one the verifier
    rejects): the same optimal cost. 3 instances a run, new seeds every run (6 took 7.2 s
    of CPU; test_a_disaggregated_mode_is_cut_at_its_weakest_phase and the rows' own tests
    pin the loop by hand)."""
    inst = generated(regions, workloads, 2, survive=survive, seed=seed)
    costs = {}
    for rows in ("routing", "cuts"):
        settings = SolveSettings.of(inst, time_limit_s=60.0, mip_gap=0.0, scenario_rows=rows)
        costs[rows] = solve_program(inst, settings).plan.cost_per_month  # verified
    assert abs(costs["cuts"] - costs["routing"]) <= 1e-6 * costs["routing"]


def test_a_disaggregated_mode_is_cut_at_its_weakest_phase():
    """Prefill replicas carry 5 prompts/s, decode replicas 2 generations/s (no failover
    curves: the same in every scenario). The lost region's 10 requests/s need both
    halves beside it, so the loop must add a row on each phase: ceil(10 / 5) = 2 prefill
    and ceil(10 / 2) = 5 decode replicas beside us-east's own 2 + 5, as the routing
    program finds."""
    inst, _, _ = _hand_case()
    prefill, decode = fake("chat", 5.0, role=Role.PREFILL), fake("chat", 2.0, role=Role.DECODE)
    table = CandidateTable({"chat": (prefill, decode)})
    sets = ProgramSets(inst, table, failure_scenarios(inst), scenario_rows="cuts")
    program = build_program(inst, table, sets=sets)
    optimised = solve_by_cuts(program, get_backend("highs"), SETTINGS)
    values = optimised.result.values
    beside = {
        c.key: sum(values[ReplicasColumn("chat", c.key, r).name()] for r in ("us-west", "eu-west"))
        for c in (prefill, decode)
    }
    assert beside == {prefill.key: 2, decode.key: 5}
    phases = {
        HallRow.parse(name).phases
        for name, row in program.lp.constraints.items()
        if row.family == "hall" and name.startswith("hall[lose=us-east,chat,us-east,")
    }
    assert {"us-west:prefill+eu-west:prefill", "us-west:decode+eu-west:decode"} <= phases
    routed = get_backend("highs").run(build_program(inst, table).lp, SETTINGS)
    assert abs(optimised.result.objective - routed.objective) <= 1e-6 * routed.objective


def test_an_unservable_loss_is_infeasible_as_in_the_routing_program():
    """us-west and eu-west hold one GPU each: losing us-east leaves its 10 requests/s at
    most 3 + 2.5 = 5.5."""
    inst, table, _ = _hand_case()
    regions = [
        r if r.name == "us-east" else r.model_copy(update={"supply": {H100: _one_gpu(r)}})
        for r in inst.regions
    ]
    inst = inst.model_copy(update={"regions": regions})
    sets = ProgramSets(inst, table, failure_scenarios(inst), scenario_rows="cuts")
    optimised = solve_by_cuts(build_program(inst, table, sets=sets), get_backend("highs"), SETTINGS)
    assert optimised.result.termination is Termination.INFEASIBLE
    routed = get_backend("highs").run(build_program(inst, table).lp, SETTINGS)
    assert routed.termination is Termination.INFEASIBLE


def _one_gpu(region):
    return region.supply[H100].model_copy(update={"max_gpus": 1})


@examples(max_examples=3, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_the_pricing_lp_with_cuts_is_the_routing_programs(seed):
    """The plan's pricing LP (its choices fixed, counts continuous) has the same optimum
    with the Hall rows its own loop adds, from none at all, as with every scenario's
    routing (the integer loop's rows need not hold at its fractional points)."""
    inst = generated(7, 1, 2, seed=seed)
    table = build_candidates(inst)
    routing = build_program(inst, table)
    backend = get_backend("highs")
    plan = backend.run(routing.lp, SETTINGS)
    sets = ProgramSets(inst, table, failure_scenarios(inst), scenario_rows="cuts")
    cut = build_program(inst, table, sets=sets)
    values = integral(routing, plan.values)
    routed = backend.run(pricing_program(routing, values), SETTINGS)
    priced = priced_by_cuts(cut, backend, pricing_program(cut, values), SETTINGS)
    assert abs(priced.objective - routed.objective) <= 1e-6 * routed.objective


def test_auto_takes_cut_rows_from_five_regions_where_they_are_exact():
    """`auto` (the default): cut rows from AUTO_MIN_REGIONS = 5 regions, routing rows
    below (the program's own: no note) and wherever cuts are not exact (shared groups:
    the plan's method says so); `routing` and `cuts` as asked."""
    assert AUTO_MIN_REGIONS == 5
    four, five = generated(4, 1, 1, survive="region"), generated(5, 1, 1, survive="region")
    assert failover_rows(five, "auto").cuts and failover_rows(four, "cuts").cuts
    assert not failover_rows(five, "routing").cuts and not failover_rows(five, "routing").note
    assert failover_rows(four, "auto") == FailoverRows(False)
    shared = failover_rows(with_policy(five, colocation=True), "auto")
    assert not shared.cuts and "shared groups" in shared.note
    # Nothing rerouted (no region or zone loss): no failover rows to choose, no note.
    assert failover_rows(generated(5, 1, 1, survive="none"), "auto") == FailoverRows(False)
    assert SolveSettings().scenario_rows == "auto"


def test_the_plan_names_routing_rows_standing_in_for_cuts():
    """Cut rows asked for on an instance with shared groups: routing rows, and the method
    says why; the same instance on `auto` below 5 regions says nothing."""
    inst = with_policy(generated(3, 2, 2, survive="region"), colocation=True)
    asked = solve_program(inst, SolveSettings.of(inst, time_limit_s=60.0, scenario_rows="cuts"))
    note = "failover scenarios by routing rows (shared groups: cut rows are not exact)"
    assert asked.plan.solver.method.endswith(f"; {note}")
    plain = solve_program(inst, SolveSettings.of(inst, time_limit_s=60.0)).plan
    assert "failover" not in plain.solver.method


def test_the_lp_rounds_leave_no_workloads_relaxation_breaking_a_hall_row():
    """Step 2 of the loop runs workload by workload: afterwards each workload's own
    program relaxed, with the Hall rows found, breaks none (started here without the
    seed rows, so the rounds must find every row), and the rows found are in the whole
    program too. On 4 regions (6 rows found in 2 rounds; the whole program's exact solve,
    for the last line, is 1 s where 8 regions took 12 s and found 14 rows in 2 rounds)."""
    inst = generated(4, 2, 2, survive="region")
    table = build_candidates(inst)
    sets = ProgramSets(inst, table, failure_scenarios(inst), scenario_rows="cuts")
    program = build_program(inst, table, sets=sets)
    credit = TransportCredit(sets)
    backend = get_backend("highs")
    found, rounds, infeasible, bound = _lp_rounds(program, backend, SETTINGS, credit, {})
    assert infeasible is None and rounds >= 2 and found > 0
    hall = [row for row in program.lp.constraints.values() if row.family == "hall"]
    assert len(hall) == found
    relaxations = 0.0
    for w in sets.workloads:
        relaxed = with_bounds(workload_program(program, w).lp, {}, relax=True)
        result = backend.run(relaxed, SETTINGS)
        assert all(transport(credit, f, w, result.values).cut is None for f in sets.cut_scenarios)
        relaxations += result.objective
    # the bound is the workloads' LP relaxations with their Hall rows, summed ...
    assert bound == pytest.approx(relaxations, rel=1e-6)
    # ... and bounds the whole program's optimum (a relaxation of it, workload by workload)
    optimum = solve_by_cuts(program, backend, SETTINGS).result.objective
    assert 0 < bound <= optimum * (1 + 1e-9)


def test_lp_rounds_past_their_share_leave_the_rows_to_the_integer_rounds(monkeypatch):
    """Under a time limit the LP rounds stop once they have taken LP_ROUNDS_SHARE of the
    time left when they started (here 0: after the first workload): the second
    workload's relaxation adds no row and counts 0 in the bound, and the integer rounds
    alone still find every row the plan needs, so the cut loop ends at the same optimum
    as with every LP round run (the 4-region case of the test above)."""
    inst = generated(4, 2, 2, survive="region")
    table = build_candidates(inst)
    backend = get_backend("highs")

    def program():
        sets = ProgramSets(inst, table, failure_scenarios(inst), scenario_rows="cuts")
        return build_program(inst, table, sets=sets)

    optimum = solve_by_cuts(program(), backend, SETTINGS).result.objective
    monkeypatch.setattr(scenario_cuts, "LP_ROUNDS_SHARE", 0.0)
    cut_short = program()
    credit = TransportCredit(cut_short.sets)
    first, _ = cut_short.sets.workloads
    found, _, infeasible, bound = _lp_rounds(cut_short, backend, SETTINGS, credit, {})
    assert infeasible is None and found > 0
    floors = cut_short.region_costs["lp_floors"][1]
    assert set(floors) == {first}  # the second workload's LP never ran
    assert bound == pytest.approx(cut_short.lp.objective_constant + floors[first])
    hall = [row for row in cut_short.lp.constraints.values() if row.family == "hall"]
    assert hall and all(
        all(name.split("[")[1].split(",")[0] == first for name in row.coefficients) for row in hall
    )
    # the rows only the integer rounds find: the same optimum
    again = solve_by_cuts(program(), backend, SETTINGS).result
    assert again.objective == pytest.approx(optimum, rel=1e-9)
