"""The latency-vs-load chart gives each unit its own axis: a 50 ms TPOT target under a
2,500 ms TTFT axis would lie flat on zero (issue 35)."""

import pytest

from cli.render import html_report
from solver.analysis.report_data import ConfigCharts


@pytest.fixture(autouse=True)
def _matplotlib():
    """Skip without matplotlib; asked per test, so that collecting the module (every
    pytest-xdist worker does) does not import it (0.4 s)."""
    pytest.importorskip("matplotlib")


TTFT_TARGET_MS = 2500.0
TPOT_TARGET_MS = 50.0


def _charts() -> ConfigCharts:
    rates = [0.0, 1.0, 2.0, 3.0]
    return ConfigCharts(
        title="chat on h100-sxm",
        role="unified",
        peak_flops_per_s=1e15,
        hbm_bytes_per_s=3.35e12,
        rates_per_replica=rates,
        ttft_p99_ms=[400.0, 600.0, 1500.0, float("inf")],
        tpot_p99_ms=[20.0, 25.0, 35.0, float("inf")],
        operating_rate=2.0,
        ttft_target_ms=TTFT_TARGET_MS,
        tpot_target_ms=TPOT_TARGET_MS,
    )


@pytest.fixture
def hockey_axes(monkeypatch):
    """The axes of the latency chart `hockey_svg` draws (the figure caught before SVG)."""
    drawn = []
    monkeypatch.setattr(html_report, "_svg", lambda figure: drawn.append(figure) or "<svg/>")
    html_report.hockey_svg(_charts())
    (figure,) = drawn
    return figure.axes


def _slo_lines(axes) -> dict[str, float]:
    return {
        line.get_label(): float(line.get_ydata()[0])
        for line in axes.get_lines()
        if line.get_label().endswith("SLO")
    }


def test_each_slo_line_sits_visibly_inside_its_own_axis(hockey_axes):
    # axis top = 2.5 x max(target, zero-load p99): TTFT 2.5 x 2500 = 6250 ms, target at
    # 40% of the height; TPOT 2.5 x 50 = 125 ms, target at 40%. On one shared axis the
    # TPOT line would sit at 50 / 6250 = 0.8% of the height: under the x axis's ink.
    seen = {}
    for axes in hockey_axes:
        bottom, top = axes.get_ylim()
        for label, y in _slo_lines(axes).items():
            seen[label] = top
            assert bottom <= y <= top
            assert 0.1 <= (y - bottom) / (top - bottom) <= 0.9, (label, y, top)
    assert seen == pytest.approx(
        {"TTFT SLO": 2.5 * TTFT_TARGET_MS, "TPOT SLO": 2.5 * TPOT_TARGET_MS}
    )


def test_ttft_and_tpot_never_share_an_axis(hockey_axes):
    for axes in hockey_axes:
        labels = {line.get_label() for line in axes.get_lines()}
        assert not ({"p99 TTFT", "TTFT SLO"} & labels and {"p99 TPOT", "TPOT SLO"} & labels)


@pytest.mark.parametrize(
    ("values", "target", "top"),
    [
        ([400.0, float("inf")], 2500.0, 6250.0),  # target above the zero-load point
        ([80.0, 90.0], 50.0, 200.0),  # zero-load above the target: 2.5 x 80
        ([float("inf")], None, 1.0),  # nothing finite, no target
    ],
)
def test_latency_axis_top(values, target, top):
    assert html_report.latency_axis_top(values, target) == pytest.approx(top)
