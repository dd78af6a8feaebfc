"""Whole servers by region (solver.decompose.regions.join and .by_region): the columns that
link regions by hand, and on generated instances at the policy's defaults the regions'
bound is at most the whole program's optimum, which is at most the cost of each plan the
regions give (held routing, floored fleets), each of which holds every row of the whole."""

import math
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as examples
from hypothesis import strategies as st

from models.io.loading import validate_instance
from models.operations.scenarios import failure_scenarios
from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.decompose.join_values import broken_rows
from solver.decompose.region_bounds import region_of, region_programs
from solver.decompose.regions.join import floored, linking_columns, region_join
from solver.decompose.regions.plan import by_region, first_by_region
from solver.decompose.regions.search import Searched
from solver.program.build import build_program
from solver.program.families.variables import ServedColumn
from solver.program.lp import LinearProgram, Sense, SolveResult, Termination
from solver.program.optimised import Method, Optimised
from solver.program.row_names import ReplicasColumn
from solver.program.sets import ProgramSets
from tests.solver.decompose.default_policy import EXACT, default_policy_join
from tests.synthetic import at_policy_defaults, generated_data

TOLERANCE = 1e-6


def test_the_rows_between_regions_link_their_columns():
    """Users of a served in a (local) or, with a lost, in b: the demand row names both
    served columns, so both are held; a's capacity row names a's columns only, so its
    replicas are not; a column whose name reads no region is held too."""
    lp = LinearProgram("two regions")
    home = lp.add_variable(ServedColumn("none", "w", "a", "a").name())
    away = lp.add_variable(ServedColumn("lose-a", "w", "a", "b").name())
    replicas = lp.add_variable(ReplicasColumn("w", "c", "a").name(), integer=True)
    odd = lp.add_variable("odd")
    lp.add_constraint("demand", "demand", {home: 1.0, away: 1.0}, Sense.GE, 5.0)
    lp.add_constraint("capacity", "capacity", {home: 1.0, replicas: -2.0}, Sense.LE, 0.0)
    assert linking_columns(lp) == {home, away, odd}


@examples(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(min_value=0, max_value=10_000))
def test_the_regions_bound_and_plans_hold_the_optimum_between_them(seed):
    program, join = default_policy_join(seed)
    highs = get_backend("highs")
    whole = highs.run(program.lp, EXACT)
    assert whole.termination is Termination.OPTIMAL
    found = region_join(program, highs, EXACT, join, deadline=float("inf"))
    assert found.bound is not None
    assert found.bound <= whole.objective * (1 + TOLERANCE)
    plans = [found.values]
    added = highs.run(floored(program, found.own, None), EXACT)
    if added.termination.has_solution:
        plans.append(added.values)
    for values in plans:
        if values is None:
            continue
        assert broken_rows(program.lp, values, {}, {}) == []
        assert program.lp.objective_value(values) >= whole.objective * (1 - TOLERANCE)


def test_the_plan_names_the_region_programs():
    """A join the regions' programs reached says so in the method, in place of the mends."""
    result = SolveResult(Termination.OPTIMAL, "highs", "1", 0.0, 1.0)
    optimised = Optimised(result, Method.BY_WORKLOAD, 2, mended=3, by_region=3)
    assert optimised.description == (
        "decomposed by workload: 2 independent programs joined, "
        "whole servers bought by 3 region programs"
    )


def _whole_servers(survive: str, seed: int = 0, buy_unit: str | None = None):
    data = generated_data(3, 2, 2, survive=survive, seed=seed)
    at_policy_defaults(data)
    if buy_unit is not None:
        data["policy"]["buy_unit"] = buy_unit
    instance = validate_instance(data, data["name"])
    table = build_candidates(instance, EXACT)
    return build_program(
        instance, table, sets=ProgramSets(instance, table, failure_scenarios(instance))
    )


def test_only_whole_servers_start_by_region():
    assert first_by_region(_whole_servers("region").sets)
    assert not first_by_region(_whole_servers("region", buy_unit="gpu").sets)


@pytest.mark.parametrize("survive", ["none", "region"])
def test_the_regions_plan_is_a_plan_above_the_optimum(survive):
    """Without region loss no row links two regions, so the regions' own optima joined
    are the whole optimum and `by_region` proves it; with region loss its plan holds
    every row, costs at least the optimum, and is OPTIMAL only within the gap."""
    program = _whole_servers(survive)
    highs = get_backend("highs")
    whole = highs.run(program.lp, EXACT)
    found = by_region(program, highs, EXACT, None, float("inf"))
    assert found is not None and found.method is Method.BY_REGION
    values = found.result.values
    assert broken_rows(program.lp, values, {}, {}) == []
    cost = program.lp.objective_value(values)
    assert cost >= whole.objective * (1 - TOLERANCE)
    if survive == "none":
        assert linking_columns(program.lp) == set()
        assert found.result.termination is Termination.OPTIMAL
        assert cost == pytest.approx(whole.objective, rel=TOLERANCE)
    if found.result.termination is Termination.OPTIMAL:
        assert found.result.mip_gap <= EXACT.mip_gap + 1e-9


