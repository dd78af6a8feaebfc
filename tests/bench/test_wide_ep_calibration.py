"""Wide expert-parallel calibration benchmark: the performance model against the published
wide-EP throughputs (`calibration/data/wide_ep.csv`; `calibration/wide_ep.py` states how a
row becomes a prediction, every row held out). Run by `make bench`: prints every row
(measured and predicted per GPU, the signed error) and the median |error|."""

import math
import statistics

from calibration.rows import calibration_dir
from calibration.wide_ep import (
    WIDE_EP_FILE,
    error_pct,
    load_wide_ep_rows,
    predict_wide_ep,
    table_lines,
)


def test_wide_ep_calibration_report() -> None:
    assert (calibration_dir() / WIDE_EP_FILE).is_file(), f"missing {WIDE_EP_FILE}"
    rows = load_wide_ep_rows()
    print("\n\nfleetplan performance model vs wide expert parallelism (tokens/s per GPU)\n")
    print("\n".join(table_lines(rows)))
    errors = [abs(error_pct(predict_wide_ep(row), row.measured)) for row in rows]
    print(f"\nheld out: {len(rows)} rows, median |error| {statistics.median(errors):.1f}%")
    # Guard rail, loose on purpose: every row is placed.
    assert not any(math.isnan(error) for error in errors)
