"""Commands `estimate` (back-of-envelope fleet sizing) and `headroom` (the utilisation
ceiling a p99 TTFT target implies). Parsing and rendering only: the figures come from
`models.calculators.estimate` and `models.serving.headroom`, the tables from
`cli.render.estimate_tables` (the shared table spec, so both print as terminal tables, Markdown or
JSON)."""

import sys
from dataclasses import asdict, replace
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.estimate_config import assumptions_from, check_replaced, read_config
from cli.exit_codes import ExitCode
from cli.options import JsonOnly, emit_json, given_on_command_line, read_files, within
from cli.render.console import err
from cli.render.estimate_tables import estimate_report, headroom_report
from cli.render.tables import Report
from models.calculators.estimate import (
    EstimateAssumptions,
    NoServingConfig,
    estimate_with_model,
    model_throughput,
)
from models.calculators.estimate import estimate as run_estimate
from models.io.output_files import check_target
from models.io.output_kinds import JSON
from models.physics import catalog
from models.physics.efficiency import UnknownEngine, check_engine, efficiency_source, engine_report
from models.physics.hardware import GpuSpec
from models.physics.llm import LlmSpec
from models.physics.precision import Precision
from models.schema import flag_limits, limits
from models.schema.limits import Bound
from models.schema.quantities import describe
from models.serving.headroom import derive_headroom
from models.serving.replica import LatencyTargets

MarkdownFlag = Annotated[
    bool, typer.Option("--markdown", help="Print the tables as Markdown instead.")
]


def _default(field: str) -> str:
    value = EstimateAssumptions.model_fields[field].default
    return describe(value) if isinstance(value, float) else str(value)  # 2,000,000, not 2e+06


def _assumption(text: str, field: str, bound: Bound) -> Any:
    return typer.Option(
        help=f"{text} (default {_default(field)})", show_default=False, callback=within(bound)
    )


