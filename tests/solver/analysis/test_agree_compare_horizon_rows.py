"""compare's GPUs, $/GPU-hour and utilisation rows read a plan of months on the basis its
cost is judged on: over the horizon where both plan the same months, as its $ over the
horizon, $/million tokens and headroom do.

Before, they read month 0's: the shorter lead time below was adopted 'over the 4-month
horizon' beside a ledger of 11 vs 11 GPUs paid at $1.20 vs $1.20 a GPU-hour and 95%
utilisation on both sides, every row month 0's, where the months run 11 to 14 GPUs and
the longer lead time pays $1.216.

Hand case (tests.solver.time.test_months, as test_agree_compare_months): Llama 3.1 8B fp8
TP1, KV-limited, a flat day, 10.5 q of load growing 10% a month over 4 months:
ceil(10.5 x 1.1^m) = 11, 12, 13, 14 GPUs, reserved at 1.2 and on demand at 2.0 $/GPU-hour.
With no lead time every month commits its GPUs: $1.20 a GPU-hour. With two months, month 1
keeps month 0's 11 committed and rents 1 on demand: (49 x 1.2 + 2.0) / 50 = $1.216."""

import pytest

from cli.compare import comparison_report
from models.io.loading import validate_instance
from solver.analysis.compare import compare_instances
from tests.solver.time.test_months import ON_DEMAND, RESERVED, _data, _lone_rps

GROWTH = [1.1**m for m in range(4)]
GPUS = [11, 12, 13, 14]


def test_the_ledger_of_two_plans_of_months_reads_their_horizons():
    q = _lone_rps()
    base = validate_instance(_data(10.5 * q, 0.10, 2, 4), "lead2.yaml")
    candidate = validate_instance(_data(10.5 * q, 0.10, 0, 4), "lead0.yaml")
    result = compare_instances(base, candidate)
    lead2 = (sum([11, 11, 13, 14]) * RESERVED + ON_DEMAND) / sum(GPUS)
    assert result.base.usd_per_gpu_hour == pytest.approx(lead2)  # month 0: 1.20
    assert result.candidate.usd_per_gpu_hour == pytest.approx(RESERVED)
    mean = 10.5 * sum(GROWTH) / sum(GPUS)
    busiest = 10.5 * GROWTH[3] / GPUS[3]
    for side in (result.base, result.candidate):
        assert side.gpus_paid == side.total_gpus == max(GPUS)  # month 0: 11
        assert side.utilisation_mean == pytest.approx(mean)  # month 0: 10.5 / 11
        assert side.utilisation_max == pytest.approx(busiest)
    note = comparison_report(result).tables[0].note
    assert note.startswith("judged over the 4-month horizon: GPUs used and paid in its")


def test_a_horizon_judged_per_month_reads_month_0():
    # a 1-month horizon against 4 months: judged on month 0, and so is every row
    q = _lone_rps()
    base = validate_instance(_data(10.5 * q, 0.10, 0, 1), "one.yaml")
    candidate = validate_instance(_data(10.5 * q, 0.10, 0, 4), "four.yaml")
    result = compare_instances(base, candidate)
    for side in (result.base, result.candidate):
        assert side.gpus_paid == side.total_gpus == GPUS[0]
        assert side.usd_per_gpu_hour == pytest.approx(RESERVED)
        assert side.utilisation_mean == pytest.approx(10.5 / GPUS[0])
    note = comparison_report(result).tables[0].note  # it says so (it said nothing)
    assert "the horizons differ (the base plans 1 month, the candidate 4 months)" in note
    assert note.endswith("every row but '$ over the horizon' is month 0's")
