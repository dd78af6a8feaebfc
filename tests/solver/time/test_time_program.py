"""Time in the program (issue 11): the periods program's committed base by hand, headroom
by hand, batch soaking the trough, and the metamorphic properties of the hourly plan.
Every plan here has passed the hour-by-hour verifier inside `solve`."""

import copy
import math
from dataclasses import replace

import pytest

from models.io.loading import validate_instance
from models.operations.batch_soak import schedule_batch, soak_targets
from models.operations.time_demand import warm_grid
from models.schema.serving_inputs import latency_targets
from solver.candidates.pools import physics_of
from solver.candidates.table import build_candidates
from solver.errors import Infeasible
from solver.solve import solve
from solver.verify.hours import verify_hours
from tests.synthetic import FLAT_SLO

TROUGH, PEAK = 1.0, 4.0
PEAK_HOURS = range(10, 16)
"""A 4x peak over a flat trough: UTC hours 10-15 at 4, the other 18 at 1."""
PROFILE = [PEAK if h in PEAK_HOURS else TROUGH for h in range(24)]
ON_DEMAND, RESERVED = 2.0, 1.2
"""Reserved at 60% of on demand."""
HOURS_PER_MONTH = 730.0


def _instance(
    profile=PROFILE,
    peak_rps=400.0,
    reserved=RESERVED,
    start_s=0.0,
    detection_s=0.0,
    batch_per_day=None,
    batch_prompt=1000,
):
    offer = {"max_gpus": 64, "price_per_gpu_hour": ON_DEMAND}
    if reserved is not None:
        offer["reserved_price_per_gpu_hour"] = reserved
    workloads = [
        {
            "name": "chat",
            "model": "llama-3.1-8b",
            "demand": {"r1": {"peak_requests_per_s": peak_rps, "hourly_profile": list(profile)}},
            "prompt_tokens": {"mean": 1000, "p99": 1000},
            "output_tokens": {"mean": 200, "p99": 200},
            # KV-limited (`tests.synthetic.FLAT_SLO`): n replicas carry n q(1) in any hour
            "slo": {**FLAT_SLO, "availability": 0.999},
        }
    ]
    if batch_per_day is not None:
        workloads.append(
            {
                "name": "nightly",
                "model": "llama-3.1-8b",
                "deadline_hours": 24,
                "demand": {"r1": {"requests_per_day": batch_per_day}},
                "prompt_tokens": {"mean": batch_prompt, "p99": batch_prompt},
                "output_tokens": {"mean": 200, "p99": 200},
            }
        )
    data = {
        "name": "time-by-hand",
        "gpus": [{"name": "h100-sxm"}],
        "models": [{"name": "llama-3.1-8b", "weight_precisions": ["fp8"]}],
        "regions": [{"name": "r1", "supply": {"h100-sxm": offer}}],
        "workloads": workloads,
        "policy": {
            # single GPUs: the rules here are per GPU (whole servers: test_whole_servers.py)
            "buy_unit": "gpu",
            "tensor_parallel": [1],
            "replica_start_s": start_s,
            "scale_detection_s": detection_s,
            "hours_per_month": HOURS_PER_MONTH,
        },
    }
    return validate_instance(data, "time-by-hand.yaml")


def _gpus_by_hour(plan, workload=None):
    return [
        sum(p.gpus for p in hour.pools if workload is None or p.workload == workload)
        for hour in plan.hours
    ]


