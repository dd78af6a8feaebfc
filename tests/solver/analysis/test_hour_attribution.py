"""An hourly plan's cost attribution (solver.analysis.hour_attribution): each hour's bill
shared out among the pools that hold its GPUs, by hand on three hours."""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.analysis.hour_attribution import pool_hours
from solver.plan.records import ReplicaPool
from solver.plan.time_records import Hour, HourGpus
from solver.program.families.pricing import OfferTerms

OFFER = OfferTerms(
    region="us",
    gpu="h100-sxm",
    existing=0,
    max_gpus=64,
    available=64,
    on_demand_price_per_gpu_hour=2.0,
    reserved_price_per_gpu_hour=1.0,
    max_on_demand_gpus=64,
    spot_price_per_gpu_hour=0.5,
)
COMMITTED = {("us", "h100-sxm"): 8.0}


def _pool(workload: str, count: int) -> ReplicaPool:
    return ReplicaPool(
        workload=workload,
        region="us",
        gpu="h100-sxm",
        precision="fp8",
        tp=4,
        pp=1,
        count=count,
        gpus=4 * count,
    )


def _gpus(used: int, reserved: float, on_demand: float, spot: float = 0.0) -> HourGpus:
    return HourGpus(
        region="us", gpu="h100-sxm", used=used, reserved=reserved, on_demand=on_demand, spot=spot
    )


CHAT, OTHER = _pool("chat", 2), _pool("other", 2)
DAY = [
    # hour 0: chat's 8 GPUs are the 8 committed: bill 8 x $1 = $8, all chat's.
    Hour(hour=0, period=0, pools=(CHAT,), gpus=(_gpus(8, 8, 0),)),
    # hour 1: 16 GPUs: 8 committed ($8), 4 on demand (4 x $2 = $8), 4 of other's on
    # spot (4 x $0.5 = $2). Spot to other; the $16 over the 12 GPUs not on spot:
    # chat 16 x 8/12 = 10.667, other 16 x 4/12 = 5.333 (+ 2 spot = 7.333).
    Hour(hour=1, period=1, pools=(CHAT, OTHER), gpus=(_gpus(16, 8, 4, 4),)),
    # hour 2: no pool; the 8 committed GPUs still cost $8, spread over the day's 24
    # GPU-hours of the offer: chat's 16 (hours 0 and 1) get 16/24 x 8 = 5.333, other's 8
    # get 2.667.
    Hour(hour=2, period=2, pools=()),
]
SPOT = {(1, ("other", CHAT.key, "us")): 4}


def test_three_hours_by_hand():
    shares = pool_hours(DAY, (OFFER,), COMMITTED, SPOT)
    cost = {}
    for share in shares:
        cost[share.workload] = cost.get(share.workload, 0.0) + share.cost
    # chat: 8 + 10.667 + 5.333 = 24; other: 7.333 + 2.667 = 10.
    assert cost["chat"] == pytest.approx(24.0)
    assert cost["other"] == pytest.approx(10.0)
    # The day's bill: 8 + (8 + 8 + 2) + 8 = 34 = 24 + 10.
    assert sum(cost.values()) == pytest.approx(34.0)


@settings(max_examples=40, deadline=None)
@given(
    counts=st.lists(st.tuples(st.integers(0, 4), st.integers(0, 4)), min_size=1, max_size=6),
    committed=st.integers(0, 4).map(lambda servers: 4.0 * servers),
)
def test_the_shares_add_up_to_the_bill(counts, committed):
    """Whatever runs in which hour, the pools' shares add up to every hour's bill (when
    some hour holds a pool: a day with none has no pool to carry the commitment)."""
    hours, bill = [], 0.0
    for at, (chat, other) in enumerate(counts):
        pools = tuple(p for p in (_pool("chat", chat), _pool("other", other)) if p.count)
        used = 4 * (chat + other)
        reserved = min(committed, used)
        on_demand = used - reserved
        hours.append(
            Hour(
                hour=at,
                period=at,
                pools=pools,
                gpus=(_gpus(used, reserved, on_demand),) if used else (),
            )
        )
        bill += committed * 1.0 + on_demand * 2.0
    shares = pool_hours(hours, (OFFER,), {("us", "h100-sxm"): committed}, {})
    if any(h.pools for h in hours):
        assert sum(s.cost for s in shares) == pytest.approx(bill)
    assert all(s.cost >= 0 for s in shares)


def test_a_commitment_no_pool_uses_goes_to_its_regions_pools():
    """8 H200 committed at $1.5 that no pool of the day runs on: 8 x 1.5 = $12 an hour, $36
    over the three hours, over the region's 24 pool GPU-hours (chat 16, other 8): chat
    24 + 24 = 48, other 10 + 12 = 22, adding up to the day's bill 34 + 36 = 70."""
    h200 = replace(OFFER, gpu="h200", reserved_price_per_gpu_hour=1.5)
    committed = {**COMMITTED, ("us", "h200"): 8.0}
    cost: dict[str, float] = {}
    for share in pool_hours(DAY, (OFFER, h200), committed, SPOT):
        cost[share.workload] = cost.get(share.workload, 0.0) + share.cost
    assert cost == pytest.approx({"chat": 48.0, "other": 22.0})
