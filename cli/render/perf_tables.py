"""The tables and JSON of `perf`: one replica's capacity, the throughput frontier, the
latency at a load and the KV tiers. Seconds become ms and bytes GiB here, at the edge;
every figure comes from models.serving."""

import math
from typing import Any

from cli.render.tables import TableSpec
from models.physics.efficiency import Efficiency
from models.physics.memory import GIB
from models.serving.frontier import FrontierPoint
from models.serving.latency import LoadLatency
from models.serving.prefix_kv import KvTierReport
from models.serving.replica import LatencyTargets, ReplicaCapacity, Role, TrafficMix


def kv_tiers_json(report: KvTierReport) -> dict[str, Any]:
    """The keys --kv-tiers (or a declared prefix) adds: `kv_tiers`, and
    `ssd_lifetime_days` when an SSD tier is used."""
    data: dict[str, Any] = {
        "kv_tiers": [
            {
                "tier": tier.tier.value,
                "capacity_tokens": tier.capacity_tokens,
                "fetch_ms_per_1k_tokens": tier.fetch_ms_per_1k_tokens,
                "recompute_ms_per_1k_tokens": tier.recompute_ms_per_1k_tokens,
                "used": tier.used,
            }
            for tier in report.tiers
        ]
    }
    if report.hits is not None:
        data["prefix_tiers"] = [
            None if where is None else where.value for where in report.hits.placement.tiers
        ]
        data["prefix_hit_rate"] = report.hits.hit_rate
        data["shared_prefix_kv_tokens"] = report.hits.placement.hbm_tokens
    if report.spill_threshold_s is not None:
        data["spill_threshold_ms"] = _ms(report.spill_threshold_s)
    if report.affinity_min_replicas is not None:
        data["affinity_min_replicas"] = report.affinity_min_replicas
    if report.ssd is not None:
        data["ssd_lifetime_days"] = _finite(report.ssd.lifetime_days)
        data["ssd_wears_out"] = report.ssd.wears_out
    return data


def tiers_table(report: KvTierReport) -> TableSpec:
    """The --kv-tiers table: each tier's capacity, fetch and recompute time per 1K tokens
    and their difference (the value of a cached token); the note says where the prefixes
    are held, the spill threshold and the SSD's lifetime."""
    rows = []
    for tier in report.tiers:
        value = tier.recompute_ms_per_1k_tokens - tier.fetch_ms_per_1k_tokens
        rows.append(
            (
                tier.tier.value,
                f"{tier.capacity_tokens:,.0f}",
                f"{tier.fetch_ms_per_1k_tokens:,.2f}",
                f"{tier.recompute_ms_per_1k_tokens:,.2f}",
                f"{value:,.2f}",
                "yes" if tier.used else "no: recompute is faster" if value <= 0 else "no",
            )
        )
    notes = []
    if report.hits is not None:
        where = ", ".join("miss" if w is None else w.value for w in report.hits.placement.tiers)
        notes.append(
            f"prefixes held in: {where}; hit rate {report.hits.hit_rate:.1%}; "
            f"{report.hits.placement.hbm_tokens:,.0f} prefix tokens held once in HBM."
        )
    if report.affinity_min_replicas is not None:
        notes.append(
            f"affinity holds this hit rate in pools of at least {report.affinity_min_replicas} "
            "replicas; a smaller pool holds fewer prefixes and hits less."
        )
    if report.spill_threshold_s is not None:
        notes.append(
            f"spill threshold: {report.spill_threshold_s * 1e3:,.1f} ms (the prefill a hit "
            "saves; a queue longer than this at the warm replica is worth a cold one)."
        )
    if report.ssd is not None:
        notes.append(report.ssd.note())
    return TableSpec(
        title="KV tiers: value of a cached token = recompute - fetch",
        columns=(
            "tier",
            "capacity tokens",
            "fetch ms/1K",
            "recompute ms/1K",
            "value ms/1K",
            "used",
        ),
        rows=tuple(rows),
        note=" ".join(notes),
    )


