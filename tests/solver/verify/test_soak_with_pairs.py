"""The hour verifier's soak check (solver.verify.batch, step 2) with prefill/decode pairs
beside the unified pools: a batch soaks unified pools only, and the pairs carry the load
the unified pools leave. Found by a time-limited diurnal-chat-batch solve with
disaggregation allowed: its plan (pairs beside unified pools) was refused, exit 70."""

from models.io.loading import load_instance
from solver.plan.records import ReplicaPool
from solver.plan.time_records import BatchSoak, Hour
from solver.verify.batch import _check_shares, _rate
from tests.paths import INSTANCES

INSTANCE = load_instance(INSTANCES / "diurnal-chat-batch.yaml")
WHERE = {"workload": "chat", "region": "us-east", "gpu": "h100-sxm", "precision": "fp8", "pp": 1}


def _pool(role: str, count: int, rps: float) -> ReplicaPool:
    return ReplicaPool(**WHERE, tp=4, role=role, count=count, requests_per_s_per_replica=rps)


def _hour(pools: tuple[ReplicaPool, ...], rates: dict) -> Hour:
    unified = pools[0]
    c_b = _rate(INSTANCE, "summarise", unified, rates)
    # Soak one replica's worth of batch: x = C_b takes x / C_b x q = 1 x 5 = 5 requests/s.
    soak = BatchSoak(
        batch="summarise",
        workload="chat",
        region="us-east",
        configuration=unified.key,
        requests_per_s=c_b,
        batch_requests_per_s_per_replica=c_b,
    )
    return Hour(hour=3, period=3, pools=pools, batch_soak=(soak,))


def _capacity_findings(pools: tuple[ReplicaPool, ...], load: float) -> list[str]:
    rates: dict = {}
    hour = _hour(pools, rates)
    warm = {("chat", "us-east"): (load,) * 24}
    return [
        v.requirement
        for v in _check_shares(INSTANCE, hour, warm, rates)
        if v.requirement.startswith("capacity[none,chat,us-east,unified]")
    ]


def test_pairs_carry_what_the_soaked_unified_pools_leave():
    u = INSTANCE.policy.max_utilization
    unified = _pool("unified", 2, 5.0)  # 10 requests/s, 5 left after the soak
    pairs = (_pool("prefill", 1, 4.0), _pool("decode", 2, 3.0))  # min(4, 6) = 4
    load = 8.5 * u  # 5 + 4 = 9 >= 8.5 with the pairs; 5 < 8.5 without
    assert _capacity_findings((unified, *pairs), load) == []
    assert _capacity_findings((unified,), load) != []
    # The pairs carry no more than their slower side: 5 + 4 < 9.5.
    assert _capacity_findings((unified, *pairs), 9.5 * u) != []
