"""The measured error bands where decisions are made (issue 34): perf, plans, levers,
the policy switch `capacity_margin`."""

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
