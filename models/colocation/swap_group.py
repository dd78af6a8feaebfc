"""A swapped group: the coldest models share one replica, one model's weights resident at a
time, the others paged in from host memory when a request finds its model cold.

Residency: one weight slot, LRU over the members (`models.colocation.swap`'s Che approximation with
k = 1): with rates lambda_1..lambda_n, T_C solves sum_j (1 - exp(-lambda_j T_C)) = 1 and
    P(cold)_i = exp(-lambda_i T_C)
(scaling every rate by s scales T_C by 1/s: P(cold) does not change with the load).

Memory per GPU: every engine stays up (its activations, runtime reserve and KV room at
its p99 concurrency, as in `models.colocation.coresident`), but only the largest member's weights
occupy HBM at once:
    max_i weights_i + sum_i (activations_i + reserve + KV_i)  <=  HBM

Swap time per member: swap_i = weights_i per GPU / (host link x `HOST_LINK_FRACTION`)
(`models.colocation.swap.swap_in_s`). A swap holds the slot: a cold request of member i waits at
most its own swap plus one other member's swap already in progress:
    wait_i = swap_i + max_{j != i} swap_j

Time: the members' iterations are taken as interleaved (`models.colocation.coresident`'s model with
every member's engine taking turns): with one slot they run one after the other, never
faster than interleaved, so the warm p99 TTFT and TPOT of `evaluate_group` are the warm
side's bound. The GPU spends the fraction
    rho_swap = sum_i lambda_i P(cold)_i swap_i
copying weights; it must stay within `SWAP_BUSY_MAX` (swaps rare enough not to queue).

The TTFT rule (the p99 with the cold-start mass). A request of member i is cold with
probability P(cold)_i. When P(cold)_i > 0:
    TTFT99_i <= warm TTFT99_i + wait_i
(P(TTFT > warm99 + wait) <= P(warm TTFT > warm99) = 1%): an upper bound whatever
P(cold)_i is, exact-ish once P(cold)_i > 1% (then the p99 request is a cold one). Swapping
is allowed only where this bound is within the member's TTFT target (`models.colocation.swap.
swap_verdict`); the conservative side when P(cold) < 1%. TPOT is unaffected (the swap
precedes the prefill).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

from models.colocation.coresident import evaluate_group
from models.colocation.shared_layout import Member, SharedLayout
from models.colocation.swap import (
    SwapVerdict,
    cold_probabilities_lru,
    host_link_gb_s,
    swap_in_s,
    swap_verdict,
)
from models.physics.efficiency import Efficiency
from models.physics.memory import weight_bytes_per_gpu
from models.serving.edge_search import bisect_edge

SWAP_BUSY_MAX = 0.05
"""Most of the GPU's time spent copying weights in (rho_swap): above it swaps queue behind
each other and the one-swap-in-progress wait no longer bounds the TTFT."""
RESIDENT_SLOTS = 1
"""Weight slots of a swapped group: one model resident at a time."""


@dataclass(frozen=True)
class SwappedGroup:
    """A swapped group at one set of loads: residency, swap waits and every problem."""

    members: tuple[str, ...]
    cold_probability: tuple[float, ...]
    swap_s: tuple[float, ...]
    """Each member's own swap-in time."""
    verdicts: tuple[SwapVerdict, ...]
    """Each member's p99 TTFT with the swap wait against its target."""
    swap_busy_fraction: float
    """rho_swap: the GPU's time spent copying weights in."""
    memory_used_bytes: float
    """max weights + every engine's activations, reserve and KV."""
    hbm_bytes: float
    problems: tuple[str, ...]

    @property
    def meets_slo(self) -> bool:
        """Whether the group fits, keeps up and every member absorbs its swap."""
        return not self.problems


def evaluate_swapped_group(
    layout: SharedLayout,
    members: Sequence[Member],
    efficiency: Efficiency,
    interference_factor: float = 1.0,
    link_gb_s: float | None = None,
) -> SwappedGroup:
    """Every member of a swapped group at its planned load (see the module docstring).

    `link_gb_s`: the host-to-GPU link per direction (default: the GPU's, `models.colocation.swap`).

    Raises:
        ValueError: fewer than two members, or what `evaluate_group` rejects.
    """
    if len(members) < 2:
        raise ValueError("a swapped group needs at least two members")
    names = tuple(m.name for m in members)
    link = host_link_gb_s(layout.gpu) if link_gb_s is None else link_gb_s
    warm = evaluate_group(layout, members, efficiency, interference_factor)
    weights = [
        weight_bytes_per_gpu(m.llm, layout.weight_precision, layout.tp, layout.pp) for m in members
    ]
    swaps = tuple(swap_in_s(b, link) for b in weights)
    colds = tuple(cold_probabilities_lru([m.requests_per_s for m in members], RESIDENT_SLOTS))
    hbm = layout.gpu.hbm_bytes
    if not warm.members:  # a layout that cannot hold a member, or engines that cannot keep up
        problems = tuple(warm.problems)
        return SwappedGroup(names, colds, swaps, (), math.inf, math.inf, hbm, problems)
    used = max(weights) + math.fsum(
        p.activation_bytes + p.reserve_bytes + p.kv_bytes for p in warm.memory.members
    )
    busy = math.fsum(
        m.requests_per_s * p * s for m, p, s in zip(members, colds, swaps, strict=True)
    )
    verdicts = []
    problems = []
    if used > hbm:
        problems.append(
            f"swapped group needs {used / 1e9:.1f} GB per GPU (largest weights + every "
            f"engine's KV and reserve), {hbm / 1e9:.1f} GB available"
        )
    if busy > SWAP_BUSY_MAX:
        problems.append(
            f"the GPU would spend {busy:.1%} of its time swapping weights in (at most "
            f"{SWAP_BUSY_MAX:.0%})"
        )
    for i, (m, on_group) in enumerate(zip(members, warm.members, strict=True)):
        if on_group.tpot_p99_s > (m.targets.tpot_p99_s or math.inf):
            problems.append(f"{m.name}: p99 TPOT {on_group.tpot_p99_s * 1e3:.0f} ms over target")
        wait = swaps[i] + max((s for j, s in enumerate(swaps) if j != i), default=0.0)
        verdict = swap_verdict(on_group.ttft_p99_s, m.targets.ttft_p99_s, wait, colds[i])
        verdicts.append(verdict)
        if not verdict.allowed:
            problems.append(f"{m.name}: {verdict.reason}")
    return SwappedGroup(names, colds, swaps, tuple(verdicts), busy, used, hbm, tuple(problems))


def swapped_capacity_scale(
    layout: SharedLayout,
    members: Sequence[Member],
    efficiency: Efficiency,
    interference_factor: float = 1.0,
    bisection_steps: int = 10,
) -> float:
    """The largest s (within 2^-steps below) at which the group holds at loads s x lambda_i;
    0 when it holds at no load. Feasibility is monotone in s: P(cold) is scale-free, the
    warm latencies, KV and rho_swap rise with s."""

    def holds(scale: float) -> bool:
        scaled = [m.scaled(scale) for m in members]
        return evaluate_swapped_group(layout, scaled, efficiency, interference_factor).meets_slo

    if not holds(1e-9):
        return 0.0
    low, high = 0.0, 1.0
    while holds(high):
        if high >= 2.0**20:
            return high
        low, high = high, high * 2
    low, _ = bisect_edge(holds, low, high, bisection_steps)
    return low
