"""The tables and JSON of `perf --prefill-workers P --decode-workers D`: a disaggregated
pair at a closed-loop concurrency. Seconds become ms and bytes MB here, at the edge;
every figure comes from models.serving.disaggregated."""

from typing import Any

from cli.render.tables import TableSpec
from models.serving.disaggregated import DECODE, LINK, PREFILL, PairReport
from models.serving.replica import ReplicaConfig

_ARRIVALS = {
    "burst": "all start together with fixed lengths, as benchmark tools run them",
    "steady": "staggered users, the closed-loop fixed point",
}


def _layout(config: ReplicaConfig) -> str:
    text = f"tp{config.tp} x pp{config.pp}"
    if config.ep > 1:
        text += f", ep{config.ep}"
    if config.redundant_experts:
        text += f"+{config.redundant_experts}"
    if config.dp > 1:
        text += f", dp{config.dp}"
    return text


def link_source(report: PairReport) -> str:
    """Where the link of one KV transfer comes from, in words."""
    if report.link_given:
        return "--kv-link-gb-s (given)"
    return "the slower side's scale-out NICs: GPUs x NIC x scale-out fraction"


def pair_json(
    report: PairReport, prefill: ReplicaConfig, decode: ReplicaConfig, workers: tuple[int, int]
) -> dict[str, Any]:
    """`perf --json` for a pair: the layout, the throughput, the mean latencies and the
    caps by side (ms and requests/s)."""
    point, gpus = report.point, report.gpus
    return {
        "mode": "disaggregated",
        "arrivals": point.arrivals,
        "concurrency": point.users,
        "prefill": {"workers": workers[0], "tp": prefill.tp, "pp": prefill.pp,
                    "ep": prefill.ep, "dp": prefill.dp, "gpus_per_worker": prefill.gpus},
        "decode": {"workers": workers[1], "tp": decode.tp, "pp": decode.pp,
                   "ep": decode.ep, "dp": decode.dp, "gpus_per_worker": decode.gpus,
                   "seats_per_worker": report.decode_seats},
        "gpus": gpus,
        "throughput_requests_per_s": point.throughput_requests_per_s,
        "output_tokens_per_s": report.output_tokens_per_s,
        "total_tokens_per_s": report.total_tokens_per_s,
        "output_tokens_per_s_per_gpu": report.per_gpu(report.output_tokens_per_s),
        "total_tokens_per_s_per_gpu": report.per_gpu(report.total_tokens_per_s),
        "ttft_mean_ms": point.ttft_mean_s * 1e3,
        "prefill_wait_mean_ms": point.prefill_wait_mean_s * 1e3,
        "prefill_ms": report.prefill_s * 1e3,
        "kv_transfer_ms": report.kv_transfer_s * 1e3,
        "kv_transfer_bytes_per_request": report.kv_transfer_bytes,
        "kv_link_bytes_per_s": report.link_bytes_per_s,
        "kv_link_source": link_source(report),
        "tpot_mean_ms": point.tpot_mean_s * 1e3,
        "decode_batch_per_worker": point.decode_batch,
        "caps_requests_per_s": dict(point.caps),
        "utilisation": {side: point.utilisation(side) for side in point.caps},
        "limit": point.limit,
        "saturated": point.saturated,
    }  # fmt: skip


def pair_tables(
    report: PairReport, prefill: ReplicaConfig, decode: ReplicaConfig, workers: tuple[int, int]
) -> list[TableSpec]:
    """The pair's sides (workers, layout, GPUs, the throughput each caps and its busy
    share), then the figures at the concurrency."""
    point, gpus = report.point, report.gpus
    caps = point.caps
    link_gb_s = report.link_bytes_per_s / 1e9
    sides = (
        (PREFILL, str(workers[0]), _layout(prefill), str(workers[0] * prefill.gpus)),
        (DECODE, str(workers[1]), _layout(decode), str(workers[1] * decode.gpus)),
        (LINK, "-", f"{link_gb_s:,.1f} GB/s a transfer", "-"),
    )
    side_rows = tuple(
        (
            side + (" (limits)" if side == point.limit else ""),
            count,
            layout,
            side_gpus,
            f"{caps[side]:,.2f}",
            f"{point.utilisation(side):.0%}",
        )
        for side, count, layout, side_gpus in sides
    )
    rows = (
        ("throughput", f"{point.throughput_requests_per_s:,.2f} requests/s"),
        (
            "output tokens/s",
            f"{report.output_tokens_per_s:,.0f} "
            f"({report.per_gpu(report.output_tokens_per_s):,.1f} per GPU)",
        ),
        (
            "total tokens/s",
            f"{report.total_tokens_per_s:,.0f} "
            f"({report.per_gpu(report.total_tokens_per_s):,.1f} per GPU, "
            "prompt and output)",
        ),
        (
            "TTFT mean",
            f"{point.ttft_mean_s * 1e3:,.1f} ms = wait {point.prefill_wait_mean_s * 1e3:,.1f} "
            f"+ prefill {report.prefill_s * 1e3:,.1f} + KV transfer "
            f"{report.kv_transfer_s * 1e3:,.1f}",
        ),
        ("TPOT mean", f"{point.tpot_mean_s * 1e3:,.2f} ms"),
        (
            "decode batch",
            f"{point.decode_batch:,.1f} per worker of {report.decode_seats:,} seats",
        ),
        (
            "KV per request",
            f"{report.kv_transfer_bytes / 1e6:,.1f} MB over {link_gb_s:,.1f} GB/s "
            f"({link_source(report)})",
        ),
        ("limited by", point.limit),
    )
    note = (
        "caps: the requests/s each side would carry were the others unlimited (decode at "
        "min(seats, users / workers) per worker); busy: throughput over cap"
    )
    saturated = (
        "; saturated: the users beyond what the pair holds queue in front of the "
        f"{point.limit} side"
        if point.saturated
        else ""
    )
    return [
        TableSpec(
            title=f"disaggregated pair: {gpus:,} GPUs",
            columns=("side", "workers", "layout", "GPUs", "cap req/s", "busy"),
            rows=side_rows,
            note=note,
        ),
        TableSpec(
            title=f"at {point.users:,} concurrent users (closed loop, {_ARRIVALS[point.arrivals]})",
            columns=("quantity", "value"),
            rows=rows,
            note=(
                "mean TTFT and TPOT as benchmark tools report them; burst: replayed event by "
                "event at the mean prompt and output lengths"
                if point.arrivals == "burst"
                else "mean TTFT and TPOT at the closed-loop fixed point"
            )
            + saturated,
        ),
    ]
