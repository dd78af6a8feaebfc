"""Wide expert parallelism: published prefill-only and decode-only throughputs of MoE
models served with attention data parallelism and expert parallelism across servers,
against the performance model. Every row is held out (`held_out_reason`): no engine
profile is fitted on a stage that spans servers, so these rows test the all-to-all over
the NIC, the load imbalance and the grouped GEMMs at the widths the fits never saw.

Reads `calibration/data/wide_ep.csv` (sources and caveats: `calibration/data/README.md`).
Each row is one phase of a disaggregated deployment measured alone (the other phase
given unlimited resources), at a stated operating point:

- prefill: `tokens_per_gpu` prompt tokens in each GPU's pass, prompts of `input_len`
  tokens. Predicted as one pass of the stage over all its GPUs' tokens with each group's
  token budget at that figure (`models.physics.step_time.StepModel.pass_s`, which charges
  the busiest attention group and the busiest expert rank), plus the per-step overhead:
  prompt tokens/s per GPU = tokens_per_gpu / (pass + overhead).
- decode: `sequences_per_gpu` sequences attending to `kv_len` cached tokens each:
  output tokens/s per GPU = sequences_per_gpu / (pass + overhead).

The figures are read per GPU: the sources print per node (`value`), `value_per_gpu` is
that over `gpus_per_node`. The efficiency factors are the engine profile's for the GPU
(SGLang: `sglang-0.5`, which on Hopper runs TensorRT-LLM's fit with SGLang's own step
overhead). A row's `two_batch_overlap` (two micro-batches, one's all-to-all under the
other's compute, `models.physics.overlap`) is the deployment's and is predicted so
(`Efficiency.two_batch_overlap`); the blog's decode ablation gives the same deployment
without it.

Redundant experts (EPLB): a deployment may hold E + R physical experts (DeepSeek-V3's 256
+ 32 on SGLang), so its EP size need only divide E + R (72 does; 256 does not). Each row
is predicted at its own EP size with its redundant experts (`step_model(redundant=R)`:
(E + R) / ep experts' weights and slots a GPU, 4 at EP72, 9 at EP32); a layout the rule
refuses (`models.physics.memory.expert_layout_problem`) is not placed.

Prefill's two-batch overlap is checked against the blog's ablation as well: 'a 27% to 35%
throughput increase compared to the vanilla setup, even when processing the same token
count per device' (`PREFILL_TBO_GAIN_PCT`; `prefill_overlap_gain_pct`, each overlapped
prefill row at `ABLATION_TOKENS_PER_GPU` with the overlap on and off).

    python -m calibration.wide_ep        # the table: measured, predicted, error per row
"""

import argparse
import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path

from calibration.rows import calibration_dir
from models.physics.catalog import gpu_catalog, llm_catalog
from models.physics.efficiency import efficiency_for
from models.physics.memory import expert_layout_problem
from models.physics.precision import Precision
from models.physics.step_time import step_model

WIDE_EP_FILE = "wide_ep.csv"
ENGINE_PROFILES = {"sglang": "sglang-0.5", "deepseek": "sglang-0.5"}
"""The engine profile a row's engine is predicted under: DeepSeek's own inference system
(its published profile) under SGLang's, whose wide-EP deployment runs the same kernels
(DeepEP, DeepGEMM, FlashMLA) and schedule (two-batch overlap)."""


PREFILL_TBO_GAIN_PCT = (27.0, 35.0)
"""The lm-sys blog's (2025-05-05, Ablation Study: Two-batch Overlap) prefill gain of
two-batch overlap over the same deployment without it at the same tokens a GPU, low and
high (its figure spans SGLang's DP32 x EP32 runs)."""
ABLATION_TOKENS_PER_GPU = 8192.0
"""Tokens a GPU of the ablation's equal-count comparison: without the overlap 'each device
processes up to 8,192 tokens before encountering out-of-memory (OOM) errors at 16,384'."""


@dataclass(frozen=True)
class WideEpRow:
    """One wide-EP measurement in the model's terms."""

    label: str
    engine: str
    model: str
    gpu: str
    weight_precision: Precision
    kv_precision: Precision
    phase: str
    """`prefill` or `decode`."""
    tp: int
    dp: int
    ep: int
    redundant_experts: int
    two_batch_overlap: bool
    """The deployment splits each pass into two overlapped micro-batches."""
    balanced_routing: bool
    """Routing drawn uniformly (the blog's simulated perfect EPLB), not the model's own
    experts' choices: the routing the performance model reads."""
    input_len: float
    kv_len: float
    tokens_per_gpu: float
    sequences_per_gpu: float
    measured: float
    """Input (prefill) or output (decode) tokens/s per GPU."""
    held_out_reason: str

    @property
    def gpus(self) -> int:
        """GPUs of the deployment's stage: tp x dp."""
        return self.tp * self.dp


