"""The search over pairs of regions after the regions' join (solver.decompose.regions.search):
a neighbourhood's program by hand, the search's moves on a hand-sized program whose
optimum is worked out by hand, the merge of two neighbourhoods' plans, the same batches
and plan whatever the machine's idle cores, each neighbourhood held to a node count
rather than the clock, and on generated instances at the policy's defaults every plan it
returns holds every row of the whole program and costs between the whole optimum and the
plan it started from."""

import math
import time
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

import solver.decompose.regions.search as region_lns
from models.io.loading import validate_instance
from models.operations.scenarios import failure_scenarios
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose.join_values import broken_rows
from solver.decompose.regions.join import floored, region_join
from solver.decompose.regions.search import (
    AT_BOUND,
    TRY_NODES,
    _merged,
    excess,
    holds,
    neighbourhood,
    ranked_neighbourhoods,
    room,
    scores,
    search,
    worth_trying,
)
from solver.program.build import build_program
from solver.program.lp import LinearProgram, Sense, SolveResult, Termination
from solver.program.optimised import Method, Optimised
from solver.program.sets import ProgramSets
from solver.settings import SolveSettings
from tests.synthetic import at_policy_defaults, generated_data

EXACT = SolveSettings(time_limit_s=60.0, mip_gap=0.0)
TOLERANCE = 1e-6
PRICE = {"east": 20.0, "west": 10.0, "north": 30.0}
"""$ per GPU in each region of the hand program."""
OWN = {"east": 2.5, "west": 1.0, "north": 1.0}
"""GPUs each region's own users need there."""
EVERYONE = 10.0
"""GPUs all regions together hold (the failover row, linking the three)."""


def gpus(region: str) -> str:
    return f"purchased[{region},h100-sxm]"


def hand_program(
    price: dict[str, float] = PRICE, own: dict[str, float] = OWN, everyone: float = EVERYONE
) -> LinearProgram:
    """Whole GPUs at `price`; each region at least `own`; all of them at least `everyone`."""
    lp = LinearProgram("hand")
    for region in price:
        lp.add_variable(gpus(region), upper=64, integer=True)
        lp.add_constraint(f"own[{region}]", "test", {gpus(region): 1.0}, Sense.GE, own[region])
    row = {gpus(region): 1.0 for region in price}
    lp.add_constraint("everyone", "test", row, Sense.GE, everyone)
    lp.add_objective({gpus(region): price[region] for region in price})
    return lp


def own_rows(lp: LinearProgram):
    """Each region's cost terms and its own program's optimum: ceil(OWN) GPUs at PRICE."""
    return {
        region: ({gpus(region): PRICE[region]}, math.ceil(OWN[region]) * PRICE[region])
        for region in PRICE
    }


START = {gpus("east"): 3.0, gpus("west"): 1.0, gpus("north"): 6.0}
"""A plan of the hand program: the regions' own fleets, north raised for the failover
row (3 + 1 + 6 = 10): $20 x 3 + $10 x 1 + $30 x 6 = $250."""


def test_a_neighbourhood_holds_the_other_regions_at_the_plan():
    """West and north free, east held at 3 GPUs: east's own row leaves (it names no free
    column), the failover row keeps west and north with 10 - 3 = 7 on the right."""
    lp = hand_program()
    program = neighbourhood(lp, frozenset({"west", "north"}), START)
    assert set(program.variables) == {gpus("west"), gpus("north")}
    assert "own[east]" not in program.constraints
    everyone = program.constraints["everyone"]
    assert everyone.coefficients == {gpus("west"): 1.0, gpus("north"): 1.0}
    assert everyone.rhs == pytest.approx(EVERYONE - START[gpus("east")])
    assert program.constraints["own[west]"] is lp.constraints["own[west]"]
    assert set(program.constraints) == {"own[west]", "own[north]", "everyone"}
    assert program.objective == {gpus("west"): 10.0, gpus("north"): 30.0}


