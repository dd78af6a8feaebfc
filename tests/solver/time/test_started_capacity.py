"""Replicas started after a region loss are shown at the capacity the program credits them:
a lone replica's at the TTFT target less the round trip of the users the loss reroutes to
their region (solver.program.families.failover_start.started_credit), not q(1) at the
target itself; and the verifier recomputes that figure from the physics, so a table that
states the looser figure (and adds it up consistently) is refused.

Two regions 50 ms apart, TTFT 200 ms: a lone replica there is TPOT-limited, but at
200 - 50 = 150 ms its prompt queue binds (ttft_queueing), so the two figures differ."""

import pytest

from models.io.loading import validate_instance
from models.serving.replica import Limit
from solver.solve import solve
from solver.verify.hours import verify_hours
from solver.verify.pools import pool_physics

TTFT_MS = 200
RTT_MS = 50


def _instance(ttft_ms=TTFT_MS, regions=("r1", "r2"), rates=(60, 40), hourly=True):
    """Hourly (reserved prices, an availability target, T_s = 0: all spare started) or
    static; one region: no failover."""
    offer = {"max_gpus": 64, "price_per_gpu_hour": 2.0}
    if hourly:
        offer["reserved_price_per_gpu_hour"] = 1.2
    slo = {"ttft_p99_ms": ttft_ms, "tpot_p99_ms": 50}
    if len(regions) > 1:
        slo["max_failover_rtt_ms"] = 100
    if len(regions) > 1 and hourly:
        slo["availability"] = 0.999
    data = {
        "name": "started-at-the-rerouted-target",
        "gpus": [{"name": "h100-sxm"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [{"name": r, "supply": {"h100-sxm": dict(offer)}} for r in regions],
        "links": [["r1", "r2", RTT_MS]] if len(regions) > 1 else [],
        "workloads": [
            {
                "name": "chat",
                "model": "llama-3.1-8b",
                "demand": {
                    r: {"peak_requests_per_s": rate} for r, rate in zip(regions, rates, strict=True)
                },
                "prompt_tokens": {"mean": 1000, "p99": 1000},
                "output_tokens": {"mean": 200, "p99": 200},
                "slo": slo,
            }
        ],
        "policy": {
            "buy_unit": "gpu",
            "survive": "region" if len(regions) > 1 else "none",
            "tensor_parallel": [1],
            "replica_start_s": 240,
            "scale_detection_s": 60,
            **({"failover_start_s": 0} if len(regions) > 1 and hourly else {}),
        },
    }
    return validate_instance(data, "started-at-the-rerouted-target.yaml")


def _lone_rate(ttft_ms):
    """q(1) at a TTFT target, as the planner states it for a lone replica (one region,
    4 requests/s: one replica, no failover)."""
    plan = solve(_instance(ttft_ms, regions=("r1",), rates=(4,)))
    (pool,) = plan.replicas
    assert pool.count == 1
    return pool.requests_per_s_per_replica, pool.limit


@pytest.fixture(scope="module")
def started():
    instance = _instance()
    return instance, solve(instance)


def _starts(plan):
    return [(scenario, pool) for scenario in plan.scenarios for pool in scenario.started_replicas]


def test_a_started_replica_is_shown_at_the_target_less_the_round_trip(started):
    _, plan = started
    rerouted, limit = _lone_rate(TTFT_MS - RTT_MS)  # 150 ms: what the program credits
    normal, _ = _lone_rate(TTFT_MS)
    assert rerouted < normal  # the tighter target binds: the two figures differ
    assert _starts(plan)
    for scenario, pool in _starts(plan):
        assert pool.requests_per_s_per_replica == pytest.approx(rerouted, rel=1e-9)
        assert pool.limit == limit == "ttft_queueing"
        (load,) = [p for p in scenario.pools if p.region == pool.region]
        # the display adds count x q'(1), and the utilisation divides by warm + started
        assert load.started_requests_per_s == pytest.approx(pool.count * rerouted)
        assert load.utilisation == pytest.approx(
            load.load_requests_per_s / load.capacity_requests_per_s
        )
    # every hour's starts state the same figure as the busiest period's table
    for hour in plan.hours:
        for start in hour.failover_starts:
            assert start.pool.requests_per_s_per_replica == pytest.approx(rerouted, rel=1e-9)


def _at_target(plan, rate):
    """The plan as the old read-back showed it: each started replica at `rate`, with the
    table's started capacity and utilisation added up consistently from it."""

    def pool(p):
        return p.model_copy(update={"requests_per_s_per_replica": rate})

    def scenario(s):
        started = tuple(pool(p) for p in s.started_replicas)
        extra = {p.region: p.count * rate for p in started}
        loads = []
        for load in s.pools:
            if load.region not in extra:
                loads.append(load)
                continue
            capacity = load.capacity_requests_per_s - load.started_requests_per_s
            capacity += extra[load.region]
            loads.append(
                load.model_copy(
                    update={
                        "capacity_requests_per_s": capacity,
                        "started_requests_per_s": extra[load.region],
                        "utilisation": load.load_requests_per_s / capacity,
                    }
                )
            )
        return s.model_copy(update={"pools": tuple(loads), "started_replicas": started})

    hours = tuple(
        h.model_copy(
            update={
                "failover_starts": tuple(
                    s.model_copy(update={"pool": pool(s.pool)}) for s in h.failover_starts
                ),
                "scenarios": tuple(scenario(s) for s in h.scenarios),
            }
        )
        for h in plan.hours
    )
    return plan.model_copy(
        update={"hours": hours, "scenarios": tuple(scenario(s) for s in plan.scenarios)}
    )


def test_the_verifier_refuses_started_replicas_shown_at_the_looser_target(started):
    instance, plan = started
    assert verify_hours(instance, plan).ok
    normal, _ = _lone_rate(TTFT_MS)
    shown = _at_target(plan, normal)
    found = verify_hours(instance, shown).violations
    stated = [v for v in found if v.requirement.endswith("requests_per_s_per_replica")]
    assert stated, [v.requirement for v in found]
    assert all(".started_replicas[" in v.requirement for v in stated)
    assert "less 50 ms" in stated[0].message
    # the table adds up: only the recomputed figure catches it
    assert not [v for v in found if v.requirement.endswith(".started_requests_per_s")]


def test_the_verifier_refuses_a_wrong_started_limit(started):
    instance, plan = started
    hours = tuple(
        h.model_copy(
            update={
                "failover_starts": tuple(
                    s.model_copy(update={"pool": s.pool.model_copy(update={"limit": Limit.TPOT})})
                    for s in h.failover_starts
                ),
                "scenarios": tuple(
                    s.model_copy(
                        update={
                            "started_replicas": tuple(
                                p.model_copy(update={"limit": Limit.TPOT})
                                for p in s.started_replicas
                            )
                        }
                    )
                    for s in h.scenarios
                ),
            }
        )
        for h in plan.hours
    )
    peak = next(h for h in hours if h.hour == plan.scenarios[0].hour).scenarios
    shown = plan.model_copy(update={"hours": hours, "scenarios": peak})
    found = verify_hours(instance, shown).violations
    assert any(v.requirement.endswith(".limit") and "ttft_queueing" in v.message for v in found), [
        v.requirement for v in found
    ]


def test_the_peak_hour_plan_shows_warm_survivors_at_the_target_less_the_round_trip():
    """The static read-back (solver.readback.assign.FailoverCurves) has no started
    replicas; its warm survivors serving rerouted users are shown at q'(n), as the program
    credits them: at TTFT 150 ms each region's 3 replicas carry n q(n) in `none` and
    n q'(n) (the target less 50 ms) after the other region's loss, and q' < q here."""
    instance = _instance(150, hourly=False)
    plan = solve(instance)
    assert not plan.hours
    pools = pool_physics(instance, plan.replicas, {})
    for scenario in plan.scenarios:
        for load in scenario.pools:
            (pool,) = [p for p in pools if p.region == load.region]
            n, rtt = pool.count, 0.0 if scenario.name == "none" else RTT_MS
            assert load.capacity_requests_per_s == pytest.approx(
                n * pool.rerouted_requests_per_s(n, rtt), rel=1e-9
            )
    (pool,) = pools[:1]
    assert pool.rerouted_requests_per_s(pool.count, RTT_MS) < pool.requests_per_s(pool.count)
