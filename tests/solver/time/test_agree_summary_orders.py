"""The buyer's summary orders what an hourly plan commits, as the same instance planned
over a one-month horizon orders it (month 0's servers_ordered): GPUs rented on demand
by the hour are no order.

Before, the summary of an hourly plan listed its busiest hour's servers (plan.servers):
growth-horizon without its horizon read 'servers to order: 2 x 8-GPU h100-sxm servers
for us-east, order now' where it commits one server and rents the other at the peak, and
with horizon_months: 1 the same plan read '1 x 8-GPU ... order in month 0'.

Hand case (tests.solver.time.test_months): Llama 3.1 8B fp8 TP1, KV-limited (q(n) =
q(1)), a day of 16 trough hours at 2.625 q and 8 peak hours at 10.5 q, in whole 8-GPU
servers: a server committed all day costs 8 x 1.2 x 24 = $230.40, one rented for the 8
peak hours 8 x 2.0 x 8 = $128, so one server is committed and the peak's second rented."""

import pytest

from models.io.loading import validate_instance
from solver.solve import solve
from tests.solver.time.test_months import _data, _lone_rps


def _orders(horizon: int | None, unit: str):
    q = _lone_rps()
    data = _data(10.5 * q, 0.0, 0, horizon)
    data["policy"]["buy_unit"] = unit
    data["workloads"][0]["demand"]["r1"]["hourly_profile"] = [1] * 16 + [4] * 8
    if horizon is None:
        del data["policy"]["horizon_months"]
    plan = solve(validate_instance(data, f"orders-{unit}-{horizon}.yaml"))
    lines = [(o.region, o.gpu, o.servers, o.gpus_per_server) for o in plan.summary.orders]
    return plan, lines


@pytest.mark.parametrize("unit", ["node", "gpu"])
def test_an_hourly_plan_orders_what_its_one_month_horizon_orders(unit):
    plan, day = _orders(None, unit)
    _, month = _orders(1, unit)
    assert day == month
    (commitment,) = plan.committed
    if unit == "node":
        assert commitment.committed_gpus == 8  # one server committed, the peak's rented
        assert max(sum(g.used for g in h.gpus) for h in plan.hours) == 11  # ceil(10.5)
        assert day == [("r1", "h100-sxm", 1, 8)]  # read 2 servers (the busiest hour's)


def test_the_servers_table_of_an_hourly_plan_says_it_counts_the_busiest_hour():
    # beside the summary's order of one committed server, the table of the busiest
    # hour's two (one rented) read 'Servers to buy'
    from cli.render.plan_tables import BUSIEST_SERVERS, site_tables

    plan, _ = _orders(None, "node")
    (table, *_) = site_tables(plan)
    assert table.title == BUSIEST_SERVERS
    assert [row[2] for row in table.rows] == ["2"]  # ceil(11 / 8) servers at the peak
