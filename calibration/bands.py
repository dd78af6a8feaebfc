"""Measured error bands of the performance model: per engine profile, model family and
regime, the signed errors of the model on the calibration rows it was not fitted on.

Rows and split are those of `calibration.calibrate` (dense rows, `calibration.rows`) and
`calibration.moe` (MoE rows): only held-out rows count, each predicted exactly as those
tools predict it (`calibrate.predict` with `calibrate.catalog_efficiency`, `moe.predict_moe`).
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
  is what `calibrate.catalog_efficiency` and `moe.predict_moe` use while it is the
  default. Rows of engines no profile stands for (MLPerf submissions) and kinds no
  regime covers (TensorRT-LLM v0.9 first-token and static-batching rows) join no band;
  they are counted.
- family: `models.physics.error_bands.family_of` (dense, moe-tp, moe-ep, moe-dep).
- regime: `max_throughput` for offline rows, `latency_under_load` for the mean
  inter-token latency at a finite rate (a latency: e < 0 is optimistic), and `borrowed`
  for an offline row whose GPU runs on another GPU's factors (`efficiency_source`).

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
from calibration.moe import load_moe_rows, predict_moe
from calibration.rows import Row, calibration_dir, load_rows
from models.physics.catalog import llm_catalog
from models.physics.efficiency import efficiency_for, efficiency_source, engine_profiles
from models.physics.error_bands import FAMILIES, MEASURED_REGIMES, REGIME_WORDS, family_of

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
    if regime == "max_throughput" and efficiency_source(gpu, engine).borrowed:
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
    return found, left


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
        "# e = predicted / measured - 1 of the held-out calibration rows (the split of",
        "# calibration/calibrate.py and calibration/moe.py), as the 10th percentile, the",
        "# median and the 90th percentile (fractions) and the row count. Throughput",
        "# regimes: e > 0 optimistic. latency_under_load (mean inter-token latency at a",
        "# finite rate): e < 0 optimistic. A family x regime not listed has no held-out",
        "# rows; error_bands.band gives it the profile's widest band and a flag.",
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
