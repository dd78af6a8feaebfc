"""KV-cache tiers of one replica (HBM, host DRAM, local NVMe) and what a cached token in
each is worth.

A token of a cached prefix saves its prefill compute and costs its fetch:

    recompute_s per token = pp x (2 body / tp / linear rate + attn_pair / tp x T/2 / attention rate)
                            (`models.physics.step_time` coefficients: the prefill FLOPs of one
                            token of a prefix of T tokens, which attends to T/2 tokens on
                            average, over the achieved prefill FLOP rate, through every stage)
    fetch_s per token     = KV bytes per token per GPU / tier read bytes/s per GPU
    value_s per token     = recompute_s - fetch_s

HBM holds the KV where attention reads it: no fetch. Host DRAM is read over each GPU's
own host link (PCIe, or C2C on Grace parts): `host_link_gb_s` per GPU, one direction.
Local NVMe is shared by the node's GPUs: `nvme_gb_s_per_node / gpus_per_node` per GPU
(the drives are the narrower pipe; the host link behind them is taken to keep up).
A tier is used only where the value is positive: a small model, whose tokens are cheap
to recompute, fetches a token from SSD more slowly than it recomputes it, and that tier
should not exist for it (the sign flip). Fetches are taken at the links' peak, not
overlapped with compute: a fetch that overlaps prefill would be worth more, so the value
here is a lower bound.

Capacity per replica: DRAM `host_memory_gib_per_gpu` x gpus; NVMe `nvme_tb_per_node` x
gpus / gpus_per_node (a replica of a part of a node gets that part of its drives).

SSD wear: with write-through offload (every KV block the replica computes is written
down the hierarchy and lands on the SSD when DRAM evicts it), the tier is written at
    write bytes/s = rate x new prompt tokens per request x KV bytes per token (replica)
and its rated writes are DWPD x capacity x 365 x warranty years, so
    lifetime_days = rated bytes / write bytes per day.
A lifetime shorter than the warranty wears the drive out in service and is flagged.
"""

import math
from dataclasses import dataclass
from enum import StrEnum

from models.physics.hardware import GpuSpec
from models.physics.step_time import StepModel

PCIE_GEN5_X16_GB_S = 64.0
"""PCIe 5.0 x16, one direction, GB/s: 32 GT/s x 16 lanes x 128/130 / 8 = 63 GB/s
(PCI-SIG PCIe 5.0 base specification); the host link of an H100/H200/B200 SXM board."""
DAYS_PER_YEAR = 365
SECONDS_PER_DAY = 86_400


class TierName(StrEnum):
    """Where a cached prefix's KV lives."""

    HBM = "hbm"
    DRAM = "dram"
    SSD = "ssd"


@dataclass(frozen=True)
class KvTier:
    """One tier of one replica: how many KV tokens it holds and what a token is worth."""

    tier: TierName
    capacity_tokens: float
    fetch_s_per_token: float
    recompute_s_per_token: float

    @property
    def value_s_per_token(self) -> float:
        """Prefill time a cached token saves net of its fetch: recompute - fetch."""
        return self.recompute_s_per_token - self.fetch_s_per_token

    @property
    def used(self) -> bool:
        """Whether the tier is worth having: it holds tokens and its value is positive."""
        return self.capacity_tokens > 0 and self.value_s_per_token > 0

    @property
    def fetch_ms_per_1k_tokens(self) -> float:
        """Fetch time of 1,000 tokens, ms."""
        return self.fetch_s_per_token * 1e6

    @property
    def recompute_ms_per_1k_tokens(self) -> float:
        """Prefill time of 1,000 tokens, ms."""
        return self.recompute_s_per_token * 1e6


def recompute_s_per_token(steps: StepModel, prefix_tokens: float) -> float:
    """Prefill seconds one token of a prefix of `prefix_tokens` tokens costs on the
    replica: pp x (linear FLOPs / linear rate + attention FLOPs per pair x T/2 /
    attention rate), the per-GPU coefficients of `steps` (TP already divided in)."""
    linear_s = steps.prefill_linear_flops_per_token / steps.prefill_linear_flops_per_s
    pairs = prefix_tokens / 2
    attention_s = (
        steps.prefill_attention_flops_per_pair * pairs / steps.prefill_attention_flops_per_s
    )
    return steps.pp * (linear_s + attention_s)


def host_link_bytes_per_s(gpu: GpuSpec) -> float:
    """Host-to-GPU bytes/s per GPU: `host_link_gb_s`, or PCIe 5.0 x16 by default."""
    gb_s = gpu.host_link_gb_s if gpu.host_link_gb_s is not None else PCIE_GEN5_X16_GB_S
    return gb_s * 1e9


def nvme_bytes_per_s_per_gpu(gpu: GpuSpec) -> float:
    """NVMe read bytes/s per GPU: the node's drives shared by its GPUs (0 without NVMe)."""
    if gpu.nvme_gb_s_per_node is None or gpu.nvme_tb_per_node is None:
        return 0.0
    return gpu.nvme_gb_s_per_node * 1e9 / gpu.gpus_per_node


def dram_capacity_bytes(gpu: GpuSpec, gpus: int) -> float:
    """Host DRAM the replica's KV tier holds: host_memory_gib_per_gpu x 2^30 x gpus."""
    return (gpu.host_memory_gib_per_gpu or 0.0) * 2**30 * gpus


def nvme_capacity_bytes(gpu: GpuSpec, gpus: int) -> float:
    """NVMe the replica's KV tier holds: nvme_tb_per_node x 1e12 x gpus / gpus_per_node."""
    return (gpu.nvme_tb_per_node or 0.0) * 1e12 * gpus / gpu.gpus_per_node


