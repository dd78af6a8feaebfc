"""A sweep over a plan of months states what solve states: month 0's $/month and the
cost over the horizon. Before, a point's record and the cost surface held month 0's
$/month alone, so a sweep of monthly_growth 0.0 / 0.06 / 0.2 on a 4-month horizon read
$26,163 at every point where solve says $104,653 / $106,405 / $142,301 over the 4 months.

Hand case (tests.solver.time.test_months): Llama 3.1 8B fp8 TP1, KV-limited (q(n) =
q(1)), a flat day, reserved 1.2 vs on demand 2.0 $/GPU-hour, no lead time: month m
needs ceil(rate (1 + g)^m / q) GPUs, committed all day, so the horizon costs
sum_m ceil(rate (1 + g)^m / q) x 1.2 x 730."""

import math

from cli.sweep import _surface
from models.io.loading import validate_instance
from models.schema.sweep_grid import Point
from solver.studies.sweep import solve_point
from tests.solver.time.test_months import HOURS_PER_MONTH, RESERVED, _data, _lone_rps


class _Grid:
    axes = ("policy.monthly_growth",)

    def __init__(self, growths):
        self.points = [
            Point(index=i, values=(("policy.monthly_growth", g),)) for i, g in enumerate(growths)
        ]


def test_a_sweep_point_of_months_states_its_horizon_cost_as_solve_does():
    q = _lone_rps()
    rate, horizon = 3.5 * q, 3
    records = {}
    for index, growth in enumerate((0.0, 0.3)):
        inst = validate_instance(_data(rate, growth, 0, horizon), "months.yaml")
        record = solve_point(inst)
        gpus = [math.ceil(rate * (1 + growth) ** m / q - 1e-9) for m in range(horizon)]
        by_hand = sum(gpus) * RESERVED * HOURS_PER_MONTH
        assert record["cost_per_month"] == gpus[0] * RESERVED * HOURS_PER_MONTH
        assert abs(record["horizon_cost"] - by_hand) <= 1e-6 * by_hand
        records[index] = record
    # growth 0.3 over 3 months: 4, 5, 6 GPUs where growth 0 keeps 4: the same month 0
    assert records[0]["cost_per_month"] == records[1]["cost_per_month"]
    assert records[0]["horizon_cost"] < records[1]["horizon_cost"]
    table = _surface(_Grid((0.0, 0.3)), records)
    column = table.columns.index("horizon $")
    assert [row[column] for row in table.rows] == [
        f"${records[i]['horizon_cost']:,.0f}" for i in (0, 1)
    ]


class _TwoAxes:
    axes = ("policy.monthly_growth", "policy.lead_time_months")

    def __init__(self):
        values = [(g, lead) for g in (0.0, 0.3) for lead in (0, 2)]
        self.points = [
            Point(
                index=i,
                values=(("policy.monthly_growth", g), ("policy.lead_time_months", lead)),
            )
            for i, (g, lead) in enumerate(values)
        ]


def test_the_two_axis_matrix_of_months_reads_their_horizon_cost():
    """The matrix of a growth x lead-time sweep read month 0's $/month, the same in every
    cell (month 0 grows by (1 + g)^0 = 1 and its orders come before the horizon), beside a
    surface and a robust choice that read the horizon. Records as the hand case's:
    4 GPUs x 1.2 x 730 = $3,504 in month 0; over 3 months 4 + 4 + 4 = 12 GPU-months at
    growth 0 ($10,512), 4 + 5 + 6 = 15 at growth 0.3 ($13,140)."""
    from cli.sweep import _matrix

    month0 = 4 * RESERVED * HOURS_PER_MONTH
    horizons = [12 * RESERVED * HOURS_PER_MONTH] * 2 + [15 * RESERVED * HOURS_PER_MONTH] * 2
    records = {
        i: {"status": "solved", "cost_per_month": month0, "horizon_cost": h}
        for i, h in enumerate(horizons)
    }
    (table,) = _matrix(_TwoAxes(), records)
    assert table.title.startswith("horizon $:")
    assert table.rows == (("0.0", "$10,512", "$10,512"), ("0.3", "$13,140", "$13,140"))
    # a grid of one-month plans keeps its $/month
    static = {i: {"status": "solved", "cost_per_month": month0} for i in range(4)}
    (table,) = _matrix(_TwoAxes(), static)
    assert table.title.startswith("$/month:") and table.rows[0][1] == "$3,504"
