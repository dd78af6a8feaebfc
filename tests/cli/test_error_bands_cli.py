"""The measured error bands where decisions are made (issue 34): perf, plans, levers,
the policy switch `capacity_margin`."""

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.app import app
from models.physics.efficiency import default_engine
from models.physics.error_bands import band

runner = CliRunner()


def test_perf_prints_the_band_under_its_figures() -> None:
    args = ["perf", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "-i", "1000", "-o", "200"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    expected = band(default_engine(), "dense", "max_throughput")
    assert f"model error on held-out rows: {expected.describe()}" in result.output


def test_a_bad_capacity_margin_exits_2_naming_the_field(tmp_path, run_cli) -> None:
    text = (Path(__file__).parents[2] / "instances" / "unified.yaml").read_text()
    for bad in ("maybe", "0.1", "[auto]"):
        path = tmp_path / "bad.yaml"
        path.write_text(text.replace("policy:\n", f"policy:\n  capacity_margin: {bad}\n", 1))
        result = run_cli("solve", path)
        assert result.exit_code == 2, result.stderr
        assert "policy.capacity_margin" in result.stderr
        assert "Traceback" not in result.stderr


def test_a_plan_carries_each_pools_band_and_the_tables_show_it() -> None:
    from cli.render.html_report import band_table, table_html
    from cli.render.plan_tables import plan_tables
    from models.physics import catalog
    from models.physics.error_bands import band_for
    from solver.solve import solve
    from tests import synthetic

    fleet = synthetic.instance(
        {"us": {"h100-sxm": (64, 2.4)}, "eu": {"gb200": (64, 2.4)}},
        [synthetic.workload("chat", {"us": 12.0, "eu": 6.0})],
    )
    plan = solve(fleet)
    llm = catalog.llm("llama-3.1-8b")
    for pool in plan.replicas:
        expected = band_for(None, pool.gpu, llm)
        got = pool.capacity_band
        assert (got.family, got.regime, got.rows, got.flag) == (
            expected.family,
            expected.regime,
            expected.rows,
            expected.flag,
        )
        assert got.p90 == round(expected.p90, 4)
        assert got.capacity_factor == 1.0  # capacity_margin: none
        assert got.uncertain is (pool.gpu == "gb200")  # gb200 borrows b200's factors
    tables = {t.title: t for t in plan_tables(plan)}
    us, eu = tables["us"], tables["eu"]
    column = us.columns.index("model error")
    assert column == us.columns.index("req/s per replica") + 1
    h100 = band_for(None, "h100-sxm", llm)
    assert us.rows[0][column] == f"{h100.p10:+.0%}/{h100.p90:+.0%}"
    assert eu.rows[0][column].endswith(("BORROWED", "borrowed"))
    assert h100.describe() in us.note
    html = table_html(band_table(plan))
    assert "OWN" in html and "BORROWED" in html


def test_perf_json_carries_the_band_the_terminal_prints() -> None:
    args = ["perf", "-m", "llama-3.1-8b", "-g", "h100-sxm", "-p", "fp8", "-i", "1000", "-o", "200"]
    printed = CliRunner().invoke(app, args)
    given = CliRunner().invoke(app, [*args, "--json", "-"])
    assert printed.exit_code == 0 and given.exit_code == 0
    (record,) = json.loads(given.stdout)["model_error"]
    measured = band(default_engine(), "dense", "max_throughput")
    assert record["regime"] == "max_throughput"
    assert (record["band"]["p10"], record["band"]["p90"]) == (measured.p10, measured.p90)
    assert f"model error on held-out rows: {record['text']}" in printed.stdout