def _ms(seconds: float) -> float | None:
    """Seconds to ms for JSON; None for infinity (JSON has no infinity)."""
    return None if math.isinf(seconds) or math.isnan(seconds) else seconds * 1e3


def _finite(value: float) -> float | None:
    return None if math.isinf(value) or math.isnan(value) else value


def perf_json(
    capacity: ReplicaCapacity,
    mix: TrafficMix,
    targets: LatencyTargets,
    efficiency: Efficiency,
    frontier: list[FrontierPoint] | None,
    pool_replicas: int = 1,
) -> dict[str, Any]:
    """The `--json` document: the configuration, its numbers in ms and bytes, the factors.
    `requests_per_s` is per replica in a pool of `pool_replicas` behind one queue;
    `pool_requests_per_s` is the whole pool's."""
    config = capacity.config
    data: dict[str, Any] = {
        "model": config.llm.name,
        "gpu": config.gpu.name,
        "precision": config.weight_precision.value,
        "kv_precision": config.kv_precision.value,
        "tp": config.tp,
        "pp": config.pp,
        "ep": config.ep,
        "redundant_experts": config.redundant_experts,
        "dp": config.dp,
        "role": config.role.value,
        "gpus": config.gpus,
        "pool_replicas": pool_replicas,
        "input_tokens": mix.prompt_mean_tokens,
        "output_tokens": mix.output_mean_tokens,
        "ttft_p99_target_ms": _ms(targets.ttft_p99_s) if targets.ttft_p99_s else None,
        "tpot_p99_target_ms": _ms(targets.tpot_p99_s) if targets.tpot_p99_s else None,
        "fits": capacity.fits,
        "meets_slo": capacity.meets_slo,
        "limit": capacity.limit.value,
        "reason": capacity.reason,
        "requests_per_s": capacity.requests_per_s,
        "pool_requests_per_s": capacity.requests_per_s * pool_replicas,
        "output_tokens_per_s": capacity.output_tokens_per_s,
        "output_tokens_per_s_per_gpu": capacity.output_tokens_per_s_per_gpu,
        "weight_bytes_per_gpu": capacity.weight_bytes_per_gpu,
        "kv_bytes_per_token": capacity.kv_bytes_per_token,
        "kv_capacity_tokens": capacity.kv_capacity_tokens,
        "max_batch": capacity.max_batch,
        "batch": capacity.batch,
        "prefill_ms": _ms(capacity.prefill_s),
        "decode_step_ms": _ms(capacity.decode_step_s),
        "ttft_p99_ms": _ms(capacity.ttft_p99_s),
        "tpot_p99_ms": _ms(capacity.tpot_p99_s),
        "best_ttft_p99_ms": _ms(capacity.best_ttft_p99_s),
        "best_tpot_ms": _ms(capacity.best_tpot_s),
        "kv_transfer_bytes_per_request": capacity.kv_transfer_bytes_per_request,
        "efficiency": efficiency.model_dump(),
    }
    if frontier is not None:
        data["frontier"] = [
            {
                "batch": point.batch,
                "decode_step_ms": _ms(point.decode_step_s),
                "tokens_per_s_per_user": point.tokens_per_s_per_user,
                "output_tokens_per_s_per_gpu": point.output_tokens_per_s_per_gpu,
                "requests_per_s": point.requests_per_s,
                "ttft_p99_ms": _ms(point.ttft_p99_s),
                "tpot_p99_ms": _ms(point.tpot_p99_s),
                "fits_memory": point.fits_memory,
                "meets_slo": point.meets_slo,
                "bound": point.bound,
            }
            for point in frontier
        ]
    return data


def _fmt_ms(seconds: float) -> str:
    return "-" if math.isinf(seconds) or math.isnan(seconds) else f"{seconds * 1e3:,.1f}"