@pytest.mark.parametrize("survive", ["none", "region"])
def test_independent_regions_get_the_whole_time_and_nothing_solved_after(monkeypatch, survive):
    """Without region loss the regions' programs are the whole program (`independent`):
    they get all the time to the deadline (with region loss, `bound_share` of it, the
    rest for the floored plan and the search), no floored program is solved after them,
    and the method says so. 100 s to the deadline: the regions' deadline is ~100 s away
    independent; otherwise 3 regions on one process are 3 rounds, the floored program
    counted as FLOORED_ROUNDS = 2 more, 3 / (3 + 2) x 100 = 60 s."""
    import time

    from solver.decompose.regions import join as module
    from solver.decompose.regions import plan as plans

    monkeypatch.setattr(module, "_processes", lambda _programs, _integers: 1)
    program = _whole_servers(survive)
    solved, floored, deadlines, floors = module._solved, plans.floored, [], []

    def solved_spied(backend, settings, lps, deadline, processes=None):
        deadlines.append(deadline - time.monotonic())
        return solved(backend, settings, lps, deadline, processes)

    def floored_spied(*args):
        floors.append(args)
        return floored(*args)

    monkeypatch.setattr(module, "_solved", solved_spied)
    monkeypatch.setattr(plans, "floored", floored_spied)
    found = by_region(program, get_backend("highs"), EXACT, None, time.monotonic() + 100.0)
    assert found is not None
    independent = survive == "none"
    assert module.independent(program) is independent
    assert deadlines[0] == pytest.approx(100.0 if independent else 60.0, abs=1.0)
    assert (floors == []) is independent
    assert ("3 independent region programs joined" in found.description) is independent


def test_the_regions_plan_states_the_time_of_every_stage(monkeypatch):
    """The stated runtime covers the regions' programs, not only the floored program
    solved last: 0.2 s spent in the regions' stage shows in it."""
    import time

    from solver.decompose.regions import plan as module

    program = _whole_servers("region")
    slow = module.region_join

    def region_join_slowly(*args, **kwargs):
        time.sleep(0.2)
        return slow(*args, **kwargs)

    monkeypatch.setattr(module, "region_join", region_join_slowly)
    started = time.monotonic()
    found = by_region(program, get_backend("highs"), EXACT, None, float("inf"))
    wall = time.monotonic() - started
    assert found is not None
    assert 0.2 <= found.result.runtime_s <= wall


