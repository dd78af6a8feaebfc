"""Every calibration row's error against the catalog, in one record type: the TensorRT-LLM,
MLPerf and Triton rows of `calibration.rows` (predicted by `calibration.calibrate.predict`
under the row's profile, or the default one) and the vLLM and SGLang rows of
`calibration.engines`. What error bands are measured from: one `RowError` per measured
figure, with its engine, generation, model family, layout, kind and split.

    from calibration.errors import all_row_errors
    errors = all_row_errors()            # the repository's data, the catalog's factors
    held = [e for e in errors if e.held_out and e.engine == "sglang-0.5"]
"""

import math
from pathlib import Path

from calibration.calibrate import catalog_efficiency, predict
from calibration.engine_errors import RowError, catalog_row_errors
from calibration.engines import generation
from calibration.rows import Row, load_rows
from models.physics.catalog import llm_catalog

FIGURE_OF_KIND = {
    "offline": "output_tokens_per_s",
    "server": "output_tokens_per_s",
    "static": "output_tokens_per_s",
    "ttft": "ttft_s",
    "itl": "itl_mean_s",
}
"""The figure a `calibration.rows.Row` measures, by kind: output tokens/s per GPU, or
seconds (first-token latency of one prompt, mean inter-token latency at a rate)."""


def _layout(row: Row) -> str:
    tps = "tp" + "|".join(str(tp) for tp in row.tps)  # MLPerf: the best of these
    return tps + (f"pp{row.pp}" if row.pp > 1 else "")


def trtllm_row_errors(directory: Path | None = None) -> list[RowError]:
    """The rows of `calibration.rows.load_rows` as `RowError`s against the catalog."""
    rows, _ = load_rows(directory)
    out = []
    for row in rows:
        value = predict(row, catalog_efficiency(row))
        out.append(
            RowError(
                engine=row.engine,
                generation=generation(row.gpu),
                gpu=row.gpu,
                model=row.model,
                family="moe" if llm_catalog()[row.model].is_moe else "dense",
                layout=_layout(row),
                kind=row.kind,
                concurrency=row.batch if row.kind == "static" else 0,
                figure=FIGURE_OF_KIND[row.kind],
                held_out=row.held_out,
                predicted=value,
                measured=row.measured,
                label=row.label,
            )
        )
    return out


def all_row_errors(directory: Path | None = None) -> list[RowError]:
    """Every row of every calibration file against the catalog's factors (nan predicted
    where no layout fits)."""
    return trtllm_row_errors(directory) + catalog_row_errors(directory)


def median_abs_error_pct(errors: list[RowError]) -> float:
    """Median |error| % of the errors that place (nan for none)."""
    values = sorted(abs(e.error_pct) for e in errors if not math.isnan(e.predicted))
    if not values:
        return math.nan
    middle = len(values) // 2
    return values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
