"""The hours table tells how each hour's GPUs are held: owned, reserved, rented on demand
and on spot add up to the GPUs in use (on demand rounded up to whole servers).

Before, the table had no owned column and its title said 'GPUs paid reserved / on
demand / spot': with 9 owned GPUs in a 16-GPU hour it read 16 GPUs, 7 reserved, 0 on
demand, 0 spot (the owned 9 nowhere), where 16 reserved GPUs are paid every hour.

Hand case (tests.solver.time.test_months): 8B fp8 TP1, KV-limited, a flat day, 10.5 q
of load: 11 GPUs every hour; 4 owned, so 7 committed (reserved 1.2 < on demand 2.0 for
a GPU busy all day), none rented: 4 + 7 + 0 + 0 = 11."""

import math

from cli.render.time_tables import time_tables
from models.io.loading import validate_instance
from solver.solve import solve
from tests.solver.time.test_months import _data, _lone_rps


def test_owned_reserved_on_demand_and_spot_add_up_to_the_gpus():
    data = _data(10.5 * _lone_rps(), 0.0, 0, 2)
    data["regions"][0]["existing"] = {"h100-sxm": 4}
    plan = solve(validate_instance(data, "owned.yaml"))
    table = time_tables(plan)[0]
    columns = table.columns
    for row in table.rows:
        gpus, owned, reserved, on_demand, spot = (
            float(row[columns.index(name)])
            for name in ("GPUs", "owned", "reserved", "on demand", "spot")
        )
        assert (gpus, owned, reserved, on_demand, spot) == (math.ceil(10.5), 4, 7, 0, 0)
