"""`perf --kv-tiers` defaults host DRAM and NVMe to the catalog's server (issue 35):
without the flags it used to list HBM alone; the flags still override, and the output
names where each figure came from."""

import json

import pytest

from models.physics import catalog
from models.physics.hardware import SERVER_TIER_FIELDS

PERF_8B = ["perf", "-g", "h100-sxm", "-m", "llama-3.1-8b", "-p", "fp8", "-i", "4000", "-o", "300"]
# Llama 3.1 8B, fp8 KV: 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 1 byte = 65,536 B/token
KV_BYTES_8B = 2 * 32 * 8 * 128 * 1
GIB = 2**30


def _tiers(run_cli, *flags):
    result = run_cli(*PERF_8B, "--kv-tiers", *flags, "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    return {row["tier"]: row for row in data["kv_tiers"]}, data["kv_tier_figures"]


def test_kv_tiers_default_to_the_dgx_h100_host_memory(run_cli):
    tiers, figures = _tiers(run_cli)
    # DGX H100: 2 TB DDR5 = 2048 GiB over 8 GPUs = 256 GiB per GPU, one GPU here:
    # 256 x 2^30 / 65,536 = 4,194,304 tokens; fetched over PCIe 5 x16 at 64 GB/s:
    # 1,000 x 65,536 / 64e9 s = 1.024 ms per 1K tokens.
    assert tiers["dram"]["capacity_tokens"] == pytest.approx(256 * GIB / KV_BYTES_8B)
    assert tiers["dram"]["capacity_tokens"] == pytest.approx(4_194_304)
    assert tiers["dram"]["fetch_ms_per_1k_tokens"] == pytest.approx(1.024)
    assert "--host-memory-gib-per-gpu 256 (catalog: NVIDIA DGX H100)" in figures
    # no sourced read bandwidth for the DGX data drives: no SSD tier, and the line says so
    assert "ssd" not in tiers
    assert "--nvme-gb-s-per-node none (not catalogued: give it)" in figures


def test_kv_tier_flags_override_the_catalog_server(run_cli):
    tiers, figures = _tiers(
        run_cli, "--host-memory-gib-per-gpu", "64", "--nvme-gb-s-per-node", "25"
    )
    # 64 x 2^30 / 65,536 = 1,048,576 tokens; NVMe 30.72 TB (catalog) x 1 GPU / 8 per node
    # = 3.84e12 B / 65,536 = 58,593,750 tokens
    assert tiers["dram"]["capacity_tokens"] == pytest.approx(1_048_576)
    assert tiers["ssd"]["capacity_tokens"] == pytest.approx(30.72e12 / 8 / KV_BYTES_8B)
    assert "--host-memory-gib-per-gpu 64 (given)" in figures
    assert "--nvme-tb-per-node 30.72 (catalog: NVIDIA DGX H100)" in figures
    assert "--nvme-gb-s-per-node 25 (given)" in figures


def test_a_gpu_without_a_catalogued_server_keeps_hbm_alone(run_cli):
    result = run_cli(
        "perf", "-g", "a100-80gb-sxm", "-m", "llama-3.1-8b", "-i", "4000", "-o", "300",
        "--kv-tiers", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert [row["tier"] for row in data["kv_tiers"]] == ["hbm"]
    assert "--host-memory-gib-per-gpu none (not catalogued: give it)" in data["kv_tier_figures"]


@pytest.mark.parametrize("name", sorted(catalog.gpu_catalog()))
def test_every_server_figure_is_sourced(name):
    gpu = catalog.gpu_catalog()[name]
    figures = [f"server_{field}" for field in SERVER_TIER_FIELDS]
    given = [field for field in figures if getattr(gpu, field) is not None]
    assert (gpu.server is None) == (not given)
    for field in ["server", *given] if given else []:
        assert gpu.sources.get(field), f"{name}.{field} has no source"


def test_with_server_tiers_fills_only_unset_fields():
    gpu = catalog.gpu("b200").model_copy(update={"host_memory_gib_per_gpu": 32.0})
    filled, taken = gpu.with_server_tiers()
    assert taken == ("nvme_tb_per_node",)
    assert filled.host_memory_gib_per_gpu == 32.0
    assert filled.nvme_tb_per_node == 8 * 3.84