def estimate(
    ctx: typer.Context,
    requests_per_day: Annotated[
        float | None,
        _assumption(
            "Requests in an average day.", "requests_per_day", limits.ESTIMATED_REQUESTS_PER_DAY
        ),
    ] = None,
    peak_to_average: Annotated[
        float | None,
        _assumption(
            "Peak-hour rate over the daily average.", "peak_to_average", limits.PEAK_TO_AVERAGE
        ),
    ] = None,
    latency_s: Annotated[
        float | None,
        _assumption(
            "End-to-end seconds per request (Little's law W).",
            "latency_s",
            flag_limits.REQUEST_LATENCY_S,
        ),
    ] = None,
    input_tokens: Annotated[
        float | None,
        _assumption("Prompt tokens per request.", "input_tokens", flag_limits.PROMPT_TOKENS),
    ] = None,
    output_tokens: Annotated[
        float | None, _assumption("Output tokens per request.", "output_tokens", limits.TOKENS)
    ] = None,
    gpu_tokens_per_s: Annotated[
        float | None,
        _assumption(
            "ASSUMED output tokens/s per GPU under batching.",
            "gpu_tokens_per_s",
            flag_limits.GPU_TOKENS_PER_S,
        ),
    ] = None,
    target_utilization: Annotated[
        float | None,
        _assumption(
            "Planned utilisation at peak, in (0, 1].", "target_utilization", limits.MAX_UTILIZATION
        ),
    ] = None,
    seqs_per_gpu: Annotated[
        float | None,
        _assumption(
            "Concurrent sequences one GPU's memory holds.",
            "seqs_per_gpu",
            flag_limits.SEQUENCES_PER_GPU,
        ),
    ] = None,
    slo: Annotated[
        float | None, _assumption("SLO as a fraction of good requests.", "slo", limits.AVAILABILITY)
    ] = None,
    window_days: Annotated[
        float | None, _assumption("SLO window, days.", "window_days", flag_limits.SLO_WINDOW_DAYS)
    ] = None,
    bytes_per_token: Annotated[
        float | None,
        _assumption(
            "Logged bytes of text per token.", "bytes_per_token", flag_limits.BYTES_PER_TOKEN
        ),
    ] = None,
    zones: Annotated[
        int | None,
        typer.Option(
            help="Zones to spread over, surviving the loss of one (>= 2).",
            callback=within(limits.ZONES),
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            help="YAML or JSON file of the same assumptions (dashes or underscores); "
            "flags override it.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(help="Catalog LLM: take per-GPU throughput from the performance model."),
    ] = None,
    gpu: Annotated[str | None, typer.Option(help="Catalog GPU for --model.")] = None,
    precision: Annotated[
        Precision, typer.Option(help="Weights and KV precision for --model.")
    ] = Precision.BF16,
    ttft_p99_ms: Annotated[
        float | None,
        typer.Option(
            help="p99 TTFT target for --model, ms (default none); the capacity is taken at "
            "it, so no --target-utilization applies on top (it already holds the p99).",
            callback=within(limits.LATENCY_MS),
        ),
    ] = None,
    tpot_p99_ms: Annotated[
        float | None,
        typer.Option(
            help="p99 time per output token for --model, ms.", callback=within(limits.LATENCY_MS)
        ),
    ] = None,
    as_json: JsonOnly = None,
    as_markdown: MarkdownFlag = False,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="Engine profile of the efficiency factors for --model (trtllm-0.20, "
            "trtllm-0.17; default: the newest with data).",
        ),
    ] = None,
) -> None:
    """Back-of-envelope sizing: QPS, in flight, GPUs, N+1, logs, M/M/1, error budget, burn.

    GPUs by throughput and by concurrency (Little's law), the larger plus a spare, and
    with --zones the fleet that survives losing a zone. With no options it works the
    usual chat example (2M requests a day, 4x peak, ...). Every number is an estimate
    from the stated assumptions, not a measurement.
    """
    flags = {
        "requests_per_day": requests_per_day,
        "peak_to_average": peak_to_average,
        "latency_s": latency_s,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "gpu_tokens_per_s": gpu_tokens_per_s,
        "target_utilization": target_utilization,
        "seqs_per_gpu": seqs_per_gpu,
        "slo": slo,
        "window_days": window_days,
        "bytes_per_token": bytes_per_token,
        "zones": zones,
    }
    _check_output_flags(as_json, as_markdown)
    if as_json is not None:
        check_target(as_json, read_files(engine, config), kind=JSON)
    _check_model_flags(model, gpu, gpu_tokens_per_s, ttft_p99_ms, tpot_p99_ms)
    config_file = read_config(config) if config else None
    assumptions = assumptions_from(flags, config_file)
    targets = ttft_p99_ms is not None or tpot_p99_ms is not None
    check_replaced(flags, config_file, model is not None, targets)
    if engine is not None and model is None:
        raise typer.BadParameter("only applies with --model and --gpu", param_hint="--engine")
    if model is None and given_on_command_line(ctx, "precision"):  # else it changes nothing
        raise typer.BadParameter("only applies with --model and --gpu", param_hint="--precision")
    engine_json: dict[str, Any] = {}
    engine_line = ""
    if model is None:
        result = run_estimate(assumptions)
    else:
        assert gpu is not None  # _check_model_flags
        targets = LatencyTargets(
            ttft_p99_s=None if ttft_p99_ms is None else ttft_p99_ms / 1e3,
            tpot_p99_s=None if tpot_p99_ms is None else tpot_p99_ms / 1e3,
        )
        gpu_spec = _catalog_gpu(gpu)
        try:
            source = efficiency_source(gpu_spec, check_engine(engine))
        except UnknownEngine as error:
            raise typer.BadParameter(str(error), param_hint="--engine") from None
        engine_line = engine_report([gpu_spec], engine)
        engine_json = {
            "engine": source.engine,
            "borrowed_efficiency": source.borrowed,
            "engine_note": engine_line,
        }
        try:
            throughput = model_throughput(
                _catalog_llm(model),
                gpu_spec,
                assumptions.input_tokens,
                assumptions.output_tokens,
                precision,
                targets,
                engine=source.engine,
            )
        except NoServingConfig as problem:
            err.print("[bold red]infeasible:[/] ", end="")
            err.print(str(problem), markup=False)
            raise typer.Exit(ExitCode.INFEASIBLE) from None
        result = estimate_with_model(assumptions, throughput)
    if as_json:
        emit_json(as_json, {**result.to_json(), **engine_json})
        return
    report = estimate_report(result)
    if engine_line:
        report = replace(report, note="\n".join(filter(None, (report.note, engine_line))))
    _show(report, as_markdown)


