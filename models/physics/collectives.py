"""Collectives of tensor parallelism: ring all-reduces over the link that joins the GPUs.

Tensor parallelism pays two all-reduces per layer per pass (after attention and after the
MLP), each a fixed latency plus the ring's 2 (n-1)/n x message bytes over the scale-up
link, or over the NICs once the ranks span nodes; the fixed latency does not shrink with
TP, so each doubling buys less than the last. When the routed experts of a mixture of
experts span more than one attention group, the combine all-to-all (`models.physics.moe`) returns
each MoE layer's output and replaces that layer's MLP all-reduce.
"""

from models.physics.efficiency import Efficiency
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec


def ring_allreduce_s(
    message_bytes: float, ranks: int, link_bytes_per_s: float, latency_s: float
) -> float:
    """One ring all-reduce: latency + 2 (n - 1) / n x message / link bandwidth (0 for n=1)."""
    if ranks <= 1:
        return 0.0
    return latency_s + 2 * (ranks - 1) / ranks * message_bytes / link_bytes_per_s


def allreduces_per_step(llm: LlmSpec, tp: int) -> int:
    """All-reduces one token's forward pass pays over the whole model: 2 per layer
    (attention output and MLP output) when TP > 1."""
    return 2 * llm.layers if tp > 1 else 0


def group_link_bytes_per_s(gpu: GpuSpec, efficiency: Efficiency, gpus: int) -> float:
    """Achieved bytes/s of the link that joins `gpus` GPUs: the scale-up link within a
    node, the NICs once they span nodes."""
    if gpus <= gpu.gpus_per_node:
        return gpu.scaleup_bytes_per_s * efficiency.scaleup_fraction
    return gpu.scaleout_bytes_per_s * efficiency.scaleout_fraction


def tp_allreduces_per_pass(
    llm: LlmSpec, tp: int, ep: int, dp: int, stage_layers: int, stage_moe_layers: float
) -> int:
    """TP all-reduces of one stage pass: 2 per layer when tp > 1; when the routed experts
    span more than one attention group (ep > 1 or dp > 1) the combine all-to-all returns
    each MoE layer's output, so those layers pay the attention all-reduce only."""
    if tp == 1:
        return 0
    if llm.is_moe and (ep > 1 or dp > 1):
        return 2 * stage_layers - round(stage_moe_layers)
    return 2 * stage_layers
