"""The vLLM and SGLang rows' errors against a set of factors: one `RowError` per measured
figure of every engine row (`calibration.engines` loads and replays them), what `make bench`
prints and what the error bands are built from (`calibration.bands`, `calibration.errors`).

    from calibration.engine_errors import catalog_row_errors
    errors = catalog_row_errors()        # the repository's rows, the catalog's profiles
"""

import math
from dataclasses import dataclass
from pathlib import Path

from calibration.engines import (
    REPORT_REQUESTS_PER_USER,
    EngineData,
    all_at_once,
    generation,
    load_engine_data,
    predict_offline,
    predict_run,
)
from models.physics.catalog import llm_catalog
from models.physics.efficiency import Efficiency, efficiency_for
from models.physics.precision import Precision
from models.profiles.fit import FIGURES


@dataclass(frozen=True)
class RowError:
    """One measured figure of one engine row against the model: what `make bench` prints
    and what error bands are built from (`row_errors`)."""

    engine: str
    generation: str
    gpu: str
    model: str
    family: str
    """`dense` or `moe`."""
    layout: str
    """`tp8`, ..."""
    kind: str
    """`closed-loop` (a benchmark run at a concurrency) or `offline` (max throughput)."""
    concurrency: int
    """Users in flight; 0 for an offline row (every request at once)."""
    figure: str
    """`output_tokens_per_s` (offline rows: per GPU), `ttft_mean_ms`, `tpot_mean_ms`,
    `ttft_median_ms` or `itl_median_ms` (`row_errors(medians=True)`)."""
    held_out: bool
    predicted: float
    """nan when no layout fits."""
    measured: float
    label: str
    all_at_once: bool = False
    """A run that sent every request at once (`all_at_once`): offline throughput with
    latencies printed, not the tools' closed loop."""

    @property
    def error_pct(self) -> float:
        """Signed: (predicted - measured) / measured x 100."""
        return (self.predicted - self.measured) / self.measured * 100


def _family(model: str) -> str:
    return "moe" if llm_catalog()[model].is_moe else "dense"


def row_errors(
    data: EngineData,
    efficiency_of,
    requests_per_user: int = REPORT_REQUESTS_PER_USER,
    lengths: bool = True,
    medians: bool = False,
) -> list[RowError]:
    """Every figure of every engine row against the factors `efficiency_of(engine, gpu,
    precision)` returns (the catalog's: `catalog_efficiency`), fit and held-out rows
    alike; `RowError.held_out` tells them apart. Closed-loop runs are replayed with their
    lengths drawn as the tool drew them (`lengths`), else at the mean lengths; with
    `medians`, a run's median TTFT and median inter-token latency too where its row gives
    them (`ttft_median_ms`, `itl_median_ms`)."""
    out = []
    for row in data.offline:
        value = predict_offline(row, efficiency_of(row.engine, row.gpu, row.weight_precision))
        out.append(
            RowError(
                engine=row.engine,
                generation=generation(row.gpu),
                gpu=row.gpu,
                model=row.model,
                family=_family(row.model),
                layout=f"tp{row.tps[0]}",
                kind="offline",
                concurrency=0,
                figure="output_tokens_per_s",
                held_out=row.held_out,
                predicted=value,
                measured=row.measured,
                label=row.label,
            )
        )
    for run in data.runs:
        m = run.run
        efficiency = efficiency_of(run.engine, m.gpu, m.precision)
        predicted = predict_run(run, efficiency, requests_per_user, lengths, median=medians)
        measured_of = {figure: getattr(m, figure) for figure in FIGURES}
        if medians:
            measured_of["ttft_median_ms"] = run.ttft_median_ms
            measured_of["itl_median_ms"] = run.itl_median_ms
        for figure, measured in measured_of.items():
            if measured is None:
                continue
            out.append(
                RowError(
                    engine=run.engine,
                    generation=run.generation,
                    gpu=m.gpu,
                    model=m.model,
                    family=_family(m.model),
                    layout=f"tp{m.tp}" + (f" ep{m.ep}" if m.ep > 1 else ""),
                    kind="closed-loop",
                    concurrency=m.concurrency,
                    figure=figure,
                    held_out=run.held_out,
                    predicted=predicted.get(figure, math.nan),
                    measured=measured,
                    label=run.label,
                    all_at_once=all_at_once(run),
                )
            )
    return out


def catalog_efficiency(engine: str, gpu: str, precision: Precision) -> Efficiency:
    """The catalog's factors for a row: its engine profile's, as `efficiency_for` looks
    them up (fallbacks included)."""
    return efficiency_for(gpu, precision, engine=engine)


def catalog_row_errors(directory: Path | None = None) -> list[RowError]:
    """`row_errors` of the repository's engine rows against the catalog's profiles: the
    per-row fit and held-out errors by engine, generation, model family and layout."""
    data, _ = load_engine_data(directory)
    return row_errors(data, catalog_efficiency)
