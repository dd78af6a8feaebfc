"""The sentences `models.serving.capacity` puts in `ReplicaCapacity.reason`: the numbers behind
the limit that stops a replica, and what to change when a layout does not fit.

Text only: every number is computed by the capacity model and passed in; nothing here
changes a capacity. One function per kind of sentence.
"""

import math

from models.physics.efficiency import Efficiency
from models.physics.memory import GIB, MemoryBudget, smallest_fitting_tp
from models.physics.pass_parts import PassParts
from models.physics.precision import Precision
from models.serving.batch_model import BatchPoint
from models.serving.replica import LatencyTargets, Limit, MixTokens, ReplicaConfig

MIB = 2**20


def memory_remedy(config: ReplicaConfig, efficiency: Efficiency, tokens: float) -> str:
    """What to change so that `tokens` of KV fit: the first layouts that would, trying a
    larger TP, then lower weight precisions, then more pipeline stages."""
    gpu, llm = config.gpu, config.llm
    options = []
    precisions = [config.weight_precision] + [
        p
        for p in (Precision.FP8, Precision.FP4)
        if p.bytes_per_element < config.weight_precision.bytes_per_element and gpu.supports(p)
    ]
    for precision in precisions:
        kv = config.kv_precision if precision is config.weight_precision else Precision.FP8
        for pp in sorted({config.pp, config.pp * 2, config.pp * 4}):
            tp = smallest_fitting_tp(gpu, llm, precision, kv, pp, efficiency, tokens)
            current = (config.tp, config.pp, config.weight_precision)
            if tp is not None and (tp, pp, precision) != current:
                layout = f"TP>={tp}" if tp > 1 else "TP=1"
                options.append(layout + (f" x PP={pp}" if pp > 1 else "") + f" at {precision}")
                break
        if len(options) == 2:
            break
    if options:
        return "Use " + ", or ".join(options) + " (or a GPU with more memory)."
    return f"No layout of {llm.name} on up to 4 nodes of {gpu.name} fits; use a larger GPU."


def limit_reason(
    limit: Limit,
    point: BatchPoint,
    m: MixTokens,
    budget: MemoryBudget,
    targets: LatencyTargets,
    efficiency: Efficiency,
    pool_replicas: float = 1,
) -> str:
    """One sentence with the numbers behind the limit of a unified or decode replica
    (any limit but `interconnect`, see `nic_receive_reason` and `comm_share_reason`)."""
    b = point.batch
    if limit is Limit.KV_MEMORY:
        return (
            f"KV cache holds {budget.kv_capacity_tokens:,.0f} tokens = "
            f"{budget.kv_capacity_tokens / m.footprint:,.1f} sequences of "
            f"{m.footprint:,.0f} tokens ({max(budget.kv_room_bytes_per_gpu, 0) / GIB:.1f} GiB "
            f"per GPU); mean batch {b:,.1f}"
        )
    if limit is Limit.TPOT:
        return (
            f"p99 TPOT {point.tpot_p99_s * 1e3:.1f} ms at mean batch {b:,.1f} reaches the "
            f"{targets.tpot_p99_s * 1e3:g} ms target"  # type: ignore[operator]
        )
    if limit is Limit.TTFT_QUEUEING:
        return (
            f"p99 TTFT {point.ttft_p99_s * 1e3:.0f} ms at {point.rate:,.2f} requests/s"
            f"{per_replica_in_pool(pool_replicas)} reaches the "
            f"{targets.ttft_p99_s * 1e3:g} ms target"  # type: ignore[operator]
        )
    if limit is Limit.COMPUTE:
        return (
            f"prompt and decode tokens fill the {efficiency.prefill_chunk_tokens:,}-token "
            f"budget of every iteration (or the step is compute-bound) at batch {b:,.1f}"
        )
    if limit is Limit.HBM_BANDWIDTH:
        return (
            f"engine batch cap {efficiency.max_batch_sequences:,} sequences; the "
            f"{point.step_s * 1e3:.1f} ms step streams weights and KV cache"
        )
    return f"links set the pace at batch {b:,.1f}"


def nic_receive_reason(transfer_bytes: float, nic_bytes_per_s: float, rate: float) -> str:
    """A decode replica whose NICs cannot receive prompt KV any faster."""
    return (
        f"receiving {transfer_bytes / MIB:,.1f} MiB of prompt KV per request saturates "
        f"{nic_bytes_per_s / 1e9:,.1f} GB/s of NICs at {rate:,.2f} generations/s"
    )


def comm_share_reason(
    parts: PassParts,
    allreduces_per_pass: int,
    batch: float,
    tpot_reached_s: float | None,
    alltoalls_per_pass: int = 0,
) -> str:
    """A step that spends most of its time in all-reduces, the experts' all-to-all
    (dispatch and combine, `alltoalls_per_pass` of them) and hops; `tpot_reached_s` the
    p99 TPOT when that is what stopped the batch growing (None otherwise)."""
    counts = f"{allreduces_per_pass} all-reduces per pass"
    links = "all-reduces and hops"
    if alltoalls_per_pass:
        counts = f"{alltoalls_per_pass} expert all-to-alls and {counts}"
        links = "the experts' all-to-all, all-reduces and hops"
    reason = (
        f"{links} take {parts.comm_s / parts.total_s:.0%} of each stage pass "
        f"({counts}) at mean batch {batch:,.1f}"
    )
    if tpot_reached_s is not None:
        reason += f"; p99 TPOT {tpot_reached_s * 1e3:.1f} ms reaches the target"
    return reason