def test_the_regions_are_ranked_by_how_far_they_are_above_their_own_bound():
    """At START north pays $30 x 6 = $180 against its own $30: $150 above; east and west
    pay their own optimum, so they rank by their cost ($20 x 3 = $60 before $10 x 1):
    north leads, with east then west, then east with west."""
    lp = hand_program()
    over = excess(lp, START, own_rows(lp))
    assert over == pytest.approx({"east": 0.0, "west": 0.0, "north": 30.0 * 6 - 30.0})
    ranks = scores(lp, START, own_rows(lp))
    assert ranks == pytest.approx(
        {"east": AT_BOUND * 20.0 * 3, "west": AT_BOUND * 10.0 * 1, "north": 30.0 * 6 - 30.0}
    )
    assert ranked_neighbourhoods(ranks) == [
        frozenset({"north", "east"}),
        frozenset({"north", "west"}),
        frozenset({"east", "west"}),
    ]


@pytest.mark.parametrize("regions", [1, 2, 3, 5])
def test_every_set_of_regions_is_a_neighbourhood_once(regions):
    over = {f"r{i}": float(i) for i in range(regions)}
    hoods = ranked_neighbourhoods(over, size=2)
    assert len(hoods) == max(1, math.comb(regions, 2))
    assert len(set(hoods)) == len(hoods)


def test_the_search_moves_the_failover_gpus_to_the_cheapest_region():
    """From START (north raised, $250) the pairs with north are swept: {north, east}
    puts the 5 GPUs past north's own in east ($20 each, not $30): $20 x 8 + $10 + $30 =
    $200; {north, west} puts them in west ($10): east 3, west 6, north 1, $60 + $60 +
    $30 = $150, the optimum (every GPU past the own fleets at $10). The cheaper is taken,
    east's plan does not merge in (east 8 with west 6: $250), and the next sweep (the
    pairs with west, now $50 above its own $10) finds nothing cheaper: one improvement,
    and the plan holds every row."""
    lp = hand_program()
    found = search(lp, get_backend("highs"), EXACT, START, own_rows(lp), math.inf)
    optimum = 20.0 * 3 + 10.0 * (EVERYONE - 3 - 1) + 30.0 * 1
    assert found.cost == pytest.approx(optimum)
    assert found.values[gpus("west")] == pytest.approx(6.0)
    assert found.improved == 1
    assert found.tried == 2 + 2
    assert broken_rows(lp, found.values, {}, {}) == []


def test_the_search_stops_at_a_plan_good_enough():
    """Told that $250 is good enough, the search solves nothing."""
    lp = hand_program()
    found = search(lp, get_backend("highs"), EXACT, START, own_rows(lp), math.inf, 250.0)
    assert (found.tried, found.cost) == (0, pytest.approx(250.0))


FOUR_PRICE = {"east": 20.0, "west": 10.0, "north": 30.0, "south": 40.0}
FOUR_OWN = {"east": 2.0, "west": 1.0, "north": 1.0, "south": 1.0}
FOUR_START = {gpus("east"): 4.0, gpus("west"): 2.0, gpus("north"): 3.0, gpus("south"): 3.0}
"""Four regions, the failover row at 12 GPUs, every region raised above its own fleet
(4 + 2 + 3 + 3 = 12): $80 + $20 + $90 + $120 = $310; the optimum puts the GPUs past the
own fleets (12 - 2 - 1 - 1 - 1 = 7) in west at $10: $40 + $80 + $30 + $40 = $190."""
FOUR_ROWS = {r: ({gpus(r): FOUR_PRICE[r]}, FOUR_OWN[r] * FOUR_PRICE[r]) for r in FOUR_PRICE}


def _recorded(monkeypatch, idle: int) -> list[tuple[list[frozenset[str]], SolveSettings]]:
    """Run the search's neighbourhoods in this process, one after the other, on a
    machine said to have `idle` idle cores; record each batch and the settings its
    programs got."""
    batches: list[tuple[list[frozenset[str]], SolveSettings]] = []
    real = region_lns._solve

    def in_process(build, order, settings, processes, stop, start):
        lp, backend = build(order[0])
        batches[-1] = (batches[-1][0], settings(order[0]))
        for index in order:
            lp, backend = build(index)
            yield index, backend.run(lp, settings(index), start=start(index))

    def solve(lp, backend, settings, values, batch, deadline):
        batches.append((list(batch), settings))
        return real(lp, backend, settings, values, batch, deadline)

    monkeypatch.setattr(region_lns, "processes_for", lambda programs: max(1, min(idle, programs)))
    monkeypatch.setattr(region_lns, "solve_built", in_process)
    monkeypatch.setattr(region_lns, "_solve", solve)
    return batches