def test_the_committed_base_is_the_trough_when_the_peak_runs_under_the_breakeven_hours():
    plan = solve(_instance())
    need = _gpus_by_hour(plan)
    # With no start lag the warm day is the day itself, read at the highest point of
    # each hour on the line between hour centres: the hour before the peak block and
    # the last peak hour's neighbour reach halfway, (1 + 4) / 2 = 2.5.
    trough_hours = [h for h in range(24) if h not in PEAK_HOURS and h not in (9, 16)]
    trough = need[trough_hours[0]]
    assert all(need[h] == trough for h in trough_hours)
    assert need[9] == need[16] >= trough
    assert all(need[h] > need[9] for h in PEAK_HOURS)
    # Break-even: a committed GPU pays when it would run on demand more than
    # q = 24 h x reserved / on-demand = 24 x 1.2 / 2.0 = 14.4 hours a day.
    breakeven_hours = 24 * RESERVED / ON_DEMAND
    hours_above_trough = len(PEAK_HOURS) + 2  # the 6 peak hours and the 2 shoulders
    assert hours_above_trough < breakeven_hours < 24  # so c* = the trough's need
    (commitment,) = plan.committed
    assert commitment.committed_gpus == pytest.approx(trough)
    days = HOURS_PER_MONTH / 24
    on_demand_gpu_hours = sum(n - trough for n in need)
    expected = days * (24 * RESERVED * trough + ON_DEMAND * on_demand_gpu_hours)
    assert plan.cost_per_month == pytest.approx(expected, rel=1e-9)
    # Against peak-sized reserved: every hour paid at the peak's GPUs.
    peak_reserved = days * 24 * RESERVED * max(need)
    assert plan.cost_per_month < peak_reserved


def test_each_hour_splits_its_gpus_into_reserved_and_on_demand():
    plan = solve(_instance())
    (commitment,) = plan.committed
    for hour in plan.hours:
        (row,) = hour.gpus
        assert row.reserved == pytest.approx(min(commitment.committed_gpus, row.used))
        assert row.on_demand == pytest.approx(row.used - row.reserved)


def test_adding_reserved_pricing_never_raises_the_cost():
    without = solve(_instance(reserved=None))
    with_reserved = solve(_instance())
    days = HOURS_PER_MONTH / 24
    assert without.committed == ()
    assert without.cost_per_month == pytest.approx(
        days * ON_DEMAND * sum(_gpus_by_hour(without)), rel=1e-9
    )
    assert with_reserved.cost_per_month <= without.cost_per_month + 1e-6


@pytest.mark.parametrize(
    "profile",
    [PROFILE, [1 + (h % 6) for h in range(24)], [3, 1, 1, 2] * 6],
    ids=["peak-block", "saw", "twin-peaks"],
)
def test_flattening_the_whole_day_to_its_peak_never_lowers_the_cost(profile):
    """The exact property: every hour raised to the peak rate (peak_requests_per_s held),
    which raises every warm hour to the peak (models.operations.autoscaling: warm_h <= P). Raising
    only some hours is NOT monotone (tests/models/operations/test_time_periods.py: filling a trough
    removes a ramp and its headroom)."""
    shaped = solve(_instance(profile=profile, start_s=240, detection_s=60))
    flat = solve(_instance(profile=[1.0] * 24, start_s=240, detection_s=60))
    assert flat.cost_per_month >= shaped.cost_per_month - 1e-6


def test_headroom_is_the_ramp_times_the_lag_by_hand():
    # A linear ramp from hour 0 to hour 12 at 1, 2, ..., 13 (x 30 requests/s per step):
    # d rises 30 requests/s per hour = 30 / 3,600 requests/s per second.
    profile = [1 + h if h <= 12 else 25 - h for h in range(24)]
    peak_rps = 390.0  # 13 x 30
    plan = solve(_instance(profile=profile, peak_rps=peak_rps, start_s=240, detection_s=60))
    slope_rps_per_s = 30.0 / 3600
    lag_s = 240 + 60
    (headroom,) = plan.headroom
    assert headroom.lag_s == lag_s
    assert headroom.steepest_ramp_rps_per_minute == pytest.approx(slope_rps_per_s * 60)
    assert headroom.headroom_rps == pytest.approx(slope_rps_per_s * lag_s)  # 2.5 requests/s
    assert headroom.headroom_replicas == math.ceil(
        headroom.headroom_rps / headroom.capacity_rps_per_replica
    )
    assert "GPU utilisation" in headroom.signal_note


def _trough_capacity(plan):
    (placement,) = plan.batch
    return placement.idle_replica_hours_before * placement.soak_requests_per_s_per_replica * 3600


