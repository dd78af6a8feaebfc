"""Each region's server cost as an integer level (solver.program.cost_levels): the unit and
coefficients on a hand-sized program, the start and the result read back, and that the
levels never move the optimum."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.backends import get_backend
from solver.candidates.table import build_candidates
from solver.program import cost_levels
from solver.program.build import build_program, with_bounds
from solver.program.lp import LinearProgram, Sense, SolveResult, Termination
from solver.settings import SolveSettings
from tests.synthetic import instance, workload

H100, H200 = "purchased[east,h100-sxm]", "purchased[east,h200]"
H100_SERVERS, H200_SERVERS = "servers[east,h100-sxm]", "servers[east,h200]"


def hand_program(h100_cost: float = 1752.0) -> LinearProgram:
    """East buys H100s at $2.40 x 730 h = $1,752 a GPU-month and H200s at $3.10 x 730 =
    $2,263, both in 8-GPU servers; it needs 20 GPUs, any mix."""
    lp = LinearProgram("hand")
    for purchased, servers in ((H100, H100_SERVERS), (H200, H200_SERVERS)):
        lp.add_variable(purchased)
        lp.add_variable(servers, upper=64, integer=True)
        lp.add_constraint(
            f"whole_servers[{servers[8:-1]}]",
            "whole_servers",
            {purchased: 1.0, servers: -8.0},
            Sense.EQ,
            0.0,
        )
    lp.add_constraint("need[east]", "test", {H100: 1.0, H200: 1.0}, Sense.GE, 20.0)
    lp.add_objective({H100: h100_cost, H200: 2263.0})
    return lp


def test_the_unit_is_the_gcd_of_the_servers_costs():
    (level,) = cost_levels.region_levels(hand_program())
    # servers: 8 x 1,752 = $14,016 and 8 x 2,263 = $18,104; gcd = $584 (= 8 x $73:
    # 1,752 = 24 x 73, 2,263 = 31 x 73), so 24 and 31 units a server
    assert level.region == "east"
    assert level.unit == pytest.approx(584.0)
    assert level.servers == {H100_SERVERS: 24, H200_SERVERS: 31}
    assert set(level.purchased) == {H100, H200}


def test_no_level_where_the_step_is_too_fine_to_branch_on():
    # $1,752.01 a GPU: servers of $14,016.08 and $18,104: gcd 8 cents, 226,300 units a server
    assert cost_levels.region_levels(hand_program(1752.01)) == []
    # H100s not at whole cents: they keep their cost where it is, and the H200 servers
    # alone make the level, one unit of 8 x $2,263 = $18,104 a server
    (level,) = cost_levels.region_levels(hand_program(1752.0004))
    assert level.unit == pytest.approx(18104.0)
    assert level.servers == {H200_SERVERS: 1}
    assert level.purchased == (H200,)


def test_a_rack_too_fine_for_the_unit_keeps_its_cost_and_the_servers_keep_their_level():
    lp = hand_program()
    rack, racks = "purchased[east,gb200]", "servers[east,gb200]"
    lp.add_variable(rack)
    lp.add_variable(racks, upper=4, integer=True)
    lp.add_constraint(
        "whole_servers[east,gb200]", "whole_servers", {rack: 1.0, racks: -72.0}, Sense.EQ, 0.0
    )
    lp.objective[rack] = 6205.37
    # a 72-GPU rack at $6,205.37 a GPU: 4,467,866.4 dollars = 44,678,664 cents; with the
    # servers' 1,401,600 and 1,810,400 cents the gcd is 8 cents (5,584,833 units a rack:
    # too fine); the pairs' gcds: the servers' 58,400 (a rack is no multiple of it), the
    # rack's with H100 24 cents, with H200 8 cents; the most offers a unit holds is the
    # servers' pair at $584, as without the rack, and the rack keeps its cost
    (level,) = cost_levels.region_levels(lp)
    assert level.unit == pytest.approx(584.0)
    assert level.servers == {H100_SERVERS: 24, H200_SERVERS: 31}
    assert set(level.purchased) == {H100, H200}
    levelled, _ = cost_levels.with_cost_levels(lp, None)
    assert levelled.objective == {"cost_level[east]": pytest.approx(584.0), rack: 6205.37}


def test_the_level_carries_the_cost_and_the_optimum_stays():
    lp, backend, exact = hand_program(), get_backend("highs"), SolveSettings(mip_gap=0.0)
    levelled, start = cost_levels.with_cost_levels(lp, {H100_SERVERS: 3.0, H100: 24.0})
    assert levelled.objective == {"cost_level[east]": pytest.approx(584.0)}
    row = levelled.constraints["cost_level[east]"]
    assert row.coefficients == {"cost_level[east]": 1.0, H100_SERVERS: -24.0, H200_SERVERS: -31.0}
    assert start["cost_level[east]"] == 72.0  # 3 H100 servers x 24 units
    assert "cost_level[east]" not in lp.variables  # the caller's program is left as it was
    # 20 GPUs: 3 H100 servers, $42,048 = 72 x $584, with or without the level; the LP
    # buys 2.5 H100 servers either way ($35,040 = 60 units): the root bound is the same
    for program in (lp, levelled):
        assert backend.run(program, exact).objective == pytest.approx(42048.0)
        relaxed = backend.run(with_bounds(program, {}, relax=True), exact)
        assert relaxed.objective == pytest.approx(35040.0)


def test_the_result_is_read_back_on_the_programs_columns_and_objective():
    lp = hand_program()
    # a level one unit above its least (73 for 72): $42,632 in the levelled program
    values = {H100: 24.0, H100_SERVERS: 3.0, H200: 0.0, H200_SERVERS: 0.0, "cost_level[east]": 73.0}
    result = SolveResult(Termination.OPTIMAL, "highs", "", 0.0, 42632.0, values, mip_gap=0.02)
    own = cost_levels.own_result(result, lp)
    assert "cost_level[east]" not in own.values
    assert own.objective == pytest.approx(24 * 1752.0)  # $42,048
    # the same proven bound, 42,632 x 0.98 = 41,779.36: gap (42,048 - 41,779.36) / 42,048
    assert own.bound == pytest.approx(42632.0 * 0.98)
    assert own.mip_gap == pytest.approx((42048.0 - 41779.36) / 42048.0)


tenths = st.integers(18, 45).map(lambda n: n / 10)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    east=st.floats(2.0, 14.0), west=st.floats(1.0, 8.0), prices=st.tuples(tenths, tenths, tenths)
)
def test_the_levels_never_move_the_optimum(east, west, prices):
    """Whole servers, one configuration per pool, region loss, two GPU types in east at
    prices in tenths of a dollar (a unit of 8 x 730 x $0.10 = $584 at most): the optimum
    with the levels is the optimum without them (both proved to a zero gap)."""
    h100_east, h200_east, h100_west = prices
    inst = instance(
        {
            "east": {"h100-sxm": (64, h100_east), "h200": (64, h200_east)},
            "west": {"h100-sxm": (64, h100_west)},
        },
        [workload("chat", {"east": east, "west": west}, max_failover_rtt_ms=80)],
        links=[("east", "west", 40)],
        survive="region",
        tensor_parallel=[1, 2, 4],
        pipeline_parallel=[1],
        policy={"buy_unit": "node", "max_configs_per_pool": 1},
    )
    lp = build_program(inst, build_candidates(inst)).lp
    levelled, _ = cost_levels.with_cost_levels(lp, None)
    assert {"cost_level[east]", "cost_level[west]"} <= set(levelled.variables)
    backend, exact = get_backend("highs"), SolveSettings(mip_gap=0.0)
    without, with_levels = backend.run(lp, exact), backend.run(levelled, exact)
    assert with_levels.objective == pytest.approx(without.objective, rel=1e-9)
    assert cost_levels.own_result(with_levels, lp).objective == pytest.approx(without.objective)
