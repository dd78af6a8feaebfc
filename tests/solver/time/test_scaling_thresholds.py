"""The KV-usage scale-out threshold of a pool reads a replica in a pool of its size, at
the pool's credited capacity (issue 35): never a lone TTFT-limited replica's batch."""

import pytest

from models.operations.autoscaling import resident_batch
from models.physics import catalog
from models.physics.precision import Precision
from models.serving.replica import Limit, ReplicaConfig
from solver.candidates.pools import PoolCurve
from solver.candidates.table import Candidate
from solver.time.readback.report import pool_thresholds
from tests import synthetic

CONFIG = ReplicaConfig(
    catalog.gpu("h100-sxm"), catalog.llm("llama-3.1-8b"), Precision.BF16, Precision.BF16, 1, 1
)
# made-up physics: alone a replica carries 2.5 requests/s (TTFT-limited: its queue), in a
# pool of 4 it carries 4.0 requests/s with 50 sequences resident; 300 fit in its KV cache
LONE = synthetic.made_up_capacity(
    CONFIG, requests_per_s=2.5, batch=20.0, max_batch=300, prefill_s=0.1,
    limit=Limit.TTFT_QUEUEING,
)  # fmt: skip
POOLED = synthetic.made_up_capacity(
    CONFIG, requests_per_s=4.0, batch=50.0, max_batch=300, prefill_s=0.1,
    limit=Limit.TTFT_QUEUEING,
)  # fmt: skip


def test_resident_batch_is_littles_law_at_the_pools_duration():
    # a request stays B_n / q(n) = 50 / 4.0 = 12.5 s; at 3 requests/s: 3 x 12.5 = 37.5
    assert resident_batch(3.0, 50.0, 4.0) == pytest.approx(3.0 * 50.0 / 4.0)


def test_kv_threshold_reads_the_pool_at_its_target_rate():
    candidate = Candidate("chat", LONE, PoolCurve(((1, LONE), (4, POOLED)), 4.2))
    workload = synthetic.instance(
        {"us": {"h100-sxm": (64, 2.0)}}, [synthetic.workload("chat", {"us": 10.0})]
    ).workloads[0]
    # a pool of 5 (the curve's size-4 physics), credited 4.0 requests/s each, headroom
    # 1.0 request/s: u* = 1 - 1.0 / (5 x 4.0) = 0.95; at capacity each replica holds
    # 4.0 x 50 / 4.0 = 50 sequences of 300: the alarm at 0.95 x 50 / 300 = 15.8%
    thresholds = pool_thresholds(4.0, 1.0, 5, candidate, workload)
    assert thresholds.target_utilization == pytest.approx(1 - 1.0 / (5 * 4.0))
    assert thresholds.kv_usage_scale_out == pytest.approx(0.95 * 50.0 / 300)
    # the lone replica's batch against the pool's rate put it at 0.95 x 20 / 300 = 6.3%
    assert thresholds.kv_usage_scale_out > 2 * 0.95 * 20.0 / 300
