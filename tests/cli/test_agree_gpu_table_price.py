"""The GPU table's price column says which price it is: an hourly plan's $/month is the
bill as its hours pay it (committed GPUs at the reserved price), not the list price the
column shows. diurnal-chat-batch's table read '$/GPU-h 2.40' beside '$/month 16,819' for
us-east's 16 H100, all reserved: 16 x 2.40 x 730 = 28,032, where 16,819 is 16 x 1.44 x 730.

Hand case: tests/solver/time/test_whole_servers.py's r1 day at P = 11.7 q: one 8-GPU
server reserved at $1.2/GPU-h all day and one rented at $2.0 for the 12 peak hours."""

import pytest

from cli.render.plan_tables import plan_tables
from solver.solve import solve
from tests.solver.time.test_whole_servers import DAYS, ON_DEMAND, RESERVED, _instance, _lone_rps


def _gpu_table(plan):
    (table,) = [t for t in plan_tables(plan) if t.title.startswith("GPUs by region and type")]
    return table


def test_an_hourly_plans_price_column_is_the_on_demand_price_beside_the_bill():
    plan = solve(_instance({"r1": 11.7 * _lone_rps()}))
    table = _gpu_table(plan)
    assert table.columns[6] == "on-demand $/GPU-h"
    (row,) = table.rows
    assert row[4] == "16" and row[6] == f"{ON_DEMAND:.2f}"  # two servers at the peak
    bill = DAYS * (24 * 8 * RESERVED + 12 * 8 * ON_DEMAND)  # 422.4 $/day
    assert row[7] == f"{bill:,.0f}"
    assert float(row[7].replace(",", "")) < 16 * ON_DEMAND * 730  # not bought x list price
    assert "the bill as the hours pay it" in table.note


def test_a_static_plans_price_column_reads_as_before():
    plan = solve(_instance({"r1": 11.7 * _lone_rps()}, profile=None, reserved=()))
    table = _gpu_table(plan)
    assert table.columns[6] == "$/GPU-h"
    (row,) = table.rows
    assert row[7] == f"{16 * ON_DEMAND * 730:,.0f}"  # 16 bought x $2.0 x 730 h
    assert table.note == f"total ${plan.cost_per_month:,.0f}/month"
    assert plan.cost_per_month == pytest.approx(16 * ON_DEMAND * 730)
