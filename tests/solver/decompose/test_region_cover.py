"""The cover held at the regions' own plans (solver.decompose.regions.search.region_cover), the
floored plan's fallback on it (solver.decompose.regions.plan._cheaper), and the cover
within bounds that close pools (solver.decompose.cover)."""

import pytest

from solver.decompose.cover import covering_plan
from solver.decompose.regions.plan import _cheaper, _stopped
from solver.decompose.regions.search import held_at_own, region_cover
from solver.program.build import with_bounds
from solver.program.lp import LinearProgram, Sense, SolveResult, Termination, plan_of
from tests.solver.decompose.test_cover import _one_pool


def test_the_regions_pool_is_held_and_the_other_configuration_closed():
    """The regions chose A at 4 replicas: A is held at 4 or more and open, B (the other
    configuration of the one-configuration phase) closed."""
    lp = _one_pool()
    held = held_at_own(lp, {"replicas[w,A,r]": 4.0, "purchased[r,g1]": 8.0})
    assert held == {
        "replicas[w,A,r]": (4.0, 64),
        "pool_used[w,A,r]": (1.0, 1.0),
        "pool_used[w,B,r]": (0.0, 0.0),
        "replicas[w,B,r]": (0.0, 0.0),
    }


def test_the_held_cover_keeps_the_regions_choice_by_hand():
    """Alone the cover takes B (2 replicas, one server of 4 g2 at $120: $480,
    tests/solver/decompose/test_cover.py). Held at the regions' A with 5 replicas (one
    more than the ceil(10 / 3) = 4 it needs): 5 GPUs of g1, one server of 8 at $100:
    $800, A kept at 5 and B closed; a plan of the whole program."""
    lp = _one_pool()
    cover = region_cover(lp, {"replicas[w,A,r]": 5.0})
    assert cover is not None and plan_of(lp, cover.values)
    assert cover.values["replicas[w,A,r]"] == 5 and cover.values["replicas[w,B,r]"] == 0
    assert cover.values["servers[r,g1]"] == 1 and cover.values["servers[r,g2]"] == 0
    assert cover.cost == pytest.approx(800.0)
    assert cover.bound is None  # the held program's bound is no bound on the whole


def test_no_held_cover_without_a_regions_pool_or_against_the_callers_bounds():
    """Regions without a plan name no pool: nothing to hold. A pool the caller's bounds
    close (A at most 0) cannot be held at the regions' 4."""
    lp = _one_pool()
    assert region_cover(lp, {}) is None
    assert region_cover(lp, {"replicas[w,A,r]": 4.0}, {"replicas[w,A,r]": (0.0, 0.0)}) is None


def test_the_floored_plan_or_the_held_cover_whichever_is_cheaper():
    """The held cover of A costs $800. A floored plan at B's $480 is kept; none in time
    (or a dearer one, 9 servers of A: $7,200) leaves the held cover."""
    lp = _one_pool()
    cover = region_cover(lp, {"replicas[w,A,r]": 4.0})
    b_plan = {name: 0.0 for name in lp.variables}
    b_plan |= {"served[none,w,r,r]": 10.0, "replicas[w,B,r]": 2.0, "pool_used[w,B,r]": 1.0}
    b_plan |= {"purchased[r,g2]": 4.0, "servers[r,g2]": 1.0}
    assert plan_of(lp, b_plan) and lp.objective_value(b_plan) == pytest.approx(480.0)
    found = SolveResult(Termination.FEASIBLE, "highs", "1", 1.0, 480.0, b_plan)
    assert _cheaper(lp, found, cover) == b_plan
    stopped = SolveResult(Termination.TIME_LIMIT, "highs", "1", 1.0)
    assert _cheaper(lp, stopped, cover) == cover.values
    assert _cheaper(lp, None, cover) == cover.values
    dear = {**cover.values, "purchased[r,g1]": 72.0, "servers[r,g1]": 9.0}
    assert lp.objective_value(dear) == pytest.approx(7200.0)
    dearer = SolveResult(Termination.FEASIBLE, "highs", "1", 1.0, 7200.0, dear)
    assert _cheaper(lp, dearer, cover) == cover.values
    assert _cheaper(lp, stopped, None) is None
    # the held cover is only built where the floored program was stopped (or not run)
    proved = SolveResult(Termination.OPTIMAL, "highs", "1", 1.0, 480.0, b_plan)
    assert not _stopped(proved) and _stopped(found) and _stopped(stopped)


def test_a_stopped_floored_plan_takes_the_cheapest_cover_held_or_whole():
    """Where the clock stopped the floored program, the held cover ($800: A at 5, held by
    hand above) and the whole program's cover (B at 2 replicas, one server of 4 g2 at
    $120: $480) are both offered and the cheaper kept, whichever comes first."""
    lp = _one_pool()
    held = region_cover(lp, {"replicas[w,A,r]": 5.0})
    whole = covering_plan(lp)
    assert held.cost == pytest.approx(800.0) and whole.cost == pytest.approx(480.0)
    stopped = SolveResult(Termination.TIME_LIMIT, "highs", "1", 1.0)
    assert _cheaper(lp, stopped, held, whole) == whole.values
    assert _cheaper(lp, stopped, whole, held) == whole.values
    assert _cheaper(lp, None, None, held) == held.values


