"""The lever table names the base its savings are taken from where it is not the
explanation's $/month (cli.levers.lever_table)."""

from cli.levers import lever_table
from cli.render.plan_tables import plan_tables
from solver.plan.schema import Plan
from solver.plan.time_records import Month


def _month(month: int, cost: float) -> Month:
    return Month(month=month, growth_factor=1.0, cost_per_month=cost, status="optimal", mip_gap=0.0)


def test_a_horizons_lever_table_names_its_mean_month():
    """Months of $2,700, $2,850 and $3,000: the levers are ranked against their mean,
    (2,700 + 2,850 + 3,000) / 3 = $2,850/month, not month 0's $2,700 the header states."""
    months = (_month(0, 2700.0), _month(1, 2850.0), _month(2, 3000.0))
    plan = Plan(cost_per_month=2700.0, months=months, horizon_cost=8550.0)
    title = lever_table((), plan).title
    expected = "(saving against the horizon's mean month, $2,850/month)"
    assert title == f"Levers ranked by dollars {expected}"


def test_a_plan_without_months_keeps_the_plain_title():
    assert lever_table((), Plan(cost_per_month=2700.0)).title == "Levers ranked by dollars"
    assert lever_table(()).title == "Levers ranked by dollars"


def test_a_horizons_lever_table_says_its_gpus_are_month_0s():
    """A lever's GPUs are its plan's peak fleet, month 0's, beside a mean-month $/month."""
    months = (_month(0, 2700.0), _month(1, 3000.0))
    table = lever_table((), Plan(cost_per_month=2700.0, months=months, horizon_cost=5700.0))
    assert "GPUs (month 0)" in table.columns
    assert "GPUs" in lever_table((), Plan(cost_per_month=2700.0)).columns


def test_a_plan_of_months_titles_its_month_0_tables():
    """A 2-month plan (month 1 may add a GPU type): its tables of the peak fleet, the
    binding rows and the utilisation say they are month 0's; a plan of one month does not."""
    months = (_month(0, 2700.0), _month(1, 3000.0))
    titles = {t.title for t in plan_tables(Plan(cost_per_month=2700.0, months=months))}
    assert {"GPUs by region and type (month 0)", "Binding constraints (month 0)"} <= titles
    assert "Utilisation by scenario (month 0)" in titles
    plain = {t.title for t in plan_tables(Plan(cost_per_month=2700.0))}
    assert {"GPUs by region and type", "Binding constraints"} <= plain


def test_a_plan_of_months_titles_its_month_0_commitment_and_headroom():
    """The committed GPUs and the scaling thresholds of a plan of months are month 0's
    (each month states its own commitment in the months table): their titles say so."""
    from cli.render.time_tables import time_tables
    from solver.plan.time_records import Commitment, Hour, PoolHeadroom

    committed = Commitment(
        region="us-east",
        gpu="h100-sxm",
        committed_gpus=8.0,
        reserved_price_per_gpu_hour=1.44,
        on_demand_price_per_gpu_hour=2.40,
    )
    headroom = PoolHeadroom(
        workload="chat",
        region="us-east",
        configuration="h100-sxm.fp8.tp1pp1.unified",
        replica_start_s=120.0,
        lag_s=180.0,
        steepest_ramp_rps_per_minute=1.0,
        headroom_rps=3.0,
        headroom_replicas=1,
        capacity_rps_per_replica=4.0,
        peak_replicas=4,
        target_utilization=0.75,
        kv_usage_scale_out=0.6,
        queue_depth_scale_out=2.0,
        queue_depth_slo_edge=None,
    )
    parts = {"hours": (Hour(hour=0, period=0),), "committed": (committed,), "headroom": (headroom,)}
    months = (_month(0, 2700.0), _month(1, 3000.0))
    titles = {t.title for t in time_tables(Plan(cost_per_month=2700.0, months=months, **parts))}
    assert "Committed (reserved) GPUs (month 0)" in titles
    assert "Warm headroom and scaling thresholds per pool (month 0)" in titles
    plain = {t.title for t in time_tables(Plan(cost_per_month=2700.0, **parts))}
    assert {"Committed (reserved) GPUs", "Warm headroom and scaling thresholds per pool"} <= plain