def test_the_floored_fleets_buy_what_the_regions_pools_need_not_an_idle_server():
    """A region program the clock stopped may hold a server no pool uses: the floored
    program floors each purchase at what the floored replicas need, max(0, used -
    existing) in whole servers of n, so the idle server is not carried into the plan."""
    from models.operations.site import node_gpus
    from solver.program.families.servers import ServersColumn
    from solver.program.families.variables import PurchasedColumn

    program, join = default_policy_join(0)
    highs = get_backend("highs")
    found = region_join(program, highs, EXACT, join, deadline=float("inf"))
    sets = program.sets
    used: dict[tuple[str, str], int] = {}
    for pool in sets.pools:
        count = round(
            found.own.get(ReplicasColumn(pool.workload, pool.candidate.key, pool.region).name(), 0)
        )
        key = (pool.region, pool.candidate.gpu)
        used[key] = used.get(key, 0) + count * pool.candidate.gpus
    (region, gpu), gpus = max(used.items(), key=lambda item: item[1])
    assert gpus > 0
    n = node_gpus(sets.instance, gpu)
    need = n * -(-max(0, gpus - sets.offers[(region, gpu)].existing) // n)  # whole servers
    bought, servers = PurchasedColumn(region, gpu).name(), ServersColumn(region, gpu).name()
    idle = dict(found.own)
    idle[bought] = found.own.get(bought, 0.0) + n  # one server more than the pools use
    idle[servers] = found.own.get(servers, 0.0) + 1
    for own in (found.own, idle):
        lp = floored(program, own, None)
        assert lp.variables[bought].lower == need
        if servers in lp.variables:
            assert lp.variables[servers].lower == need / n


def test_the_search_keeps_the_callers_bounds(monkeypatch):
    """explain's re-solve without a pool bounds it at 0: the region search after the
    floored plan works within that bound (and within the pools config dominance
    removes), never on the unbounded program, so no freed region can bring the pool
    back."""
    from solver.decompose.regions import plan as module

    program = _whole_servers("region")
    highs = get_backend("highs")
    plain = by_region(program, highs, EXACT, None, float("inf"))
    used = next(
        name
        for name, value in plain.result.values.items()
        if name.startswith("replicas[") and value > 0.5
    )
    seen = []

    def searched(lp, backend, settings, values, rows, deadline, good_enough):
        seen.append(lp)
        return Searched(values, lp.objective_value(values), 0, 0)

    monkeypatch.setattr(module, "SEARCH_MIN_REGIONS", 1)
    monkeypatch.setattr(module, "_proved", lambda *args: False)
    monkeypatch.setattr(module, "search", searched)
    found = by_region(_whole_servers("region"), highs, EXACT, {used: (0.0, 0.0)}, float("inf"))
    assert found is not None and seen
    assert seen[0].variables[used].upper == 0.0
    assert found.result.values.get(used, 0.0) == 0.0


@pytest.mark.parametrize(
    ("regions", "processes", "share"),
    [(10, 1, 10 / 12), (10, 2, 5 / 7), (3, 2, 2 / 4), (1, 4, 1 / 3)],
)
def test_the_regions_take_their_rounds_share_before_the_floored_program(regions, processes, share):
    """The regions' programs run ceil(regions / processes) rounds; the floored program
    after them counts as FLOORED_ROUNDS = 2: 10 on one process 10 / 12, on two
    ceil(10 / 2) = 5 rounds, 5 / 7; 3 on two 2 / 4; one on four 1 / 3."""
    from solver.decompose.regions.timing import bound_share

    assert bound_share(regions, processes) == pytest.approx(share)


def test_without_floored_rounds_the_regions_take_the_fixed_share(monkeypatch):
    from solver.decompose.regions import timing as module

    monkeypatch.setattr(module, "FLOORED_ROUNDS", 0)
    assert module.bound_share(10, 1) == module.BOUND_SHARE


def test_a_region_without_a_plan_has_the_whole_programs_cover_before_the_floored_one(
    monkeypatch,
):
    """Where the clock left a region's own program without a plan (`_unplanned`), the
    whole program's cover is built before the floored program (COVERS_FIRST), and the
    cover held at the regions' plans is not built; the plan is still a plan of the whole
    (every row holds) no dearer than the cover. The regions' programs are given here:
    every region's but the first, as if the clock stopped it."""
    import time

    from solver.decompose.regions import plan as module

    program = _whole_servers("region")
    found = module.region_join(program, get_backend("highs"), EXACT, None, math.inf)
    first = sorted(region_programs(program.lp))[0]
    own = {n: v for n, v in found.own.items() if region_of(n) != first}
    cut_short = replace(found, own=own, bound=None, stopped=found.bound)
    assert module._unplanned(cut_short) and not module._unplanned(found)
    calls = []
    covering, floored_of = module.covering_plan, module.floored

    def covering_spied(lp):
        calls.append("cover")
        return covering(lp)

    def floored_spied(*args):
        calls.append("floored")
        return floored_of(*args)

    monkeypatch.setattr(module, "region_join", lambda *args, **kwargs: cut_short)
    monkeypatch.setattr(module, "covering_plan", covering_spied)
    monkeypatch.setattr(module, "floored", floored_spied)
    monkeypatch.setattr(module, "region_cover", lambda *args: pytest.fail("held cover built"))
    monkeypatch.setattr(module, "SEARCH", False)
    result = by_region(program, get_backend("highs"), EXACT, None, time.monotonic() + 60.0)
    assert calls[:2] == ["cover", "floored"]
    values = result.result.values
    assert broken_rows(program.lp, values, {}, {}) == []
    assert result.result.objective <= covering(program.lp).cost + 1e-6


def test_the_regions_start_only_where_each_gets_its_least_time():
    """REGION_MIN_S = 0.25 s each: 10 regions on one process need 10 x 0.25 = 2.5 s, on two
    ceil(10 / 2) = 5 rounds, 1.25 s; 20 on two 10 rounds, 2.5 s; no deadline, always."""
    from solver.decompose.regions.timing import REGION_MIN_S, worth_starting

    assert REGION_MIN_S == 0.25
    assert worth_starting(10, 1, 2.5) and not worth_starting(10, 1, 2.4)
    assert worth_starting(10, 2, 1.25) and not worth_starting(10, 2, 1.2)
    assert not worth_starting(20, 2, 2.4) and worth_starting(20, 2, math.inf)


def test_regions_too_short_of_time_are_not_started_and_give_no_plan(monkeypatch):
    """With region loss and 0.1 s to the deadline, 3 regions on one process would get
    0.6 x 0.1 / 3 = 0.02 s each, below REGION_MIN_S: no region program is solved and
    by_region gives no plan (the workload parts follow); without region loss (nothing
    follows the regions) they are solved all the same."""
    import time

    from solver.decompose.regions import join as module

    monkeypatch.setattr(module, "processes_for", lambda _programs: 1)
    solved = []
    real = module._solved

    def solved_spied(*args):
        solved.append(args)
        return real(*args)

    monkeypatch.setattr(module, "_solved", solved_spied)
    backend = get_backend("highs")
    found = by_region(_whole_servers("region"), backend, EXACT, None, time.monotonic() + 0.1)
    assert found is None and solved == []
    by_region(_whole_servers("none"), backend, EXACT, None, time.monotonic() + 0.1)
    assert len(solved) == 1
