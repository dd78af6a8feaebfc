"""An instance GPU takes its catalogued server's host DRAM and NVMe as KV tiers only when
it asks (`kv_tiers_from_server: true`): the shipped instances hold KV in HBM alone unless
they declare tiers (issue 35), and a declared figure still wins."""

import pytest

from models.io.loading import load_instance
from models.physics.kv_tiers import TierName
from solver.solve import solve
from solver.verify.fleet import verify
from tests.paths import INSTANCES
from tests.synthetic import with_policy

SOURCE = INSTANCES / "prefix-affinity-doc-qa.yaml"
HBM_ONLY = "gpus:\n  - name: h100-sxm\n"


def _instance(tmp_path, gpu_lines: str):
    text = SOURCE.read_text()
    assert HBM_ONLY in text
    path = tmp_path / "doc-qa.yaml"
    path.write_text(text.replace(HBM_ONLY, "gpus:\n  - name: h100-sxm\n" + gpu_lines))
    return load_instance(path)


def test_without_the_opt_in_the_gpu_has_no_tiers():
    gpu = load_instance(SOURCE).gpu_specs["h100-sxm"]
    assert gpu.host_memory_gib_per_gpu is None and gpu.nvme_tb_per_node is None


def test_the_opt_in_takes_the_dgx_h100_figures(tmp_path):
    gpu = _instance(tmp_path, "    kv_tiers_from_server: true\n").gpu_specs["h100-sxm"]
    # DGX H100: 2 TB / 8 GPUs = 256 GiB per GPU; 8 x 3.84 TB = 30.72 TB per node
    assert gpu.host_memory_gib_per_gpu == 256
    assert gpu.nvme_tb_per_node == pytest.approx(30.72)
    assert gpu.nvme_gb_s_per_node is None  # no sourced figure: no SSD tier


def test_a_declared_figure_beats_the_server(tmp_path):
    lines = "    kv_tiers_from_server: true\n    host_memory_gib_per_gpu: 64\n"
    gpu = _instance(tmp_path, lines).gpu_specs["h100-sxm"]
    assert gpu.host_memory_gib_per_gpu == 64
    assert gpu.nvme_tb_per_node == pytest.approx(30.72)


def test_server_tiers_add_a_dram_tier_and_never_raise_the_cost(tmp_path):
    """Random routing (no affinity) of the 150 customers' 20K-token documents: HBM alone
    holds a few dozen per replica; a DGX H100's 256 GiB per GPU (TP4: 1 TiB, 1 TiB /
    163,840 B per token of 70B fp8 KV = 6.7M tokens) holds all 3M document tokens. A
    tier only adds capacity, so the optimum cannot rise, and the plan must verify."""
    plain = with_policy(load_instance(SOURCE), prefix_affinity=False)
    tiered = with_policy(
        _instance(tmp_path, "    kv_tiers_from_server: true\n"), prefix_affinity=False
    )
    gpu = tiered.gpu_specs["h100-sxm"]
    assert gpu.host_memory_gib_per_gpu * 2**30 * 4 / 163_840 > 150 * 20_000
    plain_plan, tiered_plan = solve(plain), solve(tiered)
    assert verify(tiered, tiered_plan).ok
    assert tiered_plan.cost_per_month <= plain_plan.cost_per_month
    assert any(TierName.DRAM.value in (pool.kv_tiers_used or ()) for pool in tiered_plan.replicas)


def test_hbm_only_prefixes_are_warned_about_and_the_opt_in_silences_it(tmp_path):
    from models.schema.checks import input_warnings

    (line,) = [w for w in input_warnings(load_instance(SOURCE)) if w.startswith("gpus[")]
    assert "NVIDIA DGX H100" in line and "256 GiB" in line and "kv_tiers_from_server" in line
    opted = _instance(tmp_path, "    kv_tiers_from_server: true\n")
    assert not [w for w in input_warnings(opted) if w.startswith("gpus[")]