def replica_tiers(
    gpu: GpuSpec,
    gpus: int,
    steps: StepModel,
    hbm_kv_tokens: float,
    kv_bytes_per_token_replica: float,
    prefix_tokens: float,
) -> tuple[KvTier, ...]:
    """The replica's tiers, fastest first, for tokens of a prefix of `prefix_tokens`.

    HBM always; DRAM where `host_memory_gib_per_gpu` is set; SSD where `nvme_tb_per_node`
    and `nvme_gb_s_per_node` are. Capacity in tokens = tier bytes / KV bytes per token of
    the whole replica; fetch = KV bytes per token per GPU / the tier's bytes/s per GPU.
    """
    recompute_s = recompute_s_per_token(steps, prefix_tokens)
    per_gpu_bytes = steps.kv_bytes_per_token
    tiers = [KvTier(TierName.HBM, hbm_kv_tokens, 0.0, recompute_s)]
    if gpu.host_memory_gib_per_gpu is not None:
        tiers.append(
            KvTier(
                TierName.DRAM,
                dram_capacity_bytes(gpu, gpus) / kv_bytes_per_token_replica,
                per_gpu_bytes / host_link_bytes_per_s(gpu),
                recompute_s,
            )
        )
    ssd_bytes_per_s = nvme_bytes_per_s_per_gpu(gpu)
    if ssd_bytes_per_s > 0:
        tiers.append(
            KvTier(
                TierName.SSD,
                nvme_capacity_bytes(gpu, gpus) / kv_bytes_per_token_replica,
                per_gpu_bytes / ssd_bytes_per_s,
                recompute_s,
            )
        )
    return tuple(tiers)


@dataclass(frozen=True)
class SsdWear:
    """The SSD tier's lifetime under its write load."""

    write_bytes_per_day: float
    rated_bytes: float
    """DWPD x capacity x 365 x warranty years."""
    warranty_days: float

    @property
    def lifetime_days(self) -> float:
        """Rated bytes / write bytes per day (inf with no writes)."""
        if self.write_bytes_per_day <= 0:
            return math.inf
        return self.rated_bytes / self.write_bytes_per_day

    @property
    def wears_out(self) -> bool:
        """Whether the drive reaches its rated writes before its warranty ends."""
        return self.lifetime_days < self.warranty_days

    def note(self) -> str:
        """The arithmetic, one line."""
        verdict = "WEARS OUT before" if self.wears_out else "outlives"
        return (
            f"SSD rated writes {self.rated_bytes / 1e15:,.2f} PB / written "
            f"{self.write_bytes_per_day / 1e12:,.2f} TB/day = {self.lifetime_days:,.1f} days: "
            f"{verdict} its {self.warranty_days:,.0f}-day warranty"
        )


def ssd_write_bytes_per_s(
    requests_per_s: float, new_prompt_tokens: float, kv_bytes_per_token_replica: float
) -> float:
    """Write-through offload: every computed prompt token's KV reaches the SSD tier,
    rate x new tokens per request x KV bytes per token."""
    return requests_per_s * new_prompt_tokens * kv_bytes_per_token_replica


def ssd_wear(gpu: GpuSpec, gpus: int, write_bytes_per_s: float) -> SsdWear:
    """Lifetime of the replica's share of the node's NVMe at `write_bytes_per_s`:
    rated = nvme_dwpd x capacity x 365 x nvme_warranty_years.

    Raises:
        ValueError: the GPU has no NVMe tier or no DWPD rating.
    """
    if gpu.nvme_tb_per_node is None or gpu.nvme_dwpd is None:
        raise ValueError(
            f"{gpu.name}: no NVMe tier with a DWPD rating (nvme_tb_per_node, nvme_dwpd)"
        )
    warranty_days = DAYS_PER_YEAR * gpu.nvme_warranty_years
    rated = gpu.nvme_dwpd * nvme_capacity_bytes(gpu, gpus) * warranty_days
    return SsdWear(write_bytes_per_s * SECONDS_PER_DAY, rated, warranty_days)


@dataclass(frozen=True)
class Placement:
    """Where each declared prefix lives on one replica (None: not held, a miss)."""

    tiers: tuple[TierName | None, ...]
    """Per prefix, in the order declared."""
    hbm_tokens: float
    """Prefix tokens held once in HBM (the KV budget's fixed charge)."""


def place_prefixes(
    tokens: tuple[float, ...],
    shares: tuple[float, ...],
    tiers: tuple[KvTier, ...],
    hbm_share: float,
) -> Placement:
    """Prefixes into the used tiers by popularity: most requested first (ties: shorter
    first), each whole into the fastest used tier with room; HBM offers `hbm_share` of
    its KV capacity to prefixes (the rest is the running batch's). A prefix no used tier
    has room for is recomputed on every request (a miss)."""
    room = {
        t.tier: t.capacity_tokens * (hbm_share if t.tier is TierName.HBM else 1.0)
        for t in tiers
        if t.used or t.tier is TierName.HBM
    }
    order = sorted(range(len(tokens)), key=lambda i: (-shares[i], tokens[i]))
    where: list[TierName | None] = [None] * len(tokens)
    for i in order:
        for tier in tiers:
            if tier.tier in room and room[tier.tier] >= tokens[i]:
                room[tier.tier] -= tokens[i]
                where[i] = tier.tier
                break
    hbm = sum(t for t, w in zip(tokens, where, strict=True) if w is TierName.HBM)
    return Placement(tuple(where), hbm)
