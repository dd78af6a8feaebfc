"""A soaked batch's throughput is counted from when the pool has filled with it
(solver.simulate.soak.filled_s): from an empty pool at t = 0 a request arriving at a
finishes at a + d, so no batch request finishes before the first d, and counting from a
warm-up shorter than that read a false shortfall (a 20 s replay of diurnal-chat-batch's
04:00 soak: 1.94 of its 3.30 requests/s, 'SHORTFALL'; 600 s: 3.31, 'ok')."""

import numpy as np
import pytest

from solver.simulate.soak import PoolSoak, batch_replays, filled_s

RATE = 10.0  # batch requests/s, one every 0.1 s from t = 0
ARRIVALS = np.arange(0.0, 40.0, 1 / RATE)  # 400 of them over 40 s
WARMUP_S = 4.0


class _Batch:
    name = "nightly"


def _replay(stay_s: np.ndarray):
    kind = np.zeros(ARRIVALS.size, dtype=int)
    soak = PoolSoak(((_Batch(), RATE),))
    (row,) = batch_replays(soak, kind, ARRIVALS, ARRIVALS + stay_s, 40.0, WARMUP_S)
    return row


def test_a_pool_that_keeps_up_reads_its_rate_from_when_it_filled():
    # Every request stays 10 s: finishes at 10.0, 10.1, ..., 49.9.
    row = _replay(np.full(ARRIVALS.size, 10.0))
    # The 40 arrivals of the 4 s warm-up stay 10 s at most: counted from 10 s, the
    # finishes in [10, 40) are the arrivals in [0, 30): 300 = 10/s x 30 s.
    assert filled_s(ARRIVALS, ARRIVALS + 10.0, WARMUP_S) == pytest.approx(10.0)
    assert row.measured_from_s == pytest.approx(10.0)
    assert row.finished_in_span == 300
    assert row.achieved_requests_per_s == pytest.approx(RATE)
    assert not row.shortfall
    # From the warm-up (the old count): 300 finishes against 10 x 36 = 360, below
    # 360 - 3 sqrt(360) = 303.1: a shortfall of a pool that keeps up.


def test_a_pool_whose_backlog_grows_still_reads_a_shortfall():
    # Each request stays 10 s + half its arrival time: finishes at 10 + 1.5 a, 1/1.5 of
    # the rate. The warm-up's 40 arrivals (a < 4 s) stay at most 10 + 0.5 x 3.9 = 11.95 s.
    row = _replay(10.0 + 0.5 * ARRIVALS)
    assert row.measured_from_s == pytest.approx(11.95)
    # finishes in [11.95, 40): 10 + 1.5 a in that span, a in [1.3, 20): 187 arrivals
    assert row.finished_in_span == 187
    # expected 10 x (40 - 11.95) = 280.5; 187 < 280.5 - 3 sqrt(280.5) = 230.3
    assert row.shortfall
