"""Command `perf`: one replica configuration's numbers from the performance model.

Why one module over 500 lines: `perf` has the most options of any command (layout,
engine, load, prefix and tier flags) and renders each view; every figure comes from
models/.

Parsing and rendering only: every figure comes from `models.serving.capacity`; this module
converts bytes to GiB and seconds to ms at the edge.
"""

import math
import sys
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.exit_codes import ExitCode
from cli.options import JsonOnly, emit_json
from cli.perf_speculative import (
    speculation_from_flags,
    speculation_json,
    speculation_table_spec,
    speculative_model,
)
from cli.render.console import err
from cli.render.tables import TableSpec, markdown_tables, print_tables
from models.io.hf_config import HfConfigError, load_hf_config
from models.physics import catalog
from models.physics.efficiency import (
    Efficiency,
    UnknownEngine,
    check_engine,
    efficiency_for,
    efficiency_source,
    engine_report,
)
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.memory import GIB, default_kv_precision, layout_problem
from models.physics.precision import Precision
from models.schema.errors import InputError, Issue
from models.schema.traffic import TokenDistribution
from models.serving.capacity import replica_capacity
from models.serving.frontier import FrontierPoint, throughput_frontier
from models.serving.latency import LoadLatency, latency_at_concurrency, latency_at_rate
from models.serving.prefix_kv import KvTierReport, kv_tier_report
from models.serving.replica import (
    LatencyTargets,
    ReplicaCapacity,
    ReplicaConfig,
    Role,
    ServingContext,
    TrafficMix,
)

_WHERE = "command line"


def _problem(flag: str, message: str) -> InputError:
    return InputError([Issue(_WHERE, None, flag, message)])


def _mix(
    input_tokens: float,
    output_tokens: float,
    input_p99: float | None,
    output_p99: float | None,
    hit_rate: float,
) -> TrafficMix:
    problems = []
    for flag, value in (("--input-tokens", input_tokens), ("--output-tokens", output_tokens)):
        if value <= 0:
            problems.append(Issue(_WHERE, None, flag, f"must be positive, got {value:g}"))
    for flag, p99, mean in (
        ("--input-p99-tokens", input_p99, input_tokens),
        ("--output-p99-tokens", output_p99, output_tokens),
    ):
        if p99 is not None and p99 < mean:
            problems.append(Issue(_WHERE, None, flag, f"must be at least the mean ({mean:g})"))
    if not 0 <= hit_rate < 1:
        problems.append(
            Issue(_WHERE, None, "--prefix-cache-hit-rate", f"must be in [0, 1), got {hit_rate:g}")
        )
    if problems:
        raise InputError(problems)
    prompt = TokenDistribution(mean=input_tokens, p99=input_p99 or input_tokens)
    output = TokenDistribution(mean=output_tokens, p99=output_p99 or output_tokens)
    return TrafficMix.of_lengths(prompt, output, hit_rate)


def _prefix_mix(
    mix: TrafficMix,
    prefix_tokens: float | None,
    prefix_share: float,
    hit_rate_given: bool,
    affinity: bool,
) -> TrafficMix:
    """`mix` with one declared shared prefix (--prefix-tokens, --prefix-share)."""
    if prefix_tokens is None:
        return mix
    problems = []
    if prefix_tokens <= 0:
        problems.append(
            Issue(_WHERE, None, "--prefix-tokens", f"must be positive, got {prefix_tokens:g}")
        )
    elif prefix_tokens > mix.prompt_p99_tokens:
        problems.append(
            Issue(
                _WHERE,
                None,
                "--prefix-tokens",
                f"({prefix_tokens:g}) exceeds the p99 prompt ({mix.prompt_p99_tokens:g} tokens)",
            )
        )
    elif prefix_tokens * prefix_share > mix.prompt_mean_tokens:
        problems.append(
            Issue(
                _WHERE,
                None,
                "--prefix-share",
                f"tokens x share exceeds the mean prompt ({mix.prompt_mean_tokens:g} tokens)",
            )
        )
    if not 0 < prefix_share <= 1:
        problems.append(
            Issue(_WHERE, None, "--prefix-share", f"must be in (0, 1], got {prefix_share:g}")
        )
    if problems:
        raise InputError(problems)
    return replace(
        mix,
        prefix_tokens=(prefix_tokens,),
        prefix_shares=(prefix_share,),
        hit_rate_from_prefixes=not hit_rate_given,
        prefix_affinity=affinity,
    )