def load_wide_ep_rows(directory: Path | None = None) -> list[WideEpRow]:
    """Every row of `directory/wide_ep.csv` (default: `calibration_dir()`)."""
    path = (directory or calibration_dir()) / WIDE_EP_FILE
    rows = []
    with path.open(encoding="utf-8") as handle:
        for raw in csv.DictReader(handle):
            phase = raw["phase"]
            length = raw["input_len"] if phase == "prefill" else raw["kv_len"]
            rows.append(
                WideEpRow(
                    label=(
                        f"{raw['engine']} {raw['model']} {raw['gpu']} {phase} "
                        f"dp{raw['dp']}ep{raw['ep']} {length}"
                        + (" tbo" if raw["two_batch_overlap"] == "yes" else "")
                        + (" balanced" if raw["routing"] == "balanced" else "")
                    ),
                    engine=raw["engine"],
                    model=raw["model"],
                    gpu=raw["gpu"],
                    weight_precision=Precision(raw["precision"]),
                    kv_precision=Precision(raw["kv_precision"]),
                    phase=phase,
                    tp=int(raw["tp"]),
                    dp=int(raw["dp"]),
                    ep=int(raw["ep"]),
                    redundant_experts=int(raw["redundant_experts"] or 0),
                    two_batch_overlap=raw["two_batch_overlap"] == "yes",
                    balanced_routing=raw["routing"] == "balanced",
                    input_len=float(raw["input_len"]),
                    kv_len=float(raw["kv_len"] or 0),
                    tokens_per_gpu=float(raw["tokens_per_gpu"] or 0),
                    sequences_per_gpu=float(raw["sequences_per_gpu"] or 0),
                    measured=float(raw["value"]) / int(raw["gpus_per_node"]),
                    held_out_reason=raw["held_out_reason"],
                )
            )
    return rows


def predict_wide_ep(row: WideEpRow) -> float:
    """Tokens/s per GPU the model gives a row at its operating point (module docstring);
    nan where its layout cannot be placed."""
    llm = llm_catalog()[row.model]
    gpu = gpu_catalog()[row.gpu]
    ep, dp, redundant = row.ep, row.dp, row.redundant_experts
    if expert_layout_problem(llm, row.tp, ep, dp, redundant) is not None:
        return math.nan
    efficiency = efficiency_for(gpu, row.weight_precision, engine=ENGINE_PROFILES[row.engine])
    efficiency = efficiency.model_copy(update={"two_batch_overlap": row.two_batch_overlap})
    if row.phase == "prefill":
        efficiency = efficiency.model_copy(update={"prefill_chunk_tokens": row.tokens_per_gpu})
    steps = step_model(
        gpu,
        llm,
        row.weight_precision,
        row.kv_precision,
        row.tp,
        1,
        efficiency,
        ep=ep,
        dp=dp,
        redundant=redundant,
    )
    if row.phase == "prefill":
        tokens = row.tokens_per_gpu * row.tp * dp
        prompts = tokens / row.input_len
        pairs = prompts * row.input_len * (row.input_len + 1) / 2
        return row.tokens_per_gpu / (steps.pass_s(0.0, 0.0, tokens, pairs) + steps.overhead_s)
    sequences = row.sequences_per_gpu * row.tp * dp
    step_s = steps.pass_s(sequences, sequences * row.kv_len) + steps.overhead_s
    return row.sequences_per_gpu / step_s


def prefill_overlap_gain_pct(row: WideEpRow) -> float:
    """The model's two-batch-overlap gain in percent for a prefill row at
    `ABLATION_TOKENS_PER_GPU` tokens a GPU: throughput with the overlap over without, less 1."""
    at = replace(row, tokens_per_gpu=ABLATION_TOKENS_PER_GPU)
    on = predict_wide_ep(replace(at, two_batch_overlap=True))
    off = predict_wide_ep(replace(at, two_batch_overlap=False))
    return (on / off - 1.0) * 100.0


def error_pct(predicted: float, measured: float) -> float:
    """Signed error in percent: (predicted / measured - 1) x 100; > 0 optimistic."""
    return (predicted / measured - 1.0) * 100.0


def table_lines(rows: list[WideEpRow]) -> list[str]:
    """One line per row: label, measured and predicted per GPU, signed error."""
    lines = [f"{'row':<61} {'measured/GPU':>12} {'model/GPU':>10} {'error':>8}"]
    for row in rows:
        predicted = predict_wide_ep(row)
        error = (
            "unplaced" if math.isnan(predicted) else f"{error_pct(predicted, row.measured):+.1f}%"
        )
        lines.append(f"{row.label:<61} {row.measured:>12,.0f} {predicted:>10,.0f} {error:>8}")
    gains = [
        f"{row.input_len:,.0f}-token prompts {prefill_overlap_gain_pct(row):+.1f}%"
        for row in rows
        if row.engine == "sglang" and row.phase == "prefill" and not row.balanced_routing
    ]
    if gains:
        low, high = PREFILL_TBO_GAIN_PCT
        lines.append(
            f"prefill two-batch overlap gain at {ABLATION_TOKENS_PER_GPU:,.0f} tokens a GPU: "
            + ", ".join(gains)
            + f" (the blog's ablation: +{low:.0f}% to +{high:.0f}%)"
        )
    return lines


def main() -> None:
    """Print the wide-EP rows against the model."""
    argparse.ArgumentParser(description=main.__doc__).parse_args()
    print("\n".join(table_lines(load_wide_ep_rows())))


if __name__ == "__main__":
    main()
