"""Where one GPU's memory goes in a co-located group replica.

Memory, per GPU (the most loaded GPU of each member's layout):
    sum_i weights_i + sum_i activations_i + n x reserve + sum_i KV_i  <=  HBM
    KV_i = max(B99_i (P_i + O_i), P99_i + O99_i) x KV bytes per token per GPU_i
Every engine allocates its own activation workspace and pays its own runtime reserve
(CUDA context, allocator slack, graphs: `memory_reserve_fraction` of HBM each), and holds
KV room for its p99 concurrency B99 = B + 2.326 sqrt(B) at the planned load (at least one
p99 request). The conservative side: reserves and workspaces are not pooled.
"""

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from models.colocation.shared_layout import Member, SharedLayout
from models.physics.efficiency import Efficiency
from models.physics.memory import (
    GIB,
    activation_bytes_per_gpu,
    kv_bytes_per_token_per_gpu,
    weight_bytes_per_gpu,
)
from models.serving.batch_model import batch_p99


@dataclass(frozen=True)
class MemberMemory:
    """One member's share of each GPU's memory (bytes)."""

    name: str
    weight_bytes: float
    activation_bytes: float
    reserve_bytes: float
    kv_bytes: float
    """KV room for max(B99 (P + O), P99 + O99) tokens."""
    kv_tokens: float


@dataclass(frozen=True)
class GroupMemory:
    """Where one GPU's memory goes in a group replica."""

    hbm_bytes: float
    members: tuple[MemberMemory, ...]
    message: str
    """Empty when it fits; else a vLLM-style message: needed, available, what to change."""

    @property
    def used_bytes(self) -> float:
        """Weights + activations + reserves + KV of every member."""
        return sum(
            m.weight_bytes + m.activation_bytes + m.reserve_bytes + m.kv_bytes for m in self.members
        )

    @property
    def free_bytes(self) -> float:
        """HBM left over (negative when it does not fit)."""
        return self.hbm_bytes - self.used_bytes

    @property
    def fits(self) -> bool:
        """Whether everything fits in HBM."""
        return self.free_bytes >= 0


def group_memory(
    layout: SharedLayout,
    members: Sequence[Member],
    batches: Sequence[float],
    efficiency: Efficiency,
) -> GroupMemory:
    """The memory of one GPU of a group replica with member i at mean batch `batches[i]`
    (see the module docstring), with a vLLM-style message when it does not fit."""
    hbm = layout.gpu.hbm_bytes
    parts = []
    for member, batch in zip(members, batches, strict=True):
        llm, mix = member.llm, member.mix
        footprint = max(mix.prompt_mean_tokens, 1.0) + max(mix.output_mean_tokens, 1.0)
        one_request = max(mix.prompt_p99_tokens, mix.prompt_mean_tokens) + max(
            mix.output_p99_tokens, mix.output_mean_tokens
        )
        tokens = max(batch_p99(batch) * footprint, one_request)
        per_token = kv_bytes_per_token_per_gpu(llm, layout.kv_precision, layout.tp, layout.pp)
        parts.append(
            MemberMemory(
                name=member.name,
                weight_bytes=weight_bytes_per_gpu(
                    llm, layout.weight_precision, layout.tp, layout.pp
                ),
                activation_bytes=activation_bytes_per_gpu(
                    llm, layout.tp, efficiency.prefill_chunk_tokens
                ),
                reserve_bytes=hbm * efficiency.memory_reserve_fraction,
                kv_bytes=tokens * per_token,
                kv_tokens=tokens,
            )
        )
    memory = GroupMemory(hbm_bytes=hbm, members=tuple(parts), message="")
    if memory.fits:
        return memory
    return dataclasses.replace(memory, message=_memory_message(layout, memory))


def _memory_message(layout: SharedLayout, memory: GroupMemory) -> str:
    """What the group needs per GPU, what it has, how much room the weights leave, and what
    to change."""
    parts = memory.members
    weights = sum(p.weight_bytes for p in parts)
    fixed = sum(p.weight_bytes + p.activation_bytes + p.reserve_bytes for p in parts)
    kv = sum(p.kv_bytes for p in parts)
    listing = ", ".join(
        f"{p.name} {p.weight_bytes / GIB:.1f} + KV {p.kv_bytes / GIB:.2f}" for p in parts
    )
    head = (
        f"group [{', '.join(p.name for p in parts)}] on {layout.label} does not fit: per GPU "
        f"it needs {weights / GIB:.1f} GiB of weights + "
        f"{sum(p.activation_bytes for p in parts) / GIB:.1f} GiB of activations + "
        f"{sum(p.reserve_bytes for p in parts) / GIB:.1f} GiB of runtime reserves + "
        f"{kv / GIB:.2f} GiB of KV at the planned concurrency ({listing} GiB) = "
        f"{memory.used_bytes / GIB:.1f} GiB, but has {memory.hbm_bytes / GIB:.1f} GiB"
    )
    room = memory.hbm_bytes - fixed
    if room <= 0:
        detail = f"; the weights, workspaces and reserves alone leave {room / GIB:.1f} GiB"
    else:
        detail = f"; {room / GIB:.1f} GiB is left for KV, {room / kv:.0%} of what it needs"
    return (
        f"{head}{detail}. Share this GPU among fewer models, lower the weight precision, or "
        f"use a larger TP."
    )
