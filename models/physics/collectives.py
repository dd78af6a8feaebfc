"""Collectives of tensor parallelism: ring all-reduces over the link that joins the GPUs.

Tensor parallelism pays two all-reduces per layer per pass (after attention and after the
MLP), each a fixed latency plus the ring's 2 (n-1)/n x message bytes over the scale-up
link, or over the NICs once the ranks span nodes; the fixed latency does not shrink with
TP, so each doubling buys less than the last. When a mixture of experts' tokens are
dispatched to their experts (`tokens_dispatched`), the combine (`models.physics.moe`) returns
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


def tokens_dispatched(ep: int, dp: int, alltoall_backend: bool = False) -> bool:
    """Whether a stage's routed tokens travel to their experts and back (a dispatch and a
    combine per MoE layer: `models.physics.moe.ExpertLayout.alltoall_s`): where its dp
    attention groups hold different tokens (dp > 1), or where the engine runs an all-to-all
    backend at ep > 1 (`alltoall_backend`: DeepEP, which SGLang's two-batch overlap needs).

    At dp = 1 otherwise there is nothing to send: after the attention all-reduce every GPU
    of the stage holds every token, each expert rank runs its own experts on all of them,
    and the layer's TP all-reduce sums the partial outputs, as with TP-split experts.
    SGLang (`--tp 8 --ep 8`, the default a2a backend `none`: `MiniMaxM2MoE.forward_normal`
    runs `self.experts` then `reduce_moe_output`), vLLM (`--enable-expert-parallel` at
    data-parallel size 1: all-to-all kernels only at dp > 1) and TensorRT-LLM (EP without
    attention DP: the MoE output all-reduced) all run it so."""
    return dp > 1 or (ep > 1 and alltoall_backend)


def tp_allreduces_per_pass(
    llm: LlmSpec, tp: int, stage_layers: int, stage_moe_layers: float, dispatched: bool
) -> int:
    """TP all-reduces of one stage pass: 2 per layer when tp > 1; where an MoE model's
    tokens are dispatched (`tokens_dispatched`) the combine returns each MoE layer's
    output, so those layers pay the attention all-reduce only."""
    if tp == 1:
        return 0
    if llm.is_moe and dispatched:
        return 2 * stage_layers - round(stage_moe_layers)
    return 2 * stage_layers
