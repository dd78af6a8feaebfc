"""Command `perf`: one replica configuration's numbers from the performance model.

Parse the flags into one record (`cli.perf_request.PerfRequest`, which checks them
together), call models.serving, render (`cli.render.perf_tables`). Every figure comes
from models/.
"""

import sys
from pathlib import Path
from typing import Annotated

import typer

from cli.exit_codes import ExitCode
from cli.options import JsonOnly, emit_json, read_files, within
from cli.perf_request import Arrivals, PerfRequest, problem
from cli.perf_speculative import speculation_json, speculation_table_spec, speculative_model
from cli.render.console import err
from cli.render.pair_tables import pair_json, pair_tables
from cli.render.perf_tables import kv_tiers_json, load_json, perf_json, perf_tables
from cli.render.tables import markdown_tables, print_tables
from models.io.output_files import check_target
from models.io.output_kinds import JSON
from models.physics.efficiency import Efficiency, efficiency_for, engine_report
from models.physics.error_bands import band_line, band_records
from models.physics.precision import Precision
from models.schema import catalog_limits, flag_limits, limits
from models.serving.capacity import replica_capacity
from models.serving.disaggregated import PairLayout, SideDoesNotFit, pair_at_concurrency
from models.serving.frontier import throughput_frontier
from models.serving.latency import (
    LoadLatency,
    latency_at_concurrency,
    latency_at_concurrency_as_tools_run_it,
    latency_at_rate,
)
from models.serving.prefix_kv import kv_tier_report
from models.serving.replica import ReplicaConfig, Role, ServingContext


