"""Measured error bands of the performance model: per engine profile, model family and
regime, the signed errors of the model on the calibration rows it was not fitted on.

Rows and split are those of `calibration.calibrate` (dense rows, `calibration.rows`) and
`calibration.moe_rows` (MoE rows): only held-out rows count, each predicted exactly as those
tools predict it (`calibrate.predict` with `calibrate.catalog_efficiency`, `moe_rows.predict_moe`).
A row's signed error is

    e = predicted / measured - 1

and a band is the 10th percentile, the median and the 90th percentile of e over the
rows of one (profile, family, regime), numpy's linear interpolation between order
statistics, with the row count (`summarise`).

Which band a row joins (`classify`):
- profile (`profile_for`): a row measured by a profile's own engine version
  (`trtllm-0.20`) belongs to that profile and is predicted with its factors; a row of
  another version of an engine that has profiles (the MoE table's TensorRT-LLM v0.21 to
  v1.0, the online-serving rows of Triton TensorRT-LLM 0.14 the shared step overhead is
  fitted on) belongs to, and is predicted with, the newest profile of that engine, which
  is what `calibrate.catalog_efficiency` and `moe_rows.predict_moe` use while it is the
  default. Rows of engines no profile stands for (MLPerf submissions) and kinds no
  regime covers (TensorRT-LLM v0.9 first-token and static-batching rows) join no band;
  they are counted.
- family: `models.physics.error_bands.family_of` (dense, moe-tp, moe-ep, moe-dep).
- regime: `max_throughput` for offline rows; `latency_under_load` for the mean
  inter-token latency at a finite rate and a closed-loop run's mean TPOT (a latency:
  e < 0 is optimistic); `ttft_under_load` for a closed-loop run's mean TTFT; `borrowed`
  for an offline row whose GPU's factors under the profile were fitted on other rows
  (`models.physics.error_bands.borrowed_for`).
- vLLM and SGLang rows come as `calibration.engine_errors.catalog_row_errors` gives them
  (each predicted under its own profile, the split of `calibration.engines`).

    .venv/bin/python -m calibration.bands            # compute and print, write nothing
    .venv/bin/python -m calibration.bands --write    # write error_bands.yaml

A profile added to `efficiency.yaml` with rows of its own engine name in
`calibration.rows` gets its bands from the same rules; re-run after `calibrate --write`.
"""

import argparse
import datetime
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.calibrate import predict
from calibration.engine_errors import catalog_row_errors
from calibration.moe_rows import load_moe_rows, predict_moe
from calibration.rows import Row, calibration_dir, load_rows
from models.physics.catalog import llm_catalog
from models.physics.efficiency import efficiency_for, engine_profiles
from models.physics.error_bands import (
    FAMILIES,
    MEASURED_REGIMES,
    REGIME_WORDS,
    borrowed_for,
    family_of,
)

BANDS_YAML = (
    Path(__file__).resolve().parents[1] / "models" / "physics" / "catalog" / "error_bands.yaml"
)


@dataclass(frozen=True)
class SignedError:
    """One held-out row's signed error and the band it joins."""

    label: str
    engine: str
    family: str
    regime: str
    error: float
    """predicted / measured - 1."""


@dataclass(frozen=True)
class BandStats:
    """p10, median and p90 of a set of signed errors, and how many."""

    p10: float
    median: float
    p90: float
    rows: int


def summarise(errors: list[float]) -> BandStats:
    """Percentiles 10, 50 and 90 of `errors` (numpy's linear interpolation)."""
    values = np.asarray(errors, dtype=float)
    p10, median, p90 = np.percentile(values, [10, 50, 90])
    return BandStats(float(p10), float(median), float(p90), int(values.size))


def profile_for(engine: str) -> str | None:
    """The engine profile a row's prediction uses: its own engine when that is a profile,
    else the newest profile of the same engine (`triton-trtllm-0.14`, `trtllm-v1.0` ->
    the newest `trtllm-` profile); None for an engine no profile stands for (MLPerf)."""
    profiles = engine_profiles()
    if engine in profiles:
        return engine
    kind = engine.removeprefix("triton-").split("-")[0]
    same = [name for name in profiles if name.startswith(kind + "-")]
    if not same:
        return None
    return max(same, key=lambda name: tuple(int(x) for x in re.findall(r"\d+", name)))