def test_a_batch_volume_that_fits_the_trough_adds_no_gpus():
    alone = solve(_instance())
    probe = solve(_instance(batch_per_day=1000))
    volume = 0.5 * _trough_capacity(probe)
    plan = solve(_instance(batch_per_day=volume))
    (placement,) = plan.batch
    assert placement.dedicated_replicas == 0
    assert placement.soaked_requests_per_day == pytest.approx(volume)
    assert _gpus_by_hour(plan) == _gpus_by_hour(alone)
    assert plan.cost_per_month == pytest.approx(alone.cost_per_month)
    assert placement.idle_replica_hours_after < placement.idle_replica_hours_before


def _program_trough_requests(plan, instance):
    """R: the batch requests a day the program can soak on a fleet, by hand: each hour,
    the chat pool's n replicas less the warm rate over q_top (the capacity per replica
    the program deducts per soaked replica, the candidate's ceiling), each running the
    batch at C_b for 3,600 s."""
    (candidate,) = build_candidates(instance).of("chat")
    q_top = max(candidate.requests_per_s, candidate.ceiling)
    # C_b beside chat: the batch held to chat's TPOT target (its requests decode in the
    # same iterations: models.operations.batch_soak.soak_targets)
    beside = soak_targets(latency_targets(instance.workload("chat").slo))
    c_b = replace(physics_of(instance, "nightly", candidate.config), targets=beside).at(1)
    c_b = c_b.requests_per_s
    warm = warm_grid(instance)[("chat", "r1")]
    room = sum(c_b * 3600 * (h.pools[0].count - warm[h.hour] / q_top) for h in plan.hours)
    return room, c_b


def test_a_batch_volume_just_inside_the_program_s_trough_adds_nothing():
    alone = solve(_instance())
    room, _ = _program_trough_requests(alone, _instance(batch_per_day=1000))
    plan = solve(_instance(batch_per_day=0.999 * room))
    assert _gpus_by_hour(plan) == _gpus_by_hour(alone)
    assert plan.cost_per_month == pytest.approx(alone.cost_per_month, rel=1e-9)
    (placement,) = plan.batch
    assert placement.soaked_requests_per_day == pytest.approx(0.999 * room, rel=1e-6)


def test_a_batch_volume_beyond_the_trough_adds_exactly_the_shortfall():
    alone = solve(_instance())
    room, c_b = _program_trough_requests(alone, _instance(batch_per_day=1000))
    need = _gpus_by_hour(alone)
    busy_hours = [h for h in range(24) if need[h] > min(need)]  # 6 peak + 2 shoulders
    # A shortfall of 3/4 of the 16 hours outside the peak block and its shoulders, in
    # replica-hours of batch at C_b: one more GPU carries it.
    shortfall_replica_hours = 0.75 * (24 - len(busy_hours))
    volume = room + shortfall_replica_hours * c_b * 3600
    plan = solve(_instance(batch_per_day=volume))
    # The cheapest such GPU is committed: 24 x 1.2 = 28.8 a day, less the 8 x 2.0 it
    # saves by replacing an on-demand GPU in the busy hours, is 12.8 < 12 x 2.0 = 24 for
    # the shortfall's 12 hours on demand.
    extra = [a - b for a, b in zip(_gpus_by_hour(plan), need, strict=True)]
    assert extra == [0 if h in busy_hours else 1 for h in range(24)]
    assert [c.committed_gpus for c in plan.committed] == [
        c.committed_gpus + 1 for c in alone.committed
    ]
    days = HOURS_PER_MONTH / 24
    added = days * (24 * RESERVED - len(busy_hours) * ON_DEMAND)
    assert plan.cost_per_month - alone.cost_per_month == pytest.approx(added, rel=1e-9)
    (placement,) = plan.batch
    assert placement.dedicated_replicas == 0  # soaking beat a dedicated replica
    assert placement.soaked_requests_per_day == pytest.approx(volume, rel=1e-6)


