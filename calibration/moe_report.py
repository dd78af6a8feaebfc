"""The MoE rows' report (calibration.moe_rows): per layout family, model, GPU and
generation, the median |error| and the median signed error (the bias) before issue 34's
physics (`BEFORE_FILE`: the predictions of main at ec6ad5f, stored so the comparison
survives later changes) and now, on the held-out rows and on the fit rows. `make bench`
prints it (tests/bench/test_moe_calibration.py).
"""

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from calibration.moe_rows import FAMILIES, MoeRow, predict_moe

BEFORE_FILE = Path(__file__).parent / "moe_before.csv"
"""Each row's prediction before issue 34 (fleetplan main at ec6ad5f), by label."""


@dataclass(frozen=True)
class MoeSummary:
    """Signed percentage errors of a set of rows, and their median, bias and worst."""

    name: str
    errors_pct: tuple[float, ...]
    unplaced: int

    @property
    def median_abs_pct(self) -> float:
        """Median |error| in percent (nan with no placed row)."""
        return float(np.median(np.abs(self.errors_pct))) if self.errors_pct else math.nan

    @property
    def bias_pct(self) -> float:
        """Median signed error in percent: > 0 optimistic, < 0 pessimistic."""
        return float(np.median(self.errors_pct)) if self.errors_pct else math.nan

    @property
    def worst_pct(self) -> float:
        """The signed error of largest magnitude, percent."""
        if not self.errors_pct:
            return math.nan
        return max(self.errors_pct, key=abs)


def summarise(name: str, rows: list[MoeRow], predicted: list[float]) -> MoeSummary:
    """Signed errors (predicted - measured) / measured x 100 of the rows that fit."""
    errors = tuple(
        (value - row.measured) / row.measured * 100
        for row, value in zip(rows, predicted, strict=True)
        if not math.isnan(value)
    )
    return MoeSummary(name, errors, sum(math.isnan(v) for v in predicted))


def predictions_before(rows: list[MoeRow]) -> list[float]:
    """Each row's stored prediction before issue 34 (`BEFORE_FILE`; nan where absent)."""
    with BEFORE_FILE.open(encoding="utf-8") as handle:
        stored = {raw["label"]: float(raw["predicted_before"]) for raw in csv.DictReader(handle)}
    return [stored.get(row.label, math.nan) for row in rows]


def _groups(rows: list[MoeRow]) -> list[tuple[str, list[int]]]:
    """Named row sets of the report: all, each layout family (and by generation), model,
    GPU, generation, engine, ISL/OSL."""
    groups: list[tuple[str, list[int]]] = [("all MoE rows", list(range(len(rows))))]
    for family in FAMILIES:
        groups.append((f"family {family}", [i for i, r in enumerate(rows) if r.family == family]))
    for family in FAMILIES:
        for key in sorted({r.generation for r in rows if r.family == family}):
            members = [i for i, r in enumerate(rows) if r.family == family and r.generation == key]
            groups.append((f"{family} on {key}", members))
    for attribute in ("model", "gpu", "generation", "engine", "lengths"):
        for key in sorted({getattr(r, attribute) for r in rows}):
            members = [i for i, r in enumerate(rows) if getattr(r, attribute) == key]
            groups.append((f"{attribute} {key}", members))
    return groups


def _summary_table(
    title: str, rows: list[MoeRow], now: list[float], before: list[float]
) -> tuple[list[str], list[MoeSummary]]:
    """Lines of one before/after table (median |error| and bias per group) and the
    summaries of now."""
    lines = [
        f"\n{title}",
        f"  {'rows':32s} {'n':>4s}   {'before: median|e|':>17s} {'bias':>7s}"
        f"   {'now: median|e|':>14s} {'bias':>7s} {'worst':>8s}",
    ]
    summaries = []
    for name, indices in _groups(rows):
        if not indices:
            lines.append(f"  {name:32s} {0:4d}   (no rows)")
            continue
        subset = [rows[i] for i in indices]
        old = summarise(name, subset, [before[i] for i in indices])
        new = summarise(name, subset, [now[i] for i in indices])
        summaries.append(new)
        lines.append(
            f"  {name:32s} {len(indices):4d}   {old.median_abs_pct:16.1f}% {old.bias_pct:+6.1f}%"
            f"   {new.median_abs_pct:13.1f}% {new.bias_pct:+6.1f}% {new.worst_pct:+7.1f}%"
            + (f"  (no layout fits: {new.unplaced})" if new.unplaced else "")
        )
    return lines, summaries


def moe_report(rows: list[MoeRow]) -> tuple[list[str], dict[str, list[MoeSummary]]]:
    """The report's lines (every row, then before/after tables on the held-out rows and on
    the fit rows) and the summaries of now, by split (`held out`, `fit`)."""
    predicted = [predict_moe(row) for row in rows]
    before = predictions_before(rows)
    lines = [
        f"{'MoE row':78s} {'split':>5s} {'family':>6s} {'before':>10s} {'now':>10s} "
        f"{'measured':>10s} {'error':>8s}"
    ]
    for row, value, old in zip(rows, predicted, before, strict=True):
        split = "held" if row.held_out else "fit"
        head = f"{row.label:78s} {split:>5s} {row.family:>6s} {old:10.4g}"
        if math.isnan(value):
            lines.append(f"{head} {'no fit':>10s} {row.measured:10.4g}")
            continue
        error = (value - row.measured) / row.measured * 100
        lines.append(f"{head} {value:10.4g} {row.measured:10.4g} {error:+7.1f}%")
    summaries: dict[str, list[MoeSummary]] = {}
    for split, keep in (("held out", True), ("fit", False)):
        indices = [i for i, r in enumerate(rows) if r.held_out is keep]
        table, summaries[split] = _summary_table(
            f"MoE {split} rows, before issue 34 and now (median |error|, median signed error):",
            [rows[i] for i in indices],
            [predicted[i] for i in indices],
            [before[i] for i in indices],
        )
        lines += table
    return lines, summaries