KIND_REGIME = {"offline": "max_throughput", "itl": "latency_under_load"}
"""Which regime a dense row's kind measures; other kinds (first-token latency of one
prompt, static batching, MLPerf Server) join no band."""


def regime_of(kind: str, gpu: str, engine: str) -> str | None:
    """The row's regime; an offline row on a GPU that borrows another's factors is
    `borrowed`."""
    regime = KIND_REGIME.get(kind)
    if regime == "max_throughput" and borrowed_for(gpu, engine):
        return "borrowed"
    return regime


def classify(rows: list[Row], skipped: Counter) -> list[tuple[Row, str, str, str]]:
    """(row, profile, family, regime) of each held-out dense row that joins a band; the
    others are counted in `skipped` by reason."""
    joined = []
    llms = llm_catalog()
    for row in rows:
        if not row.held_out:
            continue
        engine = profile_for(row.engine)
        if engine is None:
            skipped[f"{row.engine}: no engine profile stands for it"] += 1
            continue
        regime = regime_of(row.kind, row.gpu, engine)
        if regime is None:
            skipped[f"{row.engine} {row.kind} rows: no regime of a band"] += 1
            continue
        joined.append((row, engine, family_of(llms[row.model]), regime))
    return joined


def signed_errors(directory: Path | None = None) -> tuple[list[SignedError], Counter]:
    """Every held-out row's signed error with its band, and the rows left out by reason."""
    directory = directory or calibration_dir()
    rows, _ = load_rows(directory)
    left: Counter = Counter()
    found = []
    for row, engine, family, regime in classify(rows, left):
        value = predict(row, efficiency_for(row.gpu, row.weight_precision, engine=engine))
        if math.isnan(value):
            left["no layout fits"] += 1
            continue
        found.append(SignedError(row.label, engine, family, regime, value / row.measured - 1))
    moe_rows, _ = load_moe_rows(directory)
    llms = llm_catalog()
    for row in moe_rows:
        engine = profile_for(row.engine)
        if not row.held_out or engine is None:
            continue
        efficiency = efficiency_for(row.gpu, row.weight_precision, engine=engine)
        value = predict_moe(row, efficiency)
        if math.isnan(value):
            left["no layout fits"] += 1
            continue
        family = family_of(llms[row.model], row.ep, row.dp)
        regime = regime_of("offline", row.gpu, engine)
        found.append(SignedError(row.label, engine, family, regime, value / row.measured - 1))
    found += engine_errors(directory, left)
    return found, left


ENGINE_REGIME = {
    ("offline", "output_tokens_per_s"): "max_throughput",
    ("closed-loop", "tpot_mean_ms"): "latency_under_load",
    ("closed-loop", "ttft_mean_ms"): "ttft_under_load",
}
"""The regime of a vLLM or SGLang figure (`calibration.engine_errors.RowError`); a closed-loop
run's output tokens/s (throughput at a concurrency) joins none."""


def engine_errors(directory: Path | None, left: Counter) -> list[SignedError]:
    """The held-out vLLM and SGLang figures (`calibration.engine_errors.catalog_row_errors`,
    predicted under each row's own profile)."""
    llms = llm_catalog()
    found = []
    for e in catalog_row_errors(directory):
        if not e.held_out:
            continue
        engine = profile_for(e.engine)
        regime = ENGINE_REGIME.get((e.kind, e.figure))
        if engine is None or regime is None:
            left[f"{e.engine} {e.kind} {e.figure}: no regime of a band"] += 1
            continue
        if math.isnan(e.predicted):
            left["no layout fits"] += 1
            continue
        if regime == "max_throughput":
            regime = regime_of("offline", e.gpu, engine)
        family = family_of(llms[e.model], *_ep_dp(e.layout))
        found.append(SignedError(e.label, engine, family, regime, e.predicted / e.measured - 1))
    return found