def test_long_batch_contexts_soaked_beside_chat_are_held_to_its_tpot():
    """Alone (no latency target) 60,000-token batch contexts fill the chat
    configuration's KV cache first; soaked beside chat, chat's 200 ms TPOT binds first:
    prefilling such prompts stalls the decodes they share iterations with."""
    instance = _instance(batch_per_day=1000, batch_prompt=60_000)
    (candidate,) = build_candidates(instance).of("chat")
    assert str(physics_of(instance, "nightly", candidate.config).at(1).limit) == "kv_memory"
    (placement,) = solve(instance).batch
    assert placement.soak_limit == "tpot"


def test_an_instance_without_time_keys_keeps_its_single_period_plan():
    data = _instance(reserved=None).model_dump(mode="json", exclude_none=True)
    plain = copy.deepcopy(data)
    plain["workloads"][0]["demand"]["r1"] = {"peak_requests_per_s": 400.0}
    plan = solve(validate_instance(plain, "plain.yaml"))
    assert plan.hours == () and plan.committed == () and plan.months == ()


def test_the_hour_verifier_catches_a_missing_replica_and_a_wrong_cost():
    instance = _instance()
    plan = solve(instance)
    peak = max(plan.hours, key=lambda h: h.pools[0].count)
    pool = peak.pools[0]
    smaller = peak.model_copy(update={"pools": (pool.model_copy(update={"count": 0}),)})
    broken = plan.model_copy(
        update={
            "hours": tuple(smaller if h.hour == peak.hour else h for h in plan.hours),
            "cost_per_month": plan.cost_per_month + 10,
        }
    )
    found = {v.requirement.split("[")[0] for v in verify_hours(instance, broken).violations}
    assert {"demand", "gpus", "cost"} <= found


def test_an_over_capacity_batch_day_misses_its_excess_in_steady_state():
    # 120 arrive and 100 can be served every hour: the steady state misses
    # (120 - 100) x 24 = 480 a day, even before the backlog's oldest work expires.
    schedule = schedule_batch([120.0] * 24, [100.0] * 24, 24)
    assert schedule.shortfall_requests == pytest.approx((120 - 100) * 24)


def test_the_hour_verifier_catches_batch_left_unserved_and_a_soak_beyond_the_pool():
    instance = _instance(batch_per_day=1_000_000)
    plan = solve(instance)
    assert verify_hours(instance, plan).ok
    unsoaked = plan.model_copy(
        update={"hours": tuple(h.model_copy(update={"batch_soak": ()}) for h in plan.hours)}
    )
    found = {v.requirement for v in verify_hours(instance, unsoaked).violations}
    assert "batch[nightly,r1]" in found
    hour = next(h for h in plan.hours if h.batch_soak)
    greedy = hour.model_copy(
        update={
            "batch_soak": tuple(
                s.model_copy(update={"requests_per_s": s.requests_per_s * 100})
                for s in hour.batch_soak
            )
        }
    )
    swollen = plan.model_copy(
        update={"hours": tuple(greedy if h.hour == hour.hour else h for h in plan.hours)}
    )
    found = {v.requirement.split("[")[0] for v in verify_hours(instance, swollen).violations}
    assert "capacity" in found


def test_batch_with_no_pool_to_soak_and_no_configuration_is_refused_before_solving():
    # A 405B model in fp8 holds about 405 GB of weights: it fits no single 80 GB H100
    # (tensor_parallel [1]), and no interactive pool of its model runs to soak it.
    data = _instance(batch_per_day=1000).model_dump(mode="json", exclude_none=True)
    data["models"].append({"name": "llama-3.1-405b", "weight_precisions": ["fp8"]})
    data["workloads"][1]["model"] = "llama-3.1-405b"
    for workload in data["workloads"]:
        workload["demand"]["r1"].pop("peak_to_average", None)
    with pytest.raises(Infeasible) as refused:
        solve(validate_instance(data, "unplaceable.yaml"))
    assert "batch_arrivals[nightly,r1,*]" in str(refused.value)
