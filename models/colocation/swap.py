"""Swapping for the coldest tail: a model's weights paged in from host memory on demand.

Swap time. Every GPU of the replica loads its own shard of the weights over its own
host link, in parallel:
    swap_s = weight bytes per GPU / (host link bytes/s x `HOST_LINK_FRACTION`)
The host link is one PCIe x16 link per GPU (`host_link_gb_s`, per direction, from the
PCI-SIG rates: Gen4 x16 31.5 GB/s, Gen5 x16 63 GB/s, as each GPU's datasheet lists its
generation); weights sit in pinned host memory. Where GPUs share a PCIe switch uplink,
pass a smaller `host_link_gb_s`. Engine start-up (graph capture, allocator warm-up) is not
counted: the engine stays up and only the weights move (as in weight-offloading servers).

Probability of finding the model cold, for Poisson arrivals at rate lambda:
- keep-alive timeout T (the model stays resident for T seconds after its last request):
  a request finds it cold when the gap since the previous arrival exceeds T,
      P(cold) = exp(-lambda T)
- LRU over k resident slots shared by models with rates lambda_1..lambda_n (Che's
  approximation, exact as n grows): every model stays resident for the same
  characteristic time T_C after its last request, where T_C solves
      sum_j (1 - exp(-lambda_j T_C)) = k
  and P(cold)_i = exp(-lambda_i T_C). With n <= k nothing is ever evicted: P(cold) = 0.

TTFT. A cold request waits the swap before its prefill. With P(cold) > 0 the p99 TTFT is
at most the warm p99 plus the swap (P(TTFT > warm99 + swap) <= P(warm TTFT > warm99) =
1%), the bound used here; swapping is allowed only where that bound is within the TTFT
target (the conservative side: when P(cold) < 1% the true p99 lies between the two).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.physics.hardware import GpuSpec
from models.serving.edge_search import bisect_edge

HOST_LINK_FRACTION = 0.8
"""Achieved fraction of the host link's rate for pinned-memory host-to-device copies
(large cudaMemcpyAsync transfers reach about 80% of the PCIe rate)."""
DEFAULT_HOST_LINK_GB_S = 31.5
"""A GPU this table does not know: PCIe Gen4 x16 (the slower generation: conservative)."""
PCIE_GEN4_X16_GB_S = 31.5
"""PCI-SIG PCIe 4.0: 16 GT/s x 16 lanes x 128/130 encoding / 8 = 31.5 GB/s per direction."""
PCIE_GEN5_X16_GB_S = 63.0
"""PCI-SIG PCIe 5.0: 32 GT/s x 16 lanes x 128/130 encoding / 8 = 63 GB/s per direction."""

HOST_LINKS_GB_S: dict[str, float] = {
    "a100-80gb-sxm": PCIE_GEN4_X16_GB_S,
    "l40s": PCIE_GEN4_X16_GB_S,
    "h100-sxm": PCIE_GEN5_X16_GB_S,
    "h200": PCIE_GEN5_X16_GB_S,
    "b200": PCIE_GEN5_X16_GB_S,
    "mi300x": PCIE_GEN5_X16_GB_S,
}
"""Host link per GPU, GB/s per direction, by catalog GPU."""
HOST_LINK_SOURCES: dict[str, str] = {
    "a100-80gb-sxm": "NVIDIA A100 datasheet: PCIe Gen4 (64 GB/s both directions)",
    "l40s": "../shared/calibration/gpu_specs.csv L40S row: PCIe Gen4 x16, 32 GB/s per direction",
    "h100-sxm": "NVIDIA H100 datasheet: PCIe Gen5 (128 GB/s both directions)",
    "h200": "NVIDIA H200 datasheet: PCIe Gen5 (128 GB/s both directions)",
    "b200": "HGX B200 hosts are PCIe Gen5 CPUs, so the link runs at Gen5 (conservative)",
    "mi300x": "AMD Instinct MI300X datasheet: PCIe Gen5 x16 (128 GB/s both directions)",
}
"""Where each host-link figure comes from."""


def host_link_gb_s(gpu: GpuSpec) -> float:
    """The host-to-GPU link of `gpu`, GB/s per direction (`DEFAULT_HOST_LINK_GB_S` when
    unknown)."""
    return HOST_LINKS_GB_S.get(gpu.name, DEFAULT_HOST_LINK_GB_S)


def swap_in_s(
    weight_bytes_per_gpu: float,
    link_gb_s: float,
    link_fraction: float = HOST_LINK_FRACTION,
) -> float:
    """Seconds to page a model's weights in: bytes per GPU / (link GB/s x 1e9 x fraction)."""
    if link_gb_s <= 0 or not 0 < link_fraction <= 1:
        raise ValueError("the host link needs a positive rate and a fraction in (0, 1]")
    return weight_bytes_per_gpu / (link_gb_s * 1e9 * link_fraction)


