"""Command `voice`: a time-to-first-audio budget, line by line, and the LLM targets it
leaves. Parsing and rendering only: the numbers come from `models.calculators.voice`."""

from typing import Annotated, Any

import typer

from cli.options import JsonOut, emit_json, to_stdout, within
from cli.render.console import err, out
from cli.render.tables import TableSpec, print_tables
from models.calculators.voice import (
    DEFAULT_TTFT_SHARE,
    Voice,
    VoiceBudget,
    VoiceBudgetError,
    voice_budget,
)
from models.io.output_files import check_targets
from models.io.output_kinds import JSON
from models.schema import limits
from models.schema.errors import InputError, Issue


def budget_json(budget: VoiceBudget) -> dict[str, Any]:
    """The budget as JSON: the lines (ms) and the derived LLM targets."""
    return {
        "first_audio_ms": budget.first_audio_ms,
        "lines": [{"line": line.key, "label": line.label, "ms": line.ms} for line in budget.lines],
        "fixed_ms": budget.fixed_ms,
        "llm_ms": budget.llm_ms,
        "ttft_share": budget.ttft_share,
        "first_clause_tokens": budget.first_clause_tokens,
        "ttft_p99_ms": budget.ttft_p99_ms,
        "tpot_p99_ms": budget.tpot_p99_ms,
        "largest_line": budget.largest_line.key,
    }


def budget_table(budget: VoiceBudget, title: str = "Voice latency budget") -> TableSpec:
    """The budget as a table: each line's ms and share of the first-audio target."""
    rows = tuple(
        (line.label, f"{line.ms:,.1f}", f"{line.ms / budget.first_audio_ms:.0%}")
        for line in budget.lines
    )
    rows += (("time to first audio (p99 target)", f"{budget.first_audio_ms:,.1f}", "100%"),)
    return TableSpec(
        title=title,
        columns=("line", "ms", "share"),
        rows=rows,
        note=(
            f"LLM targets: TTFT p99 {budget.ttft_p99_ms:,.1f} ms, TPOT p99 "
            f"{budget.tpot_p99_ms:,.2f} ms ({budget.ttft_share:g} of the "
            f"{budget.llm_ms:,.1f} ms left to TTFT, the rest over "
            f"{budget.first_clause_tokens} first-clause tokens); largest line: "
            f"{budget.largest_line.label}"
        ),
    )


def voice_tables(instance) -> list[TableSpec]:
    """One budget table per voice workload of a validated instance (none without)."""
    tables = []
    for workload in instance.workloads:
        if workload.voice is not None and workload.slo.first_audio_ms is not None:
            budget = voice_budget(workload.slo.first_audio_ms, workload.voice)
            tables.append(budget_table(budget, f"Voice latency budget, {workload.name}"))
    return tables


def voice(
    first_audio_ms: Annotated[
        float,
        typer.Option(
            callback=within(limits.VOICE_STAGE_MS), help="p99 time-to-first-audio target, ms."
        ),
    ],
    endpointing_ms: Annotated[
        float,
        typer.Option(
            callback=within(limits.VOICE_STAGE_MS), help="Endpointing (end-of-speech) delay, ms."
        ),
    ],
    network_rtt_ms: Annotated[
        float,
        typer.Option(
            callback=within(limits.VOICE_STAGE_MS), help="Device <-> region round trip, ms."
        ),
    ] = 0.0,
    asr_ms: Annotated[
        float,
        typer.Option(
            callback=within(limits.VOICE_STAGE_MS), help="ASR final-transcript latency, ms."
        ),
    ] = 0.0,
    tts_first_audio_ms: Annotated[
        float,
        typer.Option(callback=within(limits.VOICE_STAGE_MS), help="TTS time to first audio, ms."),
    ] = 0.0,
    first_clause_tokens: Annotated[
        int,
        typer.Option(
            help="LLM tokens in the first spoken clause.",
            callback=within(limits.FIRST_CLAUSE_TOKENS),
        ),
    ] = 10,
    ttft_share: Annotated[
        float,
        typer.Option(
            help="Share of the LLM's allowance given to TTFT, in (0, 1).",
            callback=within(limits.TTFT_SHARE),
        ),
    ] = DEFAULT_TTFT_SHARE,
    json_out: JsonOut = None,
) -> None:
    """Print a time-to-first-audio budget line by line and the LLM's TTFT and TPOT
    targets it leaves; exit 2 when the fixed lines take the whole budget."""
    check_targets(((json_out, JSON),))
    lines = Voice(
        network_rtt_ms=network_rtt_ms,
        endpointing_ms=endpointing_ms,
        asr_ms=asr_ms,
        tts_first_audio_ms=tts_first_audio_ms,
        first_clause_tokens=first_clause_tokens,
        ttft_share=ttft_share,
    )
    try:
        budget = voice_budget(first_audio_ms, lines, name=lambda key: f"--{key.replace('_', '-')}")
    except VoiceBudgetError as error:  # the figures are flags here: the message names them so
        raise InputError([Issue("command line", None, "", str(error))]) from None
    print_tables([], [budget_table(budget)], console=err if to_stdout(json_out) else out)
    emit_json(json_out, budget_json(budget))