def capacity_table(
    capacity: ReplicaCapacity, targets: LatencyTargets, pool_replicas: int = 1
) -> TableSpec:
    """The main table: memory, step times, latency, throughput and the limit of one
    replica (of `pool_replicas` behind one queue); the note names the limit's reason."""
    config = capacity.config
    title = f"{config.llm.name} on {config.label} ({config.gpus} GPU{'s' * (config.gpus > 1)})"
    if pool_replicas > 1:
        title += f", one of {pool_replicas} replicas behind one queue"
    rows = [
        ("weights per GPU", f"{capacity.weight_bytes_per_gpu / GIB:,.1f} GiB"),
        ("KV bytes per token (replica)", f"{capacity.kv_bytes_per_token:,.0f} B"),
        ("KV capacity", f"{capacity.kv_capacity_tokens:,.0f} tokens"),
        ("max batch at the mix's length", f"{capacity.max_batch:,}"),
        ("prefill of a mean prompt", f"{_fmt_ms(capacity.prefill_s)} ms"),
        ("decode step at the operating batch", f"{_fmt_ms(capacity.decode_step_s)} ms"),
        ("mean batch at the operating point", f"{capacity.batch:,.1f}"),
        (
            "p99 TTFT / best",
            f"{_fmt_ms(capacity.ttft_p99_s)} / {_fmt_ms(capacity.best_ttft_p99_s)} ms",
        ),
        ("p99 TPOT / best", f"{_fmt_ms(capacity.tpot_p99_s)} / {_fmt_ms(capacity.best_tpot_s)} ms"),
        ("requests/s", f"{capacity.requests_per_s:,.2f}"),
        *(
            [("requests/s of the pool", f"{capacity.requests_per_s * pool_replicas:,.2f}")]
            if pool_replicas > 1
            else []
        ),
        ("output tokens/s (replica)", f"{capacity.output_tokens_per_s:,.0f}"),
        ("output tokens/s per GPU", f"{capacity.output_tokens_per_s_per_gpu:,.0f}"),
        ("limit", capacity.limit.value),
    ]
    if config.role is not Role.UNIFIED:
        rows.insert(
            -1,
            (
                "KV transfer per request",
                f"{capacity.kv_transfer_bytes_per_request / 2**20:,.1f} MiB",
            ),
        )
    note = ""
    if capacity.meets_slo:
        mode = "offline maximum throughput" if targets.is_offline else "capacity at the SLO"
        note = f"{mode}; limit {capacity.limit.value}: {capacity.reason}"
    return TableSpec(title=title, columns=("quantity", "value"), rows=tuple(rows), note=note)


def frontier_table(points: list[FrontierPoint], operating_batch: float) -> TableSpec:
    """The --sweep table: throughput per GPU against tokens/s per user across batch sizes,
    with the latency, the bound and the SLO verdict at each."""
    rows = []
    for point in points:
        verdict = "ok" if point.meets_slo and point.fits_memory else "no memory"
        if not point.meets_slo:
            verdict = "misses"
        rows.append(
            (
                f"{point.batch:,.0f}",
                _fmt_ms(point.decode_step_s),
                f"{point.tokens_per_s_per_user:,.1f}",
                f"{point.output_tokens_per_s_per_gpu:,.0f}",
                f"{point.requests_per_s:,.2f}",
                _fmt_ms(point.ttft_p99_s),
                _fmt_ms(point.tpot_p99_s),
                point.bound,
                verdict,
            )
        )
    return TableSpec(
        title="throughput per GPU vs tokens/s per user, across batch sizes",
        columns=(
            "batch",
            "step ms",
            "tok/s/user",
            "tok/s/GPU",
            "req/s",
            "p99 TTFT ms",
            "p99 TPOT ms",
            "bound",
            "SLO",
        ),
        rows=tuple(rows),
        note=f"operating point: mean batch {operating_batch:,.1f}",
    )