def slo_unreachable_reason(
    label: str,
    targets: LatencyTargets,
    tpot_missed: bool,
    ttft_missed: bool,
    best_ttft_s: float,
    best_tpot_s: float,
    request_overhead_s: float = 0.0,
    floor_p99_s: tuple[float, float] | None = None,
) -> str:
    """A unified or decode configuration that misses a target even at vanishing load
    (with the engine profile's request overhead in the TTFT named when there is one).
    `floor_p99_s`: (p99 TTFT, p99 TPOT) the latency model gave at vanishing load; one that
    is not a number is named as such (it misses every target, and no bound explains it)."""
    ttft_floor_s, tpot_floor_s = floor_p99_s or (best_ttft_s, best_tpot_s)
    misses = []
    if tpot_missed and math.isnan(tpot_floor_s):
        misses.append(
            "the latency model gives no number (NaN) for the p99 TPOT at vanishing load "
            f"(target {targets.tpot_p99_s * 1e3:g} ms)"  # type: ignore[operator]
        )
    elif tpot_missed:
        misses.append(
            f"p99 TPOT >= {best_tpot_s * 1e3:.1f} ms even at batch 1 "
            f"(target {targets.tpot_p99_s * 1e3:g} ms)"  # type: ignore[operator]
        )
    if ttft_missed and math.isnan(ttft_floor_s):
        misses.append(
            "the latency model gives no number (NaN) for the p99 TTFT at vanishing load "
            f"(target {targets.ttft_p99_s * 1e3:g} ms)"  # type: ignore[operator]
        )
    elif ttft_missed:
        misses.append(
            f"p99 TTFT >= {best_ttft_s * 1e3:.0f} ms with no queue "
            f"(target {targets.ttft_p99_s * 1e3:g} ms"  # type: ignore[operator]
            f"{overhead_note(request_overhead_s)})"
        )
    if not misses:  # never empty: the values the verdict read
        misses.append(
            f"p99 TTFT {ttft_floor_s * 1e3:g} ms and p99 TPOT {tpot_floor_s * 1e3:g} ms at "
            "vanishing load"
        )
    return f"{label} cannot meet the SLO at any load: " + "; ".join(misses)


def per_replica_in_pool(pool_replicas: float) -> str:
    """' per replica in a pool of 8 behind one queue' (nothing for a single replica)."""
    if pool_replicas == 1:
        return ""
    size = "an unlimited pool" if math.isinf(pool_replicas) else f"a pool of {pool_replicas:g}"
    return f" per replica in {size} behind one queue"


# --- prefill-only replicas ---------------------------------------------------------------


def prefill_unreachable_reason(
    label: str,
    best_ttft_s: float,
    own_p99_s: float,
    transfer_p99_s: float,
    prompt_p99_tokens: float,
    ttft_target_s: float,
    request_overhead_s: float = 0.0,
) -> str:
    """A prefill replica whose p99 prompt alone (request overhead + prefill + KV
    transfer) misses the TTFT."""
    overhead = f"request overhead {request_overhead_s * 1e3:.0f} ms + " * (request_overhead_s > 0)
    return (
        f"{label} cannot meet the SLO at any load: p99 TTFT >= "
        f"{best_ttft_s * 1e3:.0f} ms with no queue ({overhead}prefill {own_p99_s * 1e3:.0f} ms "
        f"+ KV transfer {transfer_p99_s * 1e3:.0f} ms of a {prompt_p99_tokens:,.0f}-token "
        f"prompt; target {ttft_target_s * 1e3:g} ms{overhead_note(request_overhead_s)})"
    )


def overhead_note(request_overhead_s: float) -> str:
    """'; 88 ms of it is the engine profile's request overhead (request_overhead_s: HTTP,
    tokenisation, scheduling), which no layout removes' ('' without one)."""
    if request_overhead_s <= 0:
        return ""
    return (
        f"; {request_overhead_s * 1e3:.0f} ms of it is the engine profile's request overhead "
        "(request_overhead_s: HTTP, tokenisation, scheduling), which no layout removes"
    )


def prefill_reason(
    limit: Limit,
    ttft_s: float,
    own_s: float,
    transfer_s: float,
    rate: float,
    pool_replicas: float,
    targets: LatencyTargets,
    token_rate: float,
    transfer_bytes: float,
    nic_bytes_per_s: float,
) -> str:
    """One sentence with the numbers behind the limit of a prefill-only replica."""
    if limit is Limit.TTFT_QUEUEING:
        return (
            f"p99 TTFT {ttft_s * 1e3:.0f} ms (prefill {own_s * 1e3:.0f} ms + KV transfer "
            f"{transfer_s * 1e3:.1f} ms + queue and shared iterations) at {rate:,.2f} prompts/s"
            f"{per_replica_in_pool(pool_replicas)} reaches the "
            f"{targets.ttft_p99_s * 1e3:g} ms target"  # type: ignore[operator]
        )
    if limit is Limit.COMPUTE:
        return f"prefill compute: {token_rate:,.0f} prompt tokens/s at full chunks"
    return (
        f"KV transfer of {transfer_bytes / MIB:,.1f} MiB per prompt saturates "
        f"{nic_bytes_per_s / 1e9:,.1f} GB/s of NICs"
    )
