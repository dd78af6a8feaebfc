"""One stage pass of a replica split into its kernels' roofline terms.

The linear layers (GEMMs) and attention run as separate kernels, so each takes the larger
of its compute and memory time and the times add:

    pass_s = max(linear FLOPs / linear rate, weight bytes / bandwidth)
           + max(routed-expert FLOPs / their rate, expert bytes read / bandwidth)
           + routed rows' elementwise kernels (permute, gated activation, combine)
           + max(decode attention FLOPs / attention rate, KV bytes / bandwidth)
           + prefill attention FLOPs / attention rate        (compute-bound)
           + communication

`models.physics.step_time.StepModel` computes the terms; the capacity reasons and the reports
read which roof takes most of a pass.
"""

from dataclasses import dataclass


def pass_total_s(
    linear_compute_s: float,
    weight_read_s: float,
    attention_compute_s: float,
    kv_read_s: float,
    prefill_attention_s: float,
    comm_s: float,
    expert_compute_s: float = 0.0,
    expert_read_s: float = 0.0,
    expert_kernels_s: float = 0.0,
) -> float:
    """A stage pass from its roofline terms (`PassParts`' fields, in order): the linear
    kernels max(compute, weight read), the routed experts' grouped GEMM max(compute,
    expert read) and the memory-bound kernels between its GEMMs, plus attention
    max(compute, KV read) + prefill attention, plus communication."""
    linear_s = (
        max(linear_compute_s, weight_read_s)
        + max(expert_compute_s, expert_read_s)
        + expert_kernels_s
    )
    attention_s = max(attention_compute_s, kv_read_s) + prefill_attention_s
    return linear_s + attention_s + comm_s


@dataclass(frozen=True)
class PassParts:
    """One stage pass split into its kernels' roofline terms, seconds.

    The linear layers (GEMMs) and attention are separate kernels, so each takes the
    larger of its compute and memory time and the two add up; prefill attention is
    compute-bound; communication adds on top.
    """

    linear_compute_s: float
    weight_read_s: float
    attention_compute_s: float
    """Decode attention FLOPs over the achieved peak."""
    kv_read_s: float
    prefill_attention_s: float
    comm_s: float
    expert_compute_s: float = 0.0
    """A mixture of experts' routed-expert grouped GEMM (its own kernel): FLOPs over the
    rate it reaches (`models.physics.moe.ExpertLayout.routed_cost`)."""
    expert_read_s: float = 0.0
    """The routed experts' weight bytes the slowest rank reads and its GEMMs' row
    operands, over the bandwidth."""
    expert_kernels_s: float = 0.0
    """The memory-bound kernels between the routed experts' GEMMs (the rows' permute, the
    gated activation, the combine): their own kernels, so their time adds
    (`models.physics.moe.expert_kernel_row_bytes`)."""

    @property
    def linear_s(self) -> float:
        """max(linear FLOPs / rate, weight bytes / bandwidth), plus the same for the
        routed experts' grouped GEMM, plus the kernels between its GEMMs."""
        return (
            max(self.linear_compute_s, self.weight_read_s)
            + max(self.expert_compute_s, self.expert_read_s)
            + self.expert_kernels_s
        )

    @property
    def attention_s(self) -> float:
        """max(decode attention FLOPs / rate, KV bytes / bandwidth) + prefill attention."""
        return max(self.attention_compute_s, self.kv_read_s) + self.prefill_attention_s

    @property
    def total_s(self) -> float:
        """linear + attention + communication."""
        return pass_total_s(
            self.linear_compute_s,
            self.weight_read_s,
            self.attention_compute_s,
            self.kv_read_s,
            self.prefill_attention_s,
            self.comm_s,
            self.expert_compute_s,
            self.expert_read_s,
            self.expert_kernels_s,
        )

    @property
    def compute_s(self) -> float:
        """Time spent in compute-bound kernels."""
        linear = self.linear_compute_s if self.linear_compute_s >= self.weight_read_s else 0.0
        expert = self.expert_compute_s if self.expert_compute_s >= self.expert_read_s else 0.0
        attention = self.attention_compute_s if self.attention_compute_s >= self.kv_read_s else 0.0
        return linear + expert + attention + self.prefill_attention_s

    @property
    def memory_s(self) -> float:
        """Time spent in memory-bound kernels."""
        linear = self.weight_read_s if self.weight_read_s > self.linear_compute_s else 0.0
        expert = self.expert_read_s if self.expert_read_s > self.expert_compute_s else 0.0
        attention = self.kv_read_s if self.kv_read_s > self.attention_compute_s else 0.0
        return linear + expert + self.expert_kernels_s + attention

    @property
    def bound(self) -> str:
        """Which roof takes most of the pass: `compute`, `memory` or `interconnect`."""
        if self.comm_s > max(self.compute_s, self.memory_s):
            return "interconnect"
        return "compute" if self.compute_s >= self.memory_s else "memory"