def load_json(load: LoadLatency, data: dict[str, Any]) -> dict[str, Any]:
    """The keys --rate/--concurrency add (ms at the edge; None for an unbounded queue).
    `ttft_p99_ms` and `tpot_p99_ms` become the values at the load; the capacity-at-SLO
    values stay under `at_slo`."""
    return {
        "load_mode": load.mode,
        "load_offered": load.offered,
        "arrivals": load.arrivals,
        "ttft_mean_ms": _ms(load.ttft_mean_s),
        "ttft_p50_ms": _ms(load.ttft_p50_s),
        "ttft_p99_ms": _ms(load.ttft_p99_s),
        "tpot_mean_ms": _ms(load.tpot_mean_s),
        "tpot_p99_ms": _ms(load.tpot_p99_s),
        "throughput_requests_per_s": load.throughput_requests_per_s,
        "in_flight": _finite(load.in_flight),
        "saturated": load.saturated,
        "saturation_requests_per_s": load.saturation_requests_per_s,
        "load_batch": load.batch,
        "kv_bytes_resident": load.kv_bytes_resident,
        "step_ms": _ms(load.step_s),
        "lane_utilisation": load.lane_utilisation,
        "at_slo": {"ttft_p99_ms": data["ttft_p99_ms"], "tpot_p99_ms": data["tpot_p99_ms"]},
    }


_ARRIVALS = {
    "burst": "all start together, fixed lengths, as benchmark tools run them",
    "steady": "staggered arrivals",
}


def load_table(load: LoadLatency) -> TableSpec:
    """The --rate/--concurrency table: throughput, queue, batch, KV and latency of one
    replica at the load asked for; the note says when the load saturates it."""
    asked = (
        f"{load.offered:,.2f} requests/s (open loop)"
        if load.mode == "rate"
        else f"{load.offered:,.0f} concurrent users (closed loop, {_ARRIVALS[load.arrivals]})"
    )
    rows = [
        ("throughput", f"{load.throughput_requests_per_s:,.2f} requests/s"),
        ("in flight", "unbounded" if math.isinf(load.in_flight) else f"{load.in_flight:,.1f}"),
        ("mean batch", f"{load.batch:,.1f}"),
        ("KV resident", f"{load.kv_bytes_resident / GIB:,.2f} GiB"),
        ("iteration", f"{_fmt_ms(load.step_s)} ms"),
        ("prefill lane busy", f"{load.lane_utilisation:.0%}"),
        (
            "TTFT mean / p50 / p99",
            f"{_fmt_ms(load.ttft_mean_s)} / {_fmt_ms(load.ttft_p50_s)} / "
            f"{_fmt_ms(load.ttft_p99_s)} ms",
        ),
        ("TPOT mean / p99", f"{_fmt_ms(load.tpot_mean_s)} / {_fmt_ms(load.tpot_p99_s)} ms"),
        ("saturation rate", f"{load.saturation_requests_per_s:,.2f} requests/s"),
    ]
    note = ""
    if load.saturated:
        note = (
            "saturated: the queue grows without bound"
            if load.mode == "rate"
            else "saturated: throughput at its ceiling; the extra users queue for the replica"
        )
    if load.arrivals == "burst":
        note = (note + "; " if note else "") + (
            "replayed iteration by iteration at the mean prompt and output lengths; "
            "--arrivals steady for staggered users"
        )
    return TableSpec(
        title=f"at {asked}, per replica", columns=("quantity", "value"), rows=tuple(rows), note=note
    )


def perf_tables(
    capacity: ReplicaCapacity,
    targets: LatencyTargets,
    pool_replicas: int,
    frontier: list[FrontierPoint] | None,
    load: LoadLatency | None,
    tiers: KvTierReport | None,
) -> list[TableSpec]:
    """Every table `perf` shows, in order: the replica, then the sweep, the load and the KV
    tiers where asked for."""
    tables = [capacity_table(capacity, targets, pool_replicas)]
    if frontier:
        tables.append(frontier_table(frontier, capacity.batch))
    if load is not None:
        tables.append(load_table(load))
    if tiers is not None:
        tables.append(tiers_table(tiers))
    return tables
