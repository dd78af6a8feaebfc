"""MoE calibration benchmark: the performance model against the TensorRT-LLM MoE rows
(`calibration/data/trtllm_perf_moe.csv`; `calibration/moe_rows.py` states how a row becomes a
prediction and which rows are held out). Run by `make bench`: prints every row, then
before/after tables (issue 34) of the median |error| and the median signed error (bias)
by layout family (TP, DEP, EP+TP), model, GPU and generation, on the held-out rows and
on the fit rows, then the 20 worst held-out rows with the model's step breakdown."""

import math

from calibration.moe_breakdown import worst_rows
from calibration.moe_report import moe_report
from calibration.moe_rows import MOE_FILE, load_moe_rows
from calibration.rows import calibration_dir


def test_moe_calibration_report() -> None:
    assert (calibration_dir() / MOE_FILE).is_file(), f"missing {calibration_dir() / MOE_FILE}"
    rows, skipped = load_moe_rows(calibration_dir())
    lines, summaries = moe_report(rows)
    print("\n\nfleetplan performance model vs TensorRT-LLM MoE throughput (tokens/s per GPU)\n")
    print("\n".join(lines))
    print(f"skipped MoE rows (model or GPU not in the catalogs): {sum(skipped.values())}")
    print("\nthe 20 worst held-out rows and the model's step (calibration/moe_breakdown.py):")
    print("\n".join(worst_rows([row for row in rows if row.held_out], 20)))
    held = summaries["held out"][0]
    # Guard rails, loose on purpose: every row is placed and the model is not broken.
    assert held.unplaced == 0 and summaries["fit"][0].unplaced == 0
    assert not math.isnan(held.median_abs_pct) and held.median_abs_pct < 80
