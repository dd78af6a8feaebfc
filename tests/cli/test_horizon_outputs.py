"""Every feature in every output of an hourly or month plan: what the plan JSON holds,
the terminal, the HTML report and explain show too (they share cli.render.time_tables)."""

from cli.render.time_tables import time_tables
from solver.solve import solve
from tests.solver.time.test_spot_pools import _instance as spot_instance


def _table(tables, title_start):
    (table,) = [t for t in tables if t.title.startswith(title_start)]
    return table


def test_interactive_spot_pools_are_a_table_of_the_hours():
    """hours[].spot_pools was in the JSON only: the solve, report and explain tables had
    a spot GPU count per hour but not the replicas on spot, their down share or the
    margin the pool is sized without."""
    plan = solve(spot_instance(0.99))
    table = _table(time_tables(plan), "Spot replicas in interactive pools")
    # A flat day is one period: one run of hours 00-23 for the one pool.
    (row,) = table.rows
    hours, pool, on_spot, down_share, down_at_once = row
    assert hours == "00-23" and pool.startswith("chat@r1 h100-sxm")
    (spot,) = plan.hours[0].spot_pools
    assert on_spot == str(spot.replicas) and down_at_once == str(spot.down_replicas)
    # u = lambda T / (1 + lambda T): 0.5/h x (240 + 60) s = 1/24, u = 1/25 = 4.00%
    assert down_share == "4.00%"
