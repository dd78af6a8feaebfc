"""The measured error bands where decisions are made (issue 34): perf, plans, levers,
the policy switch `capacity_margin`."""

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
