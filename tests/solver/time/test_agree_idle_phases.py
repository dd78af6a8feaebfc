"""The hours table's idle GPU-hours and the plan's idle_fraction read one rule for a
prefill/decode pair: each phase carries the whole load of its (workload, region).

Before, the table summed the prefill and decode pools' capacities into one, as if each
request needed only one of them: Qwen3-235B-A22B fp8 in region a, 4 TP2 prefill at 13.32
and 4 TP2 decode at 10.00 requests/s for 30 requests/s, read 16 x (1 - 30 / 93.28) =
10.85 idle GPUs an hour where the phases leave 8 x (1 - 30 / 53.28) + 8 x (1 - 30 / 40)
= 5.50; with b's 2.81 and 6 rented GPUs serving nothing, 471.8 idle GPU-hours a day
beside an idle_fraction of 44.7% of 768 paid = 343.4.

On a flat day (no profile, so no ramp and no warm headroom: the rate the periods are
planned at is the demand the table reads) the two must be equal:
idle GPU-hours = idle_fraction x paid GPU-hours."""

import pytest
import yaml

from models.io.loading import validate_instance
from models.operations.time_demand import interactive_grid, warm_grid
from solver.solve import solve
from solver.time.readback.report import idle_hours
from tests.solver.time.test_months import _data, _lone_rps

INSTANCE = """
name: pair-idle
gpus: [{name: h200}]
models: [{name: qwen3-235b-a22b, weight_precisions: [fp8]}]
regions:
  - name: a
    supply: {h200: {max_gpus: 128, price_per_gpu_hour: 3.1, reserved_price_per_gpu_hour: 2.0}}
  - name: b
    supply: {h200: {max_gpus: 128, price_per_gpu_hour: 3.3}}
links: [[a, b, 40]]
workloads:
  - name: chat
    model: qwen3-235b-a22b
    demand: {a: {peak_requests_per_s: 30}, b: {peak_requests_per_s: 15}}
    prompt_tokens: {mean: 2000, p99: 8000}
    output_tokens: {mean: 400, p99: 1500}
    slo: {ttft_p99_ms: 2000, tpot_p99_ms: 60, max_failover_rtt_ms: 100}
policy:
  survive: replica
  tensor_parallel: [1, 2, 4, 8]
  pipeline_parallel: [1]
  disaggregation: true
solver: {time_limit_s: 20}
"""


def test_the_hours_idle_gpu_hours_read_each_phase_as_the_idle_fraction_does():
    instance = validate_instance(yaml.safe_load(INSTANCE), "pair-idle.yaml")
    plan = solve(instance)
    roles = {str(p.role) for p in plan.replicas}
    assert {"prefill", "decode"} <= roles  # the pair this case was written for
    paid = sum(g.existing + g.reserved + g.on_demand + g.spot for h in plan.hours for g in h.gpus)
    _, idle_gpu_hours = idle_hours(instance, plan)
    assert idle_gpu_hours == pytest.approx(plan.idle_fraction * paid, rel=1e-6)


def test_each_phase_of_a_pair_is_idle_by_its_own_capacity():
    instance = validate_instance(yaml.safe_load(INSTANCE), "pair-idle.yaml")
    plan = solve(instance)
    loads = {"a": 30.0, "b": 15.0}
    by_hand = 0.0
    for pool in plan.hours[0].pools:  # a flat day: every hour alike
        phase = sum(
            p.count * p.requests_per_s_per_replica
            for p in plan.hours[0].pools
            if (p.region, p.role) == (pool.region, pool.role)
        )
        by_hand += pool.gpus * (1 - min(loads[pool.region] / phase, 1.0))
    for row in plan.hours[0].gpus:  # rented or committed GPUs no pool runs
        by_hand += row.existing + row.reserved + row.on_demand + row.spot - row.used
    _, idle_gpu_hours = idle_hours(instance, plan)
    assert idle_gpu_hours == pytest.approx(24 * by_hand, rel=1e-6)


COLOCATED = """
name: group-idle
gpus: [{name: h100-sxm}]
models: [{name: llama-3.1-8b, weight_precisions: [fp8]}]
regions:
  - name: r
    supply: {h100-sxm: {max_gpus: 64, price_per_gpu_hour: 2.4, reserved_price_per_gpu_hour: 1.5}}
workloads:
  - name: chat
    model: llama-3.1-8b
    demand: {r: {peak_requests_per_s: 1}}
    prompt_tokens: {mean: 1000, p99: 4000}
    output_tokens: {mean: 300, p99: 1000}
    slo: {ttft_p99_ms: 800, tpot_p99_ms: 50}
  - name: summ
    model: llama-3.1-8b
    demand: {r: {peak_requests_per_s: 1.5}}
    prompt_tokens: {mean: 3000, p99: 8000}
    output_tokens: {mean: 200, p99: 600}
    slo: {ttft_p99_ms: 1500, tpot_p99_ms: 60}
policy: {survive: none, tensor_parallel: [1], pipeline_parallel: [1], colocation: true,
         buy_unit: gpu}
"""