def cold_probability_keep_alive(requests_per_s: float, keep_alive_s: float) -> float:
    """P(cold) = exp(-lambda T) under a keep-alive timeout T (Poisson arrivals)."""
    if requests_per_s < 0 or keep_alive_s < 0:
        raise ValueError("rate and keep-alive must be >= 0")
    return math.exp(-requests_per_s * keep_alive_s)


def lru_characteristic_s(rates: Sequence[float], slots: int) -> float:
    """Che's characteristic time T_C: sum_j (1 - exp(-lambda_j T_C)) = k (bisection);
    math.inf when the models with traffic fit in the k slots."""
    if slots < 1:
        raise ValueError(f"slots must be >= 1, got {slots}")
    if sum(1 for rate in rates if rate > 0) <= slots:
        return math.inf

    def resident(t: float) -> float:
        return sum(-math.expm1(-rate * t) for rate in rates)

    high = 1.0
    while resident(high) < slots:
        high *= 2
    low, high = bisect_edge(lambda t: resident(t) < slots, 0.0, high, 100)
    return (low + high) / 2


def cold_probabilities_lru(rates: Sequence[float], slots: int) -> list[float]:
    """P(cold)_i = exp(-lambda_i T_C) for models sharing k LRU slots (Che's approximation)."""
    t_c = lru_characteristic_s(rates, slots)
    if math.isinf(t_c):
        return [0.0 for _ in rates]
    return [math.exp(-rate * t_c) for rate in rates]


@dataclass(frozen=True)
class SwapVerdict:
    """Whether a model may live in the swapped tier, and what it costs its TTFT."""

    swap_s: float
    cold_probability: float
    ttft_p99_s: float
    """Warm p99 TTFT plus the swap when P(cold) > 0 (an upper bound on the p99)."""
    mean_added_ttft_s: float
    """P(cold) x swap: what swapping adds to the mean TTFT."""
    allowed: bool
    reason: str


def swap_verdict(
    warm_ttft_p99_s: float,
    ttft_target_s: float | None,
    swap_s: float,
    cold_probability: float,
) -> SwapVerdict:
    """Allowed when the TTFT target absorbs the swap at p99: warm p99 + swap <= target
    (or never cold). Without a TTFT target (offline) swapping is always allowed."""
    cold = cold_probability > 0
    p99 = warm_ttft_p99_s + swap_s if cold else warm_ttft_p99_s
    allowed = ttft_target_s is None or p99 <= ttft_target_s
    if not cold:
        reason = "never cold: the model keeps its slot"
    elif ttft_target_s is None:
        reason = "no TTFT target (offline)"
    elif allowed:
        reason = (
            f"p99 TTFT {p99 * 1e3:.0f} ms (warm {warm_ttft_p99_s * 1e3:.0f} ms + swap "
            f"{swap_s * 1e3:.0f} ms) within the {ttft_target_s * 1e3:g} ms target"
        )
    else:
        reason = (
            f"p99 TTFT {p99 * 1e3:.0f} ms (warm {warm_ttft_p99_s * 1e3:.0f} ms + swap "
            f"{swap_s * 1e3:.0f} ms) breaks the {ttft_target_s * 1e3:g} ms target by "
            f"{(p99 - ttft_target_s) * 1e3:.0f} ms; P(cold) {cold_probability:.2%}"
        )
    return SwapVerdict(
        swap_s=swap_s,
        cold_probability=cold_probability,
        ttft_p99_s=p99,
        mean_added_ttft_s=cold_probability * swap_s,
        allowed=allowed,
        reason=reason,
    )