def _tiered_gpu(gpu: GpuSpec, tiers: dict[str, float | None]) -> GpuSpec:
    """The catalog GPU with the tier flags given (each positive)."""
    given = {key: value for key, value in tiers.items() if value is not None}
    for key, value in given.items():
        if value <= 0:
            raise _problem("--" + key.replace("_", "-"), f"must be positive, got {value:g}")
    return gpu.model_copy(update=given) if given else gpu


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


def _llm(model: str | None, model_config: Path | None) -> LlmSpec:
    """The model `--model` names in the catalog, or the one `--model-config` describes."""
    if (model is None) == (model_config is None):
        raise _problem("--model", "give either --model NAME or --model-config FILE")
    if model_config is not None:
        try:
            return load_hf_config(str(model_config))
        except HfConfigError as error:
            raise _problem("--model-config", str(error)) from None
    try:
        return catalog.llm(model or "")
    except KeyError as error:
        raise _problem("--model", str(error.args[0])) from None


def _load(
    config: ReplicaConfig,
    mix: TrafficMix,
    efficiency: Efficiency,
    pool_replicas: int,
    rate: float | None,
    concurrency: float | None,
) -> LoadLatency | None:
    """The latency at the load asked for (--rate or --concurrency), or None."""
    if rate is not None and concurrency is not None:
        raise _problem("--rate/--concurrency", "give one of them, not both")
    flag = "--rate" if rate is not None else "--concurrency"
    try:
        if rate is not None:
            return latency_at_rate(ServingContext(config, mix, efficiency), rate, pool_replicas)
        if concurrency is not None:
            return latency_at_concurrency(
                ServingContext(config, mix, efficiency), concurrency, pool_replicas
            )
    except ValueError as error:
        raise _problem(flag, str(error)) from None
    return None