def perf(
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="Catalog GPU, e.g. h100-sxm.")],
    input_tokens: Annotated[
        float,
        typer.Option(
            "--input-tokens",
            "-i",
            help="Mean prompt tokens per request.",
            callback=within(limits.TOKENS),
        ),
    ],
    output_tokens: Annotated[
        float,
        typer.Option(
            "--output-tokens",
            "-o",
            help="Mean output tokens per request.",
            callback=within(limits.TOKENS),
        ),
    ],
    precision: Annotated[
        Precision | None,
        typer.Option(
            "--precision",
            "-p",
            help="Weight precision (default: the checkpoint's, as --model-config's "
            "quantization_config states it; else bf16).",
        ),
    ] = None,
    kv_precision: Annotated[
        Precision | None,
        typer.Option(help="KV-cache precision (default: the weights', never below fp8)."),
    ] = None,
    tp: Annotated[
        int,
        typer.Option("--tp", help="Tensor-parallel GPUs.", callback=within(limits.PARALLEL_DEGREE)),
    ] = 1,
    pp: Annotated[
        int, typer.Option("--pp", help="Pipeline stages.", callback=within(limits.PARALLEL_DEGREE))
    ] = 1,
    ep: Annotated[
        int,
        typer.Option(
            "--ep",
            help="Expert-parallel ranks of an MoE model's routed experts; must divide tp x dp.",
            callback=within(limits.PARALLEL_DEGREE),
        ),
    ] = 1,
    redundant_experts: Annotated[
        int,
        typer.Option(
            "--redundant-experts",
            help="Redundant expert copies per MoE layer (EPLB); --ep must divide the routed "
            "+ redundant experts (DeepSeek-V3 at --ep 72: 256 + 32).",
            callback=within(limits.REDUNDANT_EXPERTS),
        ),
    ] = 0,
    dp: Annotated[
        int,
        typer.Option(
            "--dp",
            help="Attention data-parallel groups of --tp GPUs each (MoE models); the replica "
            "has tp x pp x dp GPUs.",
            callback=within(limits.PARALLEL_DEGREE),
        ),
    ] = 1,
    role: Annotated[
        Role, typer.Option("--role", help="unified, or one side of a disaggregated pair.")
    ] = Role.UNIFIED,
    input_p99_tokens: Annotated[
        float | None,
        typer.Option(
            help="p99 prompt tokens (lognormal spread; default: fixed length).",
            callback=within(limits.TOKENS),
        ),
    ] = None,
    output_p99_tokens: Annotated[
        float | None,
        typer.Option(
            help="p99 output tokens (lognormal spread; default: fixed length).",
            callback=within(limits.TOKENS),
        ),
    ] = None,
    prefix_cache_hit_rate: Annotated[
        float,
        typer.Option(
            help="Fraction of prompt tokens served from a prefix cache.",
            callback=within(limits.HIT_RATE),
        ),
    ] = 0.0,
    ttft_p99_ms: Annotated[
        float | None,
        typer.Option(
            help="p99 time-to-first-token target, ms.", callback=within(limits.LATENCY_MS)
        ),
    ] = None,
    tpot_p99_ms: Annotated[
        float | None,
        typer.Option(
            help="p99 time-per-output-token target, ms.", callback=within(limits.LATENCY_MS)
        ),
    ] = None,
    pool_replicas: Annotated[
        int,
        typer.Option(
            "--pool-replicas",
            help="Identical replicas behind one router sharing one prompt queue (M/G/c); "
            "the numbers are per replica.",
            callback=within(flag_limits.POOL_REPLICAS),
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
            callback=within(limits.REQUEST_RATE),
        ),
    ] = None,
    concurrency: Annotated[
        float | None,
        typer.Option(
            "--concurrency",
            help="Latency at a load, closed loop: C users per replica, each sending the next "
            "request when the last completes.",
            callback=within(flag_limits.CONCURRENT_USERS),
        ),
    ] = None,
    arrivals: Annotated[
        Arrivals | None,
        typer.Option(
            "--arrivals",
            help="How --concurrency users arrive. burst (default): all C start together "
            "with fixed lengths and each sends its next request when the last completes, "
            "as vllm bench serve --max-concurrency, genai-perf/aiperf and trtllm-bench run "
            "them; the waves' prompts queue behind each other's prefill, which is what those "
            "tools' TTFT measures, so this is the default. steady: the users' requests are "
            "staggered (a long-running service), the closed-loop fixed point.",
        ),
    ] = None,
    random_range_ratio: Annotated[
        float | None,
        typer.Option(
            "--random-range-ratio",
            help="The burst's lengths as vllm bench serve's random dataset draws them: "
            "uniform over [L (1 - R), L (1 + R)] about the mean prompt and output L "
            "(default: fixed lengths). sglang.bench_serving's ratio R draws [R L, L]: give "
            "its mean (1 + R) L / 2 as the lengths and (1 - R) / (1 + R) here.",
            callback=within(limits.RANGE_RATIO),
        ),
    ] = None,
    length_cv: Annotated[
        float | None,
        typer.Option(
            "--length-cv",
            help="The burst's lengths spread as a dataset's conversations: lognormal about "
            "the means with this coefficient of variation (ShareGPT: about 1).",
            callback=within(limits.DATASET_LENGTH_CV),
        ),
    ] = None,
    prefix_tokens: Annotated[
        float | None,
        typer.Option(
            "--prefix-tokens",
            help="A shared prefix of T tokens (a system prompt): its KV is held once per "
            "replica; without --prefix-cache-hit-rate it also sets the hit rate.",
            callback=within(limits.TOKENS),
        ),
    ] = None,
    prefix_share: Annotated[
        float,
        typer.Option(
            "--prefix-share",
            help="Share of requests carrying the prefix, (0, 1].",
            callback=within(limits.SHARE),
        ),
    ] = 1.0,
    prefix_affinity: Annotated[
        bool,
        typer.Option("--prefix-affinity", help="Route each prefix to its home replicas."),
    ] = False,
    kv_tiers: Annotated[
        bool,
        typer.Option(
            "--kv-tiers",
            help="Print the per-tier value table (HBM, host DRAM, NVMe); host DRAM and NVMe "
            "default to the catalog server's (DGX H100: 256 GiB/GPU, 30.72 TB/node), the "
            "flags below override.",
        ),
    ] = False,
    host_memory_gib_per_gpu: Annotated[
        float | None,
        typer.Option(
            help="Host DRAM per GPU for a KV tier, GiB (--kv-tiers: default the catalog server's).",
            callback=within(limits.HOST_MEMORY_GIB),
        ),
    ] = None,
    nvme_tb_per_node: Annotated[
        float | None,
        typer.Option(
            help="Local NVMe per node for a KV tier, TB (--kv-tiers: default the catalog "
            "server's).",
            callback=within(limits.NVME_TB),
        ),
    ] = None,
    nvme_gb_s_per_node: Annotated[
        float | None,
        typer.Option(help="NVMe read bandwidth per node, GB/s.", callback=within(limits.NVME_GB_S)),
    ] = None,
    nvme_dwpd: Annotated[
        float | None,
        typer.Option(help="NVMe endurance, drive writes per day.", callback=within(limits.DWPD)),
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
        typer.Option(
            help="Speculative decoding: k tokens drafted per cycle (1-16).",
            callback=within(limits.DRAFT_TOKENS),
        ),
    ] = None,
    acceptance_rate: Annotated[
        float | None,
        typer.Option(
            help="Speculative decoding: mean acceptance of a drafted token, [0, 1].",
            callback=within(limits.ACCEPTANCE_RATE),
        ),
    ] = None,
    draft_model: Annotated[
        str | None,
        typer.Option(help="Speculative decoding: a catalog draft model, e.g. llama-3.1-8b."),
    ] = None,
    draft_cost_ratio: Annotated[
        float | None,
        typer.Option(
            help="Speculative decoding with EAGLE heads / MTP: one draft step over one target "
            "decode pass, (0, 1].",
            callback=within(limits.DRAFT_COST_RATIO),
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
    prefill_workers: Annotated[
        int | None,
        typer.Option(
            "--prefill-workers",
            help="Disaggregated pair: prefill workers (with --decode-workers and "
            "--concurrency); each side's layout from --prefill-tp/--prefill-pp/--prefill-ep/"
            "--prefill-dp and the --decode- ones, each defaulting to --tp/--pp/--ep/--dp.",
            callback=within(flag_limits.POOL_REPLICAS),
        ),
    ] = None,
    decode_workers: Annotated[
        int | None,
        typer.Option(
            "--decode-workers",
            help="Disaggregated pair: decode workers, each receiving the prompts' KV.",
            callback=within(flag_limits.POOL_REPLICAS),
        ),
    ] = None,
    prefill_tp: Annotated[
        int | None,
        typer.Option(
            "--prefill-tp",
            help="Tensor-parallel GPUs of a prefill worker (default --tp).",
            callback=within(limits.PARALLEL_DEGREE),
        ),
    ] = None,
    prefill_pp: Annotated[
        int | None,
        typer.Option(
            "--prefill-pp",
            help="Pipeline stages of a prefill worker (default --pp).",
            callback=within(limits.PARALLEL_DEGREE),
        ),
    ] = None,
    prefill_ep: Annotated[
        int | None,
        typer.Option(
            "--prefill-ep",
            help="Expert-parallel ranks of a prefill worker (default --ep).",
            callback=within(limits.PARALLEL_DEGREE),
        ),
    ] = None,
    prefill_dp: Annotated[
        int | None,
        typer.Option(
            "--prefill-dp",
            help="Attention data-parallel groups of a prefill worker (default --dp).",
            callback=within(limits.PARALLEL_DEGREE),
        ),
    ] = None,
    decode_tp: Annotated[
        int | None,
        typer.Option(
            "--decode-tp",
            help="Tensor-parallel GPUs of a decode worker (default --tp).",
            callback=within(limits.PARALLEL_DEGREE),
        ),
    ] = None,
    decode_pp: Annotated[
        int | None,
        typer.Option(
            "--decode-pp",
            help="Pipeline stages of a decode worker (default --pp).",
            callback=within(limits.PARALLEL_DEGREE),
        ),
    ] = None,
    decode_ep: Annotated[
        int | None,
        typer.Option(
            "--decode-ep",
            help="Expert-parallel ranks of a decode worker (default --ep).",
            callback=within(limits.PARALLEL_DEGREE),
        ),
    ] = None,
    decode_dp: Annotated[
        int | None,
        typer.Option(
            "--decode-dp",
            help="Attention data-parallel groups of a decode worker (default --dp).",
            callback=within(limits.PARALLEL_DEGREE),
        ),
    ] = None,
    kv_link_gb_s: Annotated[
        float | None,
        typer.Option(
            "--kv-link-gb-s",
            help="Disaggregated pair: GB/s of one prompt's KV transfer from a prefill to a "
            "decode worker (default: the slower side's scale-out NICs, GPUs x NIC x the "
            "scale-out fraction).",
            callback=within(catalog_limits.KV_LINK_GB_S),
        ),
    ] = None,
) -> None:
    """One replica configuration's memory, step times, capacity and limiting factor.

    Without SLO flags it reports the offline maximum throughput (what published
    max-throughput tables measure). With --pool-replicas N the replica is one of N behind
    one router, whose prompts wait for the first free prefill lane of the N (M/G/N): a
    long prefill against a tight TTFT target leaves a lone replica little room to queue,
    and a pool much more. With --prefill-workers and --decode-workers it reports a
    disaggregated pair at --concurrency users instead: throughput, mean TTFT (prefill
    wait + prefill + KV transfer), mean TPOT and the side that limits. Exit 3 when the
    configuration does not fit or cannot meet the targets at any load; exit 2 for bad input.
    """
    request = PerfRequest(**locals())  # every flag, by its parameter name
    if as_json is not None:
        check_target(as_json, read_files(engine, model_config), kind=JSON)
    if request.disaggregated:
        _pair(request, as_json, as_markdown)
        return
    config, mix, targets = request.replica_config(), request.mix, request.targets
    source = request.efficiency_source()
    efficiency = efficiency_for(config.gpu, request.precision, engine=source.engine)
    engine_line = engine_report([config.gpu], engine)
    engine_line += "\n" + band_line(
        source.engine, config.gpu, config.llm, config.ep, config.dp, request.load_asked
    )
    tier_line = request.tier_line()
    if tier_line:
        engine_line = f"{engine_line}\n{tier_line}" if engine_line else tier_line
    capacity = replica_capacity(config, mix, targets, efficiency, pool_replicas)
    frontier = (
        throughput_frontier(
            ServingContext(config, mix, efficiency), targets, pool_replicas=pool_replicas
        )
        if sweep
        else None
    )
    load = _load(request, config, efficiency)
    tiers = (
        kv_tier_report(ServingContext(config, mix, efficiency), capacity.requests_per_s)
        if request.tiers_asked
        else None
    )
    cycle = speculative_model(config, efficiency) if capacity.fits else None
    if as_json:
        data = perf_json(capacity, mix, targets, efficiency, frontier, pool_replicas)
        data.update(engine=source.engine, borrowed_efficiency=source.borrowed)
        data["engine_note"] = engine_report([config.gpu], engine)
        data["model_error"] = band_records(
            source.engine, config.gpu, config.llm, config.ep, config.dp, request.load_asked
        )
        if tiers is not None:
            data.update(kv_tiers_json(tiers), kv_tier_figures=tier_line)
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


def _load(
    request: PerfRequest, config: ReplicaConfig, efficiency: Efficiency
) -> LoadLatency | None:
    """The latency at the load asked for (--rate or --concurrency), or None."""
    mix, replicas = request.mix, request.pool_replicas
    try:
        if request.rate is not None:
            return latency_at_rate(ServingContext(config, mix, efficiency), request.rate, replicas)
        if request.concurrency is not None and request.arrivals is Arrivals.BURST:
            return latency_at_concurrency_as_tools_run_it(
                ServingContext(config, mix, efficiency),
                int(request.concurrency),
                replicas,
                spread=request.spread,
            )
        if request.concurrency is not None:
            return latency_at_concurrency(
                ServingContext(config, mix, efficiency), request.concurrency, replicas
            )
    except ValueError as error:
        long_replay = "iterations" in str(error)
        hint = "; --arrivals steady answers any number of users" if long_replay else ""
        raise problem(
            "--rate" if request.rate is not None else "--concurrency", str(error) + hint
        ) from None
    return None


def _pair(request: PerfRequest, as_json: Path | None, as_markdown: bool) -> None:
    """A disaggregated pair at the concurrency asked (models.serving.disaggregated)."""
    prefill = request.side_config(Role.PREFILL)
    decode = request.side_config(Role.DECODE)
    source = request.efficiency_source()
    efficiency = efficiency_for(request.gpu_spec, request.precision, engine=source.engine)
    workers = (int(request.prefill_workers or 1), int(request.decode_workers or 1))
    link = None if request.kv_link_gb_s is None else request.kv_link_gb_s * 1e9
    layout = PairLayout(
        ServingContext(prefill, request.mix, efficiency),
        ServingContext(decode, request.mix, efficiency),
        *workers,
        link_bytes_per_s=link,
    )
    try:
        report = pair_at_concurrency(layout, request.concurrency or 1, str(request.arrivals))
    except SideDoesNotFit as error:
        err.print("[bold red]does not fit:[/]")
        err.print(str(error), markup=False)
        raise typer.Exit(ExitCode.INFEASIBLE) from None
    except ValueError as error:
        long_replay = "iterations" in str(error)
        hint = "; --arrivals steady answers any number of users" if long_replay else ""
        raise problem("--concurrency", str(error) + hint) from None
    if as_json:
        data = pair_json(report, prefill, decode, workers)
        data.update(engine=source.engine, borrowed_efficiency=source.borrowed)
        data["engine_note"] = engine_report([request.gpu_spec], request.engine)
        emit_json(as_json, data)
        return
    tables = pair_tables(report, prefill, decode, workers)
    engine_line = engine_report([request.gpu_spec], request.engine)
    if as_markdown:
        sys.stdout.write(markdown_tables([], tables, engine_line))
    else:
        print_tables([], tables, engine_line)