@pytest.mark.parametrize("idle", [1, 8])
def test_the_batches_and_the_plan_do_not_depend_on_idle_cores(monkeypatch, idle):
    """Four regions (FOUR_START): with 1 idle core or 8, the first batch is every pair
    (all are worth trying: every region is above its own bound), in rank order (above
    their bounds: south $120 - $40 = $80, north $90 - $30 = $60, east $80 - $40 = $40,
    west $20 - $10 = $10), and the plan is the optimum, $190."""
    lp = hand_program(FOUR_PRICE, FOUR_OWN, 12.0)
    batches = _recorded(monkeypatch, idle)
    found = search(lp, get_backend("highs"), EXACT, FOUR_START, FOUR_ROWS, math.inf)
    assert found.cost == pytest.approx(20.0 * 2 + 10.0 * 8 + 30.0 * 1 + 40.0 * 1)
    pairs = [("south", "north"), ("south", "east"), ("south", "west")]
    pairs += [("north", "east"), ("north", "west"), ("east", "west")]
    assert batches[0][0] == [frozenset(pair) for pair in pairs]
    assert not found.stopped


def test_a_neighbourhood_is_held_to_nodes_not_to_seconds(monkeypatch):
    """Each neighbourhood's program gets `TRY_NODES` nodes, and as its time limit what is
    left of the search's deadline (here about an hour), not a few seconds of the clock."""
    lp = hand_program(FOUR_PRICE, FOUR_OWN, 12.0)
    batches = _recorded(monkeypatch, 1)
    search(lp, get_backend("highs"), EXACT, FOUR_START, FOUR_ROWS, time.monotonic() + 3600.0)
    settings = batches[0][1]
    assert settings.node_limit == TRY_NODES
    assert settings.time_limit_s is not None and settings.time_limit_s > 3000.0


def test_the_plans_of_a_batch_come_in_its_order_whichever_ends_first(monkeypatch):
    """Two workers ending in the reverse order of the batch: the plans still come in the
    batch's order, so that of two plans of the same cost `_merged` keeps the same one."""
    lp = hand_program(FOUR_PRICE, FOUR_OWN, 12.0)
    batch = [frozenset({"south", "north"}), frozenset({"east", "west"})]

    def reversed_ends(build, order, settings, processes, stop, start):
        for index in sorted(order, reverse=True):
            program, backend = build(index)
            yield index, backend.run(program, settings(index), start=start(index))

    monkeypatch.setattr(region_lns, "solve_built", reversed_ends)
    found, ended = region_lns._solve(lp, get_backend("highs"), EXACT, FOUR_START, batch, math.inf)
    assert [hood for hood, _result in found] == batch
    assert ended == 2


def test_a_pair_of_regions_at_their_bounds_is_not_tried():
    """From START east ($60 = its own 3 GPUs x $20) and west ($10) are at their bounds:
    {east, west} could save nothing (any plan of it costs at least $60 + $10), so the
    pairs tried are the two with north ($180, $150 above its own $30)."""
    lp = hand_program()
    hoods = ranked_neighbourhoods(scores(lp, START, own_rows(lp)))
    kept = worth_trying(hoods, room(lp, START, own_rows(lp)))
    assert len(hoods) == 3
    assert kept == [frozenset({"north", "east"}), frozenset({"north", "west"})]


def test_a_search_the_deadline_ends_says_so():
    """A deadline already past: nothing is tried, the start is the plan, and the search
    says the clock stopped it (pairs were left); the method line says so too."""
    lp = hand_program()
    found = search(lp, get_backend("highs"), EXACT, START, own_rows(lp), time.monotonic())
    assert (found.tried, found.cost, found.stopped) == (0, pytest.approx(250.0), True)
    result = SolveResult(Termination.FEASIBLE, "highs", "1", 0.0, 1.0, mip_gap=0.0169)
    stopped = Optimised(
        result, Method.BY_REGION, 10, searched=4, search_improved=0, search_stopped=True
    )
    assert stopped.description.endswith(
        "then 4 neighbourhoods of regions re-solved (0 cheaper, stopped by the time limit)"
    )


def _found(values: dict[str, float]) -> SolveResult:
    return SolveResult(Termination.OPTIMAL, "highs", "1", 0.0, 0.0, values=values)


def with_failover(lp: LinearProgram, total: float) -> LinearProgram:
    """The hand program with its failover row at `total` GPUs."""
    lp.constraints["everyone"] = replace(lp.constraints["everyone"], rhs=total)
    return lp


