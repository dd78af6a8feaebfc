"""`perf` with speculative decoding: the flags read into a `Speculation`, and the table and
JSON of the speed-up per batch (`models.physics.speculative`). Rendering only."""

import math
from typing import Any

from cli.render.tables import TableSpec
from models.physics import catalog
from models.physics.efficiency import Efficiency
from models.physics.speculative import (
    Speculation,
    SpeculationRow,
    SpeculativeSteps,
    batch_buckets,
    crossover_batch,
    speculation_table,
)
from models.schema.errors import InputError, Issue
from models.serving.replica import MixTokens, ReplicaConfig, Role, TrafficMix
from models.serving.replica_layout import decode_steps, replica_step_model

_WHERE = "command line"
DEFAULT_TABLE_BATCH = 512
"""Largest batch of the table when the KV cache does not bound it more tightly."""
CROSSOVER_SEARCH_BATCH = 65_536
"""Largest batch the crossover search looks at when the KV cache does not bound it."""


def _problem(flag: str, message: str) -> InputError:
    return InputError([Issue(_WHERE, None, flag, message)])


def speculation_from_flags(
    tokens: int | None,
    acceptance_rate: float | None,
    draft_model: str | None,
    draft_cost_ratio: float | None,
) -> Speculation | None:
    """The speculation the flags ask for, or None when none of them is given.

    Raises:
        InputError: a flag without the others it needs, or an unknown draft model. Each
            value was held to its bound (the same as `policy.speculative` in an instance)
            as it was parsed (`cli.options.within` on perf's flags).
    """
    given = (tokens, acceptance_rate, draft_model, draft_cost_ratio)
    if all(value is None for value in given):
        return None
    if tokens is None or acceptance_rate is None:
        raise _problem(
            "--speculative-tokens/--acceptance-rate",
            "speculative decoding needs both --speculative-tokens K and --acceptance-rate A",
        )
    if (draft_model is None) == (draft_cost_ratio is None):
        raise _problem(
            "--draft-model/--draft-cost-ratio",
            "give one drafter: --draft-model NAME or --draft-cost-ratio R",
        )
    draft = None
    if draft_model is not None:
        try:
            draft = catalog.llm(draft_model)
        except KeyError as error:
            raise _problem("--draft-model", str(error.args[0])) from None
    name = draft_model or "draft-heads"
    return Speculation(name, tokens, acceptance_rate, draft, draft_cost_ratio)


def speculative_model(config: ReplicaConfig, efficiency: Efficiency) -> SpeculativeSteps | None:
    """The speculation cycle of a speculating unified or decode configuration, else None."""
    if config.speculation is None or config.role is Role.PREFILL:
        return None
    cycle = decode_steps(config, efficiency, replica_step_model(config, efficiency))
    return cycle if isinstance(cycle, SpeculativeSteps) else None


def search_limit(max_batch: int) -> int:
    """The largest batch the crossover is looked for at: the replica's KV limit (a batch
    it cannot hold says nothing about the replica), else `CROSSOVER_SEARCH_BATCH`."""
    return min(max_batch, CROSSOVER_SEARCH_BATCH) if max_batch > 0 else CROSSOVER_SEARCH_BATCH


def _rows(
    spec: SpeculativeSteps, mix: TrafficMix, max_batch: int
) -> tuple[float, list[SpeculationRow], int | None]:
    context = MixTokens.of(mix).context
    top = max(1, min(max_batch, DEFAULT_TABLE_BATCH)) if max_batch > 0 else DEFAULT_TABLE_BATCH
    rows = speculation_table(spec, context, batch_buckets(top))
    return context, rows, crossover_batch(spec, context, search_limit(max_batch))


def speculation_table_spec(spec: SpeculativeSteps, mix: TrafficMix, max_batch: int) -> TableSpec:
    """Per batch: E, the cycle, the plain step, the speculative TPOT, the speed-up, and
    the best draft length with its speed-up; the note names the crossover batch."""
    context, rows, crossover = _rows(spec, mix, max_batch)
    option = spec.speculation
    title = (
        f"speculative decoding: {option.drafter}, k = {option.tokens}, "
        f"a = {option.acceptance_rate:g} (E = {option.expected_tokens:.3f} tokens per cycle), "
        f"context {context:,.0f} tokens"
    )
    cells = tuple(
        (
            f"{row.batch:,}",
            f"{row.expected_tokens:.3f}",
            f"{row.cycle_s * 1e3:,.2f}",
            f"{row.decode_step_s * 1e3:,.2f}",
            f"{row.tpot_s * 1e3:,.2f}",
            f"{row.speedup:.3f}x",
            f"{row.best_tokens} ({row.best_speedup:.3f}x)" if row.best_tokens else "off",
        )
        for row in rows
    )
    limit = search_limit(max_batch)
    if crossover is None and limit < CROSSOVER_SEARCH_BATCH:
        note = (
            f"speculation still pays at every batch the KV cache holds (up to {limit:,} "
            "sequences at the mix's length)"
        )
    elif crossover is None:
        note = f"speculation still pays at batch {limit:,}"
    elif crossover == 1:
        note = "speculation is slower than plain decoding at every batch"
    else:
        note = (
            f"speculation is slower than plain decoding from batch {crossover:,} on "
            "(the verify pass turns compute-bound); best k searched over 1..2k"
        )
    note += "; with speculation the replica's decode step above is one cycle"
    return TableSpec(
        title=title,
        columns=(
            "batch",
            "E",
            "cycle ms",
            "plain step ms",
            "TPOT ms",
            "speed-up",
            "best k",
        ),
        rows=cells,
        note=note,
    )


def speculation_json(spec: SpeculativeSteps, mix: TrafficMix, max_batch: int) -> dict[str, Any]:
    """The `speculation` key of `perf --json`: the option, E, the crossover and the table
    (ms at the edge)."""
    context, rows, crossover = _rows(spec, mix, max_batch)
    option = spec.speculation
    return {
        "speculation": {
            "name": option.name,
            "draft_model": option.draft.name if option.draft is not None else None,
            "draft_cost_ratio": option.draft_cost_ratio,
            "tokens": option.tokens,
            "acceptance_rate": option.acceptance_rate,
            "expected_tokens": option.expected_tokens,
            "context_tokens": context,
            "crossover_batch": crossover,
            "crossover_searched_to_batch": search_limit(max_batch),
            "table": [
                {
                    "batch": row.batch,
                    "expected_tokens": row.expected_tokens,
                    "cycle_ms": row.cycle_s * 1e3,
                    "decode_step_ms": row.decode_step_s * 1e3,
                    "tpot_ms": row.tpot_s * 1e3 if math.isfinite(row.tpot_s) else None,
                    "speedup": row.speedup,
                    "best_tokens": row.best_tokens,
                    "best_speedup": row.best_speedup,
                }
                for row in rows
            ],
        }
    }