def test_a_shared_groups_gpus_count_idle_by_its_members_load():
    # one group replica on one GPU carries chat at a_chat and summ at a_summ (its members'
    # rates): idle share 1 - (1 / a_chat + 1.5 / a_summ) / 2 every hour of a flat day.
    # Before, the group's joined name matched no workload: 0 idle GPU-hours beside an
    # idle_fraction of 78.5% (18.8 of 24 GPU-hours)
    instance = validate_instance(yaml.safe_load(COLOCATED), "group-idle.yaml")
    plan = solve(instance)
    (group,) = plan.hours[0].pools
    rates = {m.workload: m.requests_per_s_per_replica for m in group.members}
    assert group.count == 1 and group.gpus == 1 and set(rates) == {"chat", "summ"}
    share = 1 - (1 / rates["chat"] + 1.5 / rates["summ"]) / 2
    idle_replicas, idle_gpus = idle_hours(instance, plan)
    assert idle_gpus == pytest.approx(24 * share) and idle_replicas == pytest.approx(24 * share)
    assert idle_gpus == pytest.approx(24 * plan.idle_fraction)


def test_on_a_diurnal_day_the_hours_idle_gpu_hours_read_the_warm_rate_as_idle_fraction():
    # A ramp keeps warm headroom (the rate each period is planned at is demand plus what
    # the autoscaler needs while a replica starts): that headroom is no load, and both
    # figures read the warm rate (the batch soak's idle capacity does too). Before, the
    # table read the bare demand: rl2h (8B, 60 requests/s peaks in two regions, 1 x 6
    # up to 4 x 9) read 327.07 idle GPU-hours a day beside 84.08% of 384 paid = 322.87.
    q = _lone_rps()
    data = _data(10.5 * q, 0.0, 0, 1)
    data["workloads"][0]["demand"]["r1"]["hourly_profile"] = [1] * 8 + [2, 3] + [4] * 14
    data["policy"]["replica_start_s"] = 600.0
    instance = validate_instance(data, "ramp.yaml")
    plan = solve(instance)
    warm = warm_grid(instance)[("chat", "r1")]
    demand = interactive_grid(instance)[("chat", "r1")]
    assert any(w > d for w, d in zip(warm, demand, strict=True))  # a ramp's headroom
    # paid: every committed GPU every hour (used or not), plus the hour's rented ones
    (commitment,) = plan.committed
    rented = sum(g.existing + g.on_demand + g.spot for h in plan.hours for g in h.gpus)
    paid = 24 * commitment.committed_gpus + rented
    _, idle_gpu_hours = idle_hours(instance, plan)
    assert idle_gpu_hours == pytest.approx(plan.idle_fraction * paid, rel=1e-6)
    assert plan.idle_gpu_hours_per_day == pytest.approx(idle_gpu_hours)


def test_replicas_soaking_batch_are_not_idle():
    # A trough replica that soaks batch work is busy with it: the plan's idle figures
    # count x / C_b replicas of each soaking pool busy (x batch requests/s, C_b one
    # replica's batch rate), as its batch placement's idle replica-hours after the soak
    # do. Before, rl2h's us-east read 44.43 idle replica-hours a day beside its
    # placement's 'idle before 44.43, after 38.70'.
    q = _lone_rps()
    data = _data(10.5 * q, 0.0, 0, 1)
    demand = data["workloads"][0]["demand"]["r1"]
    demand["hourly_profile"] = [1] * 8 + [2, 3] + [4] * 14
    data["workloads"].append(
        {
            "name": "nightly",
            "model": "llama-3.1-8b",
            "deadline_hours": 12,
            "demand": {"r1": {"requests_per_day": 2 * 3600 * q}},  # 2 q for one hour a day
            "prompt_tokens": {"mean": 1000, "p99": 1000},
            "output_tokens": {"mean": 200, "p99": 200},
        }
    )
    instance = validate_instance(data, "soak.yaml")
    plan = solve(instance)
    (placement,) = plan.batch
    assert placement.soaked_requests_per_day > 0 and placement.dedicated_replicas == 0
    assert placement.idle_replica_hours_after < placement.idle_replica_hours_before
    idle_replicas, idle_gpu_hours = idle_hours(instance, plan)
    assert idle_replicas == pytest.approx(placement.idle_replica_hours_after)
    (commitment,) = plan.committed
    rented = sum(g.existing + g.on_demand + g.spot for h in plan.hours for g in h.gpus)
    paid = 24 * commitment.committed_gpus + rented
    assert idle_gpu_hours == pytest.approx(plan.idle_fraction * paid, rel=1e-6)
