"""The forwarded all-to-all of prompt tokens across servers (models.physics.alltoall): one
NIC copy per other node a token reaches, NVLink for the rest; decode tokens keep the
direct path; inside one NVLink domain the two are the same."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from models.physics.alltoall import (
    alltoall_link_s_per_byte,
    forwarded_link_s_per_copy_byte,
    remote_nodes,
)
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import Efficiency
from models.physics.moe import alltoall_copies, expert_layout
from models.physics.precision import Precision

EFFICIENCY = Efficiency(scaleup_fraction=0.5, scaleout_fraction=0.8)


def test_remote_nodes_by_hand():
    """k = 8 over 4 nodes: each other node is missed by all 8 choices with (3/4)^8 =
    0.1001, so 3 x (1 - 0.1001) = 2.6997 other nodes; one node: none."""
    assert remote_nodes(8, 32, 8) == pytest.approx(3 * (1 - 0.75**8))
    assert remote_nodes(8, 32, 8) == pytest.approx(2.6997, abs=1e-4)
    assert remote_nodes(8, 8, 8) == 0.0
    assert remote_nodes(8, 16, 72) == 0.0


def test_deepseek_ep32_prefill_crosses_the_nic_once_per_node_by_hand():
    """DeepSeek-V3 at DP32 x EP32 on 4 H100 servers (450 GB/s NVLink at 0.5 = 225 GB/s;
    400 Gb/s NIC = 50 GB/s at 0.8 = 40 GB/s): a copy is 7,168 x (1 FP8 + 2 BF16) = 21,504
    bytes a layer, 58 MoE layers; a GPU sends 1/32 of the tokens. Direct (decode): the
    copies c = 32 (1 - (31/32)^8) = 7.178 to ranks, 24/32 of them over the NIC:
    c x 21,504 x 58 / 32 x 0.75 / 40e9 = 5.246 us a token. Forwarded (prompt tokens):
    2.6997 copies over the NIC against c x 7/8 = 6.281 over NVLink, max(6.281 / 225e9,
    2.6997 / 40e9) = 2.6997 / 40e9 (the NIC): 21,504 x 58 / 32 x 2.6997 / 40e9 = 2.631 us."""
    gpu, llm = gpu_catalog()["h100-sxm"], llm_catalog()["deepseek-v3"]
    layout = expert_layout(gpu, llm, Precision.FP8, 1, 32, 32, 58, EFFICIENCY, 20e-6)
    copies = 32 * (1 - (31 / 32) ** 8)
    copy_bytes = 7168 * 3 * 58 / 32
    direct = copies * copy_bytes * (24 / 32) / 40e9
    forwarded = copy_bytes * (3 * (1 - 0.75**8)) / 40e9
    assert layout.alltoall_s_per_token == pytest.approx(direct)
    assert layout.alltoall_s_per_token == pytest.approx(5.246e-6, rel=1e-3)
    assert layout.prefill_alltoall_s_per_token == pytest.approx(forwarded)
    assert layout.prefill_alltoall_s_per_token == pytest.approx(2.631e-6, rel=1e-3)
    f = layout.imbalance(4096)
    assert layout.alltoall_s(4096, 4096) == pytest.approx(116 * 20e-6 + f * 4096 * forwarded)
    assert layout.alltoall_s(4096) == pytest.approx(116 * 20e-6 + f * 4096 * direct)
    mixed = f * (1024 * direct + 3072 * forwarded)
    assert layout.alltoall_s(4096, 3072) == pytest.approx(116 * 20e-6 + mixed)


def test_inside_one_domain_prompt_and_decode_tokens_cost_the_same():
    """GB200 NVL72 (72 GPUs a domain) at DEP16 and an 8-GPU H200 server at DEP8 (where the
    engines all-gather): no NIC, so the forwarded path is the direct one."""
    gb200, h200 = gpu_catalog()["gb200"], gpu_catalog()["h200"]
    llm = llm_catalog()["deepseek-v3"]
    copies = alltoall_copies(8, 16, 1)
    assert forwarded_link_s_per_copy_byte(gb200, EFFICIENCY, 16, copies, 8) == pytest.approx(
        copies * alltoall_link_s_per_byte(gb200, EFFICIENCY, 16)
    )
    for gpu, gpus in ((gb200, 16), (h200, 8)):
        layout = expert_layout(gpu, llm, Precision.FP8, 1, gpus, gpus, 58, EFFICIENCY)
        assert layout.alltoall_s(512, 512) == pytest.approx(layout.alltoall_s(512))


@given(st.integers(1, 8), st.sampled_from([4, 8]), st.integers(2, 16))
def test_forwarding_never_sends_more_over_the_nic(k, per_node, nodes):
    """A node a token reaches holds at least one rank it reaches, so the other nodes it
    touches are never more than the ranks it touches outside its node: the forwarded NIC
    copies <= the direct path's c (G - n) / G."""
    gpus = per_node * nodes
    direct_remote = alltoall_copies(k, gpus, 1) * (gpus - per_node) / gpus
    assert remote_nodes(k, gpus, per_node) <= direct_remote + 1e-12
