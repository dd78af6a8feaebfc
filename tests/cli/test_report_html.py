"""`fleetplan report`: one self-contained HTML file whose charts render in a real browser
(headless Chromium from the OS packages, driven by Playwright; no browser download)."""

import json
import re
import shutil

import pytest

from models.schema.traffic import HOURS_PER_DAY
from tests.paths import INSTANCES
from tests.solved_once import GROWTH_HORIZON_MONTHS, growth_horizon_2_months

CHARTS_PER_CONFIGURATION = 3  # roofline, latency vs load, frontier (unified pools)
PAGE_CHARTS = 2  # cost split, utilisation heat map


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    from typer.testing import CliRunner

    from cli.app import app

    out = tmp_path_factory.mktemp("report") / "report.html"
    result = CliRunner().invoke(app, ["report", str(INSTANCES / "unified.yaml"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_report_is_self_contained(report_file):
    text = report_file.read_text(encoding="utf-8")
    assert "<script" not in text  # nothing to run, nothing to fetch
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)
    assert text.count('<figure class="chart"') == PAGE_CHARTS + CHARTS_PER_CONFIGURATION
    assert "Cost attribution" in text and "Binding constraints" in text


def _browser() -> str:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("playwright is not installed: pip install -e '.[browser]' (make test does)")
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(
        "no Chromium on PATH: apt-get install chromium (make test does it as root where "
        "apt-get exists)"
    )


def test_charts_render_in_a_real_browser(report_file):
    executable = _browser()
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(report_file.as_uri())
            boxes = page.evaluate(
                """Array.from(document.querySelectorAll('figure.chart svg')).map(svg => {
                    const box = svg.getBoundingClientRect();
                    return [box.width, box.height, svg.querySelectorAll('path').length];
                })"""
            )
        finally:
            browser.close()
    assert errors == []
    assert len(boxes) == PAGE_CHARTS + CHARTS_PER_CONFIGURATION
    for width, height, paths in boxes:
        assert width > 100 and height > 100
        assert paths > 10  # axes, ticks, glyphs and data: a drawn chart, not an empty frame


HORIZON_MONTHS = GROWTH_HORIZON_MONTHS
"""instances/growth-horizon.yaml cut to 2 of its 12 months (policy.horizon_months): the
report's sections and tables are the same for any number of months (a row a month and the
horizon's total), and 12 months took twice the CPU of 3 (12 s against 6 s) for nine more
rows of the one table; 2 months take 5.1 s against 3's 6.6 s. Month 1 still differs from
month 0 (it keeps month 0's commitment, ordered two months ahead, and rents its growth)."""


@pytest.fixture(scope="module")
def horizon_report(tmp_path_factory):
    """The report of an hourly plan over HORIZON_MONTHS months."""
    from typer.testing import CliRunner

    from cli.app import app

    out = tmp_path_factory.mktemp("report") / "horizon.html"
    path = str(INSTANCES / "growth-horizon.yaml")
    months = f"policy.horizon_months={HORIZON_MONTHS}"
    # the run's solve of it (tests.solved_once; the hour verifier's tests read it too)
    plan = out.with_name("plan.json")
    plan.write_text(json.dumps(growth_horizon_2_months(tmp_path_factory)[1]))
    args = ["report", path, "--plan", str(plan), "-o", str(out), "--set", months]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def _section(text: str, heading: str) -> str:
    """The HTML between an <h2> heading and the next one."""
    start = text.index(f"<h2>{heading}</h2>") + len(f"<h2>{heading}</h2>")
    end = text.find("<h2>", start)
    return text[start : end if end >= 0 else len(text)]


def test_the_horizon_report_leads_with_the_summary_then_the_day_and_the_months(horizon_report):
    text = horizon_report.read_text(encoding="utf-8")
    order = [
        text.index(h) for h in ("<h3>Summary</h3>", "<h2>The day (UTC)</h2>", "<h2>Months</h2>")
    ]
    assert order == sorted(order)
    assert text.count('data-chart="day"') == 1
    months = _section(text, "Months")
    assert "Months by region ($)" in months
    # one row per month and the horizon's total
    assert months.count("<tr><td>m") == HORIZON_MONTHS and "<td>horizon</td>" in months
    # the cost split is month 0's, and its heading says so (the months state the horizon)
    for heading in ("Reservations and servers", "Power", "Cost split (month 0)"):
        assert "<table>" in _section(text, heading), heading  # never a heading alone
    assert "<h2>Chosen configurations (month 0)</h2>" in text
    assert "<h3>Cost attribution (month 0)</h3>" in _section(text, "Cost split (month 0)")


def test_the_static_report_has_no_empty_cost_split(report_file):
    text = report_file.read_text(encoding="utf-8")
    assert '<figure class="chart" data-chart="cost split"' in _section(text, "Cost split")


def test_the_horizon_report_renders_in_a_real_browser(horizon_report):
    executable = _browser()
    from playwright.sync_api import sync_playwright

    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(horizon_report.as_uri())
            day = page.evaluate(
                """(() => {
                    const svg = document.querySelector('figure[data-chart="day"] svg');
                    const box = svg.getBoundingClientRect();
                    return [box.width, box.height, svg.querySelectorAll('path').length];
                })()"""
            )
            months = page.evaluate(
                """Array.from(document.querySelectorAll('h3')).filter(
                    h => h.textContent.startsWith('Months by region'))
                    .map(h => {
                        const rows = h.nextElementSibling.querySelectorAll('tbody tr');
                        const box = h.nextElementSibling.getBoundingClientRect();
                        return [rows.length, box.height];
                    })"""
            )
        finally:
            browser.close()
    assert errors == []
    width, height, paths = day
    assert width > 300 and height > 100
    assert paths > HOURS_PER_DAY  # at least one bar or step segment an hour, axes apart
    ((rows, table_height),) = months
    assert rows == HORIZON_MONTHS + 1 and table_height > 100