def _with_a_failover_row(lp):
    """`_one_pool` with a failover (Hall) row 3 A + 6 C >= 30: C, one GPU of g3 in r2
    ($50 a GPU, servers of 8), a pool of no capacity row (no users of w in r2)."""
    replicas = lp.add_variable("replicas[w,C,r2]", upper=64, integer=True)
    bought = lp.add_variable("purchased[r2,g3]")
    servers = lp.add_variable("servers[r2,g3]", integer=True)
    lp.add_objective({bought: 50.0})
    purchase = {bought: 1.0, replicas: -1.0}
    lp.add_constraint("purchase[r2,g3]", "purchase", purchase, Sense.GE, 0.0)
    whole = {bought: 1.0, servers: -8.0}
    lp.add_constraint("whole_servers[r2,g3]", "whole_servers", whole, Sense.EQ, 0.0)
    hall = {"replicas[w,A,r]": 3.0, replicas: 6.0}
    lp.add_constraint("hall[lose=r3,w,0]", "hall", hall, Sense.GE, 30.0)
    return lp


def test_a_pool_its_bounds_close_is_never_raised():
    """The Hall row asks 3 A + 6 C >= 30. Open, C carries it: 5 replicas, one server of 8
    g3 at $50 ($400). Closed by the caller's bounds (C at 0), A is raised to 30 / 3 = 10
    replicas: 10 GPUs of g1, two servers of 8, $1,600 (B, the phase's other
    configuration, is closed too); a plan within the bounds."""
    lp = _with_a_failover_row(_one_pool())
    cover = covering_plan(lp)
    assert cover is not None and cover.values["replicas[w,C,r2]"] == 5
    closed = {"replicas[w,C,r2]": (0.0, 0.0), "replicas[w,B,r]": (0.0, 0.0)}
    closed |= {"pool_used[w,B,r]": (0.0, 0.0)}
    held = with_bounds(lp, closed)
    cover = covering_plan(held)
    assert cover is not None and plan_of(held, cover.values)
    assert cover.values["replicas[w,C,r2]"] == 0 and cover.values["replicas[w,A,r]"] == 10
    assert cover.values["servers[r,g1]"] == 2
    assert cover.cost == pytest.approx(1600.0)


def _two_pools() -> LinearProgram:
    """Two workloads in one region, 4 requests/s each, a replica one GPU carrying 1
    request/s: a on g1 ($100 a GPU) or g3 ($120), b on g2 ($100) or g3; servers of 8 of
    every type, one configuration per pool."""
    lp = LinearProgram("two-pools")
    bought = {gpu: lp.add_variable(f"purchased[r,{gpu}]") for gpu in ("g1", "g2", "g3")}
    buys: dict[str, dict[str, float]] = {gpu: {name: 1.0} for gpu, name in bought.items()}
    for gpu, price in (("g1", 100.0), ("g2", 100.0), ("g3", 120.0)):
        servers = lp.add_variable(f"servers[r,{gpu}]", integer=True)
        lp.add_objective({bought[gpu]: price})
        whole = {bought[gpu]: 1.0, servers: -8.0}
        lp.add_constraint(f"whole_servers[r,{gpu}]", "whole_servers", whole, Sense.EQ, 0.0)
    for workload, gpus in (("a", ("g1", "g3")), ("b", ("g2", "g3"))):
        served = lp.add_variable(f"served[none,{workload},r,r]")
        lp.add_constraint(f"demand[none,{workload},r]", "demand", {served: 1.0}, Sense.EQ, 4.0)
        credit, used = {served: -1.0}, {}
        for gpu in gpus:
            key = f"{workload}{gpu}"
            replicas = lp.add_variable(f"replicas[{workload},{key},r]", upper=64, integer=True)
            used[key] = lp.add_variable(f"pool_used[{workload},{key},r]", upper=1, integer=True)
            credit[replicas] = 1.0
            buys[gpu][replicas] = -1.0
            opened = {replicas: 1.0, used[key]: -64.0}
            lp.add_constraint(f"pool_open[{workload},{key},r]", "pool_open", opened, Sense.LE, 0.0)
        capacity = f"capacity[none,{workload},r,unified]"
        lp.add_constraint(capacity, "capacity", credit, Sense.GE, 0.0)
        one = {name: 1.0 for name in used.values()}
        row = f"configs_per_pool[{workload},r,unified]"
        lp.add_constraint(row, "configs_per_pool", one, Sense.LE, 1.0)
    for gpu, terms in buys.items():
        lp.add_constraint(f"purchase[r,{gpu}]", "purchase", terms, Sense.GE, 0.0)
    return lp


def test_the_cover_packs_a_regions_pools_into_fewer_servers_by_hand():
    """Each pool alone: a on g1 ($400 of GPUs) and b on g2 ($400), one server of each:
    2 x 8 x $100 = $1,600; moving either alone to g3 buys a g3 server ($960) and gives
    back one of $800 (+$160), so the passes keep them. Both on g3 (the start of one type,
    g3): 8 GPUs, one server, 8 x $120 = $960."""
    lp = _two_pools()
    cover = covering_plan(lp)
    assert cover is not None and plan_of(lp, cover.values)
    assert cover.values["replicas[a,ag3,r]"] == 4 and cover.values["replicas[b,bg3,r]"] == 4
    assert cover.values["servers[r,g3]"] == 1
    assert cover.values["servers[r,g1]"] == 0 and cover.values["servers[r,g2]"] == 0
    assert cover.cost == pytest.approx(960.0)
