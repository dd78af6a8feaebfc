"""What a co-located group is made of: the layout every member shares (GPU, precisions,
TP x PP) and the members (a workload: its model, token mix, SLO and planned requests/s on
one group replica). The physics of a group is `models.colocation.coresident`.
"""

import dataclasses
from dataclasses import dataclass

from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.precision import Precision
from models.serving.replica import (
    LatencyTargets,
    ReplicaConfig,
    Role,
    TrafficMix,
    replica_of_pool,
)


@dataclass(frozen=True)
class SharedLayout:
    """The layout every member of a group uses: GPU, precisions, TP x PP."""

    gpu: GpuSpec
    weight_precision: Precision
    kv_precision: Precision
    tp: int = 1
    pp: int = 1

    @property
    def gpus(self) -> int:
        """GPUs in one group replica: tp x pp."""
        return self.tp * self.pp

    @property
    def label(self) -> str:
        """Short human label, e.g. `h100-sxm bf16 tp1xpp1 shared`."""
        return f"{self.gpu.name} {self.weight_precision} tp{self.tp}xpp{self.pp} shared"

    def config(self, llm: LlmSpec) -> ReplicaConfig:
        """The unified replica configuration of one member's engine."""
        return replica_of_pool(
            self.gpu, llm, self.weight_precision, self.kv_precision, tp=self.tp, pp=self.pp,
            role=Role.UNIFIED, ep=1, dp=1, redundant_experts=0, speculation=None,
        )  # fmt: skip


@dataclass(frozen=True)
class Member:
    """One workload in a group: model, token mix, SLO, planned requests/s per replica."""

    name: str
    llm: LlmSpec
    mix: TrafficMix
    targets: LatencyTargets
    requests_per_s: float

    def scaled(self, scale: float) -> "Member":
        """The same member at `scale` times its planned load."""
        return dataclasses.replace(self, requests_per_s=self.requests_per_s * scale)
