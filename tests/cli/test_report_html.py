"""`fleetplan report`: one self-contained HTML file whose charts render in a real browser
(headless Chromium from the OS packages, driven by Playwright; no browser download)."""

import re
import shutil

import pytest

from tests.paths import INSTANCES

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
