"""The links an expert-parallel all-to-all crosses: the scale-up link (NVLink) inside a
node, the NIC between nodes, and how many copies of a token each carries.

Two kernels cross servers (`models.physics.moe` gives the copies and bytes of a token):

- Direct (decode: DeepEP's low-latency kernels, "pure RDMA"). A token goes straight to
  each destination rank: of its copies to the G GPUs of a stage, the (n - 1) / G bound
  for the other GPUs of its node cross NVLink and the (G - n) / G bound for other nodes
  cross its NIC, the two in parallel (`alltoall_link_s_per_byte`).
- Forwarded (prefill: DeepEP's normal kernels, "forwarding data from NVLink domain to RDMA
  domain", built for DeepSeek-V3's node-limited routing). A token crosses the NIC once per
  destination node, to the GPU of its own local index there, which forwards it over
  NVLink to that node's destination ranks; the combine runs the same path backwards. The
  NIC carries one copy per other node the token's k choices touch, under uniform routing
  over N = G / n nodes

      remote nodes = (N - 1) (1 - (1 - 1/N)^k)                       (`remote_nodes`)

  (2.70 for k = 8 over 4 nodes, against the 7.18 x 3/4 = 5.39 rank copies the direct
  path sends over it), and NVLink carries every copy but the ones a GPU keeps, c (n - 1)
  / n of its c copies (its own local destinations, and the copies it forwards for the
  other nodes' GPUs of its index, which by symmetry are as many as it sends):

      seconds per copy byte = max(c (n - 1) / n / scale-up, remote nodes / NIC).

  DeepEP's own test (`docs/legacy.md`, H800, 400 Gb/s ConnectX-7 at ~50 GB/s, 4,096
  tokens of 7,168 hidden, top-8) reads 43, 58 and 51 GB/s of "bottleneck bandwidth
  (RDMA)" at EP16, 32 and 64: more than the NIC's line rate at EP32, which only a node-
  deduplicated count allows.
"""

from models.physics.efficiency import Efficiency
from models.physics.hardware import GpuSpec


def alltoall_link_s_per_byte(gpu: GpuSpec, efficiency: Efficiency, stage_gpus: int) -> float:
    """Seconds per byte a GPU sends into a direct all-to-all over `stage_gpus` GPUs, of
    which (G-1)/G leaves it: the part bound within its node crosses the scale-up link, the
    part bound for other nodes the NIC, in parallel (the slower sets the time):

        max((n - 1) / G / scale-up, (G - n) / G / NIC),  n = min(G, gpus_per_node)
    """
    node = min(stage_gpus, gpu.gpus_per_node)
    local = (node - 1) / stage_gpus / (gpu.scaleup_bytes_per_s * efficiency.scaleup_fraction)
    remote_share = (stage_gpus - node) / stage_gpus
    remote = (
        remote_share / (gpu.scaleout_bytes_per_s * efficiency.scaleout_fraction)
        if remote_share
        else 0.0
    )
    return max(local, remote)


def remote_nodes(experts_per_token: int, stage_gpus: int, gpus_per_node: int) -> float:
    """Expected other nodes a token's k uniform expert choices touch in a stage of G GPUs,
    n to a node: (N - 1) (1 - (1 - 1/N)^k), N = G / n nodes; 0 inside one node."""
    nodes = stage_gpus / min(stage_gpus, gpus_per_node)
    if nodes <= 1:
        return 0.0
    return (nodes - 1) * (1 - (1 - 1 / nodes) ** experts_per_token)


def forwarded_link_s_per_copy_byte(
    gpu: GpuSpec, efficiency: Efficiency, stage_gpus: int, copies: float, experts_per_token: int
) -> float:
    """Seconds per byte of one copy of a token that the forwarded all-to-all (module
    docstring) costs the sending GPU: max(c (n - 1) / n / scale-up, remote nodes / NIC)
    for c copies (`models.physics.moe.alltoall_copies`). Inside one node it is the direct
    path's c x `alltoall_link_s_per_byte`."""
    node = min(stage_gpus, gpu.gpus_per_node)
    if node == stage_gpus:
        return copies * alltoall_link_s_per_byte(gpu, efficiency, stage_gpus)
    nvlink = copies * (node - 1) / node / (gpu.scaleup_bytes_per_s * efficiency.scaleup_fraction)
    nic = remote_nodes(experts_per_token, stage_gpus, gpu.gpus_per_node) / (
        gpu.scaleout_bytes_per_s * efficiency.scaleout_fraction
    )
    return max(nvlink, nic)