def _check_output_flags(as_json: Path | None, as_markdown: bool) -> None:
    if as_json and as_markdown:
        raise typer.BadParameter("give --json or --markdown, not both", param_hint="--markdown")


def _show(report: Report, as_markdown: bool) -> None:
    """Print the report's tables, or its Markdown on stdout."""
    if as_markdown:
        sys.stdout.write(report.markdown())
    else:
        report.print()


def _check_model_flags(
    model: str | None,
    gpu: str | None,
    gpu_tokens_per_s: float | None,
    ttft_p99_ms: float | None,
    tpot_p99_ms: float | None,
) -> None:
    if (model is None) != (gpu is None):
        missing = "--gpu" if gpu is None else "--model"
        raise typer.BadParameter(
            "--model and --gpu go together (the performance model needs both)",
            param_hint=missing,
        )
    if model is None:
        for name, value in (("--ttft-p99-ms", ttft_p99_ms), ("--tpot-p99-ms", tpot_p99_ms)):
            if value is not None:
                raise typer.BadParameter("only applies with --model and --gpu", param_hint=name)
        return
    if gpu_tokens_per_s is not None:
        raise typer.BadParameter(
            "give either --gpu-tokens-per-s or --model/--gpu, not both",
            param_hint="--gpu-tokens-per-s",
        )


def _catalog_llm(name: str) -> LlmSpec:
    try:
        return catalog.llm(name)
    except KeyError as error:
        raise typer.BadParameter(str(error.args[0]), param_hint="--model") from None


def _catalog_gpu(name: str) -> GpuSpec:
    try:
        return catalog.gpu(name)
    except KeyError as error:
        raise typer.BadParameter(str(error.args[0]), param_hint="--gpu") from None


# ---- headroom -------------------------------------------------------------------------


def headroom(
    prefill_ms: Annotated[
        float,
        typer.Option(
            help="Mean prefill time of one prompt, ms (the service time).",
            callback=within(limits.PREFILL_MS),
        ),
    ],
    ttft_p99_ms: Annotated[
        float,
        typer.Option(
            help="p99 time-to-first-token target, ms.", callback=within(limits.TTFT_TARGET_MS)
        ),
    ],
    prompt_cv: Annotated[
        float,
        typer.Option(
            help="Coefficient of variation of prompt length (1.0: exponential).",
            callback=within(flag_limits.LENGTH_CV),
        ),
    ] = 1.0,
    servers: Annotated[
        int,
        typer.Option(help="Replicas behind one queue.", callback=within(flag_limits.POOL_REPLICAS)),
    ] = 1,
    as_json: JsonOnly = None,
    as_markdown: MarkdownFlag = False,
) -> None:
    """The utilisation ceiling that a prefill time and a p99 TTFT target imply, step by step.

    Shows how a wider prompt-length spread lowers it and pooling replicas raises it.
    """
    _check_output_flags(as_json, as_markdown)
    derivation = derive_headroom(prefill_ms / 1e3, ttft_p99_ms / 1e3, prompt_cv, servers)
    if as_json:
        data = asdict(derivation)
        data["feasible"] = derivation.feasible
        emit_json(as_json, data)
    else:
        _show(headroom_report(derivation), as_markdown)
    if not derivation.feasible:
        raise typer.Exit(ExitCode.INFEASIBLE)
