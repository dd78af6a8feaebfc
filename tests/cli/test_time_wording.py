"""What the terminal says an hourly or month plan's figures cover (issue 32): the idle
share per horizon, and each month's power where a region declares a cap."""

from cli.render.plan_tables import plan_header
from cli.render.time_tables import month_power_table
from solver.plan.records import RegionPower
from solver.plan.schema import Plan
from solver.plan.time_records import Hour, Month


def _idle_line(plan: Plan) -> str:
    return next(line for line in plan_header(plan) if line.startswith("idle"))


def test_the_idle_share_says_what_it_covers_in_each_horizon():
    hours = tuple(Hour(hour=h, period=0) for h in range(24))
    static = Plan(idle_fraction=0.25)
    hourly = Plan(idle_fraction=0.25, hours=hours)
    months = Plan(
        idle_fraction=0.25,
        hours=hours,
        months=(Month(month=0, growth_factor=1.0, cost_per_month=0.0, idle_fraction=0.25),),
    )
    assert _idle_line(static) == "idle at peak: 25.0% of the GPU-hours paid"
    assert _idle_line(hourly) == "idle over the day: 25.0% of the GPU-hours paid"
    assert _idle_line(months) == (
        "idle over month 0's day: 25.0% of the GPU-hours paid; each month's in the months table"
    )


def test_month_power_shows_capped_regions_only_with_the_price_where_it_binds():
    def month(m: int, kw: float, price: float) -> Month:
        rows = (
            RegionPower(region="east", kw=kw, limit_kw=51.0, shadow_price_per_kw=price),
            RegionPower(region="west", kw=10.2),  # no cap: not shown
        )
        return Month(month=m, growth_factor=1.0, cost_per_month=0.0, power_kw=rows)

    table = month_power_table(Plan(months=(month(0, 40.8, 0.0), month(1, 51.0, -778.52))))
    assert table is not None and table.columns == ("month", "east")
    assert table.rows == (
        ("m0", "40.8 of 51"),
        ("m1", "51.0 of 51 (-778.52 $/month per kW)"),
    )
    uncapped = Month(
        month=0, growth_factor=1.0, cost_per_month=0.0, power_kw=(RegionPower(region="w", kw=1.0),)
    )
    assert month_power_table(Plan(months=(uncapped,))) is None
