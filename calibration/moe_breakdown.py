"""The worst MoE rows with the model's own step: for each, the operating point the
capacity search chose (batch, what capped it, prompt tokens per iteration) and the
roofline terms of its mean iteration, so that a large error names the term to look at.

`worst_rows(rows, n)` prints the n rows of largest |error| (`tests/bench/
test_moe_calibration.py` prints the held-out ones). Columns, milliseconds per stage pass
(`models.physics.pass_parts.PassParts`): lin (attention-side linear FLOPs), w (their
weights), exp (routed experts' grouped GEMM), expR (the experts read and their rows'
activations), att/kv (decode attention FLOPs and KV reads), pfatt (prefill attention),
comm (all-reduces and all-to-alls), ovh (the iteration's fixed and per-sequence costs);
iter is the mean iteration of the mixture, dec the iteration with no prompt tokens."""

import math

from calibration.moe_rows import MoeRow, moe_config, predict_moe, row_efficiency
from models.serving.batch_model import BatchModel, offline_lockstep
from models.serving.capacity import replica_capacity
from models.serving.replica import LatencyTargets, MixTokens, Role
from models.serving.replica_layout import replica_step_model


def breakdown(row: MoeRow) -> list[str]:
    """Two lines for one row: its error and operating point, then its pass terms."""
    predicted = predict_moe(row)
    if math.isnan(predicted):
        return [f"{row.label}: no layout fits"]
    config, efficiency = moe_config(row), row_efficiency(row)
    capacity = replica_capacity(config, row.mix, LatencyTargets(), efficiency)
    mix = MixTokens.of(row.mix)
    steps = replica_step_model(config, efficiency)
    lockstep = offline_lockstep(mix, offline=True)
    model = BatchModel(steps, mix, Role.UNIFIED, 0.0, 0.0, lockstep=lockstep)
    batch = capacity.batch
    mixture, parts = model.mixture(batch), model.parts(batch)
    overhead_s = steps.overhead_s + steps.sequence_overhead_s * batch
    error = (predicted - row.measured) / row.measured * 100

    def ms(seconds: float) -> str:
        return f"{seconds * 1e3:7.2f}"

    limit = capacity.limit.value if capacity.limit is not None else "-"
    return [
        f"{error:+7.1f}% {row.label:72s} measured {row.measured:8.0f} model {predicted:8.0f}"
        f"  B {batch:6.0f} ({limit}) Q {model.prefill_tokens(batch):6.0f}",
        f"         iter{ms(mixture.mean_s)} dec{ms(mixture.decode_only_s)} |"
        f" lin{ms(parts.linear_compute_s)} w{ms(parts.weight_read_s)}"
        f" exp{ms(parts.expert_compute_s)} expR{ms(parts.expert_read_s)}"
        f" att{ms(parts.attention_compute_s)} kv{ms(parts.kv_read_s)}"
        f" pfatt{ms(parts.prefill_attention_s)} comm{ms(parts.comm_s)} ovh{ms(overhead_s)}",
    ]


def worst_rows(rows: list[MoeRow], count: int = 20) -> list[str]:
    """`breakdown` of the `count` rows of largest |error|, worst first."""
    errors = []
    for row in rows:
        value = predict_moe(row)
        errors.append(math.inf if math.isnan(value) else abs(value / row.measured - 1))
    order = sorted(range(len(rows)), key=lambda i: -errors[i])[:count]
    return [line for i in order for line in breakdown(rows[i])]