MERGE_START = {gpus("east"): 5.0, gpus("west"): 5.0, gpus("north"): 1.0}
"""East and west raised to 5 GPUs each, north at its own 1."""


def test_two_plans_of_disjoint_regions_merge_only_when_the_rows_hold():
    """Failover row at 7 GPUs. East alone drops to its own 3 (3 + 5 + 1 = 9: holds,
    $20 x 2 = $40 less), west alone to 2 (5 + 2 + 1 = 8: holds, $10 x 3 = $30 less);
    together 3 + 2 + 1 = 6 break the row, so east's plan is taken alone:
    $20 x 3 + $10 x 5 + $30 x 1 = $140."""
    lp = with_failover(hand_program(), 7.0)
    east = _found({gpus("east"): 3.0})
    west = _found({gpus("west"): 2.0})
    found = [(frozenset({"west"}), west), (frozenset({"east"}), east)]
    merged = _merged(lp, MERGE_START, found)
    assert merged is not None and merged[1] == 1
    assert lp.objective_value(merged[0]) == pytest.approx(20.0 * 3 + 10.0 * 5 + 30.0 * 1)
    assert not holds(lp, {**merged[0], gpus("west"): 2.0}, {gpus("west")})


def test_two_plans_of_disjoint_regions_merge_when_the_rows_hold():
    """Failover row at 6 GPUs: the same two plans together hold it (3 + 2 + 1 = 6), so
    they merge: $20 x 3 + $10 x 2 + $30 x 1 = $110."""
    lp = with_failover(hand_program(), 6.0)
    found = [
        (frozenset({"east"}), _found({gpus("east"): 3.0})),
        (frozenset({"west"}), _found({gpus("west"): 2.0})),
    ]
    merged = _merged(lp, MERGE_START, found)
    assert merged is not None and merged[1] == 2
    assert lp.objective_value(merged[0]) == pytest.approx(20.0 * 3 + 10.0 * 2 + 30.0 * 1)


def test_no_plan_found_merges_to_none():
    assert _merged(hand_program(), START, []) is None


@examples(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=10_000))
def test_the_search_returns_plans_between_the_optimum_and_its_start(seed):
    """A 3-region, 2-workload, 2-GPU-type instance surviving a region loss at the policy's
    defaults: from the plan floored at the regions' own fleets, the search's plan holds
    every row of the whole program and costs no more than the floored plan and no less
    than the whole program's optimum."""
    data = generated_data(3, 2, 2, survive="region", seed=seed)
    at_policy_defaults(data)
    inst = validate_instance(data, data["name"])
    table = build_candidates(inst, EXACT)
    program = build_program(inst, table, sets=ProgramSets(inst, table, failure_scenarios(inst)))
    highs = get_backend("highs")
    whole = highs.run(program.lp, EXACT)
    found = region_join(program, highs, EXACT, None, deadline=math.inf)
    start = highs.run(floored(program, found.own, None), EXACT)
    assert start.termination.has_solution
    values = {n: v for n, v in start.values.items() if n in program.lp.variables}
    searched = search(program.lp, highs, EXACT, values, found.rows, math.inf)
    assert broken_rows(program.lp, searched.values, {}, {}) == []
    assert searched.cost <= program.lp.objective_value(values) * (1 + TOLERANCE)
    assert searched.cost >= whole.objective * (1 - TOLERANCE)


def test_the_plan_names_the_search():
    """The method line says how many neighbourhoods were re-solved and how many of them
    gave a cheaper plan, on the regions' plan and on the one program started from it."""
    result = SolveResult(Termination.FEASIBLE, "highs", "1", 0.0, 1.0, mip_gap=0.0169)
    by_region = Optimised(result, Method.BY_REGION, 10, searched=19, search_improved=3)
    assert by_region.description == (
        "decomposed by region: 10 region programs joined, whole servers bought for every"
        " workload of a region, fleets raised for failover, then 19 neighbourhoods of"
        " regions re-solved (3 cheaper)"
    )
    whole = Optimised(result, join_gap=0.0169, from_regions=True, searched=19, search_improved=3)
    assert whole.description == (
        "one program, started from the joined region programs and 19 neighbourhoods of"
        " regions re-solved (3 cheaper) (gap 1.69% to their bound)"
    )
