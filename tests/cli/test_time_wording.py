"""What the terminal says an hourly or month plan's figures cover (issue 32): the idle
share per horizon, and each month's power where a region declares a cap."""

import json

from cli.render.html_report import report_html
from cli.render.plan_tables import plan_header
from cli.render.time_tables import month_power_table
from solver.plan.records import RegionPower
from solver.plan.schema import Plan
from solver.plan.time_records import Hour, Month
from tests.paths import INSTANCES


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
        ("m0", "40.8 of 51.0"),
        ("m1", "51.0 of 51.0 (-778.52 $/month per kW)"),
    )
    uncapped = Month(
        month=0, growth_factor=1.0, cost_per_month=0.0, power_kw=(RegionPower(region="w", kw=1.0),)
    )
    assert month_power_table(Plan(months=(uncapped,))) is None


def test_growth_horizon_with_a_power_cap_on_us_east_states_each_month_power(run_cli, tmp_path):
    """instances/growth-horizon.yaml over 2 months with us-east capped at two 8-GPU H100
    servers' power (2 x 8 x 0.700 kW x 10.2 / 5.6 x PUE 1.0 = 20.4 kW): every month states
    us-east within the cap, and the terminal shows the months' power table. (Over 3
    months it was 4.2 s of CPU; a second month is where a month after the first is read.)"""
    text = (INSTANCES / "growth-horizon.yaml").read_text(encoding="utf-8")
    text = text.replace(
        "  - name: us-east\n    utc_offset_hours: -5\n",
        "  - name: us-east\n    utc_offset_hours: -5\n    power_kw: 20.4\n",
    ).replace("horizon_months: 12", "horizon_months: 2")
    assert "power_kw: 20.4" in text
    instance, out = tmp_path / "growth-capped.yaml", tmp_path / "plan.json"
    instance.write_text(text, encoding="utf-8")
    result = run_cli("solve", instance, "--json", out)
    assert result.exit_code == 0, result.stderr
    assert "Months: power by region" in result.stdout and "of 20.4" in result.stdout
    plan = json.loads(out.read_text())
    assert [m["month"] for m in plan["months"]] == [0, 1]
    for month in plan["months"]:
        (east,) = [p for p in month["power_kw"] if p["region"] == "us-east"]
        assert east["limit_kw"] == 20.4 and east["kw"] <= 20.4 + 1e-9
        assert east["shadow_price_per_kw"] is not None
    (first,) = [p for p in plan["months"][0]["power_kw"] if p["region"] == "us-east"]
    (own,) = [p for p in plan["power_kw"] if p["region"] == "us-east"]
    assert first["limit_kw"] == own["limit_kw"] and first["kw"] <= own["kw"] + 1e-9


def test_the_html_report_places_month_power_in_its_months_section():
    rows = (RegionPower(region="east", kw=40.8, limit_kw=51.0, shadow_price_per_kw=0.0),)
    plan = Plan(months=(Month(month=0, growth_factor=1.0, cost_per_month=0.0, power_kw=rows),))
    page = report_html(["x: plan"], [month_power_table(plan)], plan, [])
    months = page[page.index("<h2>Months</h2>") :]
    assert "Months: power by region" in months and "40.8 of 51.0" in months
