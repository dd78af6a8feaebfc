"""Every feature in every output of an hourly or month plan: what the plan JSON holds,
the terminal, the HTML report and explain show too (they share cli.render.time_tables)."""

import pytest

from cli.render import html_report
from cli.render.plan_tables import plan_header, tiering_tables
from cli.render.time_tables import time_tables
from models.io.loading import validate_instance
from solver.analysis import report_data
from solver.deploy.manifests import FAILOVER_START_ANNOTATION, kubernetes_objects
from solver.deploy.pools import deploy_pools
from solver.solve import solve
from tests.paths import ONE_MODEL_ONE_REGION
from tests.solved_once import hourly_groups_plan
from tests.solver.time.test_failover_start import _instance as failover_instance
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


VOICE_SLO = (
    "    slo: {first_audio_ms: 800}\n"
    "    voice: {network_rtt_ms: 60, endpointing_ms: 300, asr_ms: 40, tts_first_audio_ms: 180,"
    " first_clause_tokens: 10}\n"
)


@pytest.fixture
def no_charts(monkeypatch):
    """The report without its matplotlib figures (seconds each): its tables are under test."""
    for name in ("cost_split_svg", "utilisation_svg", "roofline_svg", "hockey_svg",
                 "frontier_svg", "day_svg"):  # fmt: skip
        monkeypatch.setattr(html_report, name, lambda *_: "<svg/>")
    monkeypatch.setattr(report_data, "chart_data", lambda *_: [])


def test_the_report_carries_the_voice_budget(run_cli, tmp_path, no_charts):
    """solve and explain printed each voice workload's budget; the report left it out."""
    text = ONE_MODEL_ONE_REGION.read_text().replace(
        "    slo: {ttft_p99_ms: 800, tpot_p99_ms: 50}\n", VOICE_SLO
    )
    instance = tmp_path / "voice.yaml"
    instance.write_text(text)
    report = tmp_path / "report.html"
    result = run_cli("report", instance, "-o", report)
    assert result.exit_code == 0, result.stderr
    html = report.read_text()
    assert "Voice latency budget, chat" in html
    # The LLM's TTFT: half of what the lines leave, (800 - 60 - 300 - 40 - 180) / 2 ms.
    assert "<td>110.0</td>" in html


def test_deploy_writes_the_spare_an_hourly_plan_starts_after_a_loss():
    """An hourly plan's spare started after a loss (hours[].failover_starts) is not in
    its replicas: deploy wrote no spare object for it, and the HPA, capped at the pool's
    count, could not grow the survivor either (r2's one replica: maxReplicas 1 where
    losing r1 starts two more)."""
    instance = failover_instance(start_s=0)  # every spare started, none kept warm
    plan = solve(instance)
    started: dict[str, int] = {}  # one pool per region here
    for hour in plan.hours:
        for start in hour.failover_starts:
            region = start.pool.region
            started[region] = max(started.get(region, 0), start.pool.count)
    assert set(started) == {"r1", "r2"}  # each loss starts replicas in the other region
    pools = deploy_pools(instance, plan)
    objects = {o["metadata"]["name"]: o for o in kubernetes_objects(pools)}
    for pool in pools:
        spare = objects[f"{pool.name}-spare"]
        assert spare["metadata"]["labels"]["fleetplan.io/spare"] == "true"
        annotations = spare["metadata"]["annotations"]
        assert annotations[FAILOVER_START_ANNOTATION] == str(started[pool.region])
        assert spare["spec"]["replicas"] == pool.spare_replicas  # the warm part


def test_an_hourly_plan_with_groups_carries_its_tiering_report(tmp_path_factory):
    """The static plan of co-located workloads states who shares and who pays the bills
    (plan.tiering, plan.colocation, the 'Tiering' table); the hourly plan of the same
    groups had neither (JSON tiering: null, no table in solve, explain or the report)."""
    _, plan = hourly_groups_plan(tmp_path_factory)  # solved once a run
    shared = {w for p in plan.replicas if p.members for w in p.workloads}
    assert shared  # the groups run
    assert plan.tiering is not None
    tiers = {row.workload: row.tier for row in plan.tiering.workloads}
    assert {w for w, tier in tiers.items() if tier in ("shared", "both")} == shared
    assert plan.tiering.cost_per_month_dedicated is None  # not solved twice
    (table,) = tiering_tables(plan)
    assert "idle over the day" in table.note and "not solved without it" in table.note


def test_each_month_states_its_error_budget_at_its_own_demand():
    """A region loss spends the monthly budget at each month's demand; only month 0's
    was stated (plan.error_budget_minutes_used), the later months' nowhere, though the
    verifier checks each. Two regions (60 + 40 req/s, flat), 99.9%, a 300 s start, 50%
    growth a month over 2 months."""
    data = failover_instance(start_s=300).model_dump(mode="json", exclude_unset=True)
    data["policy"].update(horizon_months=2, monthly_growth=0.5, lead_time_months=0)
    plan = solve(validate_instance(data, "months-budget.yaml"))
    later = plan.months[1].error_budget_minutes_used
    assert {b.scenario for b in later} == {"lose=r1", "lose=r2"}
    for b in later:
        # budget: (1 - 0.999) x 730 h x 60 min; spent: the shortfall for 300 s counted
        # as minutes of full outage at month 1's mean rate, 1.5 x (60 + 40) req/s
        assert b.budget_minutes == pytest.approx(0.001 * 730 * 60)
        assert b.budget_minutes_used == pytest.approx(b.shortfall_rps * 300 / 150 / 60)
    table = _table(time_tables(plan), "Months: error budget")
    assert {row[0] for row in table.rows} == {"0", "1"}
    assert [row[5] for row in table.rows if row[0] == "1"] == [
        f"{b.budget_minutes_used:.2f}" for b in later
    ]


def test_an_hourly_plan_states_the_growth_and_headroom_it_was_planned_for():
    """demand_growth and policy.max_utilization shape the hourly program as they shape a
    static one, but the hourly plan read 1.0 and 1.0 (JSON) and dropped the header line
    'planned for 1.3x today's demand, pools at most 80% ...' that a static plan prints."""
    data = spot_instance().model_dump(mode="json", exclude_unset=True)
    data["demand_growth"] = 1.3
    data["policy"]["max_utilization"] = 0.8
    plan = solve(validate_instance(data, "growth-headroom.yaml"))
    assert plan.hours and (plan.demand_growth, plan.max_utilization) == (1.3, 0.8)
    assert "planned for 1.3x today's demand, pools at most 80%" in " ".join(plan_header(plan))
    for hour in plan.hours:  # every pool at most 80% loaded, at 1.3 x 600 req/s
        for scenario in hour.scenarios:
            assert sum(p.load_requests_per_s for p in scenario.pools) == pytest.approx(780)
            assert all(p.utilisation <= 0.8 + 1e-9 for p in scenario.pools)
