"""Rates a figure divides by, given as 1e-300: refused at their floor, naming the field."""

import pytest

from tests.paths import INSTANCES


def test_an_nvme_bandwidth_of_nothing_is_refused_on_perf(run_cli):
    # fetch ms per 1K tokens = bytes / bandwidth: at 1e-300 GB/s a 300-digit figure, exit 0
    result = run_cli(
        "perf", "-m", "llama-3.1-8b", "--gpu", "h100-sxm", "-i", "1000", "-o", "200",
        "--kv-tiers", "--nvme-gb-s-per-node", "1e-300",
    )  # fmt: skip
    assert result.exit_code == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert "--nvme-gb-s-per-node: must be at least 0.1 GB/s" in result.stderr


@pytest.mark.parametrize(("value", "code"), [("1e-300", 2), ("0.1", 0)])
def test_an_instance_nvme_bandwidth_is_held_to_the_floor(run_cli, tmp_path, value, code):
    text = (INSTANCES / "kv-tiers-doc-qa.yaml").read_text()
    assert "nvme_gb_s_per_node: 25\n" in text
    path = tmp_path / "kv.yaml"
    path.write_text(text.replace("nvme_gb_s_per_node: 25\n", f"nvme_gb_s_per_node: {value}\n"))
    result = run_cli("validate", str(path))
    assert result.exit_code == code, result.stderr
    assert "Traceback" not in result.stderr
    if code:
        assert "gpus[0].nvme_gb_s_per_node: must be at least 0.1 GB/s" in result.stderr


@pytest.mark.parametrize(("share", "code"), [("1e-300", 2), ("0.009", 2), ("0.01", 0)])
def test_a_ttft_share_of_nothing_is_refused(run_cli, share, code):
    # 800 - 200 ms endpointing = 600 ms left; 1e-300 of it read 'TTFT p99 0.0 ms', exit 0
    result = run_cli(
        "voice", "--first-audio-ms", "800", "--endpointing-ms", "200", "--ttft-share", share
    )
    assert result.exit_code == code, result.stderr
    assert "Traceback" not in result.stderr
    if code:
        assert "--ttft-share: must be at least 0.01" in result.stderr