def _ep_dp(layout: str) -> tuple[int, int]:
    """(ep, dp) of a layout string such as `tp8` or `tp1dp8ep8`."""
    ep = re.search(r"ep(\d+)", layout)
    dp = re.search(r"dp(\d+)", layout)
    return (int(ep.group(1)) if ep else 1, int(dp.group(1)) if dp else 1)


def bands(errors: list[SignedError]) -> dict[str, dict[str, dict[str, BandStats]]]:
    """{engine: {family: {regime: stats}}} of every group with at least one row."""
    grouped: dict[tuple[str, str, str], list[float]] = {}
    for e in errors:
        grouped.setdefault((e.engine, e.family, e.regime), []).append(e.error)
    table: dict[str, dict[str, dict[str, BandStats]]] = {}
    for (engine, family, regime), values in sorted(grouped.items()):
        table.setdefault(engine, {}).setdefault(family, {})[regime] = summarise(values)
    return table


def render_yaml(table: dict[str, dict[str, dict[str, BandStats]]], left: Counter) -> str:
    """The text of `error_bands.yaml`."""
    lines = [
        "# Measured error bands of the performance model (models/physics/error_bands.py).",
        "#",
        f"# Written by `python -m calibration.bands --write` on {datetime.date.today()};",
        "# do not edit by hand: change the model or the data and re-run it.",
        "#",
        "# Per engine profile, model family and regime: the signed errors",
        "# e = predicted / measured - 1 of the held-out calibration rows (the splits of",
        "# calibration/calibrate.py, calibration/moe.py and calibration/engines.py), as the",
        "# 10th percentile, the median and the 90th percentile (fractions) and the row",
        "# count. max_throughput and borrowed (offline tokens/s): e > 0 optimistic.",
        "# latency_under_load (mean TPOT/ITL at a rate or a concurrency) and",
        "# ttft_under_load (mean TTFT at a concurrency): e < 0 optimistic. A family x",
        "# regime not listed has no held-out rows; error_bands.band gives it the",
        "# profile's widest band of the same quantity and a flag.",
        f"# Held-out rows in no band: {sum(left.values())} ("
        + ", ".join(f"{reason}: {n}" for reason, n in sorted(left.items()))
        + ")",
        "",
        "engines:",
    ]
    for engine, families in table.items():
        lines.append(f"  {engine}:")
        for family in FAMILIES:
            if family not in families:
                continue
            lines.append(f"    {family}:")
            for regime in MEASURED_REGIMES:
                stats = families[family].get(regime)
                if stats is None:
                    continue
                lines.append(
                    f"      {regime}: {{p10: {stats.p10:.4f}, median: {stats.median:.4f}, "
                    f"p90: {stats.p90:.4f}, rows: {stats.rows}}}"
                )
    return "\n".join(lines) + "\n"


def table_lines(table: dict[str, dict[str, dict[str, BandStats]]]) -> list[str]:
    """The bands as a readable table (percent)."""
    lines = [
        f"{'engine':14s} {'family':8s} {'regime':46s} {'p10':>7s} {'median':>7s} "
        f"{'p90':>7s} {'rows':>5s}"
    ]
    for engine, families in table.items():
        for family, regimes in families.items():
            for regime, s in regimes.items():
                lines.append(
                    f"{engine:14s} {family:8s} {REGIME_WORDS[regime]:46s} {s.p10:+7.1%} "
                    f"{s.median:+7.1%} {s.p90:+7.1%} {s.rows:5d}"
                )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write error_bands.yaml")
    args = parser.parse_args()
    errors, left = signed_errors()
    table = bands(errors)
    print("\n".join(table_lines(table)))
    text = render_yaml(table, left)
    if args.write:
        BANDS_YAML.write_text(text, encoding="utf-8")
        print(f"wrote {BANDS_YAML}")
    else:
        print(text)


if __name__ == "__main__":
    main()