def load_json(load: LoadLatency, data: dict[str, Any]) -> dict[str, Any]:
    """The keys --rate/--concurrency add (ms at the edge; None for an unbounded queue).
    `ttft_p99_ms` and `tpot_p99_ms` become the values at the load; the capacity-at-SLO
    values stay under `at_slo`."""
    return {
        "load_mode": load.mode,
        "load_offered": load.offered,
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


def load_table(load: LoadLatency) -> TableSpec:
    """The --rate/--concurrency table: throughput, queue, batch, KV and latency of one
    replica at the load asked for; the note says when the load saturates it."""
    asked = (
        f"{load.offered:,.2f} requests/s (open loop)"
        if load.mode == "rate"
        else f"{load.offered:,.0f} concurrent users (closed loop)"
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


def perf(
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="Catalog GPU, e.g. h100-sxm.")],
    input_tokens: Annotated[
        float, typer.Option("--input-tokens", "-i", help="Mean prompt tokens per request.")
    ],
    output_tokens: Annotated[
        float, typer.Option("--output-tokens", "-o", help="Mean output tokens per request.")
    ],
    precision: Annotated[
        Precision, typer.Option("--precision", "-p", help="Weight precision.")
    ] = Precision.BF16,
    kv_precision: Annotated[
        Precision | None,
        typer.Option(help="KV-cache precision (default: the weights', never below fp8)."),
    ] = None,
    tp: Annotated[int, typer.Option("--tp", help="Tensor-parallel GPUs.")] = 1,
    pp: Annotated[int, typer.Option("--pp", help="Pipeline stages.")] = 1,
    ep: Annotated[
        int,
        typer.Option(
            "--ep",
            help="Expert-parallel ranks of an MoE model's routed experts; must divide tp x dp.",
        ),
    ] = 1,
    dp: Annotated[
        int,
        typer.Option(
            "--dp",
            help="Attention data-parallel groups of --tp GPUs each (MoE models); the replica "
            "has tp x pp x dp GPUs.",
        ),
    ] = 1,
    role: Annotated[
        Role, typer.Option("--role", help="unified, or one side of a disaggregated pair.")
    ] = Role.UNIFIED,
    input_p99_tokens: Annotated[
        float | None,
        typer.Option(help="p99 prompt tokens (lognormal spread; default: fixed length)."),
    ] = None,
    output_p99_tokens: Annotated[
        float | None,
        typer.Option(help="p99 output tokens (lognormal spread; default: fixed length)."),
    ] = None,
    prefix_cache_hit_rate: Annotated[
        float, typer.Option(help="Fraction of prompt tokens served from a prefix cache.")
    ] = 0.0,
    ttft_p99_ms: Annotated[
        float | None, typer.Option(help="p99 time-to-first-token target, ms.")
    ] = None,
    tpot_p99_ms: Annotated[
        float | None, typer.Option(help="p99 time-per-output-token target, ms.")
    ] = None,
    pool_replicas: Annotated[
        int,
        typer.Option(
            "--pool-replicas",
            min=1,
            help="Identical replicas behind one router sharing one prompt queue (M/G/c); "
            "the numbers are per replica.",
        ),
    ] = 1,
    sweep: Annotated[
        bool,
        typer.Option(
            "--sweep", help="Also print throughput per GPU vs tokens/s per user across batches."
        ),
    ] = False,
    rate: Annotated[
        float | None,
        typer.Option(
            "--rate",
            help="Latency at a load, open loop: Poisson arrivals at R requests/s per replica "
            "(per replica of the pool with --pool-replicas). JSON's ttft_p99_ms and "
            "tpot_p99_ms then hold the values at that load.",
        ),
    ] = None,
    concurrency: Annotated[
        float | None,
        typer.Option(
            "--concurrency",
            help="Latency at a load, closed loop: C users per replica, each sending the next "
            "request when the last completes.",
        ),
    ] = None,
    prefix_tokens: Annotated[
        float | None,
        typer.Option(
            "--prefix-tokens",
            help="A shared prefix of T tokens (a system prompt): its KV is held once per "
            "replica; without --prefix-cache-hit-rate it also sets the hit rate.",
        ),
    ] = None,
    prefix_share: Annotated[
        float,
        typer.Option("--prefix-share", help="Share of requests carrying the prefix, (0, 1]."),
    ] = 1.0,
    prefix_affinity: Annotated[
        bool,
        typer.Option("--prefix-affinity", help="Route each prefix to its home replicas."),
    ] = False,
    kv_tiers: Annotated[
        bool,
        typer.Option("--kv-tiers", help="Print the per-tier value table (HBM, host DRAM, NVMe)."),
    ] = False,
    host_memory_gib_per_gpu: Annotated[
        float | None, typer.Option(help="Host DRAM per GPU for a KV tier, GiB.")
    ] = None,
    nvme_tb_per_node: Annotated[
        float | None, typer.Option(help="Local NVMe per node for a KV tier, TB.")
    ] = None,
    nvme_gb_s_per_node: Annotated[
        float | None, typer.Option(help="NVMe read bandwidth per node, GB/s.")
    ] = None,
    nvme_dwpd: Annotated[
        float | None, typer.Option(help="NVMe endurance, drive writes per day.")
    ] = None,
    as_json: JsonOnly = None,
    as_markdown: Annotated[
        bool, typer.Option("--markdown", help="Print the tables as Markdown instead.")
    ] = False,
    model: Annotated[
        str | None, typer.Option("--model", "-m", help="Catalog model, e.g. llama-3.3-70b.")
    ] = None,
    model_config: Annotated[
        Path | None,
        typer.Option(
            "--model-config",
            help="A Hugging Face config.json to read the model from instead of --model "
            "(llama, qwen2, qwen3, qwen3_moe, mixtral, deepseek_v3, gpt_oss, llama4).",
        ),
    ] = None,
    speculative_tokens: Annotated[
        int | None,
        typer.Option(help="Speculative decoding: k tokens drafted per cycle (1-16)."),
    ] = None,
    acceptance_rate: Annotated[
        float | None,
        typer.Option(help="Speculative decoding: mean acceptance of a drafted token, [0, 1]."),
    ] = None,
    draft_model: Annotated[
        str | None,
        typer.Option(help="Speculative decoding: a catalog draft model, e.g. llama-3.1-8b."),
    ] = None,
    draft_cost_ratio: Annotated[
        float | None,
        typer.Option(
            help="Speculative decoding with EAGLE heads / MTP: one draft step over one target "
            "decode pass, (0, 1]."
        ),
    ] = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="Engine profile of the efficiency factors (trtllm-0.20, trtllm-0.17; "
            "default: the newest with data).",
        ),
    ] = None,
) -> None:
    """One replica configuration's memory, step times, capacity and limiting factor.

    Without SLO flags it reports the offline maximum throughput (what published
    max-throughput tables measure). With --pool-replicas N the replica is one of N behind
    one router, whose prompts wait for the first free prefill lane of the N (M/G/N): a
    long prefill against a tight TTFT target leaves a lone replica little room to queue,
    and a pool much more. Exit 3 when the configuration does not fit or cannot
    meet the targets at any load; exit 2 for bad input.
    """
    if as_json and as_markdown:
        raise typer.BadParameter("give --json or --markdown, not both", param_hint="--markdown")
    try:
        gpu_spec = catalog.gpu(gpu)
    except KeyError as error:
        raise _problem("--gpu", str(error.args[0])) from None
    gpu_spec = _tiered_gpu(
        gpu_spec,
        {
            "host_memory_gib_per_gpu": host_memory_gib_per_gpu,
            "nvme_tb_per_node": nvme_tb_per_node,
            "nvme_gb_s_per_node": nvme_gb_s_per_node,
            "nvme_dwpd": nvme_dwpd,
        },
    )
    llm_spec = _llm(model, model_config)
    for flag, target in (("--ttft-p99-ms", ttft_p99_ms), ("--tpot-p99-ms", tpot_p99_ms)):
        if target is not None and target <= 0:
            raise _problem(flag, f"must be positive, got {target:g}")
    kv = kv_precision or default_kv_precision(precision)
    problem = layout_problem(gpu_spec, llm_spec, precision, kv, tp, pp, ep, dp)
    if problem is not None:
        raise _problem("--tp/--pp/--ep/--dp/--precision", problem)
    mix = _mix(
        input_tokens, output_tokens, input_p99_tokens, output_p99_tokens, prefix_cache_hit_rate
    )
    mix = _prefix_mix(mix, prefix_tokens, prefix_share, prefix_cache_hit_rate > 0, prefix_affinity)
    targets = LatencyTargets(
        ttft_p99_s=None if ttft_p99_ms is None else ttft_p99_ms / 1e3,
        tpot_p99_s=None if tpot_p99_ms is None else tpot_p99_ms / 1e3,
    )
    config = ReplicaConfig(gpu_spec, llm_spec, precision, kv, tp, pp, role, ep, dp)
    speculation = speculation_from_flags(
        speculative_tokens, acceptance_rate, draft_model, draft_cost_ratio
    )
    config = replace(config, speculation=speculation)
    if speculation is not None and (rate is not None or concurrency is not None):
        raise _problem(
            "--rate/--concurrency",
            "the latency at a load runs plain decoding: drop --rate/--concurrency or the "
            "speculative flags",
        )
    try:
        source = efficiency_source(gpu_spec, check_engine(engine))
    except UnknownEngine as error:
        raise _problem("--engine", str(error)) from None
    efficiency = efficiency_for(gpu_spec, precision, engine=source.engine)
    engine_line = engine_report([gpu_spec], engine)
    capacity = replica_capacity(config, mix, targets, efficiency, pool_replicas)
    frontier = (
        throughput_frontier(
            ServingContext(config, mix, efficiency), targets, pool_replicas=pool_replicas
        )
        if sweep
        else None
    )
    load = _load(config, mix, efficiency, pool_replicas, rate, concurrency)
    tiers = (
        kv_tier_report(ServingContext(config, mix, efficiency), capacity.requests_per_s)
        if kv_tiers or prefix_tokens is not None
        else None
    )
    cycle = speculative_model(config, efficiency) if capacity.fits else None
    if as_json:
        data = perf_json(capacity, mix, targets, efficiency, frontier, pool_replicas)
        data.update(engine=source.engine, borrowed_efficiency=source.borrowed)
        if tiers is not None:
            data.update(kv_tiers_json(tiers))
        if cycle is not None:
            data.update(speculation_json(cycle, mix, capacity.max_batch))
        emit_json(as_json, data if load is None else {**data, **load_json(load, data)})
    elif capacity.fits:
        tables = perf_tables(capacity, targets, pool_replicas, frontier, load, tiers)
        if cycle is not None:
            tables.insert(1, speculation_table_spec(cycle, mix, capacity.max_batch))
        if as_markdown:
            sys.stdout.write(markdown_tables([], tables, engine_line))
        else:
            print_tables([], tables, engine_line)
    if not capacity.fits or not capacity.meets_slo:
        err.print(f"[bold red]{'does not fit' if not capacity.fits else 'cannot meet the SLO'}:[/]")
        err.print(capacity.reason, markup=False)
        raise typer.Exit(ExitCode.INFEASIBLE)
